import { evaluateCondition, opaque, UNKNOWN, Unknown, usesStatusFunction, type ExpressionContext, type Value } from "./expressions.js";
import { matchesPatterns, patternList } from "./filters.js";

/**
 * Whether each job of a repository's GitHub Actions workflows runs on the queue's testing
 * commits: a push of a new branch `greenline/<target>/<run>`, and in the draft-PR mode also a
 * draft pull request from it into the target (events `pull_request` and `pull_request_target`).
 * Pure: the workflows come parsed (YAML → plain values) by the caller.
 *
 * Verdicts, per job: `runs` (a check run is created on the testing commit and the job executes),
 * `skipped` (the workflow runs but the job's `if:` or a skipped dependency skips it: GitHub
 * reports a skipped job as passing, so a required check would pass without testing anything),
 * `never` (the workflow is not triggered, or only by events whose checks GitHub does not attach
 * to the commit), `maybe` (it depends on what the PRs change or on values the file cannot tell).
 */

export type TestingMode = "push" | "draft_pr";
export type JobVerdict = "runs" | "skipped" | "never" | "maybe";
export type TestingEvent = "push" | "pull_request" | "pull_request_target";

export type TestingContext = {
  targetBranch: string;
  mode: TestingMode;
  /** "owner/name" when known: settles `github.repository == '…'`; unknown otherwise. */
  repository?: string;
};

export type JobPrediction = {
  job: string;
  /** The check run names the job reports under, `*` where GitHub fills them in at run time. */
  checkNames: string[];
  verdict: JobVerdict;
  why: string;
  fix: string | null;
};

export type WorkflowPrediction = {
  path: string;
  /** Only `workflow_call`: a reusable workflow, run through its callers. */
  called: boolean;
  /** The file could not be read as a workflow (the reason). */
  error: string | null;
  jobs: JobPrediction[];
};

export type WorkflowFile = { path: string; document: unknown };

const RANK: Record<JobVerdict, number> = { never: 0, skipped: 1, maybe: 2, runs: 3 };

export function betterVerdict(a: JobVerdict, b: JobVerdict): JobVerdict {
  return RANK[a] >= RANK[b] ? a : b;
}

/** The testing branch of a run, as the GitHub adapter names it (testing-branches.ts). */
export function sampleTestingBranch(targetBranch: string): string {
  return `greenline/${targetBranch}/r-1`;
}

const PUSH_FIX = "add `push: { branches: ['greenline/**'] }` to its `on:`";

type Trigger = { fires: "yes" | "no" | "maybe"; why: string; fix: string | null };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The workflow's triggers by event name, with each one's configuration (null: none). */
export function triggersOf(document: unknown): Map<string, unknown> | null {
  if (!isRecord(document)) return null;
  // `on` is a string key in YAML 1.2, as GitHub and the caller's parser read it.
  const on = document.on;
  const triggers = new Map<string, unknown>();
  if (typeof on === "string") {
    triggers.set(on, null);
  } else if (Array.isArray(on)) {
    for (const event of on) if (typeof event === "string") triggers.set(event, null);
  } else if (isRecord(on)) {
    for (const [event, config] of Object.entries(on)) triggers.set(event, config ?? null);
  } else {
    return null;
  }
  return triggers;
}

function pathsFilter(config: Record<string, unknown>): string | null {
  if (config.paths !== undefined) return "`paths`";
  if (config["paths-ignore"] !== undefined) return "`paths-ignore`";
  return null;
}

