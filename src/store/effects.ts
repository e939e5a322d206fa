import type { OutboxEffect } from "../domain/engine/types.js";
import { prismaShaped } from "./columns.js";
import { type Database, sqlOf, type Tx } from "./database.js";
import type { Sql } from "./sql.js";
import { markQueueDue, PENDING_ORDER } from "./due-queues.js";
import { noteOutboxWrites } from "./queue-writes.js";

/** An effect in a queue's outbox, waiting to be executed. */
export type PendingEffect = { id: string; queueId: string; kind: OutboxEffect["kind"]; attempts: number; nextAttemptAt: Date | null; effect: OutboxEffect };

/**
 * Adds effects to the end of the queue's outbox, in order. A PR's status replaces the statuses of
 * the same head still waiting there, and the earlier ones among `effects`: GitHub shows only a
 * context's latest status, so a status not yet written is worth nothing once a newer one is
 * decided (the place in line moved again, "merging" became "merged"). A PR head has at most one
 * status pending (besides one already tried and failing) however many decisions moved it.
 * Deleting is safe against a worker carrying one out right now: it writes the older status,
 * finds the row gone when it marks it done, and goes on to the newer one, later in the outbox.
 */
export async function appendEffects(tx: Tx, queueId: string, effects: OutboxEffect[], context: { now: Date; newId: () => string; dueMarked?: boolean }): Promise<void> {
  if (effects.length === 0) return;
  const { rows, dropped } = await effectRowsToAppend(tx, queueId, effects, context.newId);
  const sql = sqlOf(tx);
  let appended: PendingRow[];
  if (sql.kind === "postgres") {
    appended = appendedRows(rows, await sql.all<{ id: string; seq: number | string }>(EFFECT_INSERT_POSTGRES, effectInsertParams(queueId, rows, context.now)));
  } else {
    // SQLite runs in-process: the read costs no round trip.
    const [last] = await sql.all<{ seq: number | string | null }>(`SELECT MAX("seq") AS "seq" FROM "Effect" WHERE "queueId" = ?`, [queueId]);
    let seq = Number(last?.seq ?? 0);
    appended = rows.map((r) => ({ ...r, seq: ++seq, attempts: 0, nextAttemptAt: null }));
    await sql.insert(
      "Effect",
      EFFECT_COLUMNS,
      appended.map((r) => [r.id, queueId, r.seq, r.kind, r.payload, context.now]),
    );
  }
  noteOutboxWrites(tx, queueId, appended, dropped);
  // The worker claims the queue for them (src/store/due-queues.ts), unless the caller marks it.
  if (!context.dueMarked) await markQueueDue(tx, queueId, context.now);
}

export type EffectRow = { id: string; kind: string; payload: string };

/**
 * The rows appendEffects inserts for `effects` (a status left out when a later one of the same
 * PR head follows it), after dropping the pending statuses they replace (their ids answered).
 */
export async function effectRowsToAppend(tx: Tx, queueId: string, effects: readonly OutboxEffect[], newId: () => string): Promise<{ rows: EffectRow[]; dropped: string[] }> {
  const headOf = (e: { prNumber: number; sha: string }) => `${e.prNumber}@${e.sha}`;
  const lastStatus = new Map(effects.flatMap((e, i) => (e.kind === "pr_status" ? [[headOf(e), i] as const] : [])));
  const kept = effects.filter((e, i) => e.kind !== "pr_status" || lastStatus.get(headOf(e)) === i);
  const dropped = lastStatus.size > 0 ? await dropPendingStatuses(tx, queueId, new Set(lastStatus.keys()), headOf) : [];
  return { rows: kept.map((effect) => ({ id: newId(), kind: effect.kind, payload: JSON.stringify(effect) })), dropped };
}

/**
 * PostgreSQL: the effects' insert in one round trip, the next sequence numbers taken in the
 * insert itself (MAX on the (queueId, seq) index is one probe; the caller holds the queue's
 * lock, so no other append can take them meanwhile). A fixed text (arrays, not a VALUES list per
 * row count): sent by name (sql.ts), and usable in a WITH clause (saveDecision). No rows: it
 * inserts nothing. Parameters: effectInsertParams.
 */
