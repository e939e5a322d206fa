import type { Tx } from "./database.js";
import type { PendingRow } from "./effects.js";
import type { Queue } from "./queues.js";

/**
 * What one transaction wrote to a queue under its lock: the version the lock found, the
 * version it left, the queue row as its last decision left it, and the outbox rows it appended
 * or dropped. The effect runner (src/worker/effects.ts) carries these forward instead of reading
 * the queue and its outbox back after an effect that applied an event.
 *
 * Why that is safe with several replicas: every write to a queue's state or outbox takes the
 * queue's row lock through lockQueueRow, which bumps its version (appendEffects' callers all
 * do; settings updates too), so the version the lock answers is authoritative. When it is one
 * past the version the runner read its copy at, no other process (and no other transaction of
 * this one) wrote to the queue in between, and the copy plus this transaction's writes is the
 * queue as committed. Any other version and the runner reads afresh. Nothing is kept beyond
 * one run of a queue's effects.
 */
export type QueueWrites = {
  queueId: string;
  /** The version the transaction's first lock answered (one past the version before it). */
  lockedVersion: number;
  /** The version the transaction leaves. */
  version: number;
  /** The queue row as the transaction leaves it, when a decision was saved; null otherwise. */
  queue: Queue | null;
  appended: PendingRow[];
  dropped: Set<string>;
  /** Columns written outside a decision (the target head), before or after it. */
  patch: Partial<Queue>;
};

/**
 * Keyed by the transaction's Tx (a new one per transaction; the shared client of
 * Database.write locks no queue). A transaction that locks two queues records nothing usable.
 */
const writes = new WeakMap<Tx, QueueWrites | "mixed">();

/** Rows past which a record is dropped: a transaction appending that many is no hot path. */
const MAX_APPENDED = 1_000;

function recordOf(tx: Tx, queueId: string): QueueWrites | null {
  const record = writes.get(tx);
  if (!record || record === "mixed") return null;
  if (record.queueId !== queueId || record.appended.length > MAX_APPENDED) {
    writes.set(tx, "mixed");
    return null;
  }
  return record;
}

/** lockQueueRow took the queue's lock and bumped its version to `version`. */
export function noteQueueLocked(tx: Tx, queueId: string, version: number): void {
  const record = writes.get(tx);
  if (record === undefined) {
    writes.set(tx, { queueId, lockedVersion: version, version, queue: null, appended: [], dropped: new Set(), patch: {} });
    return;
  }
  const same = recordOf(tx, queueId);
  if (same) same.version = version;
}

/** saveDecision wrote the queue's row (bumping its version once more): `queue` is it as written. */
export function noteQueueDecided(tx: Tx, queue: Queue): void {
  const record = recordOf(tx, queue.id);
  if (!record) return;
  record.version = queue.version;
  record.queue = { ...queue, ...record.patch };
}

/** A column of the queue written outside a decision, in the same transaction (the target head after a merge). */
export function noteQueueField(tx: Tx, queueId: string, patch: Partial<Queue>): void {
  const record = recordOf(tx, queueId);
  if (!record) return;
  record.patch = { ...record.patch, ...patch };
  if (record.queue) record.queue = { ...record.queue, ...patch };
}

/** appendEffects added these rows to the queue's outbox and dropped these pending ones. */
export function noteOutboxWrites(tx: Tx, queueId: string, appended: readonly PendingRow[], dropped: readonly string[]): void {
  const record = recordOf(tx, queueId);
  if (!record) return;
  record.appended.push(...appended);
  for (const id of dropped) record.dropped.add(id);
}

/** What the committed transaction `tx` wrote to the queue, if it locked that queue alone. */
export function queueWritesOf(tx: Tx, queueId: string): QueueWrites | null {
  const record = writes.get(tx);
  return record && record !== "mixed" && record.queueId === queueId ? record : null;
}
