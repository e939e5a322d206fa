import type { Transition as TransitionRow } from "../generated/sqlite/client.js";
import { LIVE_PR_STATES, PR_STATES, TERMINAL_PR_STATES, type PrState } from "../domain/states.js";
import { oneOf, oneOfOrNull } from "./columns.js";
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
  queues: { id: string; branch: string; state: string; freezes: Freeze[]; frozen: boolean; repository: { host: string; owner: string; name: string } }[];
  /** How many PRs each queue has in each live state. */
  counts: { queueId: string; state: PrState; count: number }[];
  /** How many merge freezes each queue saw start and end since the window started. */
  freezeChanges: { queueId: string; kind: "freeze_started" | "freeze_ended"; count: number }[];
  /** How many transitions since the window started each queue has, per (from, to) pair that a metric counts: conclusions and restarts. */
  moves: { queueId: string; fromState: PrState | null; toState: PrState; count: number }[];
  durations: DurationBucket[];
};

const SUBMISSIONS = `('submitted', 'resubmitted')`;
const TERMINAL = `(${[...TERMINAL_PR_STATES].map((s) => `'${s}'`).join(", ")})`;

/** Milliseconds since the epoch of a DateTime column, exact (SQLite keeps Prisma's ISO text; PostgreSQL a TIMESTAMP(3) in UTC). */
const epochMs = (sql: Sql, column: string) => (sql.kind === "sqlite" ? `CAST(round(unixepoch(${column}, 'subsec') * 1000) AS INTEGER)` : `CAST(EXTRACT(EPOCH FROM ${column}) * 1000 AS BIGINT)`);

/**
 * The organization's queues (of the repository `repositoryKey` only, when given), their PRs and
 * their transitions since `windowStart`, aggregated in the database: the answer has a few rows
 * per queue, however many transitions the window holds, and no history is read into the process
 * (the whole window and the whole history of every PR in it were, which took seconds under load:
 * docs/benchmarks.md).
 *
 * The histograms measure, per PR with a transition in the window, its history from its last
 * submission before the window (the time in queue starts again there; a PR submitted inside the
 * window has its whole history read): waiting (entering pending to testing), testing (testing to
 * its next state), and time in queue (from the submission to the conclusion, not counting time
 * not ready), each counted when it ended inside the window — what measureEntry computes from a
 * history, bucketed by `bounds` (seconds).
 */
