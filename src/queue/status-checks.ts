import { accountKeyOf, outagesOf } from "../store/installation-outages.js";
import { rateReserveUntil, repositoryKey, type CiJob, type CiSnapshot, type PolledEvents, type RepoRef } from "../ports/code-host.js";
import type { EngineEvent } from "../domain/engine/types.js";
import { awaitsConfirmation, isFailedState, nextCiPollAt, verdictOf, withReports, type CheckReport, type ReportedCheck, type RequiredChecks } from "../domain/status-checks.js";
import { findRun, recordCiPolled, runOf, recordStatusChecks, runningRunsAt, runsInFlight, type TestRun } from "../store/runs.js";
import type { Queue } from "../store/queues.js";
import type { Tx } from "../store/database.js";
import { applyQueueEventOf } from "./queue-events.js";
import { failedCheckRunIds, jobsOf, judgeFailedRun, type JudgeOptions } from "./flake-verdicts.js";
import type { Services } from "../app/services.js";

/** Reconciliation polling of runs in flight: first after `firstMs`, then doubling up to `maxMs`. */
export type CiPollSettings = { firstMs: number; maxMs: number };
export const DEFAULT_CI_POLL: CiPollSettings = { firstMs: 30_000, maxMs: 5 * 60_000 };

/**
 * The checks a queue's testing branches must pass: the queue's requiredStatuses when it sets
 * some, else what the code host requires of the target branch ("unknown" when it cannot say:
 * the run then waits, it never passes on it); less the queue's pullRequestChecks, which each
 * PR's own head satisfies (GitHub's branch rules check them there when it merges).
 */
export async function requiredChecksOf(services: Services, repo: RepoRef, queue: Pick<Queue, "branch" | "requiredStatuses"> & { pullRequestChecks?: readonly string[] }): Promise<RequiredChecks> {
  // The checks taken from each PR's own head (pullRequestChecks) are not waited for on testing branches.
  const fromHead = new Set(queue.pullRequestChecks ?? []);
  const onTestingBranches = (required: RequiredChecks): RequiredChecks => (fromHead.size === 0 ? required : { ...required, contexts: required.contexts.filter((c) => !fromHead.has(c)) });
  if (queue.requiredStatuses !== null) return onTestingBranches({ contexts: queue.requiredStatuses, source: "queue" });
  try {
    return onTestingBranches(await services.codeHost.requiredStatuses(repo, queue.branch));
  } catch (error) {
    services.log?.warn({ err: error, repo, branch: queue.branch }, "the checks the target branch requires could not be read");
    return { contexts: [], source: "unknown" };
  }
}

/** What the code host requires of a queue's target branch (whatever the queue's own list), for the API. */
export function hostRequiredChecks(services: Services, address: { repo: RepoRef; targetBranch: string }): Promise<RequiredChecks> {
  return requiredChecksOf(services, address.repo, { branch: address.targetBranch, requiredStatuses: null });
}

/**
 * What a running run's checks (as now recorded) come to, judged under the queue's lock: the
 * engine event that settles it (finished, or its failed jobs to run again), or why there is none
 * yet: "confirm" (every reported check is green but nothing is required: the code host must say
 * CI finished) or "waiting". The one way from CI results to the engine, for reported checks and
 * for a polled host's results alike.
 */
export async function settleRunEvent(services: Services, tx: Tx, queue: Queue, run: TestRun, required: RequiredChecks, finished: boolean | null, options: JudgeOptions): Promise<EngineEvent | "confirm" | "waiting"> {
  const checks = run.statusChecks;
  let verdict = verdictOf(required, checks, finished);
  if (verdict === "failed") {
    // A failure is judged on the run's test results first (flakeHandling): it may not count.
    const judged = await judgeFailedRun(services, tx, queue, run, required, checks, finished, options);
    if (judged !== null && typeof judged === "object") return { kind: "jobs_rerun_requested", runId: run.runId, checkRunIds: judged.rerun };
    verdict = judged;
  }
  if (verdict === null) return finished === null && awaitsConfirmation(required, checks) ? "confirm" : "waiting";
  return { kind: "run_finished", runId: run.runId, outcome: verdict };
}

