import { DAY_MS } from "../time.js";
import { BROKEN_STREAK, classify, FIXED_PASSES, isQuarantined, NEW_WAY_STREAK, newWayOf, type FlakySettings, type QuarantineSetting, type TestStatus } from "./detection.js";

/**
 * A policy's backtest (issue 25, part 3): a repository's stored results replayed, test by test,
 * under detection settings, as detection would have judged them upload by upload — the same
 * rules (detection.ts `classify`, `isQuarantined`) on the same evidence as the store counts it
 * (store/flaky/tests.ts countRunsSince: runs and failures in the window, leaving out uploads read
 * as an infrastructure failure; failing streaks off pull requests; a fix as FIXED_PASSES passes
 * in a row after a broken streak; pass-on-retry evidence within one run, on one commit, or on one
 * tree in the queue's runs). Two policies replayed over the same results say what would have
 * changed: tests quarantined and released, queue runs whose failures quarantine would have
 * excused, and regressions it would have hidden.
 *
 * What the replay cannot know it takes as it is now: a person's quarantine override (always /
 * never) holds for the whole period. Statuses are judged at each of the test's runs and at the
 * end (the service also re-judges periodically, so a release by recovery happens up to a run
 * earlier there than here).
 */

/** One run of a test: one upload's results for it (never an infrastructure failure's). */
export type ReplayRun = {
  /** When it ran (the result's time, ms). */
  at: number;
  sha: string;
  /** The tree a queue run tested (its runs of one tree ran the same code), else null. */
  tree: string | null;
  /** The run was of a pull request's branch (not the target branch or a queue run). */
  pr: boolean;
  /** Some attempt failed / some attempt passed. */
  failed: boolean;
  passed: boolean;
  /** The queue run the upload belongs to, else null. */
  queueRun: string | null;
  /** The shape of its failure (failures.ts `shape`), when it failed and one is kept. */
  shape: string | null;
  /** When Greenline received its upload (ms): the clock a quarantine's time and a failure's first time are on. */
  receivedAt: number;
};

export type ReplayTest = {
  key: number;
  id: string;
  name: string;
  variant: string;
  /** Its quarantine setting now: a person's always or never holds for the whole replay. */
  setting: QuarantineSetting;
  /** Its runs, oldest first. */
  runs: ReplayRun[];
  /** When it first failed each way (shape → ms), as stored: the quarantine's shape rule. */
  shapeFirstAt: ReadonlyMap<string, number>;
  /** Some failure mode of it was stored before shapes were kept: no failure of it is new since a quarantine. */
  unshapedFailures?: boolean;
};

/** What one policy did over the period, for one test. */
export type TestReplay = {
  /** Status and quarantine at the end. */
  status: TestStatus;
  quarantined: boolean;
  /** Ever quarantined in the period, and how many quarantines started and ended in it. */
  everQuarantined: boolean;
  everFlaky: boolean;
  quarantinesStarted: number;
  releases: number;
  /** Its failures in the period that quarantine excused (indexes in its runs), and how many of them were of a regression. */
  excused: number[];
  regressionsExcused: number;
};

/**
 * The failures of a test that, seen with hindsight, were a regression: each run, off pull
 * requests, in a streak of BROKEN_STREAK or more failed runs (no attempt passing) on more than one
 * commit, and every run of the test (pull requests' too) that failed between the streak's first
 * and last failure. Answers their times.
 */
export function regressionFailures(runs: readonly ReplayRun[]): Set<number> {
  const spans: [number, number][] = [];
  let streak: ReplayRun[] = [];
  const close = () => {
    if (streak.length >= BROKEN_STREAK && new Set(streak.map((r) => r.sha)).size >= 2) spans.push([streak[0]!.at, streak.at(-1)!.at]);
    streak = [];
  };
  // In time order, failures before passes at one instant (as the streaks are counted).
  const ordered = runs.filter((r) => !r.pr).sort((a, b) => a.at - b.at || Number(a.passed) - Number(b.passed));
  for (const run of ordered) {
    if (run.passed) close();
    else if (run.failed) streak.push(run);
  }
  close();
  const times = new Set<number>();
  for (const run of runs) if (run.failed && !run.passed && spans.some(([from, to]) => run.at >= from && run.at <= to)) times.add(run.at);
  return times;
}