export async function loadMetricsData(sql: Sql, organizationId: string, repositoryKey: string | undefined, windowStart: Date, bounds: readonly number[]): Promise<MetricsData> {
  const scope = `SELECT q."id" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE r."organizationId" = ?${repositoryKey ? ` AND r."key" = ?` : ""}`;
  const scopeParams = repositoryKey ? [organizationId, repositoryKey] : [organizationId];
  const queues = await sql.all<{ id: string; branch: string; state: string; freezes: string; frozenState: string | null; host: string; owner: string; name: string }>(
    `SELECT q."id", q."branch", q."state", q."freezes", q."frozenState", r."host", r."owner", r."name" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId"
      WHERE r."organizationId" = ?${repositoryKey ? ` AND r."key" = ?` : ""} ORDER BY q."id"`,
    scopeParams,
  );
  if (queues.length === 0) return { queues: [], counts: [], freezeChanges: [], moves: [], durations: [] };
  const live = LIVE_PR_STATES.map(() => "?").join(", ");
  const counts = await sql.all<{ queueId: string; state: string; count: number | string }>(
    `SELECT e."queueId", e."state", COUNT(*) AS "count" FROM "QueueEntry" e WHERE e."queueId" IN (${scope}) AND e."state" IN (${live}) GROUP BY e."queueId", e."state"`,
    [...scopeParams, ...LIVE_PR_STATES],
  );
  const moves = await sql.all<{ queueId: string; fromState: string | null; toState: string; count: number | string }>(
    `SELECT t."queueId", t."fromState", t."toState", COUNT(*) AS "count" FROM "Transition" t
      WHERE t."queueId" IN (${scope}) AND t."at" >= ? AND (t."toState" IN ${TERMINAL} OR (t."fromState" = 'testing' AND t."toState" = 'pending'))
      GROUP BY t."queueId", t."fromState", t."toState"`,
    [...scopeParams, windowStart],
  );
  const freezeChanges = await sql.all<{ queueId: string; kind: "freeze_started" | "freeze_ended"; count: number | string }>(
    `SELECT v."queueId", v."kind", COUNT(*) AS "count" FROM "QueueEvent" v WHERE v."queueId" IN (${scope}) AND v."kind" IN ('freeze_started', 'freeze_ended') AND v."at" >= ? GROUP BY v."queueId", v."kind"`,
    [...scopeParams, windowStart],
  );
  const ms = epochMs(sql, `t."at"`);
  const bucketOf = `CASE ${bounds.map((b, i) => `WHEN "v" <= ${b * 1000} THEN ${i}`).join(" ")} ELSE ${bounds.length} END`;
  const durations = await sql.all<{ queueId: string; kind: DurationKind; bucket: number | string; count: number | string; sum: number | string }>(
    `WITH "touched" AS (
       SELECT DISTINCT t."entryId" FROM "Transition" t WHERE t."queueId" IN (${scope}) AND t."at" >= ?
     ), "since" AS (
       SELECT e."entryId", (SELECT MAX(x."at") FROM "Transition" x WHERE x."entryId" = e."entryId" AND x."at" < ? AND x."reason" IN ${SUBMISSIONS}) AS "from" FROM "touched" e
     ), "steps" AS (
       SELECT t."entryId", t."queueId", t."id", t."toState", t."reason", t."at", ${ms} AS "ms",
         LAG(t."toState") OVER "w" AS "prevTo",
         LAG(${ms}) OVER "w" AS "prevMs",
         MAX(CASE WHEN t."toState" = 'pending' THEN ${ms} END) OVER ("w" ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS "pendingMs",
         SUM(CASE WHEN t."reason" IN ${SUBMISSIONS} THEN 1 ELSE 0 END) OVER ("w" ROWS UNBOUNDED PRECEDING) AS "submission"
       FROM "Transition" t JOIN "since" s ON s."entryId" = t."entryId"
       WHERE s."from" IS NULL OR t."at" >= s."from"
       WINDOW "w" AS (PARTITION BY t."entryId" ORDER BY t."at", t."id")
     ), "queued" AS (
       SELECT "steps".*, SUM(CASE WHEN "reason" IN ${SUBMISSIONS} THEN 0 WHEN "prevTo" IS NOT NULL AND "prevTo" <> 'not_ready' THEN "ms" - "prevMs" ELSE 0 END)
         OVER (PARTITION BY "entryId", "submission" ORDER BY "at", "id" ROWS UNBOUNDED PRECEDING) AS "queuedMs"
       FROM "steps"
     ), "observed" AS (
       SELECT "queueId", 'wait' AS "kind", "ms" - "pendingMs" AS "v" FROM "queued" WHERE "at" >= ? AND "toState" = 'testing' AND "pendingMs" IS NOT NULL
       UNION ALL SELECT "queueId", 'test', "ms" - "prevMs" FROM "queued" WHERE "at" >= ? AND "prevTo" = 'testing'
       UNION ALL SELECT "queueId", 'inQueue', "queuedMs" FROM "queued" WHERE "at" >= ? AND "toState" IN ${TERMINAL} AND "prevTo" IS NOT NULL
     )
     SELECT "queueId", "kind", ${bucketOf} AS "bucket", COUNT(*) AS "count", SUM("v") AS "sum" FROM "observed" GROUP BY "queueId", "kind", ${bucketOf}`,
    [...scopeParams, windowStart, windowStart, windowStart, windowStart, windowStart],
  );
  return {
    queues: queues.map((q) => ({ id: q.id, branch: q.branch, state: q.state, freezes: freezesOf(q.freezes), frozen: q.frozenState !== null, repository: { host: q.host, owner: q.owner, name: q.name } })),
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

/** What the dashboard's overview of an organization's queues is computed from (its quantiles need every duration). */
export type HistoryData = {
  queues: { id: string; branch: string; state: string; freezes: Freeze[]; repository: { host: string; owner: string; name: string } }[];
  /** How many PRs each queue has in each live state. */
  counts: { queueId: string; state: PrState; count: number }[];
  /** The transitions since the window started. */
  recent: StoredTransition[];
  /** The whole history of every PR with a transition in the window, in order. */
  histories: StoredTransition[];
};

function toTransition(row: TransitionRow): StoredTransition {
  return {
    id: row.id,
    entryId: row.entryId,
    queueId: row.queueId,
    fromState: oneOfOrNull(PR_STATES, row.fromState, "Transition.fromState"),
    toState: oneOf(PR_STATES, row.toState, "Transition.toState"),
    reason: row.reason,
    at: row.at,
  };
}

/** The organization's queues (of the repository `repositoryKey` only, when given), their PRs and their transitions since `windowStart`. */
export async function loadHistoryData(tx: Tx, organizationId: string, repositoryKey: string | undefined, windowStart: Date): Promise<HistoryData> {
  const queues = await tx.queue.findMany({
    where: { repository: { organizationId, ...(repositoryKey ? { key: repositoryKey } : {}) } },
    select: { id: true, branch: true, state: true, freezes: true, repository: { select: { host: true, owner: true, name: true } } },
  });
  const ids = queues.map((q) => q.id);
  const counts = await tx.queueEntry.groupBy({
    by: ["queueId", "state"],
    where: { queueId: { in: ids }, state: { in: LIVE_PR_STATES } },
    _count: { _all: true },
  });
  const recent = (await tx.transition.findMany({ where: { queueId: { in: ids }, at: { gte: windowStart } } })).map(toTransition);
  const entryIds = [...new Set(recent.map((t) => t.entryId))];
  const histories = (await tx.transition.findMany({ where: { entryId: { in: entryIds } }, orderBy: [{ at: "asc" }, { id: "asc" }] })).map(toTransition);
  return {
    queues: queues.map((q) => ({ ...q, freezes: freezesOf(q.freezes) })),
    counts: counts.map((row) => ({ queueId: row.queueId, state: oneOf(PR_STATES, row.state, "QueueEntry.state"), count: row._count._all })),
    recent,
    histories,
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
  const [effects] = await sql.all<{ waiting: number | string | null; failing: number | string | null; oldest: unknown }>(
    `SELECT COUNT(*) AS "waiting", SUM(CASE WHEN "attempts" > 0 THEN 1 ELSE 0 END) AS "failing", MIN("createdAt") AS "oldest" FROM "Effect" WHERE "doneAt" IS NULL`,
  );
  const [inbox] = await sql.all<{ waiting: number | string | null; failed: number | string | null }>(
    `SELECT SUM(CASE WHEN "failedAt" IS NULL THEN 1 ELSE 0 END) AS "waiting", SUM(CASE WHEN "failedAt" IS NOT NULL THEN 1 ELSE 0 END) AS "failed" FROM "WebhookDelivery" WHERE "processedAt" IS NULL`,
  );
  const outbound = await sql.all<{ endpointId: string; pending: number | string }>(`SELECT "endpointId", COUNT(*) AS "pending" FROM "WebhookMessage" WHERE "status" = 'pending' GROUP BY "endpointId"`);
  let replicas = 1;
  if (sql.kind !== "sqlite") {
    const [alive] = await sql.all<{ n: number | string }>(`SELECT COUNT(*) AS "n" FROM "ReplicaHeartbeat" WHERE "seenAt" >= CURRENT_TIMESTAMP - INTERVAL '${REPLICA_ALIVE_MS / 1000} seconds'`);
    replicas = Number(alive?.n ?? 0);
  }
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
