import { BROKEN_STREAK, FIXED_PASSES, NEW_WAY_STREAK, newWayOf, ZFlakySettings, type FlakySettings, type QuarantineSetting, type TestStatus } from "../../domain/flaky/detection.js";
import type { DetectionState } from "../../domain/flaky/test-case.js";
import type { Sql } from "../sql.js";
import { boolean, integer, integerOrNull, quarantineSetting, testStatus } from "./rows.js";

/** What detection reads and writes of test cases, and the settings it judges them by. */

/**
 * Serializes, for the rest of the caller's transaction, the writes that judge a repository's
 * tests (settings changes, quarantine overrides, uploads, the periodic refresh). Each reads the
 * settings and test rows and writes back what it concluded from them, so two at once would
 * overwrite each other's settings or evidence. PostgreSQL: a lock on the repository's row, FOR
 * NO KEY UPDATE, which inserts referencing the repository (their foreign-key checks take FOR KEY
 * SHARE) do not wait for. SQLite runs one write transaction at a time already.
 */
export async function lockRepositoryTests(sql: Sql, repositoryId: string): Promise<void> {
  if (sql.kind === "postgres") await sql.all(`SELECT 1 FROM "Repository" WHERE "id" = ? FOR NO KEY UPDATE`, [repositoryId]);
}

/** The repository's detection settings as stored (fields added since take their defaults), or null if never set. */
export async function findFlakySettings(sql: Sql, repositoryId: string): Promise<FlakySettings | null> {
  const [row] = await sql.all<{ settings: string }>(`SELECT "settings" FROM "FlakySettings" WHERE "repositoryId" = ?`, [repositoryId]);
  return row ? ZFlakySettings.parse(JSON.parse(row.settings)) : null;
}

export async function saveFlakySettings(sql: Sql, repositoryId: string, settings: FlakySettings, now: Date): Promise<void> {
  await sql.run(
    `INSERT INTO "FlakySettings" ("repositoryId", "settings", "updatedAt") VALUES (?, ?, ?)
       ON CONFLICT ("repositoryId") DO UPDATE SET "settings" = excluded."settings", "updatedAt" = excluded."updatedAt"`,
    [repositoryId, JSON.stringify(settings), now],
  );
}

/** Where a repository's settings come from: its config file as last read from the default branch (domain/flaky/config-file.ts). */
export type SettingsSource = {
  /** The commit it was read at (null: never read). */
  fileSha: string | null;
  /** The settings it sets (null: there was no file). */
  fileFields: string[] | null;
  /** Why it was not applied (null: it was, or there was none). */
  fileError: string | null;
  /** Its settings when refused only for not fitting the API's own (null: none waiting). */
  filePending: Partial<FlakySettings> | null;
};

export async function findSettingsSource(sql: Sql, repositoryId: string): Promise<SettingsSource> {
  const [row] = await sql.all<{ fileSha: string | null; fileFields: string | null; fileError: string | null; filePending: string | null }>(
    `SELECT "fileSha", "fileFields", "fileError", "filePending" FROM "FlakySettings" WHERE "repositoryId" = ?`,
    [repositoryId],
  );
  return {
    fileSha: row?.fileSha ?? null,
    fileFields: row?.fileFields ? (JSON.parse(row.fileFields) as string[]) : null,
    fileError: row?.fileError ?? null,
    filePending: row?.filePending ? (JSON.parse(row.filePending) as Partial<FlakySettings>) : null,
  };
}

/** Records the config file as read (the settings row made with `settings` when there is none yet). */
export async function saveSettingsSource(sql: Sql, repositoryId: string, source: SettingsSource, settings: FlakySettings, now: Date): Promise<void> {
  const fields = source.fileFields === null ? null : JSON.stringify(source.fileFields);
  const pending = source.filePending === null ? null : JSON.stringify(source.filePending);
  await sql.run(
    `INSERT INTO "FlakySettings" ("repositoryId", "settings", "updatedAt", "fileSha", "fileFields", "fileError", "filePending") VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT ("repositoryId") DO UPDATE SET "fileSha" = excluded."fileSha", "fileFields" = excluded."fileFields", "fileError" = excluded."fileError", "filePending" = excluded."filePending"`,
    [repositoryId, JSON.stringify(settings), now, source.fileSha, fields, source.fileError, pending],
  );
}