/**
 * Replays one test under `settings` from its first run to `end`, counting what happened in
 * [from, end]. Runs before `from` only build the evidence (the window and the pass-on-retry
 * evidence reach back before the period).
 */
export function replayTest(test: ReplayTest, settings: FlakySettings, from: number, end: number, regressions: ReadonlySet<number>): TestReplay {
  const runs = test.runs;
  const flakes = flakeTimes(runs);
  const out: TestReplay = { status: "healthy", quarantined: test.setting === "always", everQuarantined: false, everFlaky: false, quarantinesStarted: 0, releases: 0, excused: [], regressionsExcused: 0 };
  let quarantinedAt: number | null = null;
  let flakeAt: number | null = null;
  // The window [windowStart, upTo) and its counts, kept as it slides (a replay costs its runs, not runs × window).
  let windowStart = 0;
  let included = 0;
  const window = { failures: 0, passes: 0 };
  const judgeAt = (upTo: number, now: number, receivedAt: number, failedNow: boolean) => {
    const since = now - settings.windowDays * DAY_MS;
    for (; included < upTo; included++) {
      window.failures += Number(runs[included]!.failed);
      window.passes += Number(runs[included]!.passed);
    }
    for (; windowStart < upTo && runs[windowStart]!.at < since; windowStart++) {
      window.failures -= Number(runs[windowStart]!.failed);
      window.passes -= Number(runs[windowStart]!.passed);
    }
    const counted = now >= from;
    // A state carried into the period counts in it (a quarantine from before it, released in it, was in force in it).
    if (counted && out.quarantined) out.everQuarantined = true;
    if (counted && out.status === "flaky") out.everFlaky = true;
    // Like the service, a streak in a new way is looked for where it can have begun or grown, or holds (status.ts applyDetection).
    const lookForNewWay = failedNow || out.status === "broken";
    const verdict = classify(evidenceOf(runs, windowStart, upTo, window, flakeAt, lookForNewWay), settings, new Date(now));
    const quarantined = isQuarantined(verdict.status, test.setting, settings);
    if (quarantined && !out.quarantined) {
      quarantinedAt = receivedAt;
      if (counted) out.quarantinesStarted++;
    } else if (!quarantined && out.quarantined && counted) out.releases++;
    out.status = verdict.status;
    out.quarantined = quarantined;
    if (counted && quarantined) out.everQuarantined = true;
    if (counted && verdict.status === "flaky") out.everFlaky = true;
  };
  for (let i = 0; i < runs.length; i++) {
    const run = runs[i]!;
    if (run.at > end) break;
    if (flakes[i] !== null && (flakeAt === null || flakes[i]! > flakeAt)) flakeAt = flakes[i]!;
    // The runs at one instant are one upload's: judged together, after the last of them.
    if (i + 1 < runs.length && runs[i + 1]!.at === run.at) continue;
    let failedNow = false;
    let evidenceNow = false;
    for (let j = i; j >= 0 && runs[j]!.at === run.at; j--) {
      failedNow ||= runs[j]!.failed && !runs[j]!.passed;
      evidenceNow ||= runs[j]!.failed || flakes[j] !== null;
    }
    // The service re-judges a test at an upload only when it failed in it, brought pass-on-retry
    // evidence, or was already flaky, broken or quarantined (ingest.ts detect): so does the replay.
    if (evidenceNow || out.status !== "healthy" || out.quarantined) judgeAt(i + 1, run.at, run.receivedAt, failedNow);
    for (let j = i; j >= 0 && runs[j]!.at === run.at; j--) {
      const r = runs[j]!;
      if (r.at < from || !r.failed || r.passed || !out.quarantined) continue;
      // Detection's quarantine covers the ways the test had failed when it began (verdict.ts isNewSinceQuarantine).
      const firstAt = r.shape === null ? undefined : test.shapeFirstAt.get(r.shape);
      const newWay = test.setting !== "always" && !test.unshapedFailures && quarantinedAt !== null && firstAt !== undefined && firstAt > quarantinedAt;
      if (newWay) continue;
      out.excused.push(j);
      if (regressions.has(r.at)) out.regressionsExcused++;
    }
  }
  // At the end, as the periodic refresh does: the tests flaky, broken or quarantined.
  const last = runs.findLastIndex((r) => r.at <= end);
  if (out.status !== "healthy" || out.quarantined) judgeAt(last + 1, end, end, false);
  if (out.quarantined && end >= from) out.everQuarantined = true;
  return out;
}

