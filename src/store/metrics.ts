import { LIVE_PR_STATES, PR_STATES, TERMINAL_PR_STATES, type PrState } from "../domain/states.js";
import { HOUR_MS } from "../domain/time.js";
import { oneOf } from "./columns.js";
import { sqlOf, type Tx } from "./database.js";
import type { Sql } from "./sql.js";
import type { Freeze } from "../domain/freezes.js";
import { freezesOf } from "./queues.js";

/** A PR's change of state in a queue, with its reason. */
export type StoredTransition = { id: string; entryId: string; queueId: string; fromState: PrState | null; toState: PrState; reason: string; at: Date };

/** The durations the metrics' histograms hold. */
export type DurationKind = "wait" | "test" | "inQueue";

/** How many durations of one kind ended in the window in one queue, per bucket (index into the bounds, the last +Inf), and their sum. */
export type DurationBucket = { queueId: string; kind: DurationKind; bucket: number; count: number; sumSeconds: number };

/** What the metrics of an organization's queues are computed from: aggregates, a few rows per queue whatever the history. */
export type MetricsData = {
  /** The queues, each with the blocked reason the worker last published for it (getQueue's blockedReason code; null: not blocked). */
  queues: { id: string; branch: string; state: string; freezes: Freeze[]; frozen: boolean; blockedReason: string | null; repository: { host: string; owner: string; name: string } }[];
  /** How many PRs each queue has in each live state. */
  counts: { queueId: string; state: PrState; count: number }[];
  /** How many merge freezes each queue saw start and end since the window started. */
  freezeChanges: { queueId: string; kind: "freeze_started" | "freeze_ended"; count: number }[];
  /** How many transitions since the window started each queue has, per (from, to) pair that a metric counts: conclusions and restarts. */
  moves: { queueId: string; fromState: PrState | null; toState: PrState; count: number }[];
  durations: DurationBucket[];
};

const TERMINAL = `(${[...TERMINAL_PR_STATES].map((s) => `'${s}'`).join(", ")})`;

/**
 * The organization's queues (of the repository `repositoryKey` only, when given), their PRs and
 * their transitions since `windowStart`, aggregated in the database: the answer has a few rows
 * per queue, however many transitions the window holds, and no history is read into the process
 * (the whole window and the whole history of every PR in it were, which took seconds under load:
 * docs/benchmarks.md).
 *
 * The histograms sum what the window's transitions recorded when they were written
 * (Transition.stateMs and queuedMs: domain/durations.ts): waiting (the time pending before
 * testing), testing (the time testing before its next state), and time in queue (from the
 * submission to the conclusion, not counting time not ready), each counted when it ended inside
 * the window, bucketed by `bounds` (seconds). One index range of the window per queue, whatever
 * the history (it replayed each PR's history since its submission, 0.2–0.9 s a scrape with 1,000
 * queues: docs/benchmarks.md). Transitions written before migration 0030 recorded none.
 */
