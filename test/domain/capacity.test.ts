import { capacityOf, failureRateOf, MAX_ADAPTIVE_BATCH, NOTHING_OBSERVED, observe, type Observed } from "../../src/domain/engine/capacity.js";
import type { EngineRun } from "../../src/domain/engine/types.js";
import { estimatesOf } from "../../src/domain/engine/estimates.js";
import { EngineDriver, engineEntry, settings } from "./engine-driver.js";

const mainRun = (tested: number[], status: EngineRun["status"], failure: EngineRun["failure"] = status === "failed" ? "tests_failed" : null) => ({ kind: "main" as const, tested, status, failure });

describe("CI budget (ciBudget)", () => {
  test("caps the runs in flight below concurrency; the next starts when one ends", () => {
    const q = new EngineDriver({ concurrency: 5, ciBudget: 2 });
    [1, 2, 3, 4].forEach((n) => q.submit(n));
    expect(q.running()).toEqual([
      [[1], [1]],
      [[1, 2], [2]],
    ]);
    q.pass(1);
    q.confirm([1]);
    expect(q.running()).toEqual([
      [[2], [2]],
      [[2, 3], [3]],
    ]);
  });

  test("counts main-line and bisection runs together: the PRs being bisected (older) take the budget first", () => {
    const q = new EngineDriver({ batch: true, batchingMinSize: 2, concurrency: 2, bisectionConcurrency: 2, ciBudget: 2 });
    [1, 2, 3, 4].forEach((n) => q.submit(n));
    expect(q.running().map(([, tested]) => tested)).toEqual([
      [1, 2],
      [3, 4],
    ]);
    q.fail(1);
    // The failed batch is bisected in two groups of one; the batch behind it waits for the budget.
    expect(q.running()).toEqual([
      [[1], [1]],
      [[2], [2]],
    ]);
    expect([q.state(3), q.state(4)]).toEqual(["pending", "pending"]);
  });

  test("PRs of higher priority arriving ahead in line do not starve a bisection of the budget", () => {
    const q = new EngineDriver({ batch: true, batchingMinSize: 2, concurrency: 2, bisectionConcurrency: 2, ciBudget: 1 });
    [1, 2].forEach((n) => q.submit(n));
    q.fail(1);
    expect(q.running()).toEqual([[[1], [1]]]);
    q.submit(3, { priority: 50, noBatch: true }); // high priority: ahead of the bisection in line
    q.pass(1);
    // #1 merges (green on exactly the target); the budget's one run goes to the bisection's other group, not to #3.
    expect(q.merges()).toEqual([[1]]);
    expect(q.running()).toEqual([[[1, 2], [2]]]);
    expect(q.state(3)).toBe("pending");
  });

  test("0 means no budget: concurrency and bisectionConcurrency alone cap the runs", () => {
    const q = new EngineDriver({ concurrency: 3, ciBudget: 0 });
    [1, 2, 3, 4].forEach((n) => q.submit(n));
    expect(q.running()).toHaveLength(3);
  });
});

