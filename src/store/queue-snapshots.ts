import { randomUUID } from "node:crypto";
import { afterCommit, sqlOf, type Tx } from "./database.js";
import type { QueueEntry } from "./entries.js";
import type { ImpactedTargets } from "./impacted-targets.js";
import type { TestRun } from "./runs.js";

/**
 * A process's copy of the rows a decision loads for a queue (issue 23, goal 2): its PRs in play
 * (and the others a decision named), its runs not archived and, for a parallel queue, their
 * impacted targets. A decision on a queue of 1,000 PRs used to read all 1,000 rows again for
 * every event; with a copy it reads only the rows that changed since.
 *
 * How a copy stays exact, with any number of processes and any code path writing:
 * - Triggers on QueueEntry, TestRun and ImpactedTargets note every inserted, updated or deleted
 *   row in QueueRowChange (migration 0019), in the writing transaction: no write can be missed.
 * - A decision's load, under the queue's lock, takes (deletes) the queue's noted changes and, in
 *   the same step, puts a new token of its own in the queue's `stateToken`, answering the one it
 *   replaced. The copy it then builds is kept under the new token, and becomes this process's
 *   copy when the transaction commits (never if it rolls back: the changes and the old token
 *   come back with it).
 * - The next load uses the copy only if the token it replaced is the copy's: then nobody else
 *   took the queue's changes since, so every row changed since the copy was made is in the
 *   changes it just took, and those rows are read again. Any other token (another replica, or
 *   this process without its copy) and the whole state is read, as without a copy.
 *
 * Rows a copy holds are never changed in place (rows read again replace them), so a copy may be
 * shared by the decisions that follow it.
 */
export type QueueSnapshot = {
  token: string;
  entries: ReadonlyMap<number, QueueEntry>;
  /** By the TestRun's row id. */
  runs: ReadonlyMap<string, TestRun>;
  /** The PRs' impacted targets, when the copy was made for a parallel queue; null otherwise. */
  targets: ReadonlyMap<number, ImpactedTargets> | null;
};

/** What changed since the last load took the queue's changes, and whose copy that load kept. */
export type RowChanges = {
  previousToken: string | null;
  entries: Set<number>;
  runs: Set<string>;
  targets: Set<number>;
  /** How many notes were read (a row may be noted more than once): a reader reads at most one more than its copy holds rows. */
  notes: number;
};

/**
 * How much a process keeps, least recently used copy first out: at most this many queues, and at
 * most this many rows (PRs and runs) over all copies — a few hundred bytes to a kilobyte each, so
 * about 100 MB at most however long the lines.
 */
const CAPACITY = 4096;
const CAPACITY_ROWS = 100_000;
const copies = new Map<string, QueueSnapshot>();
let rowsHeld = 0;

function rowsOf(copy: QueueSnapshot): number {
  return copy.entries.size + copy.runs.size;
}

/** Keeps `copy` as the queue's (the most recently used), evicting the least recently used past the capacity. */
function keepCopy(queueId: string, copy: QueueSnapshot): void {
  dropCopy(queueId);
  copies.set(queueId, copy);
  rowsHeld += rowsOf(copy);
  while (copies.size > 1 && (copies.size > CAPACITY || rowsHeld > CAPACITY_ROWS)) dropCopy(copies.keys().next().value!);
}

function dropCopy(queueId: string): void {
  const old = copies.get(queueId);
  if (!old) return;
  copies.delete(queueId);
  rowsHeld -= rowsOf(old);
}
/** Copies made by transactions not yet committed, by transaction then queue. */
const pending = new WeakMap<Tx, Map<string, QueueSnapshot>>();

const processToken = randomUUID();
let counter = 0;

/** A token no other load, of this process or another, has put. */
function newToken(): string {
  return `${processToken}:${++counter}`;
}

/**
 * Takes the queue's noted row changes and puts a new token in its place (under the queue's
 * lock): one statement on PostgreSQL. Answers the changes, the token replaced and the new one.
 */
export async function takeRowChanges(tx: Tx, queueId: string): Promise<{ changes: RowChanges; token: string }> {
  const sql = sqlOf(tx);
  const token = newToken();
  let rows: { token: string | null; kind: string | null; key: string | null }[];
  if (sql.kind === "postgres") {
    // Every part of one statement sees the same snapshot: "previous" is the token before "swap".
    rows = await sql.all(
      `WITH "taken" AS (DELETE FROM "QueueRowChange" WHERE "queueId" = ? RETURNING "kind", "key"),
        "previous" AS (SELECT "stateToken" FROM "Queue" WHERE "id" = ?),
        "swap" AS (UPDATE "Queue" SET "stateToken" = ? WHERE "id" = ? RETURNING 1)
      SELECT (SELECT "stateToken" FROM "previous") AS "token", t."kind", t."key" FROM (SELECT 1) AS "one" LEFT JOIN "taken" t ON TRUE`,
      [queueId, queueId, token, queueId],
    );
  } else {
    const [previous] = await sql.all<{ token: string | null }>(`SELECT "stateToken" AS "token" FROM "Queue" WHERE "id" = ?`, [queueId]);
    const taken = await sql.all<{ kind: string; key: string }>(`DELETE FROM "QueueRowChange" WHERE "queueId" = ? RETURNING "kind", "key"`, [queueId]);
    await sql.run(`UPDATE "Queue" SET "stateToken" = ? WHERE "id" = ?`, [token, queueId]);
    rows = taken.length > 0 ? taken.map((t) => ({ token: previous?.token ?? null, ...t })) : [{ token: previous?.token ?? null, kind: null, key: null }];
  }
  return { changes: changesOf(rows), token };
}