export async function loadMetricsData(sql: Sql, organizationId: string, repositoryKey: string | undefined, windowStart: Date, bounds: readonly number[]): Promise<MetricsData> {
  const scope = `SELECT q."id" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE r."organizationId" = ?${repositoryKey ? ` AND r."key" = ?` : ""}`;
  const scopeParams = repositoryKey ? [organizationId, repositoryKey] : [organizationId];
  const queues = await sql.all<{ id: string; branch: string; state: string; freezes: string; frozenState: string | null; blockedReason: string | null; host: string; owner: string; name: string }>(
    `SELECT q."id", q."branch", q."state", q."freezes", q."frozenState", q."blockedReason", r."host", r."owner", r."name" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId"
      WHERE r."organizationId" = ?${repositoryKey ? ` AND r."key" = ?` : ""} ORDER BY q."id"`,
    scopeParams,
  );
  if (queues.length === 0) return { queues: [], counts: [], freezeChanges: [], moves: [], durations: [] };
  const live = LIVE_PR_STATES.map(() => "?").join(", ");
  const bucketOf = `CASE ${bounds.map((b, i) => `WHEN "v" <= ${b * 1000} THEN ${i}`).join(" ")} ELSE ${bounds.length} END`;
  // Independent reads, sent together: on PostgreSQL each on a connection of the pool (a scrape
  // waited for their sum), on SQLite one after the other as before.
  const [counts, moves, freezeChanges, durations] = await Promise.all([
    sql.all<{ queueId: string; state: string; count: number | string }>(
      `SELECT e."queueId", e."state", COUNT(*) AS "count" FROM "QueueEntry" e WHERE e."queueId" IN (${scope}) AND e."state" IN (${live}) GROUP BY e."queueId", e."state"`,
      [...scopeParams, ...LIVE_PR_STATES],
    ),
    sql.all<{ queueId: string; fromState: string | null; toState: string; count: number | string }>(
      `SELECT t."queueId", t."fromState", t."toState", COUNT(*) AS "count" FROM (${scope}) s JOIN "Transition" t ON t."queueId" = s."id" AND t."at" >= ?
        WHERE t."toState" IN ${TERMINAL} OR (t."fromState" = 'testing' AND t."toState" = 'pending')
        GROUP BY t."queueId", t."fromState", t."toState"`,
      [...scopeParams, windowStart],
    ),
    sql.all<{ queueId: string; kind: "freeze_started" | "freeze_ended"; count: number | string }>(
      `SELECT v."queueId", v."kind", COUNT(*) AS "count" FROM "QueueEvent" v WHERE v."queueId" IN (${scope}) AND v."kind" IN ('freeze_started', 'freeze_ended') AND v."at" >= ? GROUP BY v."queueId", v."kind"`,
      [...scopeParams, windowStart],
    ),
    // The durations each transition recorded when it was written (domain/durations.ts), summed over the window's index range.
    sql.all<{ queueId: string; kind: DurationKind; bucket: number | string; count: number | string; sum: number | string }>(
      `WITH "window" AS MATERIALIZED (
         SELECT t."queueId", t."fromState", t."toState", t."stateMs", t."queuedMs" FROM (${scope}) s JOIN "Transition" t ON t."queueId" = s."id" AND t."at" >= ?
       ), "observed" AS (
         SELECT "queueId", 'wait' AS "kind", "stateMs" AS "v" FROM "window" WHERE "fromState" = 'pending' AND "toState" = 'testing' AND "stateMs" IS NOT NULL
         UNION ALL SELECT "queueId", 'test', "stateMs" FROM "window" WHERE "fromState" = 'testing' AND "stateMs" IS NOT NULL
         UNION ALL SELECT "queueId", 'inQueue', "queuedMs" FROM "window" WHERE "toState" IN ${TERMINAL} AND "queuedMs" IS NOT NULL
       )
       SELECT "queueId", "kind", ${bucketOf} AS "bucket", COUNT(*) AS "count", SUM("v") AS "sum" FROM "observed" GROUP BY "queueId", "kind", ${bucketOf}`,
      [...scopeParams, windowStart],
    ),
  ]);
  return {
    queues: queues.map((q) => ({
      id: q.id,
      branch: q.branch,
      state: q.state,
      freezes: freezesOf(q.freezes),
      frozen: q.frozenState !== null,
      blockedReason: q.blockedReason,
      repository: { host: q.host, owner: q.owner, name: q.name },
    })),
    counts: counts.map((row) => ({ queueId: row.queueId, state: oneOf(PR_STATES, row.state, "QueueEntry.state"), count: Number(row.count) })),
    freezeChanges: freezeChanges.map((row) => ({ queueId: row.queueId, kind: row.kind, count: Number(row.count) })),
    moves: moves.map((row) => ({
      queueId: row.queueId,
      fromState: row.fromState === null ? null : oneOf(PR_STATES, row.fromState, "Transition.fromState"),
      toState: oneOf(PR_STATES, row.toState, "Transition.toState"),
      count: Number(row.count),
    })),
    durations: durations.map((row) => ({ queueId: row.queueId, kind: row.kind, bucket: Number(row.bucket), count: Number(row.count), sumSeconds: Number(row.sum) / 1000 })),
  };
}

/** What the dashboard's overview of an organization's queues is computed from: aggregates, a few rows per queue whatever the history. */
export type OverviewData = {
  queues: { id: string; branch: string; state: string; freezes: Freeze[]; repository: { host: string; owner: string; name: string } }[];
  /** How many PRs each queue has in each live state. */
  counts: { queueId: string; state: PrState; count: number }[];
  /** How many PRs each queue merged and failed in each hour since the window started (hour 0 starts at `firstHour`; -1: in the window, before it). */
  conclusions: { queueId: string; state: "merged" | "failed"; hour: number; count: number }[];
  /** Per queue, the time in queue (seconds) of its PRs concluded in the window at the 50th and 95th percentile (nearest rank), and how many concluded. */
  timesInQueue: { queueId: string; p50: number; p95: number; count: number }[];
};

