import { backtest, regressionFailures, replayTest, type ReplayRun, type ReplayTest } from "../../src/domain/flaky/backtest.js";
import { DEFAULT_FLAKY_SETTINGS, newWayOf } from "../../src/domain/flaky/detection.js";

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse("2026-11-01T00:00:00Z");

/** Runs off pull requests, one a commit, every `spacing` ms from `start`: "F" failed, "P" passed, "R" failed then passed on a retry. */
function runs(pattern: string, options: { start?: number; spacing?: number; queueRun?: (i: number) => string | null; shape?: string } = {}): ReplayRun[] {
  const { start = T0, spacing = HOUR } = options;
  return [...pattern].map((c, i) => ({
    at: start + i * spacing,
    sha: `sha${i}`,
    tree: null,
    pr: false,
    failed: c !== "P",
    passed: c !== "F",
    queueRun: options.queueRun?.(i) ?? null,
    shape: c === "P" ? null : (options.shape ?? "Error: boom"),
    receivedAt: start + i * spacing,
  }));
}

const test = (key: number, r: ReplayRun[], extra: Partial<ReplayTest> = {}): ReplayTest => ({
  key,
  id: `id-${key}`,
  name: `t${key}`,
  variant: "",
  setting: "auto",
  runs: r,
  shapeFirstAt: new Map([["Error: boom", T0]]),
  ...extra,
});

