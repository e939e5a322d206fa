import { sqlOf, type Tx } from "./database.js";

/** A webhook delivery as recorded, waiting in the inbox (or retried). */
export type RecordedDelivery = {
  id: string;
  deliveryId: string;
  event: string;
  action: string | null;
  repositoryKey: string;
  payload: unknown;
  attempts: number;
  nextAttemptAt: Date;
};

export type NewDelivery = { deliveryId: string; event: string; action: string | null; repositoryKey: string; payload: string; receivedAt: Date };

/**
 * Records a delivery. A delivery id already recorded is a unique violation (P2002), which the
 * caller reads as "a redelivery": it is not recorded twice.
 */
export async function insertDelivery(tx: Tx, delivery: NewDelivery, newId: () => string): Promise<void> {
  await tx.webhookDelivery.create({ data: { id: newId(), ...delivery, nextAttemptAt: delivery.receivedAt } });
}

/**
 * The oldest unprocessed deliveries of each repository (in order of arrival: ids are ordered),
 * at most `perRepository` of each and `total` in all, due or not: a repository's later
 * deliveries wait behind its first. Looks at the first `scanLimit` unprocessed deliveries
 * (without their payloads), then reads the payloads of those chosen. Answered grouped by
 * repository, each group oldest first.
 */
export async function headDeliveries(tx: Tx, scanLimit: number, perRepository = 1, total = scanLimit): Promise<RecordedDelivery[][]> {
  // Plain SQL: every worker tick of every replica asks (issue 23 goal 3).
  const waiting = await sqlOf(tx).all<{ id: string; repositoryKey: string }>(
    `SELECT "id", "repositoryKey" FROM "WebhookDelivery" WHERE "processedAt" IS NULL AND "failedAt" IS NULL ORDER BY "id" LIMIT ${Math.trunc(scanLimit)}`,
  );
  const chosen = new Map<string, string[]>();
  let count = 0;
  for (const row of waiting) {
    if (count >= total) break;
    const ids = chosen.get(row.repositoryKey) ?? [];
    if (ids.length >= perRepository) continue;
    ids.push(row.id);
    chosen.set(row.repositoryKey, ids);
    count++;
  }
  if (count === 0) return [];
  const rows = await tx.webhookDelivery.findMany({ where: { id: { in: [...chosen.values()].flat() } }, orderBy: { id: "asc" } });
  const byId = new Map(
    rows.map((row) => [
      row.id,
      {
        id: row.id,
        deliveryId: row.deliveryId,
        event: row.event,
        action: row.action,
        repositoryKey: row.repositoryKey,
        payload: JSON.parse(row.payload) as unknown,
        attempts: row.attempts,
        nextAttemptAt: row.nextAttemptAt,
      },
    ]),
  );
  return [...chosen.values()].map((ids) => ids.flatMap((id) => byId.get(id) ?? []));
}

/**
 * Takes a due delivery for one worker until `leaseUntil` (another worker, or this one after a
 * crash, may take it again after that). Answers false when it is not due or was taken.
 */
export async function claimDelivery(tx: Tx, id: string, now: Date, leaseUntil: Date): Promise<boolean> {
  const { count } = await tx.webhookDelivery.updateMany({ where: { id, processedAt: null, failedAt: null, nextAttemptAt: { lte: now } }, data: { nextAttemptAt: leaseUntil } });
  return count === 1;
}

export async function completeDelivery(tx: Tx, id: string, at: Date): Promise<void> {
  await tx.webhookDelivery.updateMany({ where: { id }, data: { processedAt: at, lastError: null } });
}

/** Counts a failed attempt: tried again at `retryAt`, or given up on (`failedAt`) and kept with its error. */
export async function recordDeliveryFailure(tx: Tx, id: string, message: string, next: { retryAt: Date } | { failedAt: Date }): Promise<void> {
  await tx.webhookDelivery.updateMany({
    where: { id },
    data: { attempts: { increment: 1 }, lastError: message.slice(0, 2000), ...("retryAt" in next ? { nextAttemptAt: next.retryAt } : { failedAt: next.failedAt }) },
  });
}

/** Puts off a waiting delivery's next attempt to `at` without counting an attempt (nothing was tried). */
export async function deferDelivery(tx: Tx, id: string, at: Date): Promise<void> {
  await tx.webhookDelivery.updateMany({ where: { id, processedAt: null, failedAt: null }, data: { nextAttemptAt: at } });
}

/** Forgets deliveries processed before `before` (a redelivery of one that old is processed again). */
export async function pruneProcessedDeliveries(tx: Tx, before: Date): Promise<number> {
  const { count } = await tx.webhookDelivery.deleteMany({ where: { processedAt: { lt: before } } });
  return count;
}