export const EFFECT_INSERT_POSTGRES = `INSERT INTO "Effect" ("id", "queueId", "seq", "kind", "payload", "createdAt")
  SELECT v."id", m."queueId", m."seq" + v."n", v."kind", v."payload", CAST(? AS TIMESTAMP(3))
  FROM (SELECT CAST(? AS TEXT) AS "queueId", COALESCE(MAX("seq"), 0) AS "seq" FROM "Effect" WHERE "queueId" = ?) m
  CROSS JOIN UNNEST(CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[])) WITH ORDINALITY AS v("id", "kind", "payload", "n")
  RETURNING "id", "seq"`;

export function effectInsertParams(queueId: string, rows: readonly EffectRow[], now: Date): unknown[] {
  return [now, queueId, queueId, rows.map((r) => r.id), rows.map((r) => r.kind), rows.map((r) => r.payload)];
}

/** The appended rows as pending outbox rows, with the sequence numbers the insert answered. */
export function appendedRows(rows: readonly EffectRow[], inserted: readonly { id: string | null; seq: number | string | null }[]): PendingRow[] {
  const seqOf = new Map(inserted.map((row) => [row.id, Number(row.seq)]));
  return rows.map((r) => ({ ...r, seq: seqOf.get(r.id)!, attempts: 0, nextAttemptAt: null }));
}

const EFFECT_COLUMNS = ["id", "queueId", "seq", "kind", "payload", "createdAt"] as const;

/** Deletes the pending statuses of these PR heads (see appendEffects); answers their ids. */
async function dropPendingStatuses(tx: Tx, queueId: string, heads: ReadonlySet<string>, headOf: (e: { prNumber: number; sha: string }) => string): Promise<string[]> {
  // A status already tried and failing stays: its backoff and attempts (which the rate-limit
  // reserve and giving up count) are not reset by a newer one.
  const sql = sqlOf(tx);
  const rows = await sql.all<{ id: string; payload: string }>(`SELECT "id", "payload" FROM "Effect" WHERE "queueId" = ? AND "doneAt" IS NULL AND "kind" = 'pr_status' AND "attempts" = 0`, [queueId]);
  const stale = rows.filter((row) => heads.has(headOf(JSON.parse(row.payload) as { prNumber: number; sha: string }))).map((row) => row.id);
  if (stale.length > 0) {
    const [inIds, ids] = sql.anyOf(`"id"`, stale);
    await sql.run(`DELETE FROM "Effect" WHERE ${inIds} AND "doneAt" IS NULL AND "attempts" = 0`, [ids]);
  }
  return stale;
}

/** The first effect of the queue's outbox not yet done, or null. */
export async function nextPendingEffect(tx: Tx, queueId: string): Promise<PendingEffect | null> {
  // Plain SQL (sqlOf): the effect runner asks before every effect.
  const [found] = await sqlOf(tx).all<Record<string, unknown>>(`SELECT "id", "queueId", "payload", "attempts", "nextAttemptAt" FROM "Effect" WHERE "queueId" = ? AND "doneAt" IS NULL ORDER BY ${PENDING_ORDER} LIMIT 1`, [
    queueId,
  ]);
  if (!found) return null;
  const row = prismaShaped<{ id: string; queueId: string; payload: string; attempts: number; nextAttemptAt: Date | null }>(found, [], ["nextAttemptAt"]);
  const effect = JSON.parse(row.payload) as OutboxEffect;
  return { id: row.id, queueId: row.queueId, kind: effect.kind, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt, effect };
}

/** Notifications (a PR's status, a comment): they tell people, and nothing else in the queue waits on them. */
export function isNotification(kind: OutboxEffect["kind"]): boolean {
  return kind === "pr_status" || kind === "pr_comment";
}

export type PendingRow = { id: string; seq: number; kind: string; attempts: number; nextAttemptAt: Date | null; payload: string };

function pendingOf(row: PendingRow, queueId: string): PendingEffect {
  const effect = JSON.parse(row.payload) as OutboxEffect;
  return { id: row.id, queueId, kind: effect.kind, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt, effect };
}

/**
 * The effect of the queue's outbox to carry out next, or null when none is pending. The queue's
 * work goes first: its first pending effect that is not a notification (a run to start or
 * cancel, a merge), in outbox order, so a merge never waits behind statuses and comments (each a
 * write GitHub asks to space a second apart). Notifications follow, in outbox order, and those
 * decided before a piece of work waiting out a backoff still go (as they did when the outbox was
 * one line); the ones after it wait for it.
 *
 * A status superseded by a later pending status of the same PR head is never sent: GitHub shows
 * only a context's latest status. It is marked done (not given up) in one transaction with the
 * later one taking over its attempts and backoff (a status failing and retried stays a retry:
 * the rate-limit reserve and giving up count it), so a crash on either side of it loses nothing —
 * the later status is in the outbox until it is sent. (Statuses are also replaced as they are
 * appended, appendEffects; this catches those it keeps: ones already tried.)
 */
