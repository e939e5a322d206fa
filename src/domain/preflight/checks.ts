import type { RequiredChecks } from "../status-checks.js";
import { betterVerdict, predictWorkflow, type JobVerdict, type TestingContext, type WorkflowFile, type WorkflowPrediction } from "./workflows.js";

/**
 * "Will this queue ever merge anything?": for each check the target branch requires, whether it
 * will report on the queue's testing commits, from the workflows that would produce it and,
 * for checks no workflow produces, from who reported it on the repository's recent pull requests.
 */

/** Who reported a check on a recent pull request's head commit. */
export type CheckReporter = {
  context: string;
  /** A check run's App (its slug, `github-actions` for workflows); a commit status's author login. */
  reporter: string | null;
  kind: "check_run" | "status";
};

export type CheckVerdict = "reports" | "passes_without_running" | "never" | "maybe" | "unknown" | "pull_request_head";

/** The verdicts under which a required check does not hold the queue's runs. */
export const SATISFIED_VERDICTS: ReadonlySet<CheckVerdict> = new Set(["reports", "pull_request_head"]);

/** A check the queue takes from each pull request's own head (its pullRequestChecks). */
function fromPullRequestHead(context: string): CheckPrediction {
  return {
    context,
    verdict: "pull_request_head",
    sources: [],
    reportedBy: null,
    why: `\`${context}\` is taken from each pull request's own head (the queue's pullRequestChecks): testing commits do not wait for it, and GitHub's branch rules check it on each pull request's head when it merges`,
    fix: null,
  };
}

export type CheckPrediction = {
  context: string;
  verdict: CheckVerdict;
  /** The workflow jobs that report it ("path: job"). */
  sources: string[];
  /** Who reported it on recent pull requests, when no workflow job does. */
  reportedBy: string | null;
  why: string;
  fix: string | null;
};

export type SetupReport = {
  mode: TestingContext["mode"];
  requiredSource: RequiredChecks["source"];
  ok: boolean;
  checks: CheckPrediction[];
  warnings: string[];
  workflows: WorkflowPrediction[];
};

const VERDICT_OF_JOB: Record<JobVerdict, CheckVerdict> = { runs: "reports", skipped: "passes_without_running", never: "never", maybe: "maybe" };

/**
 * Whether a check name made at run time (`*` where a `${{ }}` expression goes) can be `name`:
 * `*` only is special (names hold brackets and dots), matched with the two-pointer walk, linear
 * in practice and never exponential. A name that is nothing but expressions matches nothing: it
 * could be any check, which is no evidence for one.
 */