describe("adaptive tuning", () => {
  test("a PR starts at once while slots are free; the PRs that waited are spread over the slots that free up", () => {
    const q = new EngineDriver({ tuning: "adaptive", concurrency: 3, batch: false });
    [1, 2, 3].forEach((n) => q.submit(n));
    expect(q.running().map(([, tested]) => tested)).toEqual([[1], [2], [3]]);
    // No slot free: six PRs wait (no batching wait in adaptive tuning, whatever batchingMinSize says).
    [4, 5, 6, 7, 8, 9].forEach((n) => q.submit(n));
    expect(q.running()).toHaveLength(3);
    q.pass(1);
    q.confirm([1]);
    // One slot free, six waiting: one batch of all six (the failure rate allows it).
    expect(q.running().map(([, tested]) => tested)).toEqual([[2], [3], [4, 5, 6, 7, 8, 9]]);
  });

  test("with two slots free the waiting PRs are split between them", () => {
    const q = new EngineDriver({ tuning: "adaptive", concurrency: 2, canOptimisticallyMerge: true });
    [1, 2].forEach((n) => q.submit(n));
    [3, 4, 5, 6].forEach((n) => q.submit(n));
    q.pass(2);
    q.confirm([1, 2]);
    expect(q.running().map(([, tested]) => tested)).toEqual([
      [3, 4],
      [5, 6],
    ]);
  });

  test("the engine keeps what it observes of main-line runs (a batch's PRs, its failure), whatever the tuning", () => {
    const q = new EngineDriver({ batch: true, batchingMinSize: 2, concurrency: 1 });
    [1, 2].forEach((n) => q.submit(n));
    q.pass(1);
    expect(q.q.observed).toEqual({ failures: 0, exposures: 2 });
    q.confirm([1, 2]);
    [3, 4].forEach((n) => q.submit(n));
    q.fail(3);
    expect(q.q.observed!.failures).toBe(1);
    expect(q.q.observed!.exposures).toBeCloseTo(2 * 0.95 + 2);
  });

  test("a run failing on a broken PR under it is not observed: only the failure judged the run's own is", () => {
    const q = new EngineDriver({ concurrency: 2 });
    [1, 2].forEach((n) => q.submit(n));
    q.fail(2); // #2's run holds #1, still testing: its failure may be #1's
    expect(q.q.observed ?? NOTHING_OBSERVED).toEqual(NOTHING_OBSERVED);
    q.fail(1); // #1 heads the line: its failure is its own
    expect(q.q.observed).toEqual({ failures: 1, exposures: 1 });
  });

  test("the largest batch follows the observed failure rate: small when runs fail often, up to the cap when they pass", () => {
    const adaptive = settings({ tuning: "adaptive", concurrency: 4 });
    let failing: Observed = NOTHING_OBSERVED;
    for (let i = 0; i < 30; i++) failing = observe(failing, mainRun([1, 2], "failed"));
    let passing: Observed = NOTHING_OBSERVED;
    for (let i = 0; i < 60; i++) passing = observe(passing, mainRun([1, 2, 3, 4, 5, 6, 7, 8], "passed"));
    expect(capacityOf({ settings: adaptive, observed: NOTHING_OBSERVED }).largestBatch).toBe(10); // the prior: 5% per PR
    expect(failureRateOf(failing)).toBeGreaterThan(0.3);
    expect(capacityOf({ settings: adaptive, observed: failing }).largestBatch).toBe(1);
    expect(failureRateOf(passing)).toBeLessThan(0.01);
    expect(capacityOf({ settings: adaptive, observed: passing }).largestBatch).toBe(MAX_ADAPTIVE_BATCH);
  });

  test("only main-line runs that tested something count: conflicts, refused starts, bisection and cancelled runs are not observed", () => {
    const none = NOTHING_OBSERVED;
    expect(observe(none, mainRun([1], "failed", "merge_conflict"))).toBe(none);
    expect(observe(none, mainRun([1], "failed", "start_refused"))).toBe(none);
    expect(observe(none, mainRun([1], "cancelled"))).toBe(none);
    expect(observe(none, { ...mainRun([1], "failed"), kind: "bisection" })).toBe(none);
    expect(observe(none, mainRun([1], "failed", "timeout"))).toEqual({ failures: 1, exposures: 1 });
  });

  test("within a budget: main-line runs up to the budget, the bisection pool at most half of it", () => {
    const capacity = capacityOf({ settings: settings({ tuning: "adaptive", concurrency: 10, bisectionConcurrency: 8, ciBudget: 4 }), observed: NOTHING_OBSERVED });
    expect([capacity.concurrency, capacity.bisectionConcurrency, capacity.budget]).toEqual([4, 2, 4]);
    const unbounded = capacityOf({ settings: settings({ tuning: "adaptive", concurrency: 3, bisectionConcurrency: 2 }), observed: NOTHING_OBSERVED });
    expect([unbounded.concurrency, unbounded.bisectionConcurrency, unbounded.budget]).toEqual([3, 2, Number.POSITIVE_INFINITY]);
  });

  test("fixed tuning is what the settings say", () => {
    const capacity = capacityOf({ settings: settings({ batch: true, batchingMinSize: 3, concurrency: 2, ciBudget: 5 }) });
    expect(capacity).toMatchObject({ concurrency: 2, budget: 5, largestBatch: 6, smallestBatch: 3, adaptive: null });
  });
});

describe("estimates with what the engine observed", () => {
  test("a run is counted failing as often as its own PRs fail, not as often as runs failed on a PR under them", () => {
    const now = Date.parse("2026-11-28T10:00:00Z");
    const queue = { state: "running" as const, mode: "single" as const, pendingMode: null, settings: settings(), baseSha: "b", merged: [], entries: [engineEntry(1, "pending")], runs: [], nextRunNumber: 1 };
    // 80% of recent main runs failed (most on a broken PR under them); ten PRs passed on their own: p = 0.5 / 20.
    const stats = { runs: 50, meanSeconds: 1800, failureRate: 0.8 };
    expect(estimatesOf(queue, stats, now).get(1)!.estimatedSecondsToMerge).toBe(9000);
    expect(estimatesOf({ ...queue, observed: { failures: 0, exposures: 10 } }, stats, now).get(1)!.estimatedSecondsToMerge).toBe(Math.round(1800 / 0.975));
    // Nothing observed yet (a queue from before the observations): the runs' failure share, as before.
    expect(estimatesOf({ ...queue, observed: NOTHING_OBSERVED }, stats, now).get(1)!.estimatedSecondsToMerge).toBe(9000);
  });
});
