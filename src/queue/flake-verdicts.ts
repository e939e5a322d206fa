import { FLAKE_VERDICT_REASONS, ENGINE_ACTOR, timelineEventOf } from "../domain/timeline.js";
import { alreadyJudged, isExcused, judgeFailedChecks, NEW_FLAKE_RECORD, recordVerdict, uploadsOfCheck, type FlakeRecord, type FlakeVerdict, type VerdictCheck } from "../domain/flaky/verdict.js";
import type { CiJob, RepoRef } from "../ports/code-host.js";
import { isFailedState, verdictOf, type ReportedCheck, type RequiredChecks } from "../domain/status-checks.js";
import type { Tx } from "../store/database.js";
import { runEvidence } from "../store/flaky/runs.js";
import type { Queue } from "../store/queues.js";
import { recordFlakeVerdict, runFactsOf, type TestRun } from "../store/runs.js";
import { appendToTimelinesOf } from "../store/entries.js";
import { repositoryById } from "../store/repositories.js";
import { checkUrlOf } from "./queue-events.js";
import type { Services } from "../app/services.js";

/**
 * Flake-aware verdicts (docs/flaky-queue.md): a running run whose checks say it failed is
 * judged on its test results, per the queue's flakeHandling, before the engine hears of it.
 * Everything happens in the caller's transaction, under the queue's lock: the verdict, the
 * retry's effect and the timeline entries commit with the check report that caused them.
 */

/** The checks with the excused ones counted as passed. */
function withExcused(checks: Readonly<Record<string, ReportedCheck>>, record: FlakeRecord): Record<string, ReportedCheck> {
  return Object.fromEntries(Object.entries(checks).map(([context, check]) => [context, isExcused(record, { context, ...check }) ? { ...check, state: "success" as const } : check]));
}

/** The failed checks the verdict is about: the required ones, or every reported one when none is required. */
function failedChecksOf(required: RequiredChecks, checks: Readonly<Record<string, ReportedCheck>>): (ReportedCheck & { context: string })[] {
  const names = required.contexts.length > 0 ? required.contexts : Object.keys(checks);
  return names.flatMap((context) => {
    const check = checks[context];
    return check && isFailedState(check.state) ? [{ context, ...check }] : [];
  });
}

/** The check runs of the failed checks (what the host's job records are asked about before judging). */
export function failedCheckRunIds(required: RequiredChecks, checks: Readonly<Record<string, ReportedCheck>>): number[] {
  return failedChecksOf(required, checks).flatMap((c) => (c.kind === "check_run" && c.id !== null ? [c.id] : []));
}

/** The host's job records of check runs, for the verdict (read before its transaction: no I/O under the queue's lock). */
export async function jobsOf(services: Services, repo: RepoRef, checkRunIds: readonly number[]): Promise<Map<number, CiJob | null>> {
  const jobs = new Map<number, CiJob | null>();
  const retries = services.codeHost.ciRetries;
  for (const id of checkRunIds) {
    try {
      jobs.set(id, retries ? await retries.jobOf(repo, id) : null);
    } catch (error) {
      // Unknown: the failure cannot be excused, which is the safe side.
      services.log?.warn({ err: error, repo, checkRunId: id }, "the CI job behind a check run could not be read");
      jobs.set(id, null);
    }
  }
  return jobs;
}

/** How the verdict reads the checks: a polled host's single result, or checks reported one by one with their jobs. */
export type JudgeOptions = {
  /** The failure is a new result whatever its check id says (a polled result). */
  newReport: boolean;
  /** The host's CI result is one check, one step: uploads naming no check are its, and its failure can be its tests' alone. */
  soleCheck: boolean;
  /** The host's job records of the failed check runs (jobsOf). */
  jobs: ReadonlyMap<number, CiJob | null>;
};

/** Whether a check's failure can be its tests' alone: its job failed at one step and skipped none after it. */
function excusable(check: ReportedCheck, options: JudgeOptions): boolean {
  if (options.soleCheck) return true;
  const job = check.kind === "check_run" && check.id !== null ? options.jobs.get(check.id) : null;
  return job !== null && job !== undefined && job.completed && job.failedSteps === 1 && job.skippedAfterFailure === 0;
}