export function checkNameMatches(pattern: string, name: string): boolean {
  if (!pattern.includes("*")) return pattern === name;
  if (pattern.replace(/[*\s()/,]/g, "") === "") return false;
  let p = 0;
  let n = 0;
  let star = -1;
  let mark = 0;
  while (n < name.length) {
    if (p < pattern.length && pattern[p] !== "*" && pattern[p] === name[n]) {
      p++;
      n++;
    } else if (p < pattern.length && pattern[p] === "*") {
      star = p++;
      mark = n;
    } else if (star !== -1) {
      p = star + 1;
      n = ++mark;
    } else return false;
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
}

/** Apps that look at pull requests only (CLA, DCO, titles and labels): never at a pushed branch. */
const PR_ONLY_APP = /(^|[-_])(cla|dco)([-_]|$)|cla-?assistant|easycla|semantic-?(pull|pr|title)|pr-?title|conventional-?(pr|commits)|commitlint|labeler|label-?check/i;

function withoutWorkflow(context: string, reporters: readonly CheckReporter[], mode: TestingContext["mode"]): CheckPrediction {
  const seen = reporters.find((r) => r.context === context);
  const base = { context, sources: [], reportedBy: seen?.reporter ?? null };
  if (!seen) {
    return {
      ...base,
      verdict: "never",
      why: `no workflow job in .github/workflows reports \`${context}\`, and no recent pull request had it`,
      fix: `remove \`${context}\` from the branch's required checks (or the queue's requiredStatuses), or name a job so`,
    };
  }
  if (seen.kind === "check_run" && seen.reporter === "github-actions") {
    return {
      ...base,
      verdict: "unknown",
      why: `GitHub Actions reported \`${context}\` on recent pull requests, but no job of the default branch's workflows is named so (a name made at run time, or a workflow changed since)`,
      fix: null,
    };
  }
  if (seen.kind === "check_run") {
    const prOnly = PR_ONLY_APP.test(seen.reporter ?? "");
    return {
      ...base,
      verdict: prOnly && mode === "push" ? "never" : "unknown",
      why: `\`${context}\` is reported by the ${seen.reporter ?? "unknown"} app${prOnly ? ", which looks at pull requests only" : ""}: Greenline cannot tell whether it reports on testing ${mode === "push" ? "branches" : "pull requests"}`,
      fix: prOnly
        ? `list \`${context}\` in the queue's pullRequestChecks (its result on each pull request's head counts), or set the queue's requiredStatuses to the checks CI reports${mode === "push" ? ", or turn on draft pull requests for testing branches (`createPrsForTestingBranches`)" : ""}`
        : `make sure ${seen.reporter ?? "the app"} checks pushes to \`greenline/**\``,
    };
  }
  return {
    ...base,
    verdict: "unknown",
    why: `\`${context}\` is a commit status set by ${seen.reporter ?? "an unknown author"} (CI outside GitHub Actions): Greenline cannot read its configuration`,
    fix: "make sure that CI builds pushes to `greenline/**` branches",
  };
}

export function checkQueueSetup(input: {
  context: TestingContext;
  required: RequiredChecks;
  workflows: readonly WorkflowFile[];
  reporters: readonly CheckReporter[];
  /** Workflow files that could not be read (their path and why). */
  unreadable?: readonly { path: string; error: string }[];
  /** Required checks the queue takes from each pull request's own head (not judged on testing commits). */
  pullRequestChecks?: readonly string[];
}): SetupReport {
  const fromHead = new Set(input.pullRequestChecks ?? []);
  const documents = new Map(input.workflows.map((w) => [w.path, w.document]));
  const workflows = input.workflows.map((file) => predictWorkflow(file, input.context, documents));
  for (const bad of input.unreadable ?? []) workflows.push({ path: bad.path, called: false, error: bad.error, jobs: [] });
  const jobs = workflows.flatMap((w) => w.jobs.map((job) => ({ workflow: w.path, job })));
  const warnings: string[] = [];
  const checks = input.required.contexts.map((context): CheckPrediction => {
    if (fromHead.has(context)) return fromPullRequestHead(context);
    // A job named exactly so is the evidence; one whose name is made at run time only may be it.
    const exact = jobs.filter(({ job }) => job.checkNames.includes(context));
    const producing = exact.length > 0 ? exact : jobs.filter(({ job }) => job.checkNames.some((name) => checkNameMatches(name, context)));
    if (producing.length === 0) return withoutWorkflow(context, input.reporters, input.context.mode);
    let best = producing[0]!;
    for (const candidate of producing) if (betterVerdict(candidate.job.verdict, best.job.verdict) !== best.job.verdict) best = candidate;
    const guessed = exact.length === 0 && best.job.verdict === "runs";
    const verdict = guessed ? "maybe" : VERDICT_OF_JOB[best.job.verdict];
    const sources = producing.map(({ workflow, job }) => `${workflow}: ${job.job}`);
    const why = guessed
      ? `\`${context}\` may come from ${best.workflow} (job \`${best.job.job}\`, named at run time: ${best.job.checkNames.join(", ")}), which ${best.job.why}`
      : verdict === "reports"
        ? `\`${context}\` comes from ${best.workflow} (job \`${best.job.job}\`), which ${best.job.why}`
        : verdict === "passes_without_running"
          ? `\`${context}\` comes from ${best.workflow} (job \`${best.job.job}\`), skipped on testing commits: ${best.job.why}. GitHub counts a skipped job as passing, so the queue would merge without it running`
          : `\`${context}\` comes from ${best.workflow} (job \`${best.job.job}\`): ${best.job.why}`;
    return { context, verdict, sources, reportedBy: null, why, fix: best.job.fix };
  });
  if (input.required.source === "unknown")
    warnings.push("The branch's required checks could not be read (the App needs the Administration: read permission, or the branch has none): set the queue's requiredStatuses, or grant it.");
  if (input.required.contexts.length === 0) {
    const running = jobs.filter(({ job }) => job.verdict === "runs");
    warnings.push(
      running.length === 0
        ? "No check is required and no workflow job runs on testing commits: every run would fail with no check started. Add a `push` trigger for `greenline/**` to your CI workflow."
        : `No check is required: a run passes when every check that reported is green (${running.length} workflow job${running.length === 1 ? "" : "s"} run on testing commits). Requiring the checks that matter (branch protection, a ruleset, or the queue's requiredStatuses) makes a missing one a failure instead of a pass.`,
    );
  }
  for (const w of workflows) if (w.error) warnings.push(`${w.path} could not be read: ${w.error}.`);
  // What testing commits must report: the required checks not taken from the PRs' heads.
  const onTestingCommits = input.required.contexts.filter((c) => !fromHead.has(c));
  if (onTestingCommits.length === 0 && input.required.contexts.length > 0) {
    warnings.push(
      jobs.some(({ job }) => job.verdict === "runs")
        ? "Every required check is taken from the pull requests' heads (pullRequestChecks): a run passes when every check that reported on its testing commit is green."
        : "Every required check is taken from the pull requests' heads (pullRequestChecks) and no workflow job runs on testing commits: no run would ever pass. Add a `push` trigger for `greenline/**` to your CI, or require a check CI reports.",
    );
  }
  const ok = input.required.source !== "unknown" && checks.every((c) => SATISFIED_VERDICTS.has(c.verdict)) && (onTestingCommits.length > 0 || jobs.some(({ job }) => job.verdict === "runs"));
  return { mode: input.context.mode, requiredSource: input.required.source, ok, checks, warnings, workflows };
}
