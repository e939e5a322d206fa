import { classify, DEFAULT_FLAKY_SETTINGS, isQuarantined, ZFlakySettings, type FlakySettings, type QuarantineSetting, type TestStatus } from "../domain/flaky/detection.js";
import type { Sql } from "../store/sql.js";

const DAY_MS = 24 * 60 * 60 * 1000;

/** What detection reads and writes of a test case. */
export type StatusRow = {
  key: number;
  status: TestStatus;
  flakeAt: number | null;
  flakeReason: string | null;
  quarantineSetting: QuarantineSetting;
  quarantined: boolean;
};

export const STATUS_COLUMNS = `"key", "status", "flakeAt", "flakeReason", "quarantineSetting", "quarantined"`;

/** Rows as the drivers return them (PostgreSQL: bigint as string; SQLite: booleans as 0/1). */
export function statusRow(raw: Record<string, unknown>): StatusRow {
  return {
    key: Number(raw.key),
    status: raw.status as TestStatus,
    flakeAt: raw.flakeAt === null || raw.flakeAt === undefined ? null : Number(raw.flakeAt),
    flakeReason: (raw.flakeReason as string | null) ?? null,
    quarantineSetting: raw.quarantineSetting as QuarantineSetting,
    quarantined: Boolean(raw.quarantined),
  };
}

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

export async function loadFlakySettings(sql: Sql, repositoryId: string): Promise<FlakySettings> {
  const rows = await sql.all<{ settings: string }>(`SELECT "settings" FROM "FlakySettings" WHERE "repositoryId" = ?`, [repositoryId]);
  return rows[0] ? ZFlakySettings.parse(JSON.parse(rows[0].settings)) : DEFAULT_FLAKY_SETTINGS;
}

/** New pass-on-retry evidence for a test, found at ingest. */
export type Flake = { at: number; reason: string };

/**
 * Re-judges tests: counts their runs and failures in the settings' window, applies the rules
 * of detection.ts with any new pass-on-retry evidence, and writes what changed — status with
 * its reason and time, the evidence, and quarantine with its time. Answers how many changed.
 */
export async function applyDetection(sql: Sql, settings: FlakySettings, rows: StatusRow[], flakes: Map<number, Flake>, now: Date): Promise<number> {
  if (rows.length === 0) return 0;
  const stats = new Map<number, { runs: number; failures: number }>();
  const [inKeys, keysParam] = sql.anyOf(`"testCaseKey"`, rows.map((r) => r.key));
  const counted = await sql.all<{ k: unknown; runs: unknown; failures: unknown }>(
    `SELECT "testCaseKey" AS k, COUNT(*) AS runs, SUM(CASE WHEN "failed" THEN 1 ELSE 0 END) AS failures
       FROM "TestResult" WHERE ${inKeys} AND "at" >= ? GROUP BY "testCaseKey"`,
    [keysParam, now.getTime() - settings.windowDays * DAY_MS],
  );
  for (const row of counted) stats.set(Number(row.k), { runs: Number(row.runs), failures: Number(row.failures) });

  let changed = 0;
  for (const row of rows) {
    const flake = flakes.get(row.key);
    const flakeAt = flake && (row.flakeAt === null || flake.at >= row.flakeAt) ? flake.at : row.flakeAt;
    const flakeReason = flakeAt === row.flakeAt ? row.flakeReason : flake!.reason;
    const { runs, failures } = stats.get(row.key) ?? { runs: 0, failures: 0 };
    const verdict = classify({ runs, failures, flakeAt: flakeAt === null ? null : new Date(flakeAt), flakeReason }, settings, now);
    const quarantined = isQuarantined(verdict.status, row.quarantineSetting, settings);
    const statusChanged = verdict.status !== row.status;
    if (!statusChanged && flakeAt === row.flakeAt && quarantined === row.quarantined) continue;
    changed++;
    await sql.run(
      `UPDATE "TestCase" SET "flakeAt" = ?, "flakeReason" = ?, "quarantined" = ?
         ${statusChanged ? `, "status" = ?, "statusReason" = ?, "statusAt" = ?` : ""}
         ${quarantined !== row.quarantined ? `, "quarantinedAt" = ?` : ""}
       WHERE "key" = ?`,
      [
        flakeAt,
        flakeReason,
        quarantined,
        ...(statusChanged ? [verdict.status, verdict.reason, now] : []),
        ...(quarantined !== row.quarantined ? [quarantined ? now : null] : []),
        row.key,
      ],
    );
  }
  return changed;
}

/**
 * Re-judges every test that is not healthy, or is quarantined: evidence ages out of its window
 * and tests recover without new uploads. The worker runs it periodically.
 */
export async function refreshStatuses(sql: Sql, now: Date): Promise<number> {
  let changed = 0;
  for (const { id } of await sql.all<{ id: string }>(`SELECT "id" FROM "Repository"`)) {
    await lockRepositoryTests(sql, id);
    const rows = await watchedTests(sql, id);
    if (rows.length > 0) changed += await applyDetection(sql, await loadFlakySettings(sql, id), rows, new Map(), now);
  }
  return changed;
}

/**
 * A repository's tests that are flaky, broken or quarantined: a union, so each half is served by
 * its index (an OR would read every test of the repository).
 */
export async function watchedTests(sql: Sql, repositoryId: string): Promise<StatusRow[]> {
  const rows = await sql.all<Record<string, unknown>>(
    `SELECT ${STATUS_COLUMNS} FROM "TestCase" WHERE "repositoryId" = ? AND "status" IN ('flaky', 'broken')
     UNION SELECT ${STATUS_COLUMNS} FROM "TestCase" WHERE "repositoryId" = ? AND "quarantined" = ?`,
    [repositoryId, repositoryId, true],
  );
  return rows.map(statusRow);
}