export async function nextEffectToRun(
  db: Pick<Database, "read" | "transaction">,
  queueId: string,
  now: Date,
  skip: ReadonlySet<string> = new Set(),
  outbox: CarriedOutbox = { rows: null, version: Number.NaN },
): Promise<PendingEffect | null> {
  for (;;) {
    if (!outbox.rows) Object.assign(outbox, await db.read((tx) => pendingOutboxOf(tx, queueId)));
    const rows = outbox.rows!.filter((row) => !skip.has(row.id));
    const work = rows.find((row) => !isNotification(row.kind as OutboxEffect["kind"]));
    const workIsDue = work !== undefined && (work.nextAttemptAt === null || work.nextAttemptAt <= now);
    const notification = workIsDue ? undefined : rows.find((row) => isNotification(row.kind as OutboxEffect["kind"]) && (work === undefined || row.seq < work.seq));
    if (!notification) return work ? pendingOf(work, queueId) : null;
    const pending = pendingOf(notification, queueId);
    const later = pending.effect.kind === "pr_status" ? laterStatusOf(rows, notification, pending.effect) : undefined;
    if (!later) return pending;
    outbox.rows = null;
    await db.transaction(async (tx) => {
      const latest = (a: Date | null, b: Date | null) => (a === null ? b : b === null || a > b ? a : b);
      await tx.effect.updateMany({
        where: { id: later.id, doneAt: null },
        data: { attempts: Math.max(later.attempts, notification.attempts), nextAttemptAt: latest(later.nextAttemptAt, notification.nextAttemptAt) },
      });
      await completeEffect(tx, notification.id, now);
    });
  }
}

/**
 * The effect runner's copy of a queue's pending outbox (null: read it), and the queue's version
 * it was read at: the rows hold every effect appended up to that version (see queue-writes.ts for
 * when the runner may carry it on instead of reading it again).
 */
export type CarriedOutbox = { rows: PendingRow[] | null; version: number };

/**
 * The queue's outbox not yet done, in order, with the queue's version in the same statement (one
 * snapshot: the rows hold every effect appended up to that version). Plain SQL: it is read
 * before most effects.
 */
async function pendingOutboxOf(tx: Tx, queueId: string): Promise<{ rows: PendingRow[]; version: number }> {
  const found = await sqlOf(tx).all<Record<string, unknown>>(
    `SELECT "id", "seq", "kind", "attempts", "nextAttemptAt", "payload", (SELECT "version" FROM "Queue" WHERE "id" = ?) AS "queueVersion" FROM "Effect" WHERE "queueId" = ? AND "doneAt" IS NULL ORDER BY ${PENDING_ORDER}`,
    [queueId, queueId],
  );
  const rows = found.map((one) => {
    const row = prismaShaped<PendingRow>(one, [], ["nextAttemptAt"]);
    return { id: row.id, seq: Number(row.seq), kind: row.kind, attempts: Number(row.attempts), nextAttemptAt: row.nextAttemptAt, payload: row.payload };
  });
  // No pending row, no version: nothing to carry.
  return { rows, version: found.length > 0 ? Number(found[0]!.queueVersion) : Number.NaN };
}

/** The last pending status after `row` for the same PR head as `status`, if any. */
function laterStatusOf(rows: PendingRow[], row: PendingRow, status: { prNumber: number; sha: string }): PendingRow | undefined {
  return rows.findLast((other) => {
    if (other.seq <= row.seq || other.kind !== "pr_status") return false;
    const effect = JSON.parse(other.payload) as { prNumber: number; sha: string };
    return effect.prNumber === status.prNumber && effect.sha === status.sha;
  });
}

/** Marks effects done in one statement (those another worker marked already, or whose queue is gone, are left). */
export async function completeEffects(tx: Tx, ids: readonly string[], at: Date): Promise<void> {
  await completeEffectsIn(sqlOf(tx), ids, at);
}

/** completeEffects in a plain-SQL transaction (`Database.sqlTransaction`). */
export async function completeEffectsIn(sql: Sql, ids: readonly string[], at: Date): Promise<void> {
  if (ids.length === 0) return;
  if (ids.length === 1) {
    await sql.run(`UPDATE "Effect" SET "doneAt" = ? WHERE "id" = ? AND "doneAt" IS NULL`, [at, ids[0]]);
    return;
  }
  const [inIds, values] = sql.anyOf(`"id"`, ids);
  await sql.run(`UPDATE "Effect" SET "doneAt" = ? WHERE ${inIds} AND "doneAt" IS NULL`, [at, values]);
}

