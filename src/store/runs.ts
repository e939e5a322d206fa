import type { TestRun as RunRow } from "../generated/sqlite/client.js";
import type { EngineRun, RunFailure, RunStatus } from "../domain/engine/types.js";
import type { CheckState } from "../domain/status-checks.js";
import { jsonNumbers, jsonRecordOf, oneOf, oneOfOrNull } from "./columns.js";
import type { Tx } from "./database.js";
import { toQueue, type Queue } from "./queues.js";

const RUN_KINDS: readonly EngineRun["kind"][] = ["main", "bisection"];
const RUN_STATUSES: readonly RunStatus[] = ["running", "passed", "failed", "cancelled"];
const RUN_FAILURES: readonly RunFailure[] = ["tests_failed", "timeout", "merge_conflict", "start_refused"];
const CHECK_STATES: readonly CheckState[] = ["pending", "success", "failure", "error"];

/** A testing run as stored: the engine's run, and what the code host made of it. */
export type TestRun = {
  /** The row's id (the API's testRunId). */
  id: string;
  queueId: string;
  /** The engine's id of the run ("run-<n>"). */
  runId: string;
  kind: EngineRun["kind"];
  baseSha: string;
  stack: number[];
  tested: number[];
  status: RunStatus;
  failure: RunFailure | null;
  startedAt: Date;
  finishedAt: Date | null;
  testBranch: string | null;
  testBranchSha: string | null;
  /** What CI reported on the testing branch, per context. */
  statusChecks: Record<string, CheckState>;
  /** No PR it tested is in line any more: the engine no longer loads it. */
  archived: boolean;
};

export function toTestRun(row: RunRow): TestRun {
  return {
    id: row.id,
    queueId: row.queueId,
    runId: row.runId,
    kind: oneOf(RUN_KINDS, row.kind, "TestRun.kind"),
    baseSha: row.baseSha,
    stack: jsonNumbers(row.stack, "TestRun.stack"),
    tested: jsonNumbers(row.tested, "TestRun.tested"),
    status: oneOf(RUN_STATUSES, row.status, "TestRun.status"),
    failure: oneOfOrNull(RUN_FAILURES, row.failure, "TestRun.failure"),
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    testBranch: row.testBranch,
    testBranchSha: row.testBranchSha,
    statusChecks: jsonRecordOf(CHECK_STATES, row.statusChecks, "TestRun.statusChecks"),
    archived: row.archived,
  };
}

/** The queue's run `runId`, or null. */
export async function runOf(tx: Tx, queueId: string, runId: string): Promise<TestRun | null> {
  const row = await tx.testRun.findUnique({ where: { queueId_runId: { queueId, runId } } });
  return row && toTestRun(row);
}

/** The run with the row id `id`, or null. */
export async function findRun(tx: Tx, id: string): Promise<TestRun | null> {
  const row = await tx.testRun.findUnique({ where: { id } });
  return row && toTestRun(row);
}

/** Records the testing branch the code host built for the run. */
export async function recordTestBranch(tx: Tx, id: string, testBranch: string, sha: string): Promise<void> {
  await tx.testRun.update({ where: { id }, data: { testBranch, testBranchSha: sha } });
}

/** Records what CI has reported on the run's testing branch. */
export async function recordStatusChecks(tx: Tx, id: string, checks: Record<string, CheckState>): Promise<void> {
  await tx.testRun.update({ where: { id }, data: { statusChecks: JSON.stringify(checks) } });
}

/** The running runs whose testing branch is at `sha` in the repository, each with its queue. */
export async function runningRunsAt(tx: Tx, repositoryKey: string, sha: string): Promise<(TestRun & { queue: Queue })[]> {
  const rows = await tx.testRun.findMany({ where: { testBranchSha: sha, status: "running", queue: { repository: { key: repositoryKey } } }, include: { queue: true } });
  return rows.map((row) => ({ ...toTestRun(row), queue: toQueue(row.queue) }));
}

/** The queue's runs started at or after `since`, newest first (at most `limit`). */
export async function runsStartedSince(tx: Tx, queueId: string, since: Date, limit: number): Promise<TestRun[]> {
  const rows = await tx.testRun.findMany({ where: { queueId, startedAt: { gte: since } }, orderBy: { startedAt: "desc" }, take: limit });
  return rows.map(toTestRun);
}
