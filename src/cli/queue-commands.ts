import { readFileSync } from "node:fs";
import { PRIORITY_NAMES } from "../domain/priority.js";
import { CHECK_VERDICT_WORDS } from "../domain/preflight/words.js";
import type { CiContext } from "./ci-context.js";
import { CliUsageError, GreenlineRefusal, greenlineToken, greenlineUrl, inferFromEnvironment, postToGreenline, splitRepo } from "./greenline-client.js";

/**
 * `greenline pr …`, `greenline queue …`, `greenline targets set`: the merge queue from a CI job
 * or a terminal, over the v1 API (GREENLINE_URL, GREENLINE_API_TOKEN). The repository, pull
 * request, target branch and commit come from the flags, else the CI (ci-context.ts), else git.
 * Greenline's refusals throw a GreenlineRefusal (exit 1, its message printed); unreachable is
 * exit 69 (unreachable.ts).
 */

export type QueueOptions = {
  url?: string | undefined;
  token?: string | undefined;
  repo?: string | undefined;
  host?: string | undefined;
  pr?: string | undefined;
  commit?: string | undefined;
  "target-branch"?: string | undefined;
  /** `doctor --branch`: the same as --target-branch. */
  branch?: string | undefined;
  mode?: string | undefined;
  priority?: string | undefined;
  "no-batch"?: boolean | undefined;
  emergency?: string | undefined;
  /** The same as --emergency. */
  hotfix?: string | undefined;
  json?: boolean | undefined;
};

type Out = (line: string) => void;
type Repo = { host: string; owner: string; name: string };
type QueueAddress = { repo: Repo; targetBranch: string };

/** The answers' fields read here (the schemas of src/api/queues/ have them all). */
type MergeItem = {
  state: string;
  stateReason: string;
  priorityValue: number;
  priorityName: string;
  noBatch: boolean;
  prNumber: number;
  prTitle: string;
  prSha: string;
  failureMessage?: string;
  /** A stacked PR: the PR it is stacked on (docs/stacks.md). */
  stackedOn?: number;
};
type SubmittedPullRequest = MergeItem & {
  isCurrentlySubmittedToQueue: boolean;
  readiness: { requiresImpactedTargets: boolean; doesBaseBranchMatch: boolean; hasImpactedTargets: boolean; gitHubMergeability: string };
};
type Queue = {
  state: string;
  mode: string;
  concurrency: number;
  batch: boolean;
  batchingMinSize: number;
  batchingMaxWaitTimeMinutes: number;
  /** Absent from servers older than issue 24. */
  ciBudget?: number;
  tuning?: string;
  tuned?: { concurrency: number; bisectionConcurrency: number; largestBatch: number; observedFailureRate: number };
  requiredStatuses: string[];
  requiredStatusesSource: string;
  requiredStatusesWarning?: string;
  freeze?: { frozen: boolean; until: string | null; reasons: string[]; nextChangeAt: string | null };
  enqueuedPullRequests: MergeItem[];
};
type TestingDetails = {
  testRunId: string;
  /** Absent until the testing branch is built. */
  testBranch?: string;
  testBranchSha?: string;
  status: string;
  failureReason: string | null;
  isBisection: boolean;
  statusChecks: { context: string; state: string; url?: string }[];
  checkSuites: { checkRuns: { name: string; status: string; conclusion?: string }[] }[];
  testedPullRequests: { prNumber: number }[];
  impactedTargets: string[] | "ALL";
  dependentPrs: number[];
};

/** The connection, the queue and the pull request, each read when a command needs it: flags first, then the CI, then git. */
export class Context {
  readonly url: string;
  readonly token: string;
  #inferred: CiContext | undefined;

  constructor(readonly options: QueueOptions) {
    const env = process.env;
    this.url = greenlineUrl(options.url, env.GREENLINE_URL);
    this.token = greenlineToken(options.token, env.GREENLINE_API_TOKEN);
  }