/** Milliseconds since the epoch of a DateTime column, exact (SQLite keeps Prisma's ISO text or epoch milliseconds; PostgreSQL a TIMESTAMP(3) in UTC). */
const epochMs = (sql: Sql, column: string) => (sql.kind === "sqlite" ? `CAST(round(unixepoch(${column}, 'subsec') * 1000) AS INTEGER)` : `CAST(EXTRACT(EPOCH FROM ${column}) * 1000 AS BIGINT)`);

/**
 * The organization's queues with their PRs by live state, their conclusions by hour since
 * `windowStart` (hours counted from `firstHour`, ms since the epoch), and the quantiles of the
 * time in queue the conclusions recorded (Transition.queuedMs: domain/durations.ts) — computed in
 * the database over the window's index range: nothing of the history is read into the process
 * (the whole history of every PR of the window was, each time the overview was drawn).
 */
export async function loadOverviewData(sql: Sql, organizationId: string, windowStart: Date, firstHour: number): Promise<OverviewData> {
  const scope = `SELECT q."id" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE r."organizationId" = ?`;
  const queues = await sql.all<{ id: string; branch: string; state: string; freezes: string; host: string; owner: string; name: string }>(
    `SELECT q."id", q."branch", q."state", q."freezes", r."host", r."owner", r."name" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE r."organizationId" = ? ORDER BY q."id"`,
    [organizationId],
  );
  if (queues.length === 0) return { queues: [], counts: [], conclusions: [], timesInQueue: [] };
  const live = LIVE_PR_STATES.map(() => "?").join(", ");
  const counts = await sql.all<{ queueId: string; state: string; count: number | string }>(
    `SELECT e."queueId", e."state", COUNT(*) AS "count" FROM "QueueEntry" e WHERE e."queueId" IN (${scope}) AND e."state" IN (${live}) GROUP BY e."queueId", e."state"`,
    [organizationId, ...LIVE_PR_STATES],
  );
  // Hours from the first one's start; what concluded in the window before it is hour -1 (in the
  // totals, not in the chart: a division rounds toward zero, which would put it in hour 0).
  const since = epochMs(sql, `t."at"`);
  const hour = `CASE WHEN ${since} < ${Math.trunc(firstHour)} THEN -1 ELSE (${since} - ${Math.trunc(firstHour)}) / ${HOUR_MS} END`;
  const conclusions = await sql.all<{ queueId: string; state: "merged" | "failed"; hour: number | string; count: number | string }>(
    `SELECT t."queueId", t."toState" AS "state", ${hour} AS "hour", COUNT(*) AS "count" FROM (${scope}) s JOIN "Transition" t ON t."queueId" = s."id" AND t."at" >= ?
      WHERE t."toState" IN ('merged', 'failed') GROUP BY t."queueId", t."toState", ${hour}`,
    [organizationId, windowStart],
  );
  // Nearest rank: the value at rank ceil(q·n), in whole numbers ((n + 1) / 2 and (95n + 99) / 100).
  const timesInQueue = await sql.all<{ queueId: string; p50: number | string; p95: number | string; count: number | string }>(
    `WITH "ranked" AS (
       SELECT t."queueId", t."queuedMs", ROW_NUMBER() OVER (PARTITION BY t."queueId" ORDER BY t."queuedMs") AS "rank", COUNT(*) OVER (PARTITION BY t."queueId") AS "n"
       FROM (${scope}) s JOIN "Transition" t ON t."queueId" = s."id" AND t."at" >= ?
       WHERE t."toState" IN ${TERMINAL} AND t."queuedMs" IS NOT NULL
     )
     SELECT "queueId", MAX(CASE WHEN "rank" = ("n" + 1) / 2 THEN "queuedMs" END) AS "p50", MAX(CASE WHEN "rank" = (95 * "n" + 99) / 100 THEN "queuedMs" END) AS "p95", MAX("n") AS "count"
     FROM "ranked" GROUP BY "queueId"`,
    [organizationId, windowStart],
  );
  return {
    queues: queues.map((q) => ({ id: q.id, branch: q.branch, state: q.state, freezes: freezesOf(q.freezes), repository: { host: q.host, owner: q.owner, name: q.name } })),
    counts: counts.map((row) => ({ queueId: row.queueId, state: oneOf(PR_STATES, row.state, "QueueEntry.state"), count: Number(row.count) })),
    conclusions: conclusions.map((row) => ({ queueId: row.queueId, state: row.state, hour: Number(row.hour), count: Number(row.count) })),
    timesInQueue: timesInQueue.map((row) => ({ queueId: row.queueId, p50: Number(row.p50) / 1000, p95: Number(row.p95) / 1000, count: Number(row.count) })),
  };
}

