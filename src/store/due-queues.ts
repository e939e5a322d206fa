import { prismaShaped } from "./columns.js";
import { sqlOf, type DatabaseKind, type Tx } from "./database.js";

/**
 * The queues with work for the worker (table QueueDue): effects to execute, a timer to fire.
 * A write that gives a queue work marks it due in its own transaction (markQueueDue); workers
 * claim due queues, oldest due first, a few at a time (claimDueQueues), work on each, and
 * release it with the time its next work is due (releaseQueue). No sweep of all queues: an idle
 * worker asks one statement per tick, however many queues there are.
 *
 * On PostgreSQL replicas claim with FOR UPDATE SKIP LOCKED, so two never claim the same row at
 * once, and a claim is a lease (`claimedUntil`): a replica that dies while working on a queue
 * leaves its row claimable again when the lease ends. The work on a queue's effects is also
 * under the queue's advisory lock (runEffects), which PostgreSQL releases with a dead replica's
 * connection: a lease that ends while a slow replica still works never lets two work at once.
 * A worker renews the leases of the queues it still works on (renewClaim: a slow code host's
 * call may outlast one), and its release or renewal of a claim that another worker has taken
 * since changes nothing (the lease's end as written is the claim's token).
 */

/**
 * The order of a queue's pending effects, written so that the planner finds them through the
 * (queueId, doneAt) index and sorts the few it finds: with `ORDER BY "seq"` SQLite walked the
 * (queueId, seq) index through the queue's whole history to skip the sort — 8 ms a read at
 * 28,000 effects, read before every effect (docs/benchmarks.md, "Flat with history").
 */
export const PENDING_ORDER = `"seq" + 0 ASC`;

/**
 * A claimed queue: `marks` as claimed (releaseQueue keeps any mark made meanwhile), and the end
 * of the claim's lease as written (`leaseUntil`: the claim's token; renewClaim moves it on).
 */
export type ClaimedQueue = { queueId: string; marks: number; leaseUntil: Date };

/** A mark of a queue already due keeps the earlier time, and counts. */
/** The conflict clause of a due mark (also saveDecision's, in its one statement on PostgreSQL). */
export const KEEP_EARLIER_MARK = `ON CONFLICT ("queueId") DO UPDATE SET "dueAt" = CASE WHEN excluded."dueAt" < "QueueDue"."dueAt" THEN excluded."dueAt" ELSE "QueueDue"."dueAt" END, "marks" = "QueueDue"."marks" + 1`;

/**
 * Marks the queue due at `at` (or earlier, when it already is): within the transaction that
 * gave it the work, so that work and mark commit together. Counts the mark.
 */
export async function markQueueDue(tx: Tx, queueId: string, at: Date): Promise<void> {
  // Plain SQL (sqlOf): every decision with work marks its queue.
  await sqlOf(tx).run(
    `INSERT INTO "QueueDue" ("queueId", "dueAt", "marks") VALUES (?, ?, 1)
    ${KEEP_EARLIER_MARK}`,
    [queueId, at],
  );
}

/** Marks every queue of the account (lower-case "host/owner") due at `at`: its installation answers again. One statement. */
export async function markAccountQueuesDue(tx: Tx, accountKey: string, at: Date): Promise<void> {
  // The key's prefix compared as is (no LIKE pattern to escape, no collation's ordering).
  const prefix = `${accountKey}/`;
  const sql = sqlOf(tx);
  // PostgreSQL types a parameter in a SELECT list only when told.
  await sql.run(
    `INSERT INTO "QueueDue" ("queueId", "dueAt", "marks")
    SELECT q."id", ${sql.kind === "postgres" ? "CAST(? AS TIMESTAMP(3))" : "?"}, 1 FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE substr(r."key", 1, ?) = ?
    ${KEEP_EARLIER_MARK}`,
    [at, prefix.length, prefix],
  );
}

/**
 * Claims up to `limit` queues due at `now` and not claimed by a live lease, oldest due first,
 * until `leaseUntil`. One statement (outside any other transaction).
 */
export async function claimDueQueues(tx: Tx, kind: DatabaseKind, now: Date, limit: number, leaseUntil: Date): Promise<ClaimedQueue[]> {
  // Plain SQL, as every statement of a claim's life here: each replica claims several times a
  // second, and a Prisma query (even a raw one) cost far more CPU than the statement (issue 23, goal 3).
  const rows = await sqlOf(tx).all<{ queueId: string; marks: number | string }>(
    `UPDATE "QueueDue" SET "claimedUntil" = ? WHERE "queueId" IN (
      SELECT "queueId" FROM "QueueDue" WHERE "dueAt" <= ? AND ("claimedUntil" IS NULL OR "claimedUntil" < ?)
      ORDER BY "dueAt" LIMIT ${Math.trunc(limit)}${kind === "postgres" ? " FOR UPDATE SKIP LOCKED" : ""}) RETURNING "queueId", "marks"`,
    [leaseUntil, now, now],
  );
  return rows.map((row) => ({ queueId: row.queueId, marks: Number(row.marks), leaseUntil }));
}