/**
 * Records reports on a run and, under the queue's lock, settles it when the checks say so.
 * Answers "decided" (the run finished), or "confirm" when every check reported is green but
 * nothing is required (the code host must say CI finished), or "waiting" (a re-run of failed
 * jobs included).
 */
async function settleRun(
  services: Services,
  repo: RepoRef,
  runRowId: string,
  queueId: string,
  required: RequiredChecks,
  reports: readonly CheckReport[],
  finished: boolean | null,
): Promise<"decided" | "confirm" | "waiting"> {
  let outcome: "decided" | "confirm" | "waiting" = "waiting";
  // A failure is judged with the host's records of the failed checks' jobs, read first (no I/O
  // under the queue's lock): only when these reports hold one (a check already judged needs none).
  const recorded = reports.some((r) => isFailedState(r.state)) ? await services.db.read((tx) => findRun(tx, runRowId)) : null;
  const seen = recorded ? withReports(recorded.statusChecks, reports) : {};
  const jobs = recorded && verdictOf(required, seen, finished) === "failed" ? await jobsOf(services, repo, failedCheckRunIds(required, seen)) : new Map<number, CiJob | null>();
  await applyQueueEventOf(services, queueId, async (tx, queue) => {
    const fresh = await findRun(tx, runRowId);
    if (!fresh || fresh.status !== "running") return null;
    const checks = withReports(fresh.statusChecks, reports);
    if (JSON.stringify(checks) !== JSON.stringify(fresh.statusChecks)) await recordStatusChecks(tx, fresh.id, checks);
    const settled = await settleRunEvent(services, tx, queue, { ...fresh, statusChecks: checks }, required, finished, { newReport: false, soleCheck: false, jobs });
    if (typeof settled === "string") {
      outcome = settled;
      return null;
    }
    outcome = settled.kind === "run_finished" ? "decided" : "waiting";
    return settled;
  });
  return outcome;
}

/** A polled host's CI result is one check (named by the host, else "ci"), finished: what the run is settled on. */
function polledChecks(outcome: "passed" | "failed", check = "ci"): { required: RequiredChecks; checks: Record<string, ReportedCheck> } {
  return { required: { contexts: [check], source: "queue" }, checks: { [check]: { state: outcome === "passed" ? "success" : "failure", kind: "status", id: null } } };
}

/**
 * Applies the CI results a polled code host has due, each marked delivered in the transaction
 * that applies it (a result whose queue is gone is marked delivered all the same, so it is not
 * polled again), settled as reported checks are (settleRunEvent). Answers how many were applied.
 */
export async function deliverPolledCiResults(services: Services, polling: PolledEvents): Promise<number> {
  let applied = 0;
  for (const result of await polling.dueCiResults(services.now())) {
    const decision = await applyQueueEventOf(services, result.queueId, async (tx, queue) => {
      if (!(await polling.markDelivered(tx, result.id, services.now()))) return null;
      const run = await runOf(tx, queue.id, result.runId);
      // A result of a run already decided: the engine ignores it.
      if (!run || run.status !== "running") return { kind: "run_finished", runId: result.runId, outcome: result.outcome };
      const { required, checks } = polledChecks(result.outcome, result.check);
      const settled = await settleRunEvent(services, tx, queue, { ...run, statusChecks: checks }, required, true, { newReport: true, soleCheck: true, jobs: new Map() });
      return typeof settled === "string" ? null : settled;
    });
    if (decision) applied++;
    else await services.db.transaction((tx) => polling.markDelivered(tx, result.id, services.now()));
  }
  return applied;
}

/** The code host's view of a commit's CI, or null when it offers none or does not answer now. */
async function snapshotOf(services: Services, repo: RepoRef, sha: string): Promise<CiSnapshot | null> {
  if (!services.codeHost.ciResults) return null;
  try {
    return await services.codeHost.ciResults.ciStatusOf(repo, sha);
  } catch (error) {
    services.log?.warn({ err: error, repo, sha }, "CI results could not be read");
    return null;
  }
}

