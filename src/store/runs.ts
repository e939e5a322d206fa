import { runNumberOf } from "../domain/engine/run-ids.js";
import type { FlakeRecord, FlakeVerdict } from "../domain/flaky/verdict.js";
import type { RunFacts } from "../domain/timeline.js";
import type { TestRun as RunRow } from "../generated/sqlite/client.js";
import type { EngineRun, RunFailure, RunStatus } from "../domain/engine/types.js";
import type { CheckState, ReportedCheck } from "../domain/status-checks.js";
import { RUN_DIAGNOSIS_CODES, type RunDiagnosis } from "../domain/diagnoses.js";
import { jsonNumbers, oneOf, oneOfOrNull, prismaShaped } from "./columns.js";
import { sqlOf, type Tx } from "./database.js";
import { queuesInRepositoryByIds, toQueue, type Queue, type QueueInRepository } from "./queues.js";

const RUN_KINDS: readonly EngineRun["kind"][] = ["main", "bisection"];
const RUN_STATUSES: readonly RunStatus[] = ["running", "passed", "failed", "cancelled"];
const RUN_FAILURES: readonly RunFailure[] = ["tests_failed", "timeout", "merge_conflict", "start_refused"];
const CHECK_STATES: readonly CheckState[] = ["pending", "success", "failure", "error"];
const CHECK_KINDS: readonly ReportedCheck["kind"][] = ["status", "check_run"];

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
  /** What CI reported on the testing branch, per context (check name). */
  statusChecks: Record<string, ReportedCheck>;
  /** When the code host was last asked for the run's CI results; null: never. */
  ciPolledAt: Date | null;
  /** No PR it tested is in line any more: the engine no longer loads it. */
  archived: boolean;
  /** The tree it tested (domain/flaky/queue-evidence.ts treeKeyOf), once its testing branch is built. */
  treeKey: string | null;
  /**
   * Why test results linked to it read as an infrastructure failure (null: none did): the job
   * is re-run once, the PRs are not ejected for it (domain/flaky/verdict.ts).
   */
  infrastructureFailure: string | null;
  /** Why required checks never appeared on its testing branch (docs/diagnoses.md); null: none. */
  diagnosis: RunDiagnosis | null;
  /** What test results decided of its failed checks (domain/flaky/verdict.ts); null: never judged. */
  flakeVerdict: FlakeRecord | null;
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
    statusChecks: reportedChecksOf(row.statusChecks),
    ciPolledAt: row.ciPolledAt,
    archived: row.archived,
    treeKey: row.treeKey,
    infrastructureFailure: row.infrastructureFailure,
    diagnosis: diagnosisOf(row.diagnosis),
    flakeVerdict: row.flakeVerdict === null ? null : (JSON.parse(row.flakeVerdict) as FlakeRecord),
  };
}

/** A TestRun row read through plain SQL (sqlOf), as a TestRun. */
export function testRunOfSql(row: Record<string, unknown>): TestRun {
  return toTestRun(prismaShaped<RunRow>(row, ["archived"], ["startedAt", "finishedAt", "ciPolledAt"]));
}

/** The queue's runs not archived (the engine's), in no particular order. */
export async function activeRunsOf(tx: Tx, queueId: string): Promise<TestRun[]> {
  const rows = await sqlOf(tx).all<Record<string, unknown>>(`SELECT * FROM "TestRun" WHERE "queueId" = ? AND "archived" = ?`, [queueId, false]);
  return rows.map(testRunOfSql);
}

/** The queue's runs of these row ids (archived or not): the runs a decision reads again (queue-snapshots.ts). */
export async function runsOfIds(tx: Tx, queueId: string, ids: readonly string[]): Promise<TestRun[]> {
  if (ids.length === 0) return [];
  const sql = sqlOf(tx);
  const [inIds, param] = sql.anyOf(`"id"`, ids);
  const rows = await sql.all<Record<string, unknown>>(`SELECT * FROM "TestRun" WHERE "queueId" = ? AND ${inIds}`, [queueId, param]);
  return rows.map(testRunOfSql);
}

/** The engine's new runs, as rows (plain SQL: one statement on PostgreSQL). */
export async function insertRuns(tx: Tx, runs: readonly { id: string; queueId: string; run: EngineRun; archived: boolean }[]): Promise<void> {
  if (runs.length === 0) return;
  const columns = ["id", "queueId", "runId", "kind", "baseSha", "stack", "tested", "status", "failure", "startedAt", "finishedAt", "archived", "statusChecks"];
  await sqlOf(tx).insert(
    "TestRun",
    columns,
    runs.map(({ id, queueId, run, archived }) => [
      id,
      queueId,
      run.id,
      run.kind,
      run.baseSha,
      JSON.stringify(run.stack),
      JSON.stringify(run.tested),
      run.status,
      run.failure,
      new Date(run.startedAt),
      run.finishedAt === null ? null : new Date(run.finishedAt),
      archived,
      "{}",
    ]),
  );
}