/**
 * Each run's pass-on-retry evidence, when it brought some: a failure and a pass within the run;
 * or a failure (pass) where another run of the same commit, or a queue run of the same tree,
 * passed (failed) before it. Answers the evidence's time per run (null: none).
 */
function flakeTimes(runs: readonly ReplayRun[]): (number | null)[] {
  const seen = new Map<string, number>();
  const FAIL = 1;
  const PASS = 2;
  return runs.map((run) => {
    const mine = (run.failed ? FAIL : 0) | (run.passed ? PASS : 0);
    let flake: number | null = mine === (FAIL | PASS) ? run.at : null;
    for (const code of [`c:${run.sha}`, ...(run.tree !== null && run.queueRun !== null ? [`t:${run.tree}`] : [])]) {
      const before = seen.get(code) ?? 0;
      if ((mine === FAIL && before & PASS) || (mine === PASS && before & FAIL)) flake = run.at;
      seen.set(code, before | mine);
    }
    return flake;
  });
}

/** The evidence detection counts from runs [start, end) (the window), as store/flaky/tests.ts countRunsSince does. */
function evidenceOf(runs: readonly ReplayRun[], start: number, end: number, window: { failures: number; passes: number }, flakeAt: number | null, lookForNewWay: boolean) {
  const { failures, passes } = window;
  const streaks = failures >= BROKEN_STREAK && passes > 0 ? streaksOf(runs, start, end) : { streak: 0, streakCommits: 0 };
  let counted = { runs: end - start, failures };
  if (streaks.fixedAt !== undefined) {
    let from = start;
    while (from < end && runs[from]!.at < streaks.fixedAt) from++;
    counted = { runs: end - from, failures: 0 };
    for (let i = from; i < end; i++) if (runs[i]!.failed) counted.failures++;
  }
  const newWay = lookForNewWay && failures >= NEW_WAY_STREAK && passes > 0 ? newWayIn(runs, start, end) : null;
  return {
    ...counted,
    ...(newWay ? { newWay } : {}),
    streak: streaks.streak,
    streakCommits: streaks.streakCommits,
    ...(streaks.fixedAt === undefined ? {} : { fixed: { at: new Date(streaks.fixedAt), after: streaks.fixedAfter! } }),
    flakeAt: flakeAt === null ? null : new Date(flakeAt),
    flakeReason: "failed and passed on the same code",
  };
}

/** The failing streak now in runs [start, end) when it fails a new way, as store/flaky/tests.ts findNewWayStreaks finds it. */
function newWayIn(runs: readonly ReplayRun[], start: number, end: number) {
  let lastPass = Number.NEGATIVE_INFINITY;
  for (let i = start; i < end; i++) if (!runs[i]!.pr && runs[i]!.passed) lastPass = Math.max(lastPass, runs[i]!.at);
  const streak: { at: number; sha: string; shape: string | null; summary: string | null }[] = [];
  const firstFailedAt = new Map<string, number>();
  for (let i = start; i < end; i++) {
    const run = runs[i]!;
    if (run.failed && run.shape !== null && !firstFailedAt.has(run.shape)) firstFailedAt.set(run.shape, run.at);
    if (!run.pr && run.failed && !run.passed && run.at > lastPass) streak.push({ at: run.at, sha: run.sha, shape: run.shape, summary: null });
  }
  if (streak.length < NEW_WAY_STREAK || new Set(streak.map((r) => r.sha)).size < 2) return null;
  return newWayOf(streak, firstFailedAt);
}