  get inferred(): CiContext {
    this.#inferred ??= inferFromEnvironment();
    return this.#inferred;
  }

  queue(): QueueAddress {
    const o = this.options;
    const full = o.repo ?? this.inferred.repo;
    if (!full) throw new CliUsageError("--repo owner/name is required (or a CI environment, or a git remote named origin)");
    const { owner, name } = splitRepo(full);
    const targetBranch = (o["target-branch"] ?? this.inferred.targetBranch)?.trim();
    if (!targetBranch) throw new CliUsageError("--target-branch is required (the branch the pull request merges into; a pull request build's CI names it)");
    return { repo: { host: o.host ?? this.inferred.host ?? "github.com", owner, name }, targetBranch };
  }

  prNumber(): number {
    const text = this.options.pr ?? this.inferred.pr;
    if (text === undefined) throw new CliUsageError("--pr is required (the pull request's number; a pull request build's CI names it)");
    const pr = Number(text);
    if (!(/^\d+$/.test(text.trim()) && Number.isSafeInteger(pr) && pr > 0)) throw new CliUsageError(`--pr must be a pull request number (got ${text})`);
    return pr;
  }

  post<Answer>(operation: string, body: object): Promise<Answer> {
    return postToGreenline<Answer>(this.url, this.token, operation, body);
  }
}

export const queueName = (q: QueueAddress) => `queue ${q.targetBranch} of ${q.repo.owner}/${q.repo.name}`;
const short = (sha: string | null | undefined) => (sha ? sha.slice(0, 12) : "-");
const stateOf = (item: MergeItem) => (item.stateReason && item.stateReason !== item.state ? `${item.state} (${item.stateReason})` : item.state);

/** --priority: a name (any case) or a number from 0 to 255, checked here so a mistake is a usage error. */
function priorityOf(text: string | undefined): string | number | undefined {
  if (text === undefined) return undefined;
  const value = text.trim().toLowerCase();
  if (value in PRIORITY_NAMES) return value;
  if (/^\d{1,3}$/.test(value) && Number(value) <= 255) return Number(value);
  throw new CliUsageError(`--priority must be urgent, high, medium, low or a number from 0 to 255 (got ${text})`);
}

/** `greenline pr submit`: into the queue, or a queued PR's priority and batching changed. */
export async function prSubmit(options: QueueOptions, out: Out): Promise<number> {
  const ctx = new Context(options);
  const priority = priorityOf(options.priority);
  const address = { ...ctx.queue(), pr: { number: ctx.prNumber() } };
  const emergency = options.emergency ?? options.hotfix;
  if (options.emergency !== undefined && options.hotfix !== undefined) throw new CliUsageError("--hotfix is --emergency: give one of them");
  if (emergency !== undefined && priority !== undefined) throw new CliUsageError("--emergency goes ahead of everything already: leave out --priority");
  await ctx.post("submitPullRequest", {
    ...address,
    ...(priority !== undefined ? { priority } : {}),
    ...(options["no-batch"] ? { noBatch: true } : {}),
    ...(emergency !== undefined ? { emergencyReason: emergency } : {}),
  });
  const how = [priority !== undefined ? `priority ${priority}` : "", options["no-batch"] ? "never batched" : "", emergency !== undefined ? `emergency: ${emergency}` : ""].filter(Boolean).join(", ");
  out(`greenline: submitted PR #${address.pr.number} to the ${queueName(address)}${how ? ` (${how})` : ""}`);
  return 0;
}

/** `greenline pr cancel`: out of the queue (idempotent). */
export async function prCancel(options: QueueOptions, out: Out): Promise<number> {
  const ctx = new Context(options);
  const address = { ...ctx.queue(), pr: { number: ctx.prNumber() } };
  await ctx.post("cancelPullRequest", address);
  out(`greenline: cancelled PR #${address.pr.number} in the ${queueName(address)}`);
  return 0;
}