/** The ids of all repositories (the periodic refresh visits each). */
export async function listRepositoryIds(sql: Sql): Promise<string[]> {
  return (await sql.all<{ id: string }>(`SELECT "id" FROM "Repository"`)).map((row) => row.id);
}

const DETECTION_COLUMNS = `"key", "status", "flakeAt", "flakeReason", "quarantineSetting", "quarantined"`;

function detectionState(raw: Record<string, unknown>): DetectionState {
  return {
    key: integer(raw.key),
    status: testStatus(raw.status),
    flakeAt: integerOrNull(raw.flakeAt),
    flakeReason: (raw.flakeReason as string | null) ?? null,
    quarantineSetting: quarantineSetting(raw.quarantineSetting),
    quarantined: boolean(raw.quarantined),
  };
}

export async function findDetectionStates(sql: Sql, keys: readonly number[]): Promise<DetectionState[]> {
  const [inKeys, keysParam] = sql.anyOf(`"key"`, keys);
  return (await sql.all<Record<string, unknown>>(`SELECT ${DETECTION_COLUMNS} FROM "TestCase" WHERE ${inKeys}`, [keysParam])).map(detectionState);
}

/**
 * A repository's tests that are flaky, broken or quarantined: a union, so each half is served by
 * its index (an OR would read every test of the repository).
 */
export async function findWatchedTests(sql: Sql, repositoryId: string): Promise<DetectionState[]> {
  const rows = await sql.all<Record<string, unknown>>(
    `SELECT ${DETECTION_COLUMNS} FROM "TestCase" WHERE "repositoryId" = ? AND "status" IN ('flaky', 'broken')
     UNION SELECT ${DETECTION_COLUMNS} FROM "TestCase" WHERE "repositoryId" = ? AND "quarantined" = ?`,
    [repositoryId, repositoryId, true],
  );
  return rows.map(detectionState);
}

/** The repository's tests a change of settings can re-judge: not healthy, quarantined or overridden, or failed since `failedSince` (ms). */
export async function findTestsToRejudge(sql: Sql, repositoryId: string, failedSince: number): Promise<DetectionState[]> {
  const rows = await sql.all<Record<string, unknown>>(
    `SELECT ${DETECTION_COLUMNS} FROM "TestCase" t WHERE t."repositoryId" = ?
       AND (t."status" <> 'healthy' OR t."quarantined" = ? OR t."quarantineSetting" <> 'auto'
            OR EXISTS (SELECT 1 FROM "TestFailure" f WHERE f."testCaseKey" = t."key" AND f."at" >= ?))`,
    [repositoryId, true, failedSince],
  );
  return rows.map(detectionState);
}

/** Failed runs below which no streak is counted (domain/flaky/detection.ts BROKEN_STREAK: none shorter decides). */
const MIN_STREAK_COUNTED = BROKEN_STREAK;

/**
 * Whether FIXED_PASSES passes in a row start at an island (a number of countStreaks): it and the
 * islands after it but the last hold no failure, and the last exists (its pass is the last of
 * them). Islands are numbered without gaps, so LEAD over the number reads the next ones.
 */
const PASSES_IN_A_ROW = [
  ...Array.from({ length: FIXED_PASSES - 1 }, (_, i) => (i === 0 ? "fails = 0" : `LEAD(fails, ${i}) OVER (PARTITION BY k ORDER BY grp) = 0`)),
  `LEAD(grp, ${FIXED_PASSES - 1}) OVER (PARTITION BY k ORDER BY grp) IS NOT NULL`,
].join(" AND ");

/** countRunsSince's figures for one test. */
export type StreakRunCounts = {
  runs: number;
  failures: number;
  /** Its failing streak now: failed runs off pull requests since its latest passing run, and their commits. */
  streak: number;
  streakCommits: number;
  /**
   * When a broken streak (BROKEN_STREAK failed runs or more, on more than one commit) was
   * followed in the window by FIXED_PASSES passing runs in a row, the last such: when the first
   * of those passes ran and how many runs the streak had.
   * `runs` and `failures` are then counted from that pass on, the change point: the failures of
   * a test that was broken and is fixed say nothing of how it runs now.
   */
  fixedAt?: number;
  fixedAfter?: number;
  /** Its failing streak now, when it fails a new way (detection.ts Evidence.newWay). */
  newWay?: { runs: number; commits: number; summary: string };
};