/**
 * The failing streak now and the latest fixed broken streak in runs [start, end), off pull
 * requests: islands, each a pass and the failures after it (the first, the failures before any
 * pass); failures at the instant of a pass count before it.
 */
function streaksOf(runs: readonly ReplayRun[], start: number, end: number): { streak: number; streakCommits: number; fixedAt?: number; fixedAfter?: number } {
  type Island = { fails: number; shas: Set<string>; startAt: number };
  const valid: ReplayRun[] = [];
  for (let i = start; i < end; i++) if (!runs[i]!.pr) valid.push(runs[i]!);
  // Within one instant, failures before passes (the SQL orders by time, then pass); the runs are in time order already.
  for (let i = 1; i < valid.length; i++) {
    for (let j = i; j > 0 && valid[j - 1]!.at === valid[j]!.at && valid[j - 1]!.passed && !valid[j]!.passed; j--) [valid[j - 1], valid[j]] = [valid[j]!, valid[j - 1]!];
  }
  const islands: Island[] = [];
  for (const run of valid) {
    if (run.passed || islands.length === 0) islands.push({ fails: 0, shas: new Set(), startAt: run.at });
    const island = islands.at(-1)!;
    if (run.failed && !run.passed) {
      island.fails++;
      island.shas.add(run.sha);
    }
  }
  const last = islands.at(-1);
  const result: { streak: number; streakCommits: number; fixedAt?: number; fixedAfter?: number } =
    last && last.fails >= BROKEN_STREAK ? { streak: last.fails, streakCommits: last.shas.size } : { streak: 0, streakCommits: 0 };
  // The first FIXED_PASSES passes in a row after each island (islands 1..FIXED_PASSES-1 of them without failure).
  const passesStart = islands.map((_, g) => g + FIXED_PASSES - 1 < islands.length && islands.slice(g, g + FIXED_PASSES - 1).every((i) => i.fails === 0));
  let firstAfter: number | undefined;
  for (let g = islands.length - 1; g >= 0; g--) {
    const island = islands[g]!;
    if (g < islands.length - 1 && island.fails >= BROKEN_STREAK && island.shas.size >= 2 && firstAfter !== undefined && result.fixedAt === undefined) {
      result.fixedAt = firstAfter;
      result.fixedAfter = island.fails;
    }
    if (passesStart[g]) firstAfter = island.startAt;
  }
  return result;
}

/** A test named in a backtest's answer. */
export type BacktestTest = { key: number; id: string; name: string; variant: string };

/** What one policy did to the repository's tests over the period. */
export type PolicyOutcome = {
  /** Tests flaky at some time in the period; broken and quarantined at its end. */
  testsFlaky: number;
  testsBroken: number;
  testsQuarantined: number;
  /** Tests quarantined at some time in the period; quarantines begun and ended in it. */
  testsEverQuarantined: number;
  quarantinesStarted: number;
  releases: number;
  /** Failed runs of tests (no attempt passing) the quarantine excused. */
  failuresExcused: number;
  /** Queue runs in which some test failed (no attempt passing), and those whose every such failure quarantine excused (an ejection avoided). */
  queueRunsFailed: number;
  queueRunsExcused: number;
  /** Failures excused that were a regression (regressionFailures), and their tests. */
  regressionsExcused: number;
  regressionTests: number;
};

export type Backtest = {
  current: PolicyOutcome;
  proposed: PolicyOutcome;
  /** Tests the proposed policy quarantines at some time in the period and the current never does, and the reverse. */
  newlyQuarantined: BacktestTest[];
  noLongerQuarantined: BacktestTest[];
  /** Queue runs the proposed policy excuses and the current does not (ejections avoided), and the reverse (ejections added). */
  ejectionsAvoided: number;
  ejectionsAdded: number;
  /** Tests with regressions the proposed policy hides and the current does not. */
  regressionsHidden: BacktestTest[];
  /** Per test (by key), what each policy did: for checks. */
  replays: Map<number, { test: BacktestTest; current: TestReplay; proposed: TestReplay }>;
};

/**
 * Replays the tests under the current and the proposed settings over [from, end] and compares.
 * `tests` must hold every test that failed in the period (a test that never failed is healthy,
 * and unquarantined but for a person's quarantine, under any settings) with its runs from before
 * `from` as far back as the longer window or recovery of the two policies reaches.
 */