/** `greenline pr restart`: the PR's tests run again. */
export async function prRestart(options: QueueOptions, out: Out): Promise<number> {
  const ctx = new Context(options);
  const address = { ...ctx.queue(), pr: { number: ctx.prNumber() } };
  await ctx.post("restartTestsOnPullRequest", address);
  out(`greenline: restarted the tests of PR #${address.pr.number} in the ${queueName(address)}`);
  return 0;
}

/** The lines of a test run: where it runs, with what, and each check's state. */
function testingLines(run: TestingDetails): string[] {
  const lines = [`  test run ${run.testRunId}${run.isBisection ? " (bisection)" : ""}: ${run.status} on ${run.testBranch ?? "-"} at ${short(run.testBranchSha)}`];
  if (run.failureReason) lines.push(`    failure reason: ${run.failureReason}`);
  const tested = run.testedPullRequests.map((p) => `#${p.prNumber}`).join(", ");
  if (tested) lines.push(`    tests ${tested}${run.dependentPrs.length > 0 ? ` on top of ${run.dependentPrs.map((n) => `#${n}`).join(", ")}` : ""}`);
  if (run.impactedTargets === "ALL" || run.impactedTargets.length > 0) lines.push(`    impacted targets: ${run.impactedTargets === "ALL" ? "ALL" : run.impactedTargets.length}`);
  // The API answers Trunk's UPPERCASE check enums; the CLI prints them as words.
  for (const check of run.statusChecks) lines.push(`    ${check.context}: ${check.state.toLowerCase()}${check.url ? ` ${check.url}` : ""}`);
  for (const suite of run.checkSuites) for (const check of suite.checkRuns) lines.push(`    ${check.name}: ${(check.conclusion ?? check.status).toLowerCase()}`);
  return lines;
}

/** `greenline pr status`: state, position, failure, readiness and the current test run; exit 1 when the PR is not in the queue. */
export async function prStatus(options: QueueOptions, out: Out): Promise<number> {
  const ctx = new Context(options);
  const address = { ...ctx.queue(), pr: { number: ctx.prNumber() } };
  const pr = await ctx.post<SubmittedPullRequest>("getSubmittedPullRequest", address);
  if (options.json) {
    out(JSON.stringify(pr, null, 2));
    return pr.isCurrentlySubmittedToQueue ? 0 : 1;
  }
  out(`PR #${pr.prNumber} ${JSON.stringify(pr.prTitle)} in the ${queueName(address)}: ${stateOf(pr)}`);
  if (pr.isCurrentlySubmittedToQueue) {
    const queue = await ctx.post<Queue>("getQueue", ctx.queue());
    const at = queue.enqueuedPullRequests.findIndex((p) => p.prNumber === pr.prNumber);
    const position = at === -1 ? "" : `position ${at + 1} of ${queue.enqueuedPullRequests.length}, `;
    out(`  ${position}priority ${pr.priorityName} (${pr.priorityValue})${pr.noBatch ? ", never batched" : ""}; the queue is ${queue.state}`);
  }
  if (pr.failureMessage) out(`  failure: ${pr.failureMessage}`);
  if (pr.stackedOn !== undefined) out(`  stacked on #${pr.stackedOn}: tested with it, merged after it`);
  const r = pr.readiness;
  if (!r.doesBaseBranchMatch) out(`  not ready: the pull request does not merge into ${address.targetBranch}`);
  if (r.requiresImpactedTargets && !r.hasImpactedTargets) out(`  not ready: no impacted targets for its head ${short(pr.prSha)} (greenline targets set)`);
  if (r.gitHubMergeability !== "mergeable") out(`  mergeability: ${r.gitHubMergeability}`);
  try {
    for (const line of testingLines(await ctx.post<TestingDetails>("getMergeQueueTestingDetails", address))) out(line);
  } catch (error) {
    if (!(error instanceof GreenlineRefusal && error.status === 404)) throw error;
    out("  no test run yet");
  }
  if (!pr.isCurrentlySubmittedToQueue) {
    out(`greenline: PR #${pr.prNumber} is not in the queue (${pr.state})`);
    return 1;
  }
  return 0;
}