/** How long a replica whose worker stopped ticking still counts as alive. */
const REPLICA_ALIVE_MS = 60_000;

/**
 * Notes that this replica's worker ticked (PostgreSQL: the replicas share the database; SQLite
 * serves one process, which needs no note). Rows of replicas gone for a day are removed.
 */
export async function noteReplicaAlive(tx: Tx, replicaId: string): Promise<void> {
  const sql = sqlOf(tx);
  if (sql.kind === "sqlite") return;
  // The database's clock, not the replica's: replicas whose clocks disagree are counted alike.
  await sql.run(`INSERT INTO "ReplicaHeartbeat" ("id", "seenAt") VALUES (?, CURRENT_TIMESTAMP) ON CONFLICT ("id") DO UPDATE SET "seenAt" = EXCLUDED."seenAt"`, [replicaId]);
  await sql.run(`DELETE FROM "ReplicaHeartbeat" WHERE "seenAt" < CURRENT_TIMESTAMP - INTERVAL '1 day'`);
}

/** The service's backlog across organizations (service metrics, for the operator): four statements. */
export async function loadServiceBacklog(
  sql: Sql,
): Promise<{ effects: { waiting: number; oldestCreatedAt: Date | null; failing: number }; inbox: { waiting: number; failed: number }; outbound: { endpointId: string; pending: number }[]; replicas: number }> {
  // Independent reads, sent together (on PostgreSQL, each on a connection of the pool).
  const [[effects], [inbox], outbound, [alive]] = await Promise.all([
    sql.all<{ waiting: number | string | null; failing: number | string | null; oldest: unknown }>(
      `SELECT COUNT(*) AS "waiting", SUM(CASE WHEN "attempts" > 0 THEN 1 ELSE 0 END) AS "failing", MIN("createdAt") AS "oldest" FROM "Effect" WHERE "doneAt" IS NULL`,
    ),
    sql.all<{ waiting: number | string | null; failed: number | string | null }>(
      `SELECT SUM(CASE WHEN "failedAt" IS NULL THEN 1 ELSE 0 END) AS "waiting", SUM(CASE WHEN "failedAt" IS NOT NULL THEN 1 ELSE 0 END) AS "failed" FROM "WebhookDelivery" WHERE "processedAt" IS NULL`,
    ),
    sql.all<{ endpointId: string; pending: number | string }>(`SELECT "endpointId", COUNT(*) AS "pending" FROM "WebhookMessage" WHERE "status" = 'pending' GROUP BY "endpointId"`),
    // SQLite serves one process: one replica.
    sql.kind === "sqlite"
      ? Promise.resolve([{ n: 1 }])
      : sql.all<{ n: number | string }>(`SELECT COUNT(*) AS "n" FROM "ReplicaHeartbeat" WHERE "seenAt" >= CURRENT_TIMESTAMP - INTERVAL '${REPLICA_ALIVE_MS / 1000} seconds'`),
  ]);
  const replicas = Number(alive?.n ?? 0);
  const oldest = effects?.oldest;
  return {
    effects: {
      waiting: Number(effects?.waiting ?? 0),
      failing: Number(effects?.failing ?? 0),
      oldestCreatedAt: oldest === null || oldest === undefined ? null : oldest instanceof Date ? oldest : new Date(oldest as string | number),
    },
    inbox: { waiting: Number(inbox?.waiting ?? 0), failed: Number(inbox?.failed ?? 0) },
    outbound: outbound.map((row) => ({ endpointId: row.endpointId, pending: Number(row.pending) })),
    replicas,
  };
}
