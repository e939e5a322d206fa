import { repositoryKey, type CiJob, type CiSnapshot, type RepoRef } from "../ports/code-host.js";
import type { EngineEvent } from "../domain/engine/types.js";
import { awaitsConfirmation, isFailedState, nextCiPollAt, verdictOf, withReports, type CheckReport, type RequiredChecks } from "../domain/status-checks.js";
import { findRun, recordCiPolled, recordStatusChecks, runningRunsAt, runsInFlight, type TestRun } from "../store/runs.js";
import type { Queue } from "../store/queues.js";
import { applyQueueEvent } from "./queue-events.js";
import { failedCheckRunIds, jobsOf, judgeFailedRun } from "./flake-verdicts.js";
import type { Services } from "../app/services.js";

/** Reconciliation polling of runs in flight: first after `firstMs`, then doubling up to `maxMs`. */
export type CiPollSettings = { firstMs: number; maxMs: number };
export const DEFAULT_CI_POLL: CiPollSettings = { firstMs: 30_000, maxMs: 5 * 60_000 };

/**
 * The checks a queue's testing branches must pass: the queue's requiredStatuses when it sets
 * some, else what the code host requires of the target branch ("unknown" when it cannot say:
 * the run then waits, it never passes on it).
 */
export async function requiredChecksOf(services: Services, repo: RepoRef, queue: Pick<Queue, "branch" | "requiredStatuses">): Promise<RequiredChecks> {
  if (queue.requiredStatuses !== null) return { contexts: queue.requiredStatuses, source: "queue" };
  try {
    return await services.codeHost.requiredStatuses(repo, queue.branch);
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
 * Records reports on a run and, under the queue's lock, decides it when the checks say so.
 * Answers "decided", or "confirm" when every check reported is green but nothing is required
 * (the code host must say CI finished), or "waiting".
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
  let outcome: "confirm" | "waiting" = "waiting";
  // A failure is judged with the host's records of the failed checks' jobs, read first (no I/O
  // under the queue's lock): only when these reports hold one (a check already judged needs none).
  const recorded = reports.some((r) => isFailedState(r.state)) ? await services.db.read((tx) => findRun(tx, runRowId)) : null;
  const seen = recorded ? withReports(recorded.statusChecks, reports) : {};
  const jobs = recorded && verdictOf(required, seen, finished) === "failed" ? await jobsOf(services, repo, failedCheckRunIds(required, seen)) : new Map<number, CiJob | null>();
  const event: Extract<EngineEvent, { kind: "run_finished" }> = { kind: "run_finished", runId: "", outcome: "passed" };
  const applied = await applyQueueEvent(services, queueId, event, async (tx, queue) => {
    const fresh = await findRun(tx, runRowId);
    if (!fresh || fresh.status !== "running") return false;
    const checks = withReports(fresh.statusChecks, reports);
    if (JSON.stringify(checks) !== JSON.stringify(fresh.statusChecks)) await recordStatusChecks(tx, fresh.id, checks);
    let verdict = verdictOf(required, checks, finished);
    // A failure is judged on the run's test results first (flakeHandling): it may not count.
    if (verdict === "failed") verdict = await judgeFailedRun(services, tx, queue, { ...fresh, statusChecks: checks }, required, checks, finished, { newReport: false, soleCheck: false, jobs });
    if (verdict === null) {
      if (finished === null && awaitsConfirmation(required, checks)) outcome = "confirm";
      return false;
    }
    event.runId = fresh.runId;
    event.outcome = verdict;
    return true;
  });
  return applied ? "decided" : outcome;
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
  let decided = 0;
  for (const run of due) if (!belowReserve(services, run.queue.repository)) decided += await pollRun(services, run, now);
  return decided;
}

function belowReserve(services: Services, repo: RepoRef): boolean {
  const until = services.codeHost.rateBudget?.reserveReachedUntil(repo) ?? null;
  return until !== null && until > services.now().getTime();
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