/**
 * Extends a claim's lease to `leaseUntil` while its worker still works on the queue (a slow
 * code host: one call may outlast a lease). Answers false when the claim is not this one's any
 * more (its lease ended and another worker claimed the queue): nothing is changed then. The
 * caller makes `leaseUntil` the claim's token once the transaction committed.
 */
export async function renewClaim(tx: Tx, claimed: ClaimedQueue, leaseUntil: Date): Promise<boolean> {
  const renewed = await sqlOf(tx).run(`UPDATE "QueueDue" SET "claimedUntil" = ? WHERE "queueId" = ? AND "claimedUntil" = ?`, [leaseUntil, claimed.queueId, claimed.leaseUntil]);
  return renewed > 0;
}

/**
 * Ends a claim at `now`: the queue's next work is due at `next` (null: none known). A mark made
 * while it was claimed wins over what the claimer saw: the row is then due at `now` at the
 * latest (behind queues due earlier: a busy queue does not keep the head of the line). A claim
 * that is not this one's any more (its lease ended, another worker claimed the queue) is left
 * to its holder, who releases it.
 */
export async function releaseQueue(tx: Tx, claimed: ClaimedQueue, next: Date | null, now: Date): Promise<void> {
  const { queueId, marks, leaseUntil } = claimed;
  const sql = sqlOf(tx);
  if (next === null) {
    const deleted = await sql.run(`DELETE FROM "QueueDue" WHERE "queueId" = ? AND "marks" = ? AND "claimedUntil" = ?`, [queueId, marks, leaseUntil]);
    if (deleted > 0) return;
    await sql.run(`UPDATE "QueueDue" SET "claimedUntil" = NULL, "dueAt" = ? WHERE "queueId" = ? AND "claimedUntil" = ?`, [now, queueId, leaseUntil]);
    return;
  }
  // Two statements rather than a CASE of parameters (PostgreSQL cannot type those): the first
  // one when nothing marked the queue meanwhile, else it is due at `now` at the latest.
  const kept = await sql.run(`UPDATE "QueueDue" SET "claimedUntil" = NULL, "dueAt" = ? WHERE "queueId" = ? AND "marks" = ? AND "claimedUntil" = ?`, [next, queueId, marks, leaseUntil]);
  if (kept > 0) return;
  const marked = next < now ? next : now;
  await sql.run(`UPDATE "QueueDue" SET "claimedUntil" = NULL, "dueAt" = ? WHERE "queueId" = ? AND "claimedUntil" = ?`, [marked, queueId, leaseUntil]);
}

/** The account (lower-case "host/owner": its installation) of each queue, by queue id. */
export async function accountsOfQueues(tx: Tx, queueIds: string[]): Promise<Map<string, string>> {
  if (queueIds.length === 0) return new Map();
  const sql = sqlOf(tx);
  const [inIds, param] = sql.anyOf(`q."id"`, queueIds);
  const rows = await sql.all<{ id: string; host: string; owner: string }>(`SELECT q."id", r."host", r."owner" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE ${inIds}`, [param]);
  return new Map(rows.map((row) => [row.id, `${row.host}/${row.owner}`.toLowerCase()]));
}

/**
 * Ends a claim without work done, the queue due again at `at` (behind the queues due before:
 * its installation already holds its share of the worker's slots). A claim not this one's any
 * more is left alone.
 */
export async function deferQueue(tx: Tx, claimed: ClaimedQueue, at: Date): Promise<void> {
  await sqlOf(tx).run(`UPDATE "QueueDue" SET "claimedUntil" = NULL, "dueAt" = ? WHERE "queueId" = ? AND "claimedUntil" = ?`, [at, claimed.queueId, claimed.leaseUntil]);
}

/** Ends a claim without work done: the queue stays due when it was (a claim not this one's any more is left alone). */
export async function unclaimQueue(tx: Tx, claimed: ClaimedQueue): Promise<void> {
  await sqlOf(tx).run(`UPDATE "QueueDue" SET "claimedUntil" = NULL WHERE "queueId" = ? AND "claimedUntil" = ?`, [claimed.queueId, claimed.leaseUntil]);
}

/** When the queue's timer is set to fire, or null (no timer, or no such queue). */
export async function timerOf(tx: Tx, queueId: string): Promise<Date | null> {
  const [row] = await sqlOf(tx).all<Record<string, unknown>>(`SELECT "timerAt" FROM "Queue" WHERE "id" = ?`, [queueId]);
  return row ? prismaShaped<{ timerAt: Date | null }>(row, [], ["timerAt"]).timerAt : null;
}