/**
 * The verdict on a running run whose checks (`checks`, as just recorded) say it failed:
 * "failed" (the failure counts: the engine hears it), "passed" (the failures are excused and the
 * rest passed), `{ rerun }` (its failed jobs are to run again: the engine plans that, and the run
 * waits for them), or null (waiting for the other checks, or for re-runs asked before).
 */
export async function judgeFailedRun(
  services: Services,
  tx: Tx,
  queue: Queue,
  run: TestRun,
  required: RequiredChecks,
  checks: Readonly<Record<string, ReportedCheck>>,
  finished: boolean | null,
  options: JudgeOptions,
): Promise<"passed" | "failed" | { rerun: number[] } | null> {
  if (queue.flakeHandling === "off") return "failed";
  const record = run.flakeVerdict ?? NEW_FLAKE_RECORD;
  const effective = withExcused(checks, record);
  const before = verdictOf(required, effective, finished);
  if (before !== "failed") return before;
  const all: VerdictCheck[] = failedChecksOf(required, effective).map((check) => ({ ...check, excusable: excusable(check, options) }));
  // Checks judged at these very reports already have their failed jobs running again: only the
  // others are judged now (each check has its own retries), and the run waits for those re-runs.
  const pending = options.newReport ? [] : all.filter((check) => alreadyJudged(record, check));
  const failed = options.newReport ? all : all.filter((check) => !alreadyJudged(record, check));
  if (failed.length === 0) return null;
  const evidence = await runEvidence(tx, run);
  const verdict = judgeFailedChecks({ mode: queue.flakeHandling, maxRetries: queue.flakyRetries, record, failed, soleCheck: options.soleCheck, ...evidence });
  const read = failed.flatMap((check) => uploadsOfCheck(check, evidence.uploads, options.soleCheck).map((u) => u.id));
  const next = recordVerdict(record, verdict, failed, read);
  await recordFlakeVerdict(tx, run.id, next);
  if (verdict.decision === "fail") return "failed";
  const reason = verdict.decision === "excuse" ? "flaky_failures_excused" : verdict.rule === "infrastructure_retry" ? "infrastructure_retry" : "flaky_retry";
  await recordVerdictTimeline(services, tx, queue, { ...run, flakeVerdict: next }, reason, verdict);
  if (verdict.decision === "retry") return { rerun: failed.flatMap((c) => (c.kind === "check_run" && c.id !== null ? [c.id] : [])) };
  // Excused: passed, unless a check still waits for its re-run.
  const waiting = new Set(pending.map((check) => check.context));
  const after = Object.fromEntries(Object.entries(withExcused(checks, next)).map(([context, check]) => [context, waiting.has(context) ? { ...check, state: "pending" as const } : check]));
  return verdictOf(required, after, finished);
}

/** A timeline entry, on each PR the run decides for, of a verdict that moves no PR. */
export async function recordVerdictTimeline(services: Services, tx: Tx, queue: Queue, run: TestRun, reason: string, verdict: FlakeVerdict | null, hostMessage: string | null = null): Promise<void> {
  if (!FLAKE_VERDICT_REASONS.has(reason)) throw new Error(`not a verdict's timeline reason: ${reason}`);
  const repo = await repositoryById(tx, queue.repositoryId);
  const context = { at: services.now(), cause: { actor: ENGINE_ACTOR }, run: runFactsOf(run, verdict), requiredChecks: queue.requiredStatuses, checkUrl: checkUrlOf(repo) };
  const message = hostMessage !== null ? { message: hostMessage } : {};
  await appendToTimelinesOf(
    tx,
    queue.id,
    run.tested,
    (entry) => timelineEventOf({ prNumber: entry.prNumber, from: entry.state, to: entry.state, reason, ...message }, { ...context, prHead: entry.prSha }),
    services.newId,
  );
}
