import type { OutboxEffect } from "../domain/engine/types.js";
import type { Tx } from "./database.js";

/** An effect in a queue's outbox, waiting to be executed. */
export type PendingEffect = { id: string; queueId: string; kind: OutboxEffect["kind"]; attempts: number; nextAttemptAt: Date | null; effect: OutboxEffect };

/**
 * Adds effects to the end of the queue's outbox, in order. A PR's status replaces its refreshes
 * still waiting there (only the place in line moved: the newest place is all that is worth
 * writing), so a PR has at most one pending refresh however many decisions moved it. Deleting
 * is safe against a worker executing one right now: it writes the older place, finds the effect
 * gone when it marks it done, and goes on to the newer status (later in the outbox).
 */
export async function appendEffects(tx: Tx, queueId: string, effects: OutboxEffect[], context: { now: Date; newId: () => string }): Promise<void> {
  if (effects.length === 0) return;
  const statuses = new Set(effects.flatMap((e) => (e.kind === "pr_status" ? [e.prNumber] : [])));
  if (statuses.size > 0) await dropPendingRefreshes(tx, queueId, statuses);
  const last = await tx.effect.findFirst({ where: { queueId }, orderBy: { seq: "desc" }, select: { seq: true } });
  let seq = last?.seq ?? 0;
  await tx.effect.createMany({
    data: effects.map((effect) => ({ id: context.newId(), queueId, seq: ++seq, kind: effect.kind, payload: JSON.stringify(effect), createdAt: context.now })),
  });
}

/** Deletes the pending status refreshes of these PRs (see appendEffects). */
async function dropPendingRefreshes(tx: Tx, queueId: string, prNumbers: ReadonlySet<number>): Promise<void> {
  const rows = await tx.effect.findMany({ where: { queueId, doneAt: null, kind: "pr_status", payload: { contains: '"refresh":true' } }, select: { id: true, payload: true } });
  const stale = rows.filter((row) => prNumbers.has((JSON.parse(row.payload) as { prNumber: number }).prNumber)).map((row) => row.id);
  if (stale.length > 0) await tx.effect.deleteMany({ where: { id: { in: stale }, doneAt: null } });
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
