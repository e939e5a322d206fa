import { DAY_MS } from "../domain/time.js";
import { invalidArgument } from "../app/errors.js";
import { classify, DEFAULT_FLAKY_SETTINGS, isQuarantined, ZFlakySettings, type FlakySettings, type QuarantineSetting } from "../domain/flaky/detection.js";
import type { DetectionState } from "../domain/flaky/test-case.js";
import {
  countRunsSince,
  findDetectionStates,
  findFlakySettings,
  findTestsToRejudge,
  findWatchedTests,
  listRepositoryIds,
  lockRepositoryTests,
  saveFlakySettings,
  saveJudgment,
  saveQuarantineSetting,
  restartQuarantine,
  type Judgment,
  type StreakRunCounts,
} from "../store/flaky-store.js";
import type { Database } from "../store/database.js";
import type { Sql } from "../store/sql.js";
import { publishTestEvents, type TestChange } from "../store/webhook-outbox.js";

export async function loadFlakySettings(sql: Sql, repositoryId: string): Promise<FlakySettings> {
  return (await findFlakySettings(sql, repositoryId)) ?? DEFAULT_FLAKY_SETTINGS;
}

/** New pass-on-retry evidence for a test, found at ingest. */
export type Flake = { at: number; reason: string };

/**
 * Re-judges tests: counts their runs and failures in the settings' window, applies the rules
 * of detection.ts with any new pass-on-retry evidence (`failedNow`: the tests that failed in the
 * upload being judged, when it is one), and writes what changed — status with
 * its reason and time, the evidence, and quarantine with its time. Answers how many changed.
 */
export async function applyDetection(sql: Sql, settings: FlakySettings, tests: DetectionState[], flakes: Map<number, Flake>, now: Date, repositoryId: string, failedNow?: ReadonlySet<number>): Promise<number> {
  if (tests.length === 0) return 0;
  // An upload's re-judging looks for a streak in a new way only where it can have begun or
  // grown (a test failing in it) or holds (a broken test): one that passed ended its streak, and
  // one absent from the upload has the streak it had. The periodic refresh looks at every test.
  const broken = new Set(tests.filter((t) => t.status === "broken").map((t) => t.key));
  const stats = await countRunsSince(
    sql,
    tests.map((t) => t.key),
    now.getTime() - settings.windowDays * DAY_MS,
    failedNow && ((key) => failedNow.has(key) || broken.has(key)),
  );
  let changed = 0;
  const events: TestChange[] = [];
  for (const test of tests) {
    const judgment = judge(test, flakes.get(test.key), stats.get(test.key) ?? { runs: 0, failures: 0, streak: 0, streakCommits: 0 }, settings, now);
    if (!judgment) continue;
    changed++;
    await saveJudgment(sql, test.key, judgment);
    const status = judgment.status ? { from: test.status, to: judgment.status.value, reason: judgment.status.reason } : undefined;
    const quarantined = judgment.quarantined !== test.quarantined ? { from: test.quarantined, to: judgment.quarantined } : undefined;
    if (status || quarantined) events.push({ key: test.key, ...(status ? { status } : {}), ...(quarantined ? { quarantined } : {}) });
  }
  // Outbound webhooks: in the same transaction as the judgments.
  await publishTestEvents(sql, repositoryId, events, now);
  return changed;
}

/** A test's judgment under the settings, or null when nothing about it changed. */
function judge(test: DetectionState, flake: Flake | undefined, { runs, failures, streak, streakCommits, fixedAt, fixedAfter, newWay }: StreakRunCounts, settings: FlakySettings, now: Date): Judgment | null {
  const flakeAt = flake && (test.flakeAt === null || flake.at >= test.flakeAt) ? flake.at : test.flakeAt;
  const flakeReason = flakeAt === test.flakeAt ? test.flakeReason : flake!.reason;
  const verdict = classify(
    {
      runs,
      failures,
      streak,
      streakCommits,
      ...(fixedAt === undefined ? {} : { fixed: { at: new Date(fixedAt), after: fixedAfter ?? 0 } }),
      ...(newWay === undefined ? {} : { newWay }),
      flakeAt: flakeAt === null ? null : new Date(flakeAt),
      flakeReason,
    },
    settings,
    now,
  );
  const quarantined = isQuarantined(verdict.status, test.quarantineSetting, settings);
  const statusChanged = verdict.status !== test.status;
  if (!statusChanged && flakeAt === test.flakeAt && quarantined === test.quarantined) return null;
  return {
    flakeAt,
    flakeReason,
    quarantined,
    ...(statusChanged ? { status: { value: verdict.status, reason: verdict.reason, at: now } } : {}),
    ...(quarantined !== test.quarantined ? { quarantinedAt: quarantined ? now : null } : {}),
  };
}