/** Writes what the engine changed of a run (its row id `id`): status, failure, end, archived, and its new base when rebased. */
export async function updateRun(tx: Tx, id: string, run: EngineRun, archived: boolean, rebased: boolean): Promise<void> {
  const finishedAt = run.finishedAt === null ? null : new Date(run.finishedAt);
  if (rebased) {
    await sqlOf(tx).run(`UPDATE "TestRun" SET "status" = ?, "failure" = ?, "finishedAt" = ?, "archived" = ?, "baseSha" = ?, "stack" = ? WHERE "id" = ?`, [
      run.status,
      run.failure,
      finishedAt,
      archived,
      run.baseSha,
      JSON.stringify(run.stack),
      id,
    ]);
  } else {
    await sqlOf(tx).run(`UPDATE "TestRun" SET "status" = ?, "failure" = ?, "finishedAt" = ?, "archived" = ? WHERE "id" = ?`, [run.status, run.failure, finishedAt, archived, id]);
  }
}

/** The diagnosis column: JSON of a RunDiagnosis, or null. */
function diagnosisOf(text: string | null): RunDiagnosis | null {
  if (text === null) return null;
  const value = JSON.parse(text) as RunDiagnosis;
  return { ...value, code: oneOf(RUN_DIAGNOSIS_CODES, value.code, "TestRun.diagnosis.code") };
}

/** What a timeline entry says of a run (its evidence), with the verdict on its test results when one is given. */
export function runFactsOf(run: TestRun, flakeVerdict?: FlakeVerdict | null): RunFacts {
  return {
    id: run.runId,
    kind: run.kind,
    testBranch: run.testBranch,
    testBranchSha: run.testBranchSha,
    tested: run.tested,
    stack: run.stack,
    statusChecks: run.statusChecks,
    ...(flakeVerdict !== undefined ? { flakeVerdict } : {}),
  };
}

/** Records what test results decided of a run's failed checks. */
export async function recordFlakeVerdict(tx: Tx, id: string, record: FlakeRecord): Promise<void> {
  await tx.testRun.update({ where: { id }, data: { flakeVerdict: JSON.stringify(record) } });
}

/** Records a run's diagnosis. */
export async function recordDiagnosis(tx: Tx, id: string, diagnosis: RunDiagnosis): Promise<void> {
  await tx.testRun.update({ where: { id }, data: { diagnosis: JSON.stringify(diagnosis) } });
}

/**
 * The check names reported on the queue's latest `limit` testing branches (a bounded memory of
 * what the queue's CI reports), with how many of those runs were judged: built, and finished
 * or started before `judgedBefore` (a run just started has had no time to report anything).
 */
export async function seenCheckNames(tx: Tx, queueId: string, judgedBefore: Date, limit = 200, except?: string): Promise<{ names: Set<string>; judged: number }> {
  const rows = await tx.testRun.findMany({
    where: { queueId, testBranchSha: { not: null }, ...(except ? { id: { not: except } } : {}) },
    orderBy: { startedAt: "desc" },
    take: limit,
    select: { statusChecks: true, startedAt: true, finishedAt: true },
  });
  const names = new Set<string>();
  let judged = 0;
  for (const row of rows) {
    for (const name of Object.keys(reportedChecksOf(row.statusChecks))) names.add(name);
    if (row.finishedAt !== null || row.startedAt <= judgedBefore) judged++;
  }
  return { names, judged };
}

/** The statusChecks column: context → { state, kind, id }, or (rows written before ids were kept) context → state. */
function reportedChecksOf(text: string): Record<string, ReportedCheck> {
  const value: unknown = JSON.parse(text);
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("store: TestRun.statusChecks is not a JSON object");
  const out: Record<string, ReportedCheck> = {};
  for (const [context, item] of Object.entries(value as Record<string, unknown>)) {
    const column = `TestRun.statusChecks.${context}`;
    if (typeof item === "string") {
      out[context] = { state: oneOf(CHECK_STATES, item, column), kind: "status", id: null };
      continue;
    }
    const check = item as { state?: unknown; kind?: unknown; id?: unknown };
    const id = typeof check.id === "number" ? check.id : null;
    out[context] = { state: oneOf(CHECK_STATES, String(check.state), column), kind: oneOf(CHECK_KINDS, String(check.kind), `${column}.kind`), id };
  }
  return out;
}

/** The queue's run `runId`, or null. */
export async function runOf(tx: Tx, queueId: string, runId: string): Promise<TestRun | null> {
  const [row] = await sqlOf(tx).all<Record<string, unknown>>(`SELECT * FROM "TestRun" WHERE "queueId" = ? AND "runId" = ?`, [queueId, runId]);
  return row ? testRunOfSql(row) : null;
}

/** The run with the row id `id`, or null. */
export async function findRun(tx: Tx, id: string): Promise<TestRun | null> {
  const row = await tx.testRun.findUnique({ where: { id } });
  return row && toTestRun(row);
}

