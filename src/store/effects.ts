import type { OutboxEffect } from "../domain/engine/types.js";
import type { Tx } from "./database.js";
import { markQueueDue } from "./due-queues.js";

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
export async function appendEffects(tx: Tx, queueId: string, effects: OutboxEffect[], context: { now: Date; newId: () => string }): Promise<void> {
  if (effects.length === 0) return;
  const headOf = (e: { prNumber: number; sha: string }) => `${e.prNumber}@${e.sha}`;
  const lastStatus = new Map(effects.flatMap((e, i) => (e.kind === "pr_status" ? [[headOf(e), i] as const] : [])));
  const kept = effects.filter((e, i) => e.kind !== "pr_status" || lastStatus.get(headOf(e)) === i);
  if (lastStatus.size > 0) await dropPendingStatuses(tx, queueId, new Set(lastStatus.keys()), headOf);
  const last = await tx.effect.findFirst({ where: { queueId }, orderBy: { seq: "desc" }, select: { seq: true } });
  let seq = last?.seq ?? 0;
  await tx.effect.createMany({
    data: kept.map((effect) => ({ id: context.newId(), queueId, seq: ++seq, kind: effect.kind, payload: JSON.stringify(effect), createdAt: context.now })),
  });
  // The worker claims the queue for them (src/store/due-queues.ts).
  await markQueueDue(tx, queueId, context.now);
}

/** Deletes the pending statuses of these PR heads (see appendEffects). */
async function dropPendingStatuses(tx: Tx, queueId: string, heads: ReadonlySet<string>, headOf: (e: { prNumber: number; sha: string }) => string): Promise<void> {
  // A status already tried and failing stays: its backoff and attempts (which the rate-limit
  // reserve and giving up count) are not reset by a newer one.
  const rows = await tx.effect.findMany({ where: { queueId, doneAt: null, kind: "pr_status", attempts: 0 }, select: { id: true, payload: true } });
  const stale = rows.filter((row) => heads.has(headOf(JSON.parse(row.payload) as { prNumber: number; sha: string }))).map((row) => row.id);
  if (stale.length > 0) await tx.effect.deleteMany({ where: { id: { in: stale }, doneAt: null, attempts: 0 } });
}

/** The first effect of the queue's outbox not yet done, or null. */
export async function nextPendingEffect(tx: Tx, queueId: string): Promise<PendingEffect | null> {
  const row = await tx.effect.findFirst({ where: { queueId, doneAt: null }, orderBy: { seq: "asc" } });
  if (!row) return null;
  const effect = JSON.parse(row.payload) as OutboxEffect;
  return { id: row.id, queueId: row.queueId, kind: effect.kind, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt, effect };
}

/**
 * Marks an effect done (a no-op when another worker did already, or the queue is gone). Plain
 * SQL: Prisma wraps an updateMany in BEGIN and COMMIT of its own, two more round trips for every
 * effect the worker carries out (docs/benchmarks.md).
 */
export async function completeEffect(tx: Tx, id: string, at: Date): Promise<void> {
  await tx.$executeRaw`UPDATE "Effect" SET "doneAt" = ${at} WHERE "id" = ${id} AND "doneAt" IS NULL`;
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
  return tx.effect.findFirst({ where: { queueId, doneAt: null }, orderBy: { seq: "asc" }, select: { kind: true, attempts: true, lastError: true, nextAttemptAt: true, createdAt: true } });
}