/**
 * completeEffectsIn, answering the queue's version as the statement saw it (null when no effect
 * was marked): the effect runner keeps its copy of the outbox when the version is still the one
 * the copy was read at (no append since: every append bumps it).
 */
export async function completeEffectsSeeingVersion(sql: Sql, queueId: string, ids: readonly string[], at: Date): Promise<number | null> {
  if (ids.length === 0) return null;
  const [inIds, values] = sql.anyOf(`"id"`, ids);
  const rows = await sql.all<{ queueVersion: number | string | null }>(`UPDATE "Effect" SET "doneAt" = ? WHERE ${inIds} AND "doneAt" IS NULL RETURNING (SELECT "version" FROM "Queue" WHERE "id" = ?) AS "queueVersion"`, [
    at,
    values,
    queueId,
  ]);
  return rows.length > 0 && rows[0]!.queueVersion !== null ? Number(rows[0]!.queueVersion) : null;
}

/**
 * Marks an effect done (a no-op when another worker did already, or the queue is gone). Plain
 * SQL: Prisma wraps an updateMany in BEGIN and COMMIT of its own, two more round trips for every
 * effect the worker carries out (docs/benchmarks.md).
 */
export async function completeEffect(tx: Tx, id: string, at: Date): Promise<void> {
  await sqlOf(tx).run(`UPDATE "Effect" SET "doneAt" = ? WHERE "id" = ? AND "doneAt" IS NULL`, [at, id]);
}

/** Counts a failed attempt at an effect, with its error and the time before which it is not tried again. */
export async function recordEffectFailure(tx: Tx, id: string, message: string, nextAttemptAt: Date): Promise<void> {
  // updateMany: the queue, and its effects with it, may have been deleted meanwhile.
  await tx.effect.updateMany({ where: { id, doneAt: null }, data: { attempts: { increment: 1 }, lastError: message.slice(0, 2000), nextAttemptAt } });
}

/** Puts off an effect's next attempt to `at` without counting an attempt (nothing was tried). */
export async function deferEffect(tx: Tx, id: string, at: Date): Promise<void> {
  await tx.effect.updateMany({ where: { id, doneAt: null }, data: { nextAttemptAt: at } });
}

/** Ends an effect that will not succeed: done, marked given up, with the last error. */
export async function giveUpEffect(tx: Tx, id: string, message: string, at: Date): Promise<void> {
  await tx.effect.updateMany({ where: { id, doneAt: null }, data: { attempts: { increment: 1 }, lastError: message.slice(0, 2000), doneAt: at, gaveUp: true } });
}

/**
 * The ids of the queues with effects not yet done and due at `now` (a queue whose next effect
 * waits out a backoff is skipped; its later effects wait behind it, in order).
 */
export async function queuesWithPendingEffects(tx: Tx, now: Date): Promise<string[]> {
  const rows = await tx.effect.findMany({ where: { doneAt: null, OR: [{ nextAttemptAt: null }, { nextAttemptAt: { lte: now } }] }, distinct: ["queueId"], select: { queueId: true } });
  return rows.map((row) => row.queueId);
}

/** How many merges the queue has decided and not yet carried out. */
export async function countPendingMerges(tx: Tx, queueId: string): Promise<number> {
  return tx.effect.count({ where: { queueId, doneAt: null, kind: "merge" } });
}

/** The first effect of the queue's outbox not yet done, as stored (attempts, last error), or null. */
export async function outboxHead(tx: Tx, queueId: string): Promise<{ kind: string; attempts: number; lastError: string | null; nextAttemptAt: Date | null; createdAt: Date } | null> {
  const [row] = await sqlOf(tx).all<Record<string, unknown>>(
    `SELECT "kind", "attempts", "lastError", "nextAttemptAt", "createdAt" FROM "Effect" WHERE "queueId" = ? AND "doneAt" IS NULL ORDER BY ${PENDING_ORDER} LIMIT 1`,
    [queueId],
  );
  if (!row) return null;
  const head = prismaShaped<{ kind: string; attempts: number; lastError: string | null; nextAttemptAt: Date | null; createdAt: Date }>(row, [], ["nextAttemptAt", "createdAt"]);
  return { ...head, attempts: Number(head.attempts) };
}