/** `greenline queue show`: the queue's state, settings that shape it, and its pull requests in order. */
export async function queueShow(options: QueueOptions, out: Out): Promise<number> {
  const ctx = new Context(options);
  const address = ctx.queue();
  const queue = await ctx.post<Queue>("getQueue", address);
  if (options.json) {
    out(JSON.stringify(queue, null, 2));
    return 0;
  }
  // The engine forms batches of batchingMinSize PRs (fewer after batchingMaxWaitTimeMinutes) up to twice that (docs/engine.md).
  const batching = queue.batch ? `batches of ${queue.batchingMinSize} to ${Math.max(1, queue.batchingMinSize * 2)} PRs (fewer after ${queue.batchingMaxWaitTimeMinutes} min)` : "no batching";
  const budget = queue.ciBudget ? `, CI budget ${queue.ciBudget} run(s) at once` : "";
  // Adaptive tuning picks the runs and batches itself (docs/engine.md): what it picks now, not the fixed settings.
  const shape = queue.tuned
    ? `adaptive tuning: up to ${queue.tuned.concurrency} run(s) in flight, batches of up to ${queue.tuned.largestBatch} PRs (observed failure rate ${(queue.tuned.observedFailureRate * 100).toFixed(1)}% per PR)`
    : `concurrency ${queue.concurrency}, ${batching}`;
  out(`The ${queueName(address)}: ${queue.state}; ${queue.mode} mode, ${shape}${budget}`);
  if (queue.requiredStatusesSource === "merge_instance") out(`  required statuses (set on the queue): ${queue.requiredStatuses.join(", ")}`);
  else out(`  required statuses: as the code host's rules for the branch say (${queue.requiredStatusesSource})`);
  if (queue.requiredStatusesWarning) out(`  warning: ${queue.requiredStatusesWarning}`);
  if (queue.freeze?.frozen) {
    const until = queue.freeze.until === null ? "it is unfrozen" : `${queue.freeze.until.slice(0, 16).replace("T", " ")} UTC`;
    out(`  frozen until ${until} (${queue.freeze.reasons.join("; ")}): only hotfixes merge`);
  }
  const prs = queue.enqueuedPullRequests;
  out(prs.length === 0 ? "  no pull requests in the queue" : `  ${prs.length} pull request(s):`);
  prs.forEach((p, i) => out(`  ${String(i + 1).padStart(3)}. #${p.prNumber}  ${stateOf(p)}  ${p.priorityName}  ${p.prTitle}`));
  return 0;
}

/** `greenline queue pause|resume`. */
export async function queueSetState(options: QueueOptions, state: "paused" | "running", out: Out): Promise<number> {
  const ctx = new Context(options);
  const address = ctx.queue();
  const queue = await ctx.post<{ state: string }>("updateQueue", { ...address, state });
  out(`greenline: the ${queueName(address)} is ${queue.state}`);
  return 0;
}

type SetupCheck = { context: string; verdict: string; why: string; fix: string | null };
type SetupReport = { ok: boolean; mode: string; queueExists: boolean; checks: SetupCheck[]; warnings: string[]; workflowsUnavailable: string | null; workflowsNotRead: string[] };

/**
 * `greenline doctor`: will the queue ever merge anything? Each required check, whether it will
 * report on the queue's testing commits, why not and the fix (checkQueueSetup). Exit 0 when
 * every required check reports, 1 otherwise.
 */
