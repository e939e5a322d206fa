import type { Mergeability, PrState } from "../domain/states.js";
import { sqlOf, type Tx } from "./database.js";

/** The states whose readiness the code host can still change: waiting to be tested. */
const WAITING: PrState[] = ["not_ready", "pending"];
/** In flight: tested, or passed and awaiting the merge. Re-read only for what lost deliveries would have said. */
const IN_FLIGHT: PrState[] = ["testing", "tests_passed", "pending_failure"];

/** A PR whose readiness the worker should re-read from the code host. */
export type DueRecheck = { queueId: string; prNumber: number; rechecks: number };

/**
 * Which waiting PRs to re-read: by number, by head commit, or all; `onlyNotReady`: only those
 * not ready yet (what only they can gain from the re-read).
 */
export type RecheckMatch = ({ prNumber: number } | { headSha: string } | { all: true }) & { onlyNotReady?: boolean };

/** Sets what the code host last said of a waiting PR's mergeability (and the target it is up to date with). */
export async function updateEntryMergeability(tx: Tx, queueId: string, prNumber: number, facts: { mergeability: Mergeability; directMergeBase: string | null }): Promise<void> {
  await tx.queueEntry.updateMany({ where: { queueId, prNumber }, data: facts });
}

/** Sets when the PR's readiness is next re-read (null: not unless an event asks), and the count of "still computing" answers. */
export async function scheduleReadinessRecheck(tx: Tx, queueId: string, prNumber: number, at: Date | null, rechecks: number): Promise<void> {
  // Plain SQL (sqlOf): every submission schedules one.
  await sqlOf(tx).run(`UPDATE "QueueEntry" SET "readinessRecheckAt" = ?, "readinessRechecks" = ? WHERE "queueId" = ? AND "prNumber" = ?`, [at, rechecks, queueId, prNumber]);
}

/**
 * Asks for a re-read now of the waiting PRs of queues `queueIds` that match: by number, by
 * head commit, or all of them. Answers how many were asked for.
 */
export async function requestReadinessRechecks(tx: Tx, queueIds: string[], match: RecheckMatch, now: Date): Promise<number> {
  if (queueIds.length === 0) return 0;
  const which = "prNumber" in match ? { prNumber: match.prNumber } : "headSha" in match ? { prSha: match.headSha } : {};
  const { count } = await tx.queueEntry.updateMany({
    where: { queueId: { in: queueIds }, state: { in: match.onlyNotReady ? ["not_ready"] : WAITING }, ...which, OR: [{ readinessRecheckAt: null }, { readinessRecheckAt: { gt: now } }] },
    data: { readinessRecheckAt: now },
  });
  return count;
}

/**
 * PRs whose re-read is due at `now`, oldest first: waiting or in flight with a re-read due, and
 * PRs in flight for `firstInFlightMs` with none set (their first, once they started testing).
 */
export async function dueReadinessRechecks(tx: Tx, now: Date, limit: number, firstInFlightMs: number): Promise<DueRecheck[]> {
  // Plain SQL: every worker tick of every replica asks (a Prisma query cost ~1–2 ms of CPU, issue 23 goal 3).
  const sql = sqlOf(tx);
  const [dueStates, dueParam] = sql.anyOf(`"state"`, [...WAITING, ...IN_FLIGHT]);
  const [inFlight, inFlightParam] = sql.anyOf(`"state"`, IN_FLIGHT);
  const rows = await sql.all<{ queueId: string; prNumber: number | string; readinessRechecks: number | string }>(
    `SELECT "queueId", "prNumber", "readinessRechecks" FROM "QueueEntry"
      WHERE ("readinessRecheckAt" <= ? AND ${dueStates}) OR ("readinessRecheckAt" IS NULL AND ${inFlight} AND "stateChangedAt" <= ?)
      ORDER BY "readinessRecheckAt" LIMIT ${Math.trunc(limit)}`,
    [now, dueParam, inFlightParam, new Date(now.getTime() - firstInFlightMs)],
  );
  return rows.map((row) => ({ queueId: row.queueId, prNumber: Number(row.prNumber), rechecks: Number(row.readinessRechecks) }));
}