/**
 * The queue's token and its noted row changes, read without taking them (a reader): with this
 * process's copy under that token, the changes bring it up to date. One statement.
 */
export async function peekRowChanges(tx: Tx, queueId: string): Promise<RowChanges> {
  // No more notes than this process's copy of the queue holds rows, plus one: past that the
  // copy is not brought up to date but read afresh (queue-state.ts), so the rest need not be read
  // (rows written outside decisions leave notes that only the next decision takes).
  const copy = copies.get(queueId);
  const rows = await sqlOf(tx).all<{ token: string | null; kind: string | null; key: string | null }>(
    `SELECT q."stateToken" AS "token", c."kind", c."key" FROM "Queue" q LEFT JOIN "QueueRowChange" c ON c."queueId" = q."id" WHERE q."id" = ? LIMIT ?`,
    [queueId, (copy ? rowsOf(copy) : 0) + 1],
  );
  return changesOf(rows);
}

function changesOf(rows: readonly { token: string | null; kind: string | null; key: string | null }[]): RowChanges {
  const changes: RowChanges = { previousToken: rows[0]?.token ?? null, entries: new Set(), runs: new Set(), targets: new Set(), notes: 0 };
  for (const { kind, key } of rows) {
    if (kind !== null) changes.notes++;
    if (kind === "entry") changes.entries.add(Number(key));
    else if (kind === "run") changes.runs.add(String(key));
    else if (kind === "targets") changes.targets.add(Number(key));
  }
  return changes;
}

/**
 * The queue's runs not archived, read in the same statement that takes the queue's noted
 * changes (discarded: nothing holds a copy to bring up to date) and puts a new token in place,
 * so that a load without a copy costs no more round trips than before copies existed, and the
 * rows it reads are at least as new as the notes it drops. Answers the runs' rows and the token.
 */
export async function takeRowChangesWithRuns(tx: Tx, queueId: string): Promise<{ runs: Record<string, unknown>[]; token: string }> {
  const sql = sqlOf(tx);
  const token = newToken();
  if (sql.kind === "postgres") {
    const runs = await sql.all<Record<string, unknown>>(
      `WITH "taken" AS (DELETE FROM "QueueRowChange" WHERE "queueId" = ?), "swap" AS (UPDATE "Queue" SET "stateToken" = ? WHERE "id" = ?)
      SELECT * FROM "TestRun" WHERE "queueId" = ? AND "archived" = ?`,
      [queueId, token, queueId, queueId, false],
    );
    return { runs, token };
  }
  await sql.run(`DELETE FROM "QueueRowChange" WHERE "queueId" = ?`, [queueId]);
  await sql.run(`UPDATE "Queue" SET "stateToken" = ? WHERE "id" = ?`, [token, queueId]);
  return { runs: await sql.all<Record<string, unknown>>(`SELECT * FROM "TestRun" WHERE "queueId" = ? AND "archived" = ?`, [queueId, false]), token };
}

/** Whether this process (or `tx`) holds a copy of the queue's rows, whatever its token. */
export function hasSnapshot(tx: Tx, queueId: string): boolean {
  return copies.has(queueId) || pending.get(tx)?.has(queueId) === true;
}

/** The copy of the queue's rows made under `token`: this transaction's own, else this process's. */
export function snapshotOf(tx: Tx | null, queueId: string, token: string | null): QueueSnapshot | null {
  if (token === null) return null;
  const own = tx ? pending.get(tx)?.get(queueId) : undefined;
  if (own) return own.token === token ? own : null;
  const copy = copies.get(queueId);
  if (!copy || copy.token !== token) return null;
  // Refresh its place: the map's order is the eviction order.
  copies.delete(queueId);
  copies.set(queueId, copy);
  return copy;
}

/** Keeps `snapshot` as the queue's copy once `tx` commits (and for the rest of `tx`). */
export function keepSnapshot(tx: Tx, queueId: string, snapshot: QueueSnapshot): void {
  let mine = pending.get(tx);
  if (!mine) {
    mine = new Map();
    pending.set(tx, mine);
  }
  const first = !mine.has(queueId);
  mine.set(queueId, snapshot);
  if (!first) return;
  const kept = afterCommit(tx, () => {
    const last = pending.get(tx)?.get(queueId);
    if (last) keepCopy(queueId, last);
  });
  // Outside a transaction nothing can be kept: the next load reads everything.
  if (!kept) mine.delete(queueId);
}

/** Forgets the queue's copy once `tx` commits (the queue is deleted: its copy would only take room). */
export function forgetSnapshot(tx: Tx, queueId: string): void {
  pending.get(tx)?.delete(queueId);
  afterCommit(tx, () => dropCopy(queueId));
}

/** Forgets every copy this process holds (tests; a process that lost track of its writes). */
export function forgetSnapshots(): void {
  copies.clear();
  rowsHeld = 0;
}

/** How many copies this process holds and their rows (tests). */
export function snapshotsHeld(): { queues: number; rows: number } {
  return { queues: copies.size, rows: rowsHeld };
}