/** Records what CI has reported on the run's testing branch. */
export async function recordStatusChecks(tx: Tx, id: string, checks: Record<string, ReportedCheck>): Promise<void> {
  await tx.testRun.update({ where: { id }, data: { statusChecks: JSON.stringify(checks) } });
}

/** The running runs whose testing branch is at `sha` in the repository, each with its queue. */
export async function runningRunsAt(tx: Tx, repositoryKey: string, sha: string): Promise<(TestRun & { queue: Queue })[]> {
  const rows = await tx.testRun.findMany({ where: { testBranchSha: sha, status: "running", queue: { repository: { key: repositoryKey } } }, include: { queue: true } });
  return rows.map((row) => ({ ...toTestRun(row), queue: toQueue(row.queue) }));
}

/** Records that the code host was asked for the run's CI results at `at`. */
export async function recordCiPolled(tx: Tx, id: string, at: Date): Promise<void> {
  await tx.testRun.update({ where: { id }, data: { ciPolledAt: at } });
}

/** The running runs whose testing branch is built (CI can report on it), each with its queue. */
export async function runsInFlight(tx: Tx): Promise<(TestRun & { queue: QueueInRepository })[]> {
  // Plain SQL: every worker tick of every replica asks, twice (a Prisma query cost ~1–2 ms of CPU, issue 23 goal 3).
  const rows = await sqlOf(tx).all<Record<string, unknown>>(`SELECT * FROM "TestRun" WHERE "status" = 'running' AND "testBranchSha" IS NOT NULL ORDER BY "id"`);
  if (rows.length === 0) return [];
  const runs = rows.map(testRunOfSql);
  const queues = await queuesInRepositoryByIds(tx, [...new Set(runs.map((run) => run.queueId))]);
  return runs.flatMap((run) => {
    const queue = queues.get(run.queueId);
    return queue ? [{ ...run, queue }] : [];
  });
}

/** The queue's runs started at or after `since`, newest first (at most `limit`). */
export async function runsStartedSince(tx: Tx, queueId: string, since: Date, limit: number): Promise<TestRun[]> {
  const rows = await tx.testRun.findMany({ where: { queueId, startedAt: { gte: since } }, orderBy: { startedAt: "desc" }, take: limit });
  return rows.map(toTestRun);
}

/** The queue's running runs, oldest first. */
export async function runningRunsOf(tx: Tx, queueId: string): Promise<TestRun[]> {
  // Plain SQL: the blocked-reason sweep asks for every queue with PRs waiting (issue 23, goal 3).
  const rows = await sqlOf(tx).all<Record<string, unknown>>(`SELECT * FROM "TestRun" WHERE "queueId" = ? AND "status" = 'running'`, [queueId]);
  return rows.map(testRunOfSql).sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime() || runNumberOf(a.runId) - runNumberOf(b.runId));
}

/** How many runs each of the queues started at or after `since`. */
export async function runCountsSince(tx: Tx, queueIds: string[], since: Date): Promise<Map<string, number>> {
  const rows = await tx.testRun.groupBy({ by: ["queueId"], where: { queueId: { in: queueIds }, startedAt: { gte: since } }, _count: { _all: true } });
  return new Map(rows.map((row) => [row.queueId, row._count._all]));
}

/**
 * How many runs each of the queues started at or after `since` passed after their test results
 * excused or retried a flaky failure (domain/flaky/verdict.ts): the ejections flake handling avoided.
 */
export async function flakesAbsorbedSince(tx: Tx, queueIds: string[], since: Date): Promise<Map<string, number>> {
  const rows = await tx.testRun.findMany({ where: { queueId: { in: queueIds }, startedAt: { gte: since }, status: "passed", flakeVerdict: { not: null } }, select: { queueId: true, flakeVerdict: true } });
  const counts = new Map<string, number>();
  for (const row of rows) {
    const record = JSON.parse(row.flakeVerdict!) as FlakeRecord;
    if (record.retries > 0 || record.infrastructureRetried || Object.keys(record.excused).length > 0) counts.set(row.queueId, (counts.get(row.queueId) ?? 0) + 1);
  }
  return counts;
}

/**
 * Re-describes runs from a new base (a landed merge: same tree, shorter stack) in one statement:
 * a merge in parallel mode rebases every run in flight, one UPDATE each was most of a decision's
 * round trips (docs/benchmarks.md). `rows`: the runs' row ids with their new stacks.
 */
export async function rebaseRuns(tx: Tx, baseSha: string, rows: readonly { id: string; stack: readonly number[] }[]): Promise<void> {
  if (rows.length === 0) return;
  const sql = sqlOf(tx);
  const [inIds, ids] = sql.anyOf(
    `"id"`,
    rows.map((row) => row.id),
  );
  await sql.run(`UPDATE "TestRun" SET "baseSha" = ?, "stack" = CASE "id" ${rows.map(() => "WHEN ? THEN ?").join(" ")} END WHERE ${inIds}`, [baseSha, ...rows.flatMap((row) => [row.id, JSON.stringify(row.stack)]), ids]);
}