export async function doctor(options: QueueOptions, out: Out): Promise<number> {
  if (options.mode !== undefined && options.mode !== "push" && options.mode !== "draft_pr") throw new CliUsageError(`--mode must be push or draft_pr (got ${options.mode})`);
  const ctx = new Context({ ...options, "target-branch": options["target-branch"] ?? options.branch });
  const address = ctx.queue();
  const report = await ctx.post<SetupReport>("checkQueueSetup", { ...address, ...(options.mode ? { mode: options.mode } : {}) });
  // Exit 1 when a required check will not or may not report; 0 when the rest is only what Greenline cannot read (said, not failed on).
  const failing = report.checks.some((c) => c.verdict === "never" || c.verdict === "passes_without_running" || c.verdict === "maybe") || (!report.ok && report.checks.every((c) => c.verdict === "reports"));
  if (options.json) {
    out(JSON.stringify(report, null, 2));
    return failing ? 1 : 0;
  }
  const how = report.mode === "draft_pr" ? "testing branches with draft pull requests" : "pushed testing branches";
  out(`Preflight of the ${queueName(address)} (${how}${report.queueExists ? "" : "; no queue yet: its defaults"}):`);
  if (report.workflowsUnavailable) out(`  ${report.workflowsUnavailable}`);
  if (report.checks.length === 0) out("  no required checks");
  for (const check of report.checks) {
    out(`  ${check.verdict === "reports" ? "ok  " : check.verdict === "unknown" ? "????" : "FAIL"} ${check.context}: ${CHECK_VERDICT_WORDS[check.verdict] ?? check.verdict}`);
    if (check.verdict !== "reports") {
      out(`       ${check.why}`);
      if (check.fix) out(`       fix: ${check.fix}`);
    }
  }
  for (const warning of report.warnings) out(`  warning: ${warning}`);
  if (report.workflowsNotRead.length > 0) out(`  not read (past the first 50): ${report.workflowsNotRead.join(", ")}`);
  out(
    report.ok
      ? "Every required check will report on testing commits."
      : failing
        ? "The queue would wait on the checks marked FAIL (or merge without them): fix them before turning it on."
        : "Greenline cannot tell for the checks marked ????: make sure they report on greenline/** (exit 0).",
  );
  return failing ? 1 : 0;
}

/** The file, or stdin for `-`. */
async function readInput(file: string): Promise<string> {
  if (file !== "-") {
    try {
      return readFileSync(file, "utf8");
    } catch (error) {
      throw new CliUsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

const MAX_TARGET_LENGTH = 4096;

/** One target a line, blank lines and surrounding spaces ignored; `ALL` alone means every target; nothing means none. */
export function parseTargets(text: string, source: string): string[] | "ALL" {
  const targets = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);
  if (targets.length === 1 && targets[0] === "ALL") return "ALL";
  if (targets.includes("ALL")) throw new CliUsageError(`${source}: ALL must be the only line (it means every target); found it among ${targets.length} lines`);
  const long = targets.findIndex((t) => t.length > MAX_TARGET_LENGTH);
  if (long !== -1) throw new CliUsageError(`${source}: target ${long + 1} is longer than ${MAX_TARGET_LENGTH} characters`);
  return targets;
}

/** `greenline targets set <file|->`: the targets the PR's head impacts. */
export async function targetsSet(options: QueueOptions, file: string | undefined, out: Out): Promise<number> {
  if (!file) throw new CliUsageError("targets set needs a file of targets, one a line (or - for stdin)");
  const ctx = new Context(options);
  const address = ctx.queue();
  const number = ctx.prNumber();
  const sha = (options.commit ?? ctx.inferred.headSha ?? ctx.inferred.commit)?.trim();
  if (sha !== undefined && !/^[0-9a-f]{7,64}$/i.test(sha)) throw new CliUsageError(`--commit must be a commit sha (hex, 7 to 64 digits; got ${sha})`);
  const impactedTargets = parseTargets(await readInput(file), file === "-" ? "stdin" : file);
  await ctx.post("setImpactedTargets", { ...address, pr: { number, ...(sha ? { sha } : {}) }, impactedTargets });
  const what = impactedTargets === "ALL" ? "ALL targets (every target)" : `${impactedTargets.length} impacted target(s)`;
  out(`greenline: set ${what} for PR #${number}${sha ? ` at ${short(sha)}` : " at its head"} in the ${queueName(address)}`);
  return 0;
}