/**
 * A status (or check run) reported on a commit. When the commit is the head of a running
 * testing branch, the report is recorded on its run (a late or repeated report never takes
 * a check back: withReport) and the run is decided as soon as the required checks say so.
 * Reports on other commits are ignored. Never throws on a refusal of the code host (a webhook
 * delivery is not redelivered): what cannot be read now is read again by the polling.
 * Answers how many runs it decided.
 */
export async function reportStatus(services: Services, repo: RepoRef, sha: string, report: CheckReport): Promise<number> {
  const runs = await services.db.read((tx) => runningRunsAt(tx, repositoryKey(repo), sha));
  let decided = 0;
  for (const run of runs) {
    const required = await requiredChecksOf(services, repo, run.queue);
    let outcome = await settleRun(services, repo, run.id, run.queueId, required, [report], null);
    if (outcome === "confirm") {
      const snapshot = await snapshotOf(services, repo, sha);
      if (snapshot) outcome = await settleRun(services, repo, run.id, run.queueId, required, snapshot.checks, snapshot.finished);
    }
    if (outcome === "decided") decided++;
  }
  return decided;
}

/**
 * Reads the code host's view of CI on a commit and settles the running runs whose testing
 * branch is at it: for deliveries that say CI changed without saying how (a completed check
 * suite, say). Never throws on a refusal of the code host. Answers how many runs it decided.
 */
export async function reconcileCommit(services: Services, repo: RepoRef, sha: string): Promise<number> {
  const runs = await services.db.read((tx) => runningRunsAt(tx, repositoryKey(repo), sha));
  if (runs.length === 0) return 0;
  const snapshot = await snapshotOf(services, repo, sha);
  if (!snapshot) return 0;
  let decided = 0;
  for (const run of runs) {
    const required = await requiredChecksOf(services, repo, run.queue);
    if ((await settleRun(services, repo, run.id, run.queueId, required, snapshot.checks, snapshot.finished)) === "decided") decided++;
  }
  return decided;
}

/**
 * Reconciles runs in flight with the code host's own view of their CI (deliveries get lost
 * and reordered): each run is polled on its own schedule (nextCiPollAt), so a lost delivery
 * costs at most one interval and a long run a handful of reads. Answers how many runs were
 * decided.
 */
export async function reconcileRunsInFlight(services: Services, poll: CiPollSettings = DEFAULT_CI_POLL): Promise<number> {
  if (!services.codeHost.ciResults) return 0;
  const now = services.now();
  const runs = await services.db.read((tx) => runsInFlight(tx));
  // A poll is a retry of what the deliveries said: it waits while the installation has less
  // than its reserve of the rate limit left (asked again at the next tick, at no cost).
  // Asked before each run's poll: polls in one tick must not carry the installation past it.
  const due = runs.filter((run) => nextCiPollAt(run.startedAt.getTime(), run.ciPolledAt?.getTime() ?? null, poll) <= now.getTime());
  if (due.length === 0) return 0;
  // An account whose installation is suspended or gone is not asked: its probe says when GitHub answers again.
  const outages = await services.db.read((tx) => outagesOf(tx, [...new Set(due.map((run) => accountKeyOf(run.queue.repository)))]));
  let decided = 0;
  for (const run of due) if (!outages.has(accountKeyOf(run.queue.repository)) && !belowReserve(services, run.queue.repository)) decided += await pollRun(services, run, now);
  return decided;
}

function belowReserve(services: Services, repo: RepoRef): boolean {
  return rateReserveUntil(services.codeHost, repo, services.now().getTime()) !== null;
}

async function pollRun(services: Services, run: TestRun & { queue: Queue & { repository: RepoRef } }, now: Date): Promise<number> {
  const repo = run.queue.repository;
  // Marked first: a host that does not answer is asked again after the next interval, not at every tick.
  await services.db.transaction((tx) => recordCiPolled(tx, run.id, now));
  const snapshot = await snapshotOf(services, repo, run.testBranchSha!);
  if (!snapshot) return 0;
  const required = await requiredChecksOf(services, repo, run.queue);
  return (await settleRun(services, repo, run.id, run.queueId, required, snapshot.checks, snapshot.finished)) === "decided" ? 1 : 0;
}