/**
 * Per test, its runs and failed runs since `since` (uploads judged an infrastructure failure
 * left out), and its failing streaks in that window: the runs that failed (no attempt passing)
 * after its latest run with a passing attempt, and the commits they were on — counted over the
 * uploads of no pull request (the target branch, the merge queue's testing branches): a PR
 * branched before a break still passes, and says nothing of the code as it is now. A broken
 * streak that was fixed moves the start of `runs` and `failures` to the pass that ended it.
 */
export async function countRunsSince(sql: Sql, keys: readonly number[], since: number, newWayOnly?: (key: number) => boolean): Promise<Map<number, StreakRunCounts>> {
  const rows = await countRuns(sql, keys, since);
  // The streaks decide only for tests that failed often enough and had a passing attempt (one
  // that failed then passed on a retry counts: a test that flaked, then broke): counted for those only.
  const streakKeys = rows.filter((row) => row.failures >= MIN_STREAK_COUNTED && row.passes > 0).map((row) => row.k);
  const streakOf = await countStreaks(sql, streakKeys, since);
  const counts = new Map<number, StreakRunCounts>(rows.map((row) => [row.k, { runs: row.runs, failures: row.failures, streak: 0, streakCommits: 0, ...streakOf.get(row.k) }]));
  for (const [k, streaks] of streakOf) {
    if (streaks.fixedAt === undefined) continue;
    const [after] = await countRuns(sql, [k], streaks.fixedAt);
    counts.set(k, { ...counts.get(k)!, runs: after?.runs ?? 0, failures: after?.failures ?? 0 });
  }
  const newWayKeys = rows.filter((row) => row.failures >= NEW_WAY_STREAK && row.passes > 0 && (newWayOnly?.(row.k) ?? true)).map((row) => row.k);
  for (const [k, newWay] of await findNewWayStreaks(sql, newWayKeys, since)) counts.set(k, { ...counts.get(k)!, newWay });
  return counts;
}

/**
 * The tests among `keys` whose failing streak now — failed runs (no attempt passing) off pull
 * requests after their latest passing run off pull requests, in [since, now] — is of
 * NEW_WAY_STREAK runs or more on more than one commit, every failure of it in a way (shape) the
 * test first failed in within the streak, when the test failed another way before the streak
 * (failures of any run since `since`; uploads judged an infrastructure failure left out). Two
 * statements: the streaks, then, for the few long enough, the first failure of each way.
 */