export function backtest(
  tests: readonly ReplayTest[],
  current: FlakySettings,
  proposed: FlakySettings,
  from: number,
  end: number,
  replayed?: ReadonlyMap<number, { current: TestReplay; proposed: TestReplay }>,
): Backtest {
  const replays = new Map<number, { test: BacktestTest; current: TestReplay; proposed: TestReplay }>();
  const failedRuns = new Map<string, { current: boolean; proposed: boolean }>();
  const result: Backtest = { current: outcome(), proposed: outcome(), newlyQuarantined: [], noLongerQuarantined: [], ejectionsAvoided: 0, ejectionsAdded: 0, regressionsHidden: [], replays };
  for (const test of tests) {
    const name: BacktestTest = { key: test.key, id: test.id, name: test.name, variant: test.variant };
    const pair = { test: name, ...(replayed?.get(test.key) ?? replayPair(test, current, proposed, from, end)) };
    replays.set(test.key, pair);
    for (const side of ["current", "proposed"] as const) {
      const replay = pair[side];
      const sum = result[side];
      sum.testsFlaky += Number(replay.everFlaky);
      sum.testsBroken += Number(replay.status === "broken");
      sum.testsQuarantined += Number(replay.quarantined);
      sum.testsEverQuarantined += Number(replay.everQuarantined);
      sum.quarantinesStarted += replay.quarantinesStarted;
      sum.releases += replay.releases;
      sum.failuresExcused += replay.excused.length;
      sum.regressionsExcused += replay.regressionsExcused;
      sum.regressionTests += Number(replay.regressionsExcused > 0);
    }
    if (pair.proposed.everQuarantined && !pair.current.everQuarantined) result.newlyQuarantined.push(name);
    if (pair.current.everQuarantined && !pair.proposed.everQuarantined) result.noLongerQuarantined.push(name);
    if (pair.proposed.regressionsExcused > pair.current.regressionsExcused) result.regressionsHidden.push(name);
    // A queue run is ejected unless quarantine excused every failure in it (a failure that passed on a retry in the run is no failure).
    const excused = { current: new Set(pair.current.excused), proposed: new Set(pair.proposed.excused) };
    // A job of a queue run run again is another upload of that run: a test that passed in one of them did not fail the run.
    const passedIn = new Set(test.runs.filter((r) => r.queueRun !== null && r.passed).map((r) => r.queueRun));
    test.runs.forEach((run, i) => {
      if (run.queueRun === null || run.at < from || run.at > end || !run.failed || run.passed || passedIn.has(run.queueRun)) return;
      const seen = failedRuns.get(run.queueRun) ?? { current: true, proposed: true };
      failedRuns.set(run.queueRun, { current: seen.current && excused.current.has(i), proposed: seen.proposed && excused.proposed.has(i) });
    });
  }
  for (const excused of failedRuns.values()) {
    for (const side of ["current", "proposed"] as const) {
      result[side].queueRunsFailed++;
      result[side].queueRunsExcused += Number(excused[side]);
    }
    if (excused.proposed && !excused.current) result.ejectionsAvoided++;
    if (excused.current && !excused.proposed) result.ejectionsAdded++;
  }
  return result;
}

const outcome = (): PolicyOutcome => ({
  testsFlaky: 0,
  testsBroken: 0,
  testsQuarantined: 0,
  testsEverQuarantined: 0,
  quarantinesStarted: 0,
  releases: 0,
  failuresExcused: 0,
  queueRunsFailed: 0,
  queueRunsExcused: 0,
  regressionsExcused: 0,
  regressionTests: 0,
});

/** One test replayed under both policies (the app replays test by test, letting other work in between). */
export function replayPair(test: ReplayTest, current: FlakySettings, proposed: FlakySettings, from: number, end: number): { current: TestReplay; proposed: TestReplay } {
  const regressions = regressionFailures(test.runs);
  return { current: replayTest(test, current, from, end, regressions), proposed: replayTest(test, proposed, from, end, regressions) };
}
