import type { Sql } from "./sql.js";
import { epochMs } from "./metrics.js";

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
const HOUR_MS = 3_600_000;

/**
 * Nearest-rank percentile rows: the rank of the p-th percentile among n values is ⌈p·n/100⌉,
 * computed in integers ((p·n + 99) / 100) so both databases agree without a CEIL function.
 */
const rankOf = (percent: number, n = `"n"`) => `((${n} * ${percent} + 99) / 100)`;

/**
 * The analytics of `scope` over [from, to): aggregated in the database, so the answer is a row
 * per day, per failure reason and per hour, however many PRs the window holds. The percentiles
 * are exact (nearest rank over every merge, ordered by a window function), not estimated from
 * buckets. Five statements, each reading the window through the (queueId, at) or
 * (queueId, startedAt) indexes.
 */
export async function loadAnalytics(sql: Sql, scope: AnalyticsScope, from: Date, to: Date): Promise<AnalyticsData> {
  const queues = scope.queueId
    ? { text: `= ?`, params: [scope.queueId] }
    : { text: `IN (SELECT q."id" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE r."organizationId" = ?)`, params: [scope.organizationId] };
  const at = epochMs(sql, `t."at"`);
  const window = [...queues.params, from, to];

  // Merges per day and their time in queue: from the entry's last submission (a merged PR is
  // never submitted again) to the merge; and, for those told a merge time at that submission,
  // how far the merge was from it ("e": merge minus estimate). Day -1 holds the whole window.
  type Row = { day: number | string; n: number | string; p50: Num; p95: Num; estimated: number | string; e50: Num; e95: Num; late: Num };
  type Num = number | string | null;
  const merges = await sql.all<Row>(
    `WITH "m" AS (
       SELECT ${at} AS "ms", ${at} - ${epochMs(sql, `e."submittedAt"`)} AS "v", ${at} - ${epochMs(sql, `e."estimatedMergeAt"`)} AS "e"
       FROM "Transition" t JOIN "QueueEntry" e ON e."id" = t."entryId"
       WHERE t."queueId" ${queues.text} AND t."at" >= ? AND t."at" < ? AND t."toState" = 'merged'
     ), "d" AS (
       SELECT "ms" / ${DAY_MS} AS "day", "v", "e", ABS("e") AS "ae" FROM "m" UNION ALL SELECT -1, "v", "e", ABS("e") FROM "m"
     ), "r" AS (
       SELECT "day", "v", "e", "ae",
         ROW_NUMBER() OVER (PARTITION BY "day" ORDER BY "v") AS "rn", COUNT(*) OVER (PARTITION BY "day") AS "n",
         ROW_NUMBER() OVER (PARTITION BY "day", CASE WHEN "e" IS NULL THEN 0 ELSE 1 END ORDER BY "ae") AS "ern", COUNT("e") OVER (PARTITION BY "day") AS "en"
       FROM "d"
     )
     SELECT "day", MAX("n") AS "n", MIN(CASE WHEN "rn" = ${rankOf(50)} THEN "v" END) AS "p50", MIN(CASE WHEN "rn" = ${rankOf(95)} THEN "v" END) AS "p95",
       COUNT("e") AS "estimated", MIN(CASE WHEN "e" IS NOT NULL AND "ern" = ${rankOf(50, `"en"`)} THEN "ae" END) AS "e50",
       MIN(CASE WHEN "e" IS NOT NULL AND "ern" = ${rankOf(95, `"en"`)} THEN "ae" END) AS "e95", SUM(CASE WHEN "e" > 0 THEN 1 ELSE 0 END) AS "late"
     FROM "r" GROUP BY "day"`,
    window,
  );

  // Runs per day, and those a flaky failure did not fail (domain/flaky/verdict.ts FlakeRecord:
  // retries spent, an infrastructure re-run, or checks excused).
  const absorbed =
    sql.kind === "sqlite"
      ? `(json_extract(t."flakeVerdict", '$.retries') > 0 OR json_extract(t."flakeVerdict", '$.infrastructureRetried') = 1 OR EXISTS (SELECT 1 FROM json_each(t."flakeVerdict", '$.excused')))`
      : `((t."flakeVerdict"::jsonb ->> 'retries')::numeric > 0 OR (t."flakeVerdict"::jsonb ->> 'infrastructureRetried') = 'true' OR (t."flakeVerdict"::jsonb -> 'excused') <> '{}'::jsonb)`;
  const started = epochMs(sql, `t."startedAt"`);
  const runs = await sql.all<{ day: number | string; runs: number | string; absorbed: number | string | null }>(
    `SELECT ${started} / ${DAY_MS} AS "day", COUNT(*) AS "runs", SUM(CASE WHEN t."status" = 'passed' AND t."flakeVerdict" IS NOT NULL AND ${absorbed} THEN 1 ELSE 0 END) AS "absorbed"
     FROM "TestRun" t WHERE t."queueId" ${queues.text} AND t."startedAt" >= ? AND t."startedAt" < ? GROUP BY ${started} / ${DAY_MS}`,
    window,
  );

  const failures = await sql.all<{ reason: string; n: number | string }>(
    `SELECT t."reason", COUNT(*) AS "n" FROM "Transition" t WHERE t."queueId" ${queues.text} AND t."at" >= ? AND t."at" < ? AND t."toState" = 'failed'
     GROUP BY t."reason" ORDER BY COUNT(*) DESC, t."reason" LIMIT ${FAILURE_REASONS_SHOWN}`,
    window,
  );

  const hours = await sql.all<{ hour: number | string; n: number | string }>(
    `SELECT (${at} / ${HOUR_MS}) % 24 AS "hour", COUNT(*) AS "n" FROM "Transition" t
     WHERE t."queueId" ${queues.text} AND t."at" >= ? AND t."at" < ? AND t."reason" IN ('submitted', 'resubmitted')
     GROUP BY (${at} / ${HOUR_MS}) % 24`,
    window,
  );

  const [failed] = await sql.all<{ n: number | string }>(`SELECT COUNT(*) AS "n" FROM "Transition" t WHERE t."queueId" ${queues.text} AND t."at" >= ? AND t."at" < ? AND t."toState" = 'failed'`, window);

  const seconds = (v: number | string | null) => (v === null ? null : Number(v) / 1000);
  const byDay = new Map<number, AnalyticsDay>();
  const dayOf = (day: number) => {
    let row = byDay.get(day);
    if (!row) byDay.set(day, (row = { day: day * DAY_MS, ...NOTHING }));
    return row;
  };
  let total: AnalyticsData["total"] = { ...NOTHING, failed: Number(failed?.n ?? 0) };
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
    if (Number(row.day) === -1) total = { ...total, ...figures };
    else Object.assign(dayOf(Number(row.day)), figures);
  }
  for (const row of runs) {
    const day = dayOf(Number(row.day));
    day.runs = Number(row.runs);
    day.flakyAvoided = Number(row.absorbed ?? 0);
    total.runs += day.runs;
    total.flakyAvoided += day.flakyAvoided;
  }
  return {
    days: [...byDay.values()].sort((a, b) => a.day - b.day),
    total,
    failures: failures.map((row) => ({ reason: row.reason, count: Number(row.n) })),
    hours: hours.map((row) => ({ hour: Number(row.hour), submissions: Number(row.n) })).sort((a, b) => a.hour - b.hour),
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
