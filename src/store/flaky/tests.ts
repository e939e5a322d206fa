import { BROKEN_STREAK, ZFlakySettings, type FlakySettings, type QuarantineSetting, type TestStatus } from "../../domain/flaky/detection.js";
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
 * Per test, its runs and failed runs since `since` (uploads judged an infrastructure failure
 * left out), and its failing streak in that window: the runs that failed (no attempt passing)
 * after its latest run with a passing attempt, and the commits they were on — counted over the
 * uploads of no pull request (the target branch, the merge queue's testing branches): a PR
 * branched before a break still passes, and says nothing of the code as it is now.
 */
export async function countRunsSince(sql: Sql, keys: readonly number[], since: number): Promise<Map<number, { runs: number; failures: number; streak: number; streakCommits: number }>> {
  const [inKeys, keysParam] = sql.anyOf(`r."testCaseKey"`, keys);
  const rows = await sql.all<{ k: unknown; runs: unknown; failures: unknown; passes: unknown }>(
    `SELECT r."testCaseKey" AS k, COUNT(*) AS runs, SUM(CASE WHEN r."failed" THEN 1 ELSE 0 END) AS failures, SUM(CASE WHEN r."passed" THEN 1 ELSE 0 END) AS passes
       FROM "TestResult" r WHERE ${inKeys} AND r."at" >= ?
        AND NOT EXISTS (SELECT 1 FROM "TestUpload" u WHERE u."key" = r."uploadKey" AND u."infrastructureFailure" IS NOT NULL)
      GROUP BY r."testCaseKey"`,
    [keysParam, since],
  );
  // The streak decides only for tests that failed often enough and had a passing attempt (one
  // that failed then passed on a retry counts: a test that flaked, then broke): counted for those only.
  const streakKeys = rows.filter((row) => integer(row.failures) >= MIN_STREAK_COUNTED && integer(row.passes) > 0).map((row) => integer(row.k));
  const streakOf = await countStreaks(sql, streakKeys, since);
  return new Map(rows.map((row) => [integer(row.k), { runs: integer(row.runs), failures: integer(row.failures), ...(streakOf.get(integer(row.k)) ?? { streak: 0, streakCommits: 0 }) }]));
}

/** countRunsSince's failing streaks, for `keys` (none: no statement). */
async function countStreaks(sql: Sql, keys: readonly number[], since: number): Promise<Map<number, { streak: number; streakCommits: number }>> {
  if (keys.length === 0) return new Map();
  const [inKeys, keysParam] = sql.anyOf(`r."testCaseKey"`, keys);
  const streaks = await sql.all<{ k: unknown; streak: unknown; commits: unknown }>(
    `WITH "valid" AS (
        SELECT r."testCaseKey" AS k, r."at" AS at, r."failed" AS failed, r."passed" AS passed, u."commitSha" AS sha
          FROM "TestResult" r JOIN "TestUpload" u ON u."key" = r."uploadKey"
         WHERE ${inKeys} AND r."at" >= ? AND u."infrastructureFailure" IS NULL AND u."prNumber" IS NULL
      ), "lastPass" AS (SELECT k, MAX(at) AS at FROM "valid" WHERE passed GROUP BY k)
      SELECT v.k AS k, COUNT(*) AS streak, COUNT(DISTINCT v.sha) AS commits
        FROM "valid" v LEFT JOIN "lastPass" p ON p.k = v.k
       WHERE v.failed AND NOT v.passed AND (p.at IS NULL OR v.at > p.at)
       GROUP BY v.k`,
    [keysParam, since],
  );
  return new Map(streaks.map((row) => [integer(row.k), { streak: integer(row.streak), streakCommits: integer(row.commits) }]));
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

/** Sets a test's quarantine setting and why (null: no reason given). */
export async function saveQuarantineSetting(sql: Sql, key: number, setting: QuarantineSetting, reason: string | null): Promise<void> {
  await sql.run(`UPDATE "TestCase" SET "quarantineSetting" = ?, "quarantineReason" = ? WHERE "key" = ?`, [setting, reason, key]);
}
