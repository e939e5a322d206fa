import type { Sql } from "./sql.js";

/** Whose history the analytics count: every queue of an organization, or one of its queues. */
export type AnalyticsScope = { organizationId: string; queueId?: string };

/** One UTC day's figures; `day` is the day's start, ms since the epoch. */
export type AnalyticsDay = {
  day: number;
  merged: number;
  /** Time in queue (last submission to merge) of the PRs merged that day, seconds, by nearest rank; null when none merged. */
  p50Seconds: number | null;
  p95Seconds: number | null;
  /** Test runs started that day (main line and bisection). */
  runs: number;
  /** Runs started that day that passed after their test results excused or retried a flaky failure. */
  flakyAvoided: number;
  /** Estimate accuracy: the PRs merged that day that were told a merge time when submitted. */
  estimated: number;
  /** …how far their merge was from it (either way), seconds, by nearest rank; null when none. */
  estimateErrorP50Seconds: number | null;
  estimateErrorP95Seconds: number | null;
  /** …and how many of them merged later than told. */
  late: number;
};

/** The figures of a window, in a few rows whatever the history: per day, per failure reason, per hour of day. */
export type AnalyticsData = {
  days: AnalyticsDay[];
  /** The whole window's figures (its percentiles over every merge of the window, not an average of days). */
  total: Omit<AnalyticsDay, "day"> & { failed: number };
  /** PRs that failed in the window, by their reason code, most first (at most FAILURE_REASONS_SHOWN). */
  failures: { reason: string; count: number }[];
  /** Submissions (first and again) per hour of day, UTC: hour 0–23 (hours without one are absent). */
  hours: { hour: number; submissions: number }[];
};

export const FAILURE_REASONS_SHOWN = 100;

/** A day (or window) without anything. */
export const NOTHING: Omit<AnalyticsDay, "day"> = { merged: 0, p50Seconds: null, p95Seconds: null, runs: 0, flakyAvoided: 0, estimated: 0, estimateErrorP50Seconds: null, estimateErrorP95Seconds: null, late: 0 };

const DAY_MS = 86_400_000;

/**
 * Nearest-rank percentile rows: the rank of the p-th percentile among n values is ⌈p·n/100⌉,
 * computed in integers ((p·n + 99) / 100) so both databases agree without a CEIL function.
 */
const rankOf = (percent: number, n = `"n"`) => `((${n} * ${percent} + 99) / 100)`;

/**
 * What each database computes per row, kept cheap (the 90-day window of a busy organization is
 * hundreds of thousands of transitions): a row's UTC day (SQLite: the date part of its ISO text;
 * PostgreSQL: days since the epoch), its hour of day, and a duration between two timestamps as a
 * value that sorts (SQLite: seconds; PostgreSQL: an interval, turned into seconds only for the
 * few values answered).
 */
function dialect(sql: Sql) {
  return sql.kind === "sqlite"
    ? {
        day: (column: string) => `substr(${column}, 1, 10)`,
        hour: (column: string) => `CAST(substr(${column}, 12, 2) AS INTEGER)`,
        between: (later: string, earlier: string) => `(unixepoch(${later}, 'subsec') - unixepoch(${earlier}, 'subsec'))`,
        abs: (value: string) => `ABS(${value})`,
        positive: (value: string) => `${value} > 0`,
        seconds: (value: string) => value,
      }
    : {
        day: (column: string) => `(CAST(${column} AS DATE) - DATE '1970-01-01')`,
        hour: (column: string) => `CAST(date_part('hour', ${column}) AS INTEGER)`,
        between: (later: string, earlier: string) => `(${later} - ${earlier})`,
        abs: (value: string) => `CASE WHEN ${value} < INTERVAL '0' THEN -${value} ELSE ${value} END`,
        positive: (value: string) => `${value} > INTERVAL '0'`,
        seconds: (value: string) => `EXTRACT(EPOCH FROM ${value})`,
      };
}

/** A day as a statement answers it (SQLite: "2030-01-09"; PostgreSQL: days since the epoch), in ms since the epoch. */
const dayMs = (day: number | string) => (typeof day === "string" && day.includes("-") ? Date.parse(`${day}T00:00:00Z`) : Number(day) * DAY_MS);