async function findNewWayStreaks(sql: Sql, keys: readonly number[], since: number): Promise<Map<number, { runs: number; commits: number; summary: string }>> {
  if (keys.length === 0) return new Map();
  const [inPassKeys, passKeysParam] = sql.anyOf(`r."testCaseKey"`, keys);
  const [inKeys, keysParam] = sql.anyOf(`r."testCaseKey"`, keys);
  const failed = await sql.all<{ k: unknown; at: unknown; sha: string; shape: string | null; summary: string | null }>(
    `WITH "lastPass" AS (
        SELECT r."testCaseKey" AS k, MAX(r."at") AS at FROM "TestResult" r JOIN "TestUpload" u ON u."key" = r."uploadKey"
         WHERE ${inPassKeys} AND r."at" >= ? AND r."passed" = ? AND u."infrastructureFailure" IS NULL AND u."prNumber" IS NULL
         GROUP BY r."testCaseKey"
      )
      SELECT r."testCaseKey" AS k, r."at" AS at, u."commitSha" AS sha, s."shape" AS shape, s."summary" AS summary
        FROM "TestResult" r JOIN "TestUpload" u ON u."key" = r."uploadKey"
        LEFT JOIN "lastPass" p ON p.k = r."testCaseKey"
        LEFT JOIN "TestFailure" f ON f."repositoryId" = u."repositoryId" AND f."at" = r."at" AND f."testCaseKey" = r."testCaseKey" AND f."uploadKey" = r."uploadKey"
        LEFT JOIN "FailureSignature" s ON s."testCaseKey" = f."testCaseKey" AND s."signature" = f."signature"
       WHERE ${inKeys} AND r."at" >= ? AND r."failed" = ? AND r."passed" = ? AND u."infrastructureFailure" IS NULL AND u."prNumber" IS NULL
         AND (p.at IS NULL OR r."at" > p.at)
       ORDER BY r."testCaseKey", r."at"`,
    [passKeysParam, since, true, keysParam, since, true, false],
  );
  const streaks = new Map<number, { at: number; sha: string; shape: string | null; summary: string | null }[]>();
  for (const row of failed) {
    const k = integer(row.k);
    if (!streaks.has(k)) streaks.set(k, []);
    streaks.get(k)!.push({ at: integer(row.at), sha: row.sha, shape: row.shape ?? null, summary: row.summary ?? null });
  }
  const long = [...streaks].filter(([, runs]) => runs.length >= NEW_WAY_STREAK && new Set(runs.map((r) => r.sha)).size >= 2 && runs.every((r) => r.shape !== null));
  if (long.length === 0) return new Map();
  const [inLongKeys, longKeysParam] = sql.anyOf(
    `f."testCaseKey"`,
    long.map(([k]) => k),
  );
  const firsts = await sql.all<{ k: unknown; shape: string; first: unknown }>(
    `SELECT f."testCaseKey" AS k, s."shape" AS shape, MIN(f."at") AS first
       FROM "TestFailure" f JOIN "TestUpload" u ON u."key" = f."uploadKey" JOIN "FailureSignature" s ON s."testCaseKey" = f."testCaseKey" AND s."signature" = f."signature"
      WHERE ${inLongKeys} AND f."at" >= ? AND u."infrastructureFailure" IS NULL AND s."shape" IS NOT NULL
      GROUP BY f."testCaseKey", s."shape"`,
    [longKeysParam, since],
  );
  const firstOf = new Map<number, Map<string, number>>();
  for (const row of firsts) {
    const k = integer(row.k);
    if (!firstOf.has(k)) firstOf.set(k, new Map());
    firstOf.get(k)!.set(row.shape, integer(row.first));
  }
  const found = new Map<number, { runs: number; commits: number; summary: string }>();
  for (const [k, runs] of long) {
    const verdict = newWayOf(runs, firstOf.get(k) ?? new Map());
    if (verdict) found.set(k, verdict);
  }
  return found;
}

async function countRuns(sql: Sql, keys: readonly number[], since: number): Promise<{ k: number; runs: number; failures: number; passes: number }[]> {
  const [inKeys, keysParam] = sql.anyOf(`r."testCaseKey"`, keys);
  const rows = await sql.all<{ k: unknown; runs: unknown; failures: unknown; passes: unknown }>(
    `SELECT r."testCaseKey" AS k, COUNT(*) AS runs, SUM(CASE WHEN r."failed" THEN 1 ELSE 0 END) AS failures, SUM(CASE WHEN r."passed" THEN 1 ELSE 0 END) AS passes
       FROM "TestResult" r WHERE ${inKeys} AND r."at" >= ?
        AND NOT EXISTS (SELECT 1 FROM "TestUpload" u WHERE u."key" = r."uploadKey" AND u."infrastructureFailure" IS NOT NULL)
      GROUP BY r."testCaseKey"`,
    [keysParam, since],
  );
  return rows.map((row) => ({ k: integer(row.k), runs: integer(row.runs), failures: integer(row.failures), passes: integer(row.passes) }));
}

/**
 * countRunsSince's failing streaks, for `keys` (none: no statement). The runs off pull requests
 * in time order, numbered by the passing runs up to each (`grp`): each number is a pass and the
 * failures after it (the first, the failures before any pass). A streak is one number's failures;
 * the last number's is the streak now, an earlier one ended with the next number's pass, and was
 * fixed at the first FIXED_PASSES passes in a row after it (numbers of which all but the last
 * have no failure), wherever they come. Failures at the instant of a pass count before it. Only
 * streaks of MIN_STREAK_COUNTED or more are read.
 */