/**
 * Re-judges every test that is not healthy, or is quarantined: evidence ages out of its window
 * and tests recover without new uploads. The worker runs it periodically. One transaction per
 * repository: a repository's lock is held only while its own tests are re-judged, so an API
 * write to it (updateFlakySettings, a quarantine override, an upload) waits for at most one
 * repository's re-judging, never for all of them (issue 22, defect 10).
 */
export async function refreshStatuses(db: Pick<Database, "sqlRead" | "sqlTransaction">, now: Date): Promise<number> {
  let changed = 0;
  for (const id of await db.sqlRead((sql) => listRepositoryIds(sql))) {
    changed += await db.sqlTransaction(async (sql) => {
      await lockRepositoryTests(sql, id);
      const tests = await findWatchedTests(sql, id);
      return tests.length > 0 ? applyDetection(sql, await loadFlakySettings(sql, id), tests, new Map(), now, id) : 0;
    });
  }
  return changed;
}

/** Sets a test's quarantine override (always / never) or returns it to automatic, and re-judges the test under it. */
export async function overrideQuarantine(sql: Sql, repositoryId: string, key: number, setting: QuarantineSetting, reason: string | null, now: Date): Promise<void> {
  await lockRepositoryTests(sql, repositoryId);
  const [before] = await findDetectionStates(sql, [key]);
  await saveQuarantineSetting(sql, key, setting, reason);
  await applyDetection(sql, await loadFlakySettings(sql, repositoryId), await findDetectionStates(sql, [key]), new Map(), now, repositoryId);
  // A person's quarantine handed back to detection, and kept by it (restartQuarantine touches only
  // a quarantined test): detection's starts now, and covers the ways the test has failed until now
  // (domain/flaky/verdict.ts isNewSinceQuarantine).
  if (before?.quarantineSetting === "always" && setting === "auto") await restartQuarantine(sql, key, now);
}

/** Some of a repository's settings; a null ticketUrlTemplate removes it. */
export type FlakySettingsChange = Partial<Omit<FlakySettings, "ticketUrlTemplate">> & { ticketUrlTemplate?: string | null | undefined };

/** Changes some of a repository's detection settings and re-judges its tests under them; answers the settings now in force. */
export async function changeFlakySettings(sql: Sql, repositoryId: string, changes: FlakySettingsChange, now: Date): Promise<FlakySettings> {
  // Read, merge, write: under the lock, or concurrent changes of other fields would be lost.
  await lockRepositoryTests(sql, repositoryId);
  const { ticketUrlTemplate, ...rest } = changes;
  const merged: FlakySettings = { ...(await loadFlakySettings(sql, repositoryId)), ...rest };
  if (ticketUrlTemplate === null) delete merged.ticketUrlTemplate;
  else if (ticketUrlTemplate !== undefined) merged.ticketUrlTemplate = ticketUrlTemplate;
  if (merged.flakyRate > merged.brokenRate) throw invalidArgument("settings.flakyRate", "must not exceed brokenRate");
  const settings = ZFlakySettings.parse(merged);
  await saveFlakySettings(sql, repositoryId, settings, now);
  // Every test that has failed or is quarantined may change status under the new thresholds.
  const tests = await findTestsToRejudge(sql, repositoryId, now.getTime() - settings.windowDays * DAY_MS);
  await applyDetection(sql, settings, tests, new Map(), now, repositoryId);
  return settings;
}