function pushTrigger(path: string, triggers: Map<string, unknown>, branch: string): Trigger {
  if (!triggers.has("push")) return { fires: "no", why: `${path} has no \`push\` trigger`, fix: PUSH_FIX };
  const config = triggers.get("push");
  if (!isRecord(config)) return { fires: "yes", why: "runs on every push", fix: null };
  const branches = patternList(config.branches);
  const ignored = patternList(config["branches-ignore"]);
  if (branches !== null) {
    if (!matchesPatterns(branch, branches)) {
      return { fires: "no", why: `${path} runs on pushes to ${branches.map((b) => `\`${b}\``).join(", ")} only`, fix: "add `greenline/**` to its `on.push.branches`" };
    }
  } else if (ignored !== null) {
    const hit = ignored.find((p) => matchesPatterns(branch, [p]));
    if (hit !== undefined) return { fires: "no", why: `${path} ignores pushes to \`${hit}\``, fix: `remove \`${hit}\` from its \`on.push.branches-ignore\`` };
  } else if (config.tags !== undefined || config["tags-ignore"] !== undefined) {
    return { fires: "no", why: `${path} runs on pushed tags only`, fix: "add `branches: ['greenline/**']` beside `tags:` under `on.push`" };
  }
  const paths = pathsFilter(config);
  if (paths !== null)
    return {
      fires: "maybe",
      why: `${path}'s ${paths} filter on pushes: it runs only when the PRs tested change files it matches`,
      fix: `drop the ${paths} filter (or add a \`push\` trigger for \`greenline/**\` without one)`,
    };
  return { fires: "yes", why: "runs on pushes to the testing branch", fix: null };
}

function pullRequestTrigger(path: string, triggers: Map<string, unknown>, target: string): Trigger {
  if (!triggers.has("pull_request")) return { fires: "no", why: `${path} has no \`pull_request\` trigger`, fix: null };
  const config = triggers.get("pull_request");
  if (!isRecord(config)) return { fires: "yes", why: "runs on pull requests", fix: null };
  const types = patternList(config.types);
  if (types !== null && !types.includes("opened")) return { fires: "no", why: `${path} runs on pull requests ${types.join(", ")} only, not opened`, fix: "add `opened` to its `on.pull_request.types`" };
  const branches = patternList(config.branches);
  const ignored = patternList(config["branches-ignore"]);
  if (branches !== null && !matchesPatterns(target, branches))
    return { fires: "no", why: `${path} runs on pull requests into ${branches.map((b) => `\`${b}\``).join(", ")} only`, fix: `add \`${target}\` to its \`on.pull_request.branches\`` };
  if (branches === null && ignored !== null && ignored.some((p) => matchesPatterns(target, [p]))) return { fires: "no", why: `${path} ignores pull requests into \`${target}\``, fix: null };
  const paths = pathsFilter(config);
  if (paths !== null) return { fires: "maybe", why: `${path}'s ${paths} filter on pull requests: it runs only when the PRs tested change files it matches`, fix: `drop the ${paths} filter` };
  return { fires: "yes", why: "runs on the draft pull request", fix: null };
}

function eventsOf(mode: TestingMode): TestingEvent[] {
  return mode === "push" ? ["push"] : ["push", "pull_request", "pull_request_target"];
}

function triggerFor(event: TestingEvent, path: string, triggers: Map<string, unknown>, context: TestingContext): Trigger {
  if (event === "push") return pushTrigger(path, triggers, sampleTestingBranch(context.targetBranch));
  if (event === "pull_request") return pullRequestTrigger(path, triggers, context.targetBranch);
  if (!triggers.has("pull_request_target")) return { fires: "no", why: `${path} has no \`pull_request_target\` trigger`, fix: null };
  return { fires: "maybe", why: `${path} runs on \`pull_request_target\`, whose checks GitHub attaches to the target branch's commit, not the testing commit`, fix: "run the check on `pull_request` or `push` too" };
}

/** This repository's name and owner when not given: equal to themselves only. */
const THIS_REPOSITORY = opaque("repository");
const THIS_OWNER = opaque("owner");

function githubContext(event: TestingEvent, context: TestingContext): Record<string, Value> {
  const branch = sampleTestingBranch(context.targetBranch);
  const repository: Value = context.repository ?? THIS_REPOSITORY;
  const owner: Value = context.repository?.split("/")[0] ?? THIS_OWNER;
  const common: Record<string, Value> = { repository, repository_owner: owner, ref_type: "branch", event_name: event };
  if (event === "push") {
    return {
      ...common,
      ref: `refs/heads/${branch}`,
      ref_name: branch,
      base_ref: "",
      head_ref: "",
      event: { ref: `refs/heads/${branch}`, created: true, deleted: false, forced: false, base_ref: null, action: null, pull_request: null },
    };
  }
  const pullRequest = {
    draft: true,
    state: "open",
    merged: false,
    head: { ref: branch, repo: { full_name: repository, fork: false, owner: { login: owner } } },
    base: { ref: context.targetBranch, repo: { full_name: repository, fork: false, owner: { login: owner } } },
  };
  return {
    ...common,
    ref: event === "pull_request" ? "refs/pull/1/merge" : `refs/heads/${context.targetBranch}`,
    ref_name: event === "pull_request" ? "1/merge" : context.targetBranch,
    base_ref: context.targetBranch,
    head_ref: branch,
    // A pull request event carries none of a push's fields: GitHub answers them as null.
    event: { action: "opened", pull_request: pullRequest, commits: null, head_commit: null, pusher: null, before: null, after: null, compare: null, created: null, deleted: null, forced: null },
  };
}

/**
 * A path into the `github` context; objects not modelled (labels, the head commit's message,
 * the actor) are unknown; `github.event.pull_request.x` on a push is null, as GitHub answers.
 */
function lookupIn(github: Record<string, Value>) {
  return (path: readonly string[]): Value => {
    if (path[0] !== "github") return UNKNOWN;
    let value: Value = github;
    for (const key of path.slice(1)) {
      // A missing object's properties, and its `*` filter, are null (GitHub's answer).
      if (value === null) return null;
      if (typeof value !== "object" || Array.isArray(value) || value === UNKNOWN) return UNKNOWN;
      const record = value as { readonly [key: string]: Value };
      if (!(key in record)) return UNKNOWN;
      value = record[key]!;
    }
    return value;
  };
}

function needsOf(job: Record<string, unknown>): string[] {
  if (typeof job.needs === "string") return [job.needs];
  if (Array.isArray(job.needs)) return job.needs.filter((n): n is string => typeof n === "string");
  return [];
}

/**
 * `chain`: whether every job up the job's `needs` chain (not only those it names) runs: GitHub's
 * `success()` is false when any of them was skipped, so a job without a status function is
 * skipped under a skipped grandparent even when its own need ran (`always()`).
 */
type JobOutcome = { verdict: JobVerdict; why: string; fix: string | null; chain: boolean | Unknown };

function conditionText(raw: unknown): string {
  return typeof raw === "string"
    ? raw
        .replace(/^\$\{\{\s*|\s*\}\}$/g, "")
        .replace(/\s+/g, " ")
        .trim()
    : String(raw);
}

/** Each job's outcome under one event that triggers the workflow. */
function jobsUnder(event: TestingEvent, jobs: Record<string, Record<string, unknown>>, context: TestingContext): Map<string, JobOutcome> {
  const github = githubContext(event, context);
  const lookup = lookupIn(github);
  const outcomes = new Map<string, JobOutcome>();
  const visiting = new Set<string>();
  const outcomeOf = (id: string): JobOutcome => {
    const known = outcomes.get(id);
    if (known) return known;
    const job = jobs[id];
    if (!job || visiting.has(id)) return { verdict: "maybe", why: `\`${id}\` depends on itself or on a job that does not exist`, fix: null, chain: UNKNOWN };
    visiting.add(id);
    const deps = needsOf(job).map((need) => [need, outcomeOf(need)] as const);
    visiting.delete(id);
    const skippedDep = deps.find(([, o]) => o.verdict === "skipped" || o.verdict === "never" || o.chain === false);
    const maybeDep = deps.find(([, o]) => o.verdict === "maybe" || o.chain instanceof Unknown);
    const success = skippedDep ? false : maybeDep ? UNKNOWN : true;
    const resultOf = (o: JobOutcome): Value => (o.verdict === "runs" ? "success" : o.verdict === "maybe" ? UNKNOWN : "skipped");
    const results = new Map<string, Value>(deps.map(([need, o]) => [need, resultOf(o)]));
    // `needs.<job>.result` (and `needs.*.result`): what the dependencies came to, jobs taken to succeed when they run.
    const withNeeds = (path: readonly string[]): Value => {
      if (path[0] !== "needs") return lookup(path);
      if (path.length === 3 && path[2] === "result") return path[1] === "*" ? deps.map(([, o]) => resultOf(o)) : (results.get(path[1]!) ?? UNKNOWN);
      return UNKNOWN;
    };
    const expression: ExpressionContext = { lookup: withNeeds, status: { success, failure: false, cancelled: false } };
    const result = evaluateCondition(job.if, expression);
    const chain: boolean | Unknown = success;
    let outcome: JobOutcome;
    if (result === true) outcome = { verdict: "runs", why: "", fix: null, chain };
    else if (result === false) {
      const condition = typeof job.if === "string" ? job.if : null;
      if (skippedDep && (condition === null || (!usesStatusFunction(condition) && evaluateCondition(job.if, { ...expression, status: { ...expression.status, success: true } }) === true))) {
        outcome = { verdict: "skipped", why: `it needs \`${skippedDep[0]}\`, which is skipped (or follows a skipped job) on testing commits`, fix: null, chain };
      } else {
        outcome = {
          verdict: "skipped",
          why: `its \`if: ${conditionText(job.if)}\` is false on a testing commit (${event} of \`${String(github.ref)}\`)`,
          fix: "make the condition also true on testing commits, e.g. `|| startsWith(github.ref, 'refs/heads/greenline/')`",
          chain,
        };
      }
    } else {
      outcome =
        maybeDep && job.if === undefined
          ? { verdict: "maybe", why: `it needs \`${maybeDep[0]}\`, which may not run`, fix: null, chain }
          : { verdict: "maybe", why: `its \`if: ${conditionText(job.if)}\` depends on values the file does not settle`, fix: null, chain };
    }
    outcomes.set(id, outcome);
    return outcome;
  };
  for (const id of Object.keys(jobs)) outcomeOf(id);
  return outcomes;
}

function checkNamePattern(name: string): string {
  return name.replace(/\$\{\{[\s\S]*?\}\}/g, "*").trim();
}

function hasMatrix(job: Record<string, unknown>): boolean {
  return isRecord(job.strategy) && job.strategy.matrix !== undefined;
}

function ownCheckNames(id: string, job: Record<string, unknown>): string[] {
  const raw = typeof job.name === "string" ? job.name : id;
  const base = checkNamePattern(raw);
  // A matrix job's name gets its values in parentheses unless the name already holds some.
  return hasMatrix(job) && !raw.includes("${{") ? [`${base} (*)`] : [base];
}

function calledJobs(uses: string, workflows: ReadonlyMap<string, unknown>): Record<string, Record<string, unknown>> | null {
  const local = /^\.\/(.+)$/.exec(uses);
  if (!local) return null;
  const document = workflows.get(local[1]!);
  return isRecord(document) && isRecord(document.jobs) ? (document.jobs as Record<string, Record<string, unknown>>) : null;
}

/**
 * The check names of a job that is not a call of a workflow of this repository (those are
 * judged callee by callee: predictWorkflow): its own, or `caller / *` for another repository's.
 */
function checkNamesOf(id: string, job: Record<string, unknown>): string[] {
  const own = ownCheckNames(id, job);
  return typeof job.uses === "string" ? own.map((name) => `${name} / *`) : own;
}

/** Every job of one workflow file, judged for the queue's testing commits. */
export function predictWorkflow(file: WorkflowFile, context: TestingContext, all: ReadonlyMap<string, unknown> = new Map()): WorkflowPrediction {
  const triggers = triggersOf(file.document);
  if (!triggers) return { path: file.path, called: false, error: "no `on:` triggers", jobs: [] };
  const document = file.document as Record<string, unknown>;
  if (!isRecord(document.jobs)) return { path: file.path, called: false, error: "no `jobs:`", jobs: [] };
  const jobs = Object.fromEntries(Object.entries(document.jobs).filter(([, job]) => isRecord(job))) as Record<string, Record<string, unknown>>;
  const called = [...triggers.keys()].every((event) => event === "workflow_call");
  if (called) return { path: file.path, called: true, error: null, jobs: [] };
  const perEvent = eventsOf(context.mode).map((event) => {
    const trigger = triggerFor(event, file.path, triggers, context);
    return { event, trigger, outcomes: trigger.fires === "no" ? null : jobsUnder(event, jobs, context) };
  });
  const listed = [...triggers.keys()].map((e) => `\`${e}\``).join(", ");
  const never = (): JobOutcome => {
    const push = perEvent[0]!.trigger;
    const draft = context.mode === "push" && pullRequestTrigger(file.path, triggers, context.targetBranch).fires !== "no";
    const why = push.why.endsWith("has no `push` trigger") ? `${file.path} runs on ${listed} only; testing branches are pushes${context.mode === "draft_pr" ? " and draft pull requests" : ""}` : push.why;
    const fix = [push.fix, draft ? "turn on draft pull requests for testing branches (`createPrsForTestingBranches`)" : null].filter((f) => f !== null).join(", or ");
    return { verdict: "never", why, fix: fix === "" ? null : fix, chain: false };
  };
  /** The best of a job's outcomes over the events that trigger the workflow (`pick`: its outcome under one). */
  const bestOf = (pick: (outcomes: Map<string, JobOutcome>, event: TestingEvent) => JobOutcome): JobOutcome => {
    let best: JobOutcome | null = null;
    for (const { event, trigger, outcomes } of perEvent) {
      if (!outcomes) continue;
      const job = pick(outcomes, event);
      const outcome: JobOutcome =
        trigger.fires === "maybe" && job.verdict === "runs" ? { ...job, verdict: "maybe", why: trigger.why, fix: trigger.fix } : job.verdict === "runs" ? { ...job, why: trigger.why, fix: null } : job;
      if (!best || RANK[outcome.verdict] > RANK[best.verdict]) best = outcome;
    }
    return best ?? never();
  };
  const predictions: JobPrediction[] = [];
  for (const id of Object.keys(jobs)) {
    const job = jobs[id]!;
    const best = bestOf((outcomes) => outcomes.get(id)!);
    const callees = typeof job.uses === "string" ? calledJobs(job.uses, all) : null;
    // A reusable workflow's jobs report as `caller / callee`, each judged under the caller's event.
    predictions.push({ job: id, checkNames: callees ? [] : checkNamesOf(id, job), verdict: best.verdict, why: best.why, fix: best.fix });
    if (!callees) continue;
    const underEvent = new Map<TestingEvent, Map<string, JobOutcome>>();
    for (const [calleeId, callee] of Object.entries(callees)) {
      if (!isRecord(callee)) continue;
      const outcome = bestOf((outcomes, event) => {
        const caller = outcomes.get(id)!;
        if (caller.verdict !== "runs") return caller;
        if (!underEvent.has(event)) underEvent.set(event, jobsUnder(event, callees, context));
        return underEvent.get(event)!.get(calleeId)!;
      });
      const names = ownCheckNames(id, job).flatMap((name) => ownCheckNames(calleeId, callee).map((c) => `${name} / ${c}`));
      predictions.push({ job: `${id} / ${calleeId}`, checkNames: names, verdict: outcome.verdict, why: outcome.why, fix: outcome.fix });
    }
  }
  return { path: file.path, called: false, error: null, jobs: predictions };
}