/** When the queue is due, or null when it has nothing marked (tests, diagnostics). */
export async function queueDueAt(tx: Tx, queueId: string): Promise<Date | null> {
  const row = await tx.queueDue.findUnique({ where: { queueId }, select: { dueAt: true } });
  return row?.dueAt ?? null;
}

/**
 * When the queue's next work is due, as its rows say, or null when it has none: its first
 * effect not done (at once, or after its backoff) and its timer, the earlier of the two; not
 * before the next probe of its account's installation while that is suspended or gone (an
 * installation that answers again marks its queues due: clearAccountOutage).
 */
export async function nextDueOfQueue(tx: Tx, queueId: string, now: Date): Promise<Date | null> {
  const sql = sqlOf(tx);
  const [row] = await sql.all<Record<string, unknown>>(`SELECT q."timerAt", r."host", r."owner" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE q."id" = ?`, [queueId]);
  if (!row) return null;
  const queue = prismaShaped<{ timerAt: Date | null; host: string; owner: string }>(row, [], ["timerAt"]);
  const rows = await sql.all<Record<string, unknown>>(`SELECT "seq", "kind", "nextAttemptAt" FROM "Effect" WHERE "queueId" = ? AND "doneAt" IS NULL ORDER BY ${PENDING_ORDER}`, [queueId]);
  const effects = rows.map((row) => {
    const effect = prismaShaped<{ seq: number; kind: string; nextAttemptAt: Date | null }>(row, [], ["nextAttemptAt"]);
    return { ...effect, seq: Number(effect.seq) };
  });
  const candidates = [nextEffectDue(effects, now), queue.timerAt].filter((d): d is Date => d !== null);
  if (candidates.length === 0) return null;
  const next = new Date(Math.min(...candidates.map((d) => d.getTime())));
  const accountKey = `${queue.host}/${queue.owner}`.toLowerCase();
  const [outageRow] = await sql.all<Record<string, unknown>>(`SELECT "nextProbeAt" FROM "InstallationOutage" WHERE "accountKey" = ?`, [accountKey]);
  const outage = outageRow ? prismaShaped<{ nextProbeAt: Date }>(outageRow, [], ["nextProbeAt"]) : null;
  return outage && outage.nextProbeAt > next ? outage.nextProbeAt : next;
}

/**
 * When the runner can next carry out one of these pending effects (in outbox order), as
 * nextEffectToRun picks them: the queue's work (anything but statuses and comments) goes first
 * when it is due; otherwise the first notification decided before it (or the first of all, with
 * no work pending); a notification after work waiting out a backoff waits for it.
 */
function nextEffectDue(effects: { seq: number; kind: string; nextAttemptAt: Date | null }[], now: Date): Date | null {
  const notification = (kind: string) => kind === "pr_status" || kind === "pr_comment";
  const work = effects.find((e) => !notification(e.kind));
  const workAt = work ? (work.nextAttemptAt ?? now) : null;
  const before = effects.find((e) => notification(e.kind) && (work === undefined || e.seq < work.seq));
  const beforeAt = before ? (before.nextAttemptAt ?? now) : null;
  const times = [workAt, beforeAt].filter((d): d is Date => d !== null);
  return times.length === 0 ? null : new Date(Math.min(...times.map((d) => d.getTime())));
}

/**
 * The safety net under the marks: queues with an effect not done or a timer set, and no row in
 * QueueDue, are marked due — since their oldest such effect was made, or at their timer (a write
 * that forgot to mark, rows restored from a backup, a hand-made repair). Effects made after `now`
 * are left to their own marks. One statement each; answers how many queues it marked. The worker
 * runs it at start and hourly: work is never left unseen for longer.
 */
export async function markUnmarkedQueuesDue(tx: Tx, now: Date): Promise<number> {
  const withEffects = await tx.$executeRaw`INSERT INTO "QueueDue" ("queueId", "dueAt", "marks")
    SELECT e."queueId", MIN(e."createdAt"), 1 FROM "Effect" e
    WHERE e."doneAt" IS NULL AND e."createdAt" <= ${now} AND NOT EXISTS (SELECT 1 FROM "QueueDue" d WHERE d."queueId" = e."queueId")
    GROUP BY e."queueId"
    ON CONFLICT ("queueId") DO NOTHING`;
  const withTimers = await tx.$executeRaw`INSERT INTO "QueueDue" ("queueId", "dueAt", "marks")
    SELECT q."id", q."timerAt", 1 FROM "Queue" q
    WHERE q."timerAt" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "QueueDue" d WHERE d."queueId" = q."id")
    ON CONFLICT ("queueId") DO NOTHING`;
  return withEffects + withTimers;
}