describe("a policy's backtest", () => {
  const end = (r: ReplayRun[]) => r.at(-1)!.at;

  it("judges as detection does: a 40% failing test is flaky and quarantined under the defaults, healthy at a 50% threshold", () => {
    const r = runs("PPFPFPPFFPPFPPFPFPPF");
    const t = test(1, r);
    const now = end(r);
    const defaults = replayTest(t, DEFAULT_FLAKY_SETTINGS, T0, now, new Set());
    expect(defaults).toMatchObject({ status: "flaky", quarantined: true, everQuarantined: true, quarantinesStarted: 1 });
    const strict = replayTest(t, { ...DEFAULT_FLAKY_SETTINGS, flakyRate: 0.5 }, T0, now, new Set());
    expect(strict).toMatchObject({ status: "healthy", quarantined: false, everQuarantined: false, excused: [] });
    const result = backtest([t], DEFAULT_FLAKY_SETTINGS, { ...DEFAULT_FLAKY_SETTINGS, flakyRate: 0.5 }, T0, now);
    expect(result.noLongerQuarantined.map((x) => x.name)).toEqual(["t1"]);
    expect(result.newlyQuarantined).toEqual([]);
    expect(result.current.testsEverQuarantined).toBe(1);
    expect(result.proposed.testsEverQuarantined).toBe(0);
  });

  it("quarantine off excuses nothing; a person's quarantine holds under every policy", () => {
    const r = runs("PPFPFPPFFPPFPPFPFPPF");
    const off = { ...DEFAULT_FLAKY_SETTINGS, autoQuarantine: false };
    const auto = backtest([test(1, r)], DEFAULT_FLAKY_SETTINGS, off, T0, end(r));
    expect(auto.proposed.failuresExcused).toBe(0);
    expect(auto.current.failuresExcused).toBeGreaterThan(0);
    const always = backtest([test(1, r, { setting: "always" })], DEFAULT_FLAKY_SETTINGS, off, T0, end(r));
    expect(always.proposed.failuresExcused).toBe(8);
    expect(always.current.failuresExcused).toBe(8);
    expect(always.noLongerQuarantined).toEqual([]);
  });

  it("a retry within a run is pass-on-retry evidence: flaky at once, released after recoveryDays without more", () => {
    const r = [...runs("PPPR"), ...runs("PPPPPPPPPP", { start: T0 + 9 * DAY, spacing: HOUR }).map((run) => ({ ...run, sha: `later-${run.sha}` }))];
    const t = test(1, r);
    const replay = replayTest(t, DEFAULT_FLAKY_SETTINGS, T0, end(r), new Set());
    expect(replay).toMatchObject({ status: "healthy", quarantined: false, quarantinesStarted: 1, releases: 1, everFlaky: true });
    // With a 14-day recovery it is still flaky at the end.
    expect(replayTest(t, { ...DEFAULT_FLAKY_SETTINGS, recoveryDays: 14 }, T0, end(r), new Set())).toMatchObject({ status: "flaky", quarantined: true, releases: 0 });
  });

  it("a break is a regression (8 failed runs on 2 commits or more): a flaky test's quarantine hides its first 7 failures, until the streak makes it broken", () => {
    // Flaky for a while (a retry), then broken for good.
    const r = [...runs("PPRPPPPP"), ...runs("FFFFFFFFFFFF", { start: T0 + 8 * HOUR })];
    r.forEach((run, i) => (run.sha = `sha${i}`));
    expect(regressionFailures(r).size).toBe(12);
    const t = test(1, r);
    const now = end(r);
    const defaults = replayTest(t, DEFAULT_FLAKY_SETTINGS, T0, now, regressionFailures(r));
    // Flaky (retry) and quarantined until the 8th failure in a row makes it broken: the first failures of the break are excused.
    expect(defaults.status).toBe("broken");
    expect(defaults.quarantined).toBe(false);
    expect(defaults.regressionsExcused).toBe(7);
    // A failure on one commit only (a re-run of one broken commit) is no streak.
    const oneCommit = r.map((run) => ({ ...run, sha: run.failed && !run.passed ? "same" : run.sha }));
    expect(regressionFailures(oneCommit).size).toBe(0);
  });

  it("a failure in a way first seen after the quarantine is not excused (the shape rule)", () => {
    const r = runs("PPRPPPFP", { shape: "Error: boom" });
    r[6]!.shape = "TypeError: x is undefined";
    const t = test(1, r, {
      shapeFirstAt: new Map([
        ["Error: boom", T0 + 2 * HOUR],
        ["TypeError: x is undefined", T0 + 6 * HOUR],
      ]),
    });
    const replay = replayTest(t, DEFAULT_FLAKY_SETTINGS, T0, end(r), new Set());
    expect(replay.quarantined).toBe(true);
    expect(replay.excused).toEqual([]);
    expect(replayTest({ ...t, setting: "always" }, DEFAULT_FLAKY_SETTINGS, T0, end(r), new Set()).excused).toEqual([6]);
  });

  it("queue runs: an ejection is avoided when quarantine excuses every failure in the run, and not when one test's is not", () => {
    // Test 1 flaky (40%), test 2 failing rarely; both in queue runs q0..q19.
    const queueRun = (i: number) => `q${i}`;
    const one = test(1, runs("PPFPFPPFFPPFPPFPFPPF", { queueRun }));
    const two = test(2, runs("PPPPPPPPPPPPPPPPPPFP", { queueRun }));
    const now = end(one.runs);
    const result = backtest([one, two], { ...DEFAULT_FLAKY_SETTINGS, autoQuarantine: false }, DEFAULT_FLAKY_SETTINGS, T0, now);
    expect(result.current.queueRunsFailed).toBe(9);
    expect(result.current.queueRunsExcused).toBe(0);
    // Quarantined from its 4th failure (run 8: 4 of 9); q18 also has test 2's failure.
    const excused = result.replays.get(1)!.proposed.excused;
    expect(excused.length).toBeGreaterThan(0);
    expect(result.ejectionsAvoided).toBe(excused.filter((i) => i !== 18).length);
    expect(result.ejectionsAdded).toBe(0);
    expect(result.proposed.queueRunsExcused).toBe(result.ejectionsAvoided);
  });

  it("a report's own clock behind the service's changes nothing: quarantine and first failures are on the service's clock", () => {
    const r = runs("PPFPFPPFFPPFPPFPFPPF");
    // The service received each report 10 minutes after its timestamp; the failure mode was first received with the first failure.
    const late = r.map((run) => ({ ...run, receivedAt: run.at + 10 * 60_000 }));
    const firstReceived = new Map([["Error: boom", late[2]!.receivedAt]]);
    const onTime = replayTest(test(1, r, { shapeFirstAt: new Map([["Error: boom", r[2]!.at]]) }), DEFAULT_FLAKY_SETTINGS, T0, end(r), new Set());
    const delayed = replayTest(test(1, late, { shapeFirstAt: firstReceived }), DEFAULT_FLAKY_SETTINGS, T0, end(r), new Set());
    expect(delayed.excused.length).toBeGreaterThan(0);
    expect(delayed.excused).toEqual(onTime.excused);
  });

  it("a quarantine carried into the period and released in it counts as quarantined in it", () => {
    const r = [...runs("PPPR"), ...runs("PPPPP", { start: T0 + 9 * DAY }).map((run) => ({ ...run, sha: `later-${run.sha}` }))];
    const result = backtest([test(1, r)], DEFAULT_FLAKY_SETTINGS, { ...DEFAULT_FLAKY_SETTINGS, autoQuarantine: false }, T0 + 8 * DAY, end(r));
    expect(result.replays.get(1)!.current).toMatchObject({ releases: 1, everQuarantined: true });
    expect(result.current.testsEverQuarantined).toBe(1);
    expect(result.noLongerQuarantined.map((t) => t.name)).toEqual(["t1"]);
  });

  it("a queue run whose job was run again, and passed, was not failed by the test", () => {
    const r = runs("PPFPFPPFFPPFPPFPFPPF", { queueRun: (i) => `q${i}` });
    // Run 7's job was run again and the test passed: another upload of queue run q7.
    r.splice(8, 0, { ...r[7]!, at: r[7]!.at + 60_000, receivedAt: r[7]!.receivedAt + 60_000, failed: false, passed: true, shape: null, sha: r[7]!.sha });
    const result = backtest([test(1, r)], { ...DEFAULT_FLAKY_SETTINGS, autoQuarantine: false }, DEFAULT_FLAKY_SETTINGS, T0, end(r));
    expect(result.current.queueRunsFailed).toBe(7);
  });

  it("counts only what happened in the period: runs before it build the evidence", () => {
    const r = runs("PPFPFPPFFPPFPPFPFPPF");
    const t = test(1, r);
    // The period starts after the quarantine began: it was quarantined at the start, none started in the period.
    const replay = replayTest(t, DEFAULT_FLAKY_SETTINGS, T0 + 15 * HOUR, end(r), new Set());
    expect(replay).toMatchObject({ quarantined: true, everQuarantined: true, quarantinesStarted: 0 });
  });
});

describe("a failing streak in a new way (newWayOf)", () => {
  const streak = (shapes: (string | null)[]) => shapes.map((shape, i) => ({ at: 100 + i, sha: `c${i}`, shape, summary: `way ${shape}` }));
  it("is new when every failure of the streak is in a way first failed within it, and the test failed another way before", () => {
    expect(
      newWayOf(
        streak(["assert", "assert", "assert"]),
        new Map([
          ["timeout", 10],
          ["assert", 100],
        ]),
      ),
    ).toEqual({ runs: 3, commits: 3, summary: "way assert" });
  });
  it("is not when a way of the streak failed before it, when nothing failed before it, or when a way is unknown", () => {
    expect(
      newWayOf(
        streak(["assert", "timeout", "assert"]),
        new Map([
          ["timeout", 10],
          ["assert", 100],
        ]),
      ),
    ).toBeNull();
    expect(newWayOf(streak(["assert", "assert", "assert"]), new Map([["assert", 100]]))).toBeNull();
    expect(
      newWayOf(
        streak(["assert", null, "assert"]),
        new Map([
          ["timeout", 10],
          ["assert", 100],
        ]),
      ),
    ).toBeNull();
  });
});