async function countStreaks(sql: Sql, keys: readonly number[], since: number): Promise<Map<number, Omit<StreakRunCounts, "runs" | "failures">>> {
  if (keys.length === 0) return new Map();
  const [inKeys, keysParam] = sql.anyOf(`r."testCaseKey"`, keys);
  const islands = await sql.all<{ k: unknown; grp: unknown; fails: unknown; commits: unknown; nextAt: unknown; fixedAt: unknown }>(
    `WITH "valid" AS (
        SELECT r."testCaseKey" AS k, r."at" AS at, u."commitSha" AS sha,
               CASE WHEN r."failed" AND NOT r."passed" THEN 1 ELSE 0 END AS bad, CASE WHEN r."passed" THEN 1 ELSE 0 END AS good
          FROM "TestResult" r JOIN "TestUpload" u ON u."key" = r."uploadKey"
         WHERE ${inKeys} AND r."at" >= ? AND u."infrastructureFailure" IS NULL AND u."prNumber" IS NULL
      ), "numbered" AS (
        SELECT k, at, sha, bad, SUM(good) OVER (PARTITION BY k ORDER BY at, good ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS grp FROM "valid"
      ), "islands" AS (
        SELECT k, grp, SUM(bad) AS fails, COUNT(DISTINCT CASE WHEN bad = 1 THEN sha END) AS commits, MIN(at) AS "startAt" FROM "numbered" GROUP BY k, grp
      ), "marked" AS (
        SELECT k, grp, fails, commits, "startAt", LEAD("startAt") OVER (PARTITION BY k ORDER BY grp) AS "nextAt",
               CASE WHEN ${PASSES_IN_A_ROW} THEN 1 ELSE 0 END AS "passesStart"
          FROM "islands"
      ), "fixes" AS (
        -- The first passes in a row after each island: the islands after it, read from the last (a frame that only grows).
        SELECT k, grp, fails, commits, "nextAt",
               MIN(CASE WHEN "passesStart" = 1 THEN "startAt" END) OVER (PARTITION BY k ORDER BY grp DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS "fixedAt"
          FROM "marked"
      )
      SELECT k, grp, fails, commits, "nextAt", "fixedAt" FROM "fixes" WHERE fails >= ?`,
    [keysParam, since, MIN_STREAK_COUNTED],
  );
  const streaks = new Map<number, Omit<StreakRunCounts, "runs" | "failures"> & { fixedGrp?: number }>();
  for (const row of islands) {
    const k = integer(row.k);
    const entry = streaks.get(k) ?? { streak: 0, streakCommits: 0 };
    streaks.set(k, entry);
    if (row.nextAt === null || row.nextAt === undefined) {
      entry.streak = integer(row.fails);
      entry.streakCommits = integer(row.commits);
    } else if (integer(row.commits) >= 2 && row.fixedAt !== null && row.fixedAt !== undefined && (entry.fixedGrp === undefined || integer(row.grp) > entry.fixedGrp)) {
      entry.fixedGrp = integer(row.grp);
      entry.fixedAt = integer(row.fixedAt);
      entry.fixedAfter = integer(row.fails);
    }
  }
  return new Map([...streaks].map(([k, { fixedGrp: _, ...entry }]) => [k, entry]));
}

/**
 * A test's new judgment: its evidence and quarantine always; its status, with reason and time,
 * when it changed; the time of quarantine when quarantine changed (null when lifted).
 */
export type Judgment = {
  flakeAt: number | null;
  flakeReason: string | null;
  quarantined: boolean;
  status?: { value: TestStatus; reason: string; at: Date };
  quarantinedAt?: Date | null;
};

export async function saveJudgment(sql: Sql, key: number, judgment: Judgment): Promise<void> {
  const { status, quarantinedAt } = judgment;
  await sql.run(
    `UPDATE "TestCase" SET "flakeAt" = ?, "flakeReason" = ?, "quarantined" = ?
       ${status ? `, "status" = ?, "statusReason" = ?, "statusAt" = ?` : ""}
       ${quarantinedAt !== undefined ? `, "quarantinedAt" = ?` : ""}
     WHERE "key" = ?`,
    [judgment.flakeAt, judgment.flakeReason, judgment.quarantined, ...(status ? [status.value, status.reason, status.at] : []), ...(quarantinedAt !== undefined ? [quarantinedAt] : []), key],
  );
}

/** A quarantine that continues under another hand: its time is now. */
export async function restartQuarantine(sql: Sql, key: number, now: Date): Promise<void> {
  await sql.run(`UPDATE "TestCase" SET "quarantinedAt" = ? WHERE "key" = ? AND "quarantined" = ?`, [now, key, true]);
}

/** Sets a test's quarantine setting and why (null: no reason given). */
export async function saveQuarantineSetting(sql: Sql, key: number, setting: QuarantineSetting, reason: string | null): Promise<void> {
  await sql.run(`UPDATE "TestCase" SET "quarantineSetting" = ?, "quarantineReason" = ? WHERE "key" = ?`, [setting, reason, key]);
}