/**
 * The analytics of `scope` over [from, to): aggregated in the database, so the answer is a row
 * per day, per failure reason and per hour, however many PRs the window holds. The percentiles
 * are exact (nearest rank over every merge, ordered by a window function), not estimated from
 * buckets. Four statements: the organization's queues, the merges (through the (queueId, at) index of Transition, each
 * joined to its entry by id), the runs (the (queueId, startedAt) index of TestRun), and one pass
 * over the window's other transitions for failures and submissions.
 */
export async function loadAnalytics(sql: Sql, scope: AnalyticsScope, from: Date, to: Date): Promise<AnalyticsData> {
  // The organization's queues named one by one: each is then read through its own range of the
  // (queueId, at) index, whatever the planner guesses of a subquery's share of the table.
  const ids = scope.queueId
    ? [scope.queueId]
    : (await sql.all<{ id: string }>(`SELECT q."id" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE r."organizationId" = ?`, [scope.organizationId])).map((row) => row.id);
  if (ids.length === 0) return { days: [], total: { ...NOTHING, failed: 0 }, failures: [], hours: [] };
  const [inQueues, queueIds] = ids.length === 1 ? [`t."queueId" = ?`, ids[0]] : sql.anyOf(`t."queueId"`, ids);
  const d = dialect(sql);
  const window = [queueIds, from, to];

  // Merges per day and their time in queue ("v": from the entry's last submission, a merged PR
  // is never submitted again, to the merge); and, for those told a merge time at that
  // submission, how far the merge was from it ("e": merge minus estimate; "ae" either way).
  // Day NULL (the rollup) holds the whole window.
  type Num = number | string | null;
  type Row = { day: number | string | null; n: number | string; p50: Num; p95: Num; estimated: number | string; e50: Num; e95: Num; late: Num };
  const merges = await sql.all<Row>(
    // MATERIALIZED: read once, though "d" reads it twice (SQLite would otherwise run it twice).
    `WITH "m" AS MATERIALIZED (
       SELECT ${d.day(`t."at"`)} AS "day", ${d.between(`t."at"`, `e."submittedAt"`)} AS "v", ${d.between(`t."at"`, `e."estimatedMergeAt"`)} AS "e"
       FROM "Transition" t JOIN "QueueEntry" e ON e."id" = t."entryId"
       WHERE ${inQueues} AND t."at" >= ? AND t."at" < ? AND t."toState" = 'merged'
     ), "d" AS (
       SELECT "day", "v", "e", ${d.abs(`"e"`)} AS "ae" FROM "m" UNION ALL SELECT NULL, "v", "e", ${d.abs(`"e"`)} FROM "m"
     ), "r" AS (
       SELECT "day", "v", "e", "ae",
         ROW_NUMBER() OVER (PARTITION BY "day" ORDER BY "v") AS "rn", COUNT(*) OVER (PARTITION BY "day") AS "n",
         ROW_NUMBER() OVER (PARTITION BY "day", CASE WHEN "e" IS NULL THEN 0 ELSE 1 END ORDER BY "ae") AS "ern", COUNT("e") OVER (PARTITION BY "day") AS "en"
       FROM "d"
     )
     SELECT "day", MAX("n") AS "n", ${d.seconds(`MIN(CASE WHEN "rn" = ${rankOf(50)} THEN "v" END)`)} AS "p50", ${d.seconds(`MIN(CASE WHEN "rn" = ${rankOf(95)} THEN "v" END)`)} AS "p95",
       COUNT("e") AS "estimated", ${d.seconds(`MIN(CASE WHEN "e" IS NOT NULL AND "ern" = ${rankOf(50, `"en"`)} THEN "ae" END)`)} AS "e50",
       ${d.seconds(`MIN(CASE WHEN "e" IS NOT NULL AND "ern" = ${rankOf(95, `"en"`)} THEN "ae" END)`)} AS "e95", SUM(CASE WHEN ${d.positive(`"e"`)} THEN 1 ELSE 0 END) AS "late"
     FROM "r" GROUP BY "day"`,
    window,
  );

  // Runs per day, and those a flaky failure did not fail (domain/flaky/verdict.ts FlakeRecord:
  // retries spent, an infrastructure re-run, or checks excused).
  const absorbed =
    sql.kind === "sqlite"
      ? `(json_extract(t."flakeVerdict", '$.retries') > 0 OR json_extract(t."flakeVerdict", '$.infrastructureRetried') = 1 OR EXISTS (SELECT 1 FROM json_each(t."flakeVerdict", '$.excused')))`
      : `((t."flakeVerdict"::jsonb ->> 'retries')::numeric > 0 OR (t."flakeVerdict"::jsonb ->> 'infrastructureRetried') = 'true' OR (t."flakeVerdict"::jsonb -> 'excused') <> '{}'::jsonb)`;
  const runs = await sql.all<{ day: number | string; runs: number | string; absorbed: number | string | null }>(
    `SELECT ${d.day(`t."startedAt"`)} AS "day", COUNT(*) AS "runs", SUM(CASE WHEN t."status" = 'passed' AND t."flakeVerdict" IS NOT NULL AND ${absorbed} THEN 1 ELSE 0 END) AS "absorbed"
     FROM "TestRun" t WHERE ${inQueues} AND t."startedAt" >= ? AND t."startedAt" < ? GROUP BY ${d.day(`t."startedAt"`)}`,
    window,
  );

  // Failures by reason and submissions by hour of day, in one pass over the window.
  const moves = await sql.all<{ failed: number | string; reason: string | null; hour: number | string | null; n: number | string }>(
    `SELECT "failed", "reason", "hour", COUNT(*) AS "n" FROM (
       SELECT CASE WHEN t."toState" = 'failed' THEN 1 ELSE 0 END AS "failed", CASE WHEN t."toState" = 'failed' THEN t."reason" END AS "reason",
         CASE WHEN t."reason" IN ('submitted', 'resubmitted') THEN ${d.hour(`t."at"`)} END AS "hour"
       FROM "Transition" t WHERE ${inQueues} AND t."at" >= ? AND t."at" < ? AND (t."toState" = 'failed' OR t."reason" IN ('submitted', 'resubmitted'))
     ) x GROUP BY "failed", "reason", "hour"`,
    window,
  );

  const seconds = (v: Num) => (v === null ? null : Math.round(Number(v) * 1000) / 1000);
  const byDay = new Map<number, AnalyticsDay>();
  const dayOf = (day: number) => {
    let row = byDay.get(day);
    if (!row) byDay.set(day, (row = { day, ...NOTHING }));
    return row;
  };
  const failures = moves.filter((row) => Number(row.failed) === 1).map((row) => ({ reason: row.reason ?? "", count: Number(row.n) }));
  let total: AnalyticsData["total"] = { ...NOTHING, failed: failures.reduce((sum, f) => sum + f.count, 0) };
  for (const row of merges) {
    const figures = {
      merged: Number(row.n),
      p50Seconds: seconds(row.p50),
      p95Seconds: seconds(row.p95),
      estimated: Number(row.estimated),
      estimateErrorP50Seconds: seconds(row.e50),
      estimateErrorP95Seconds: seconds(row.e95),
      late: Number(row.late ?? 0),
    };
    if (row.day === null) total = { ...total, ...figures };
    else Object.assign(dayOf(dayMs(row.day)), figures);
  }
  for (const row of runs) {
    const day = dayOf(dayMs(row.day));
    day.runs = Number(row.runs);
    day.flakyAvoided = Number(row.absorbed ?? 0);
    total.runs += day.runs;
    total.flakyAvoided += day.flakyAvoided;
  }
  return {
    days: [...byDay.values()].sort((a, b) => a.day - b.day),
    total,
    failures: failures.sort((a, b) => b.count - a.count || (a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : 0)).slice(0, FAILURE_REASONS_SHOWN),
    hours: moves
      .filter((row) => Number(row.failed) === 0 && row.hour !== null)
      .map((row) => ({ hour: Number(row.hour), submissions: Number(row.n) }))
      .sort((a, b) => a.hour - b.hour),
  };
}

/** A queue the analytics can be narrowed to. */
export type AnalyticsQueue = { id: string; repo: { host: string; owner: string; name: string }; branch: string };

/** The organization's queues, by repository and branch (at most `limit`): the page's choice of queue. */
export async function analyticsQueues(sql: Sql, organizationId: string, limit: number): Promise<AnalyticsQueue[]> {
  const rows = await sql.all<{ id: string; host: string; owner: string; name: string; branch: string }>(
    `SELECT q."id", r."host", r."owner", r."name", q."branch" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE r."organizationId" = ? ORDER BY r."key", q."branch" LIMIT ${Math.floor(limit)}`,
    [organizationId],
  );
  return rows.map((row) => ({ id: row.id, repo: { host: row.host, owner: row.owner, name: row.name }, branch: row.branch }));
}
