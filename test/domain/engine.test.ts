import { compareEntries } from "../../src/domain/engine/order.js";
import { EngineDriver } from "./engine-driver.js";

describe("the queue engine, single mode", () => {
  test("a lone PR is tested on the target, merged when green once the code host confirms the merge", () => {
    const q = new EngineDriver();
    expect(q.submit(1)).toEqual([
      { kind: "start_run", runId: "run-1", baseSha: "base-0", stack: [1], tested: [1] },
      { kind: "schedule_timer", at: q.now + 60 * 60_000 },
    ]);
    expect(q.state(1)).toBe("testing");
    expect(q.pass(1)).toEqual([{ kind: "merge", prNumbers: [1], runId: "run-1", exactTree: true }]);
    // Decided, not yet done: "Passed, merging" until the code host confirms.
    expect(q.states()).toEqual({ 1: "tests_passed" });
    expect(q.reason(1)).toBe("merging");
    expect(q.q.merged).toEqual([1]);
    q.confirm([1]);
    expect(q.states()).toEqual({ 1: "merged" });
    expect(q.reason(1)).toBe("merged");
    expect(q.q).toMatchObject({ merged: [], baseSha: "landed-1" });
  });

  test("predictive testing: each PR is tested on top of the PRs ahead of it, and merges in order", () => {
    const q = new EngineDriver({ concurrency: 3 });
    q.submit(1);
    q.submit(2);
    q.submit(3);
    expect(q.running()).toEqual([
      [[1], [1]],
      [[1, 2], [2]],
      [[1, 2, 3], [3]],
    ]);
    q.pass(3);
    expect(q.states()).toEqual({ 1: "testing", 2: "testing", 3: "tests_passed" });
    expect(q.merges()).toEqual([]);
    q.pass(1);
    expect(q.merges()).toEqual([[1]]);
    q.pass(2);
    expect(q.merges()).toEqual([[1], [2], [3]]);
    expect(q.states()).toEqual({ 1: "tests_passed", 2: "tests_passed", 3: "tests_passed" });
    [1, 2, 3].forEach((n) => q.confirm([n]));
    expect(q.states()).toEqual({ 1: "merged", 2: "merged", 3: "merged" });
  });

  test("concurrency caps the runs in flight; the next starts when one merges", () => {
    const q = new EngineDriver({ concurrency: 2 });
    [1, 2, 3].forEach((n) => q.submit(n));
    expect(q.running().map(([, tested]) => tested)).toEqual([[1], [2]]);
    expect(q.state(3)).toBe("pending");
    q.pass(1);
    expect(q.running()).toEqual([
      [[1, 2], [2]],
      [[1, 2, 3], [3]],
    ]);
  });

  test("a failing PR waits for the PRs ahead, then fails; the PRs behind are retested without it", () => {
    const q = new EngineDriver({ concurrency: 3 });
    [1, 2, 3].forEach((n) => q.submit(n));
    q.fail(2);
    expect(q.state(2)).toBe("pending_failure");
    expect(q.state(3)).toBe("testing");
    q.pass(1);
    expect(q.states()).toEqual({ 1: "tests_passed", 2: "failed", 3: "testing" });
    expect(q.reason(2)).toBe("tests_failed");
    expect(q.effects).toContainEqual({ kind: "cancel_run", runId: "run-3" });
    expect(q.running()).toEqual([[[1, 3], [3]]]);
    q.pass(3);
    expect(q.merges()).toEqual([[1], [3]]);
  });

  test("when a PR ahead also fails, a pending failure is retested without it (it was not the cause)", () => {
    const q = new EngineDriver({ concurrency: 2 });
    q.submit(1);
    q.submit(2);
    q.fail(2);
    q.fail(1);
    expect(q.states()).toEqual({ 1: "failed", 2: "testing" });
    expect(q.running()).toEqual([[[2], [2]]]);
    q.pass(2);
    expect(q.merges()).toEqual([[2]]);
  });

  test("optimistic merging: a passing PR merges the PRs ahead of it, whose changes it tested", () => {
    const q = new EngineDriver({ concurrency: 2, canOptimisticallyMerge: true });
    q.submit(1);
    q.submit(2);
    q.pass(2);
    expect(q.merges()).toEqual([[1, 2]]);
    expect(q.reason(1)).toBe("merging_by_later_run");
    expect(q.effects).toContainEqual({ kind: "cancel_run", runId: "run-1" });
    q.confirm([1, 2]);
    expect(q.reason(1)).toBe("merged_by_later_run");
    expect(q.reason(2)).toBe("merged");
  });

  test("pending failure depth with optimistic merging: a flaky failure is cleared by a passing successor", () => {
    const q = new EngineDriver({ concurrency: 2, canOptimisticallyMerge: true, pendingFailureDepth: 1 });
    q.submit(1);
    q.submit(2);
    q.fail(1);
    expect(q.state(1)).toBe("pending_failure");
    q.pass(2);
    expect(q.merges()).toEqual([[1, 2]]);
    q.confirm([1, 2]);
    expect(q.states()).toEqual({ 1: "merged", 2: "merged" });
  });

  test("without pending failure depth the failing head fails at once", () => {
    const q = new EngineDriver({ concurrency: 2, canOptimisticallyMerge: true });
    q.submit(1);
    q.submit(2);
    q.fail(1);
    expect(q.state(1)).toBe("failed");
    expect(q.running()).toEqual([[[2], [2]]]);
  });

  test("with depth, a failure whose successors also fail is the PR's own", () => {
    const q = new EngineDriver({ concurrency: 2, canOptimisticallyMerge: true, pendingFailureDepth: 1 });
    q.submit(1);
    q.submit(2);
    q.fail(1);
    q.fail(2);
    expect(q.state(1)).toBe("failed");
    expect(q.running()).toEqual([[[2], [2]]]);
  });

  test("an overdue run counts as failed with reason timeout", () => {
    const q = new EngineDriver({ testingTimeoutMinutes: 30 });
    q.submit(1);
    q.advance(29);
    expect(q.state(1)).toBe("testing");
    q.advance(1);
    expect(q.state(1)).toBe("failed");
    expect(q.reason(1)).toBe("timeout");
    expect(q.effects).toContainEqual({ kind: "cancel_run", runId: "run-1" });
  });

  test("a late result of a run already decided is ignored", () => {
    const q = new EngineDriver({ testingTimeoutMinutes: 30 });
    q.submit(1);
    q.advance(30);
    q.send({ kind: "run_finished", runId: "run-1", outcome: "passed" });
    expect(q.state(1)).toBe("failed");
    expect(q.merges()).toEqual([]);
  });

  test("cancelling a PR restarts the PRs stacked on it", () => {
    const q = new EngineDriver({ concurrency: 3 });
    [1, 2, 3].forEach((n) => q.submit(n));
    q.send({ kind: "cancelled", prNumber: 1, reason: "cancelled_by_user" });
    expect(q.state(1)).toBe("cancelled");
    expect(q.running()).toEqual([
      [[2], [2]],
      [[2, 3], [3]],
    ]);
    expect(q.effects.filter((e) => e.kind === "cancel_run").map((e) => (e as { runId: string }).runId)).toEqual(["run-1", "run-2", "run-3"]);
  });

  test("restarting a PR re-runs it and what is stacked on it", () => {
    const q = new EngineDriver({ concurrency: 2 });
    q.submit(1);
    q.submit(2);
    q.send({ kind: "restart_requested", prNumber: 1 });
    expect(q.running()).toEqual([
      [[1], [1]],
      [[1, 2], [2]],
    ]);
    expect(q.q.runs.map((r) => [r.id, r.status])).toEqual([
      ["run-1", "cancelled"],
      ["run-2", "cancelled"],
      ["run-3", "running"],
      ["run-4", "running"],
    ]);
  });

  test("the target moving outside the queue restarts every run on the new base", () => {
    const q = new EngineDriver({ concurrency: 2 });
    q.submit(1);
    q.submit(2);
    q.send({ kind: "base_moved", sha: "base-1" });
    expect(q.q.runs.filter((r) => r.status === "running").map((r) => [r.baseSha, r.stack])).toEqual([
      ["base-1", [1]],
      ["base-1", [1, 2]],
    ]);
  });

  test("priority orders pending PRs without interrupting testing; only urgent skips the line", () => {
    const q = new EngineDriver({ concurrency: 1 });
    q.submit(1);
    q.submit(2);
    q.submit(3, { priority: 10 }); // high: goes before 2, after 1 (testing)
    q.pass(1);
    expect(q.running()).toEqual([[[1, 3], [3]]]);
    q.submit(4, { priority: 0 }); // urgent: displaces 3
    expect(q.running()).toEqual([[[1, 4], [4]]]);
    expect(q.state(3)).toBe("pending");
    expect(q.reason(3)).toBe("restarted_prs_ahead_changed");
  });

  test("readiness: a PR that stops being ready leaves the line until it is ready again", () => {
    const q = new EngineDriver({ concurrency: 1 });
    q.submit(1);
    q.submit(2);
    q.send({ kind: "readiness_changed", prNumber: 2, ready: false });
    expect(q.state(2)).toBe("not_ready");
    q.pass(1);
    expect(q.running()).toEqual([]);
    q.send({ kind: "readiness_changed", prNumber: 2, ready: true });
    expect(q.running()).toEqual([[[1, 2], [2]]]);
  });

  test("paused: nothing starts and nothing merges, results are kept; running again merges", () => {
    const q = new EngineDriver({ concurrency: 1 });
    q.submit(1);
    q.q.state = "paused";
    q.submit(2);
    q.pass(1);
    expect(q.states()).toEqual({ 1: "tests_passed", 2: "pending" });
    q.q.state = "running";
    q.send({ kind: "config_changed" });
    expect(q.merges()).toEqual([[1]]);
    expect(q.running()).toEqual([[[1, 2], [2]]]);
  });

  test("switching modes: no new runs while work is in flight, then the new mode applies", () => {
    const q = new EngineDriver({ concurrency: 1 });
    q.submit(1);
    q.submit(2);
    Object.assign(q.q, { state: "switching_modes", pendingMode: "parallel" });
    q.pass(1);
    // A merge awaiting the code host is still in flight.
    expect(q.q).toMatchObject({ state: "switching_modes" });
    q.confirm([1]);
    expect(q.q).toMatchObject({ state: "running", mode: "parallel", pendingMode: null });
    expect(q.running()).toEqual([[[2], [2]]]);
  });

  test("the ordering comparator's tie-breaks", () => {
    const e = (prNumber: number, priority: number, submittedAt: number, state = "pending", position: number | null = null) =>
      ({ prNumber, priority, submittedAt, state, position }) as Parameters<typeof compareEntries>[0];
    const sorted = [e(5, 100, 5), e(4, 100, 1), e(3, 0, 9), e(2, 200, 0, "testing", 2), e(7, 10, 0, "testing", 3), e(1, 10, 3), e(6, 100, 1)].sort(compareEntries);
    // urgent, then in flight by start order (whatever their priority), then pending by priority and time
    expect(sorted.map((x) => x.prNumber)).toEqual([3, 2, 7, 1, 4, 6, 5]);
  });
});

describe("anti-flake retry", () => {
  test("a PR with nothing on top of it gets one more run before it fails; a real failure fails twice", () => {
    const q = new EngineDriver();
    q.submit(1);
    q.fail(1);
    expect([q.state(1), q.reason(1)]).toEqual(["testing", "testing"]);
    expect(q.transitions.map((t) => t.reason)).toContain("retrying_failed_run");
    q.fail(1);
    expect([q.state(1), q.reason(1)]).toEqual(["failed", "tests_failed"]);
    // A flaky failure: the retry passes and the PR merges.
    q.submit(2);
    q.fail(2);
    q.pass(2);
    expect(q.merges()).toEqual([[2]]);
  });

  test("the retry really runs again, even when known failures are reused during bisections", () => {
    const q = new EngineDriver({ optimizationMode: "bisection_skip_redundant_tests" });
    q.submit(1);
    q.fail(1);
    expect(q.running()).toEqual([[[1], [1]]]);
    q.pass(1);
    expect(q.merges()).toEqual([[1]]);
  });

  test("no retry while a PR behind it tests on top of it (its result decides), nor after a timeout", () => {
    const q = new EngineDriver({ concurrency: 2, testingTimeoutMinutes: 30 });
    q.submit(1);
    q.submit(2);
    q.fail(1);
    q.pass(2);
    // #2's run held #1 and passed, but without optimistic merging it cannot clear #1: #1 fails.
    expect(q.states()).toMatchObject({ 1: "failed" });
    const t = new EngineDriver({ testingTimeoutMinutes: 30 });
    t.submit(1);
    t.advance(31);
    expect([t.state(1), t.reason(1)]).toEqual(["failed", "timeout"]);
  });
});

describe("batching and bisection", () => {
  test("pending PRs are tested together once the batch reaches its minimum size, and merge as separate PRs", () => {
    const q = new EngineDriver({ batch: true, batchingMinSize: 3 });
    q.submit(1);
    q.submit(2);
    expect(q.running()).toEqual([]);
    expect(q.effects.at(-1)).toMatchObject({ kind: "schedule_timer" });
    q.submit(3);
    expect(q.running()).toEqual([
      [
        [1, 2, 3],
        [1, 2, 3],
      ],
    ]);
    q.pass(1);
    expect(q.merges()).toEqual([[1, 2, 3]]);
    q.confirm([1, 2, 3]);
    expect(q.states()).toEqual({ 1: "merged", 2: "merged", 3: "merged" });
  });

  test("a batch short of its minimum starts when the wait runs out", () => {
    const q = new EngineDriver({ batch: true, batchingMinSize: 4, batchingMaxWaitTimeMinutes: 5 });
    q.submit(1);
    q.advance(4);
    expect(q.running()).toEqual([]);
    q.advance(1);
    expect(q.running()).toEqual([[[1], [1]]]);
  });

  test("an urgent PR is tested alone and at once, ahead of the batches in flight; no batch takes it in", () => {
    const q = new EngineDriver({ batch: true, batchingMinSize: 2, concurrency: 2, batchingMaxWaitTimeMinutes: 5 });
    [1, 2, 3, 4].forEach((n) => q.submit(n));
    expect(q.running().map(([, tested]) => tested)).toEqual([
      [1, 2],
      [3, 4],
    ]);
    // Urgent: the batch in flight is displaced, and the urgent PR does not wait for a batch to fill.
    q.submit(5, { priority: 0 });
    expect(q.running().map(([stack, tested]) => [stack, tested])).toEqual([
      [[5], [5]],
      [
        [5, 1, 2, 3, 4],
        [1, 2, 3, 4],
      ],
    ]);
    // A second urgent PR is not batched with the first either, nor with the PRs behind.
    q.submit(6, { priority: 0 });
    q.submit(7);
    expect(q.running()).toEqual([
      [[5], [5]],
      [[5, 6], [6]],
    ]);
    q.pass(5);
    expect(q.merges()).toEqual([[5]]);
  });

  test("noBatch PRs are tested alone", () => {
    const q = new EngineDriver({ batch: true, batchingMinSize: 2, concurrency: 2 });
    q.submit(1, { noBatch: true });
    expect(q.running()).toEqual([[[1], [1]]]);
  });

  test("a failed batch is bisected in its own pool, each half on its own, until the culprit is found; the rest merge", () => {
    const q = new EngineDriver({ batch: true, batchingMinSize: 4, bisectionConcurrency: 2 });
    [1, 2, 3, 4].forEach((n) => q.submit(n));
    q.fail(1);
    // Each half is tested without the other, so one half's culprit cannot fail the other.
    expect(q.running()).toEqual([
      [
        [1, 2],
        [1, 2],
      ],
      [
        [3, 4],
        [3, 4],
      ],
    ]);
    expect(q.q.runs.filter((r) => r.status === "running").every((r) => r.kind === "bisection")).toBe(true);
    q.pass(1); // [1, 2] is green on exactly the target: both merge
    expect(q.merges()).toEqual([[1, 2]]);
    q.fail(3); // [3, 4] fails again: split once more, on top of what merged
    expect(q.running()).toEqual([
      [[1, 2, 3], [3]],
      [[1, 2, 4], [4]],
    ]);
    q.fail(3); // failed alone: tested once more before it is the culprit (it may have flaked)
    expect(q.running()).toEqual([
      [[1, 2, 4], [4]],
      [[1, 2, 3], [3]],
    ]);
    q.fail(3);
    expect(q.state(3)).toBe("failed");
    expect(q.running()).toEqual([[[1, 2, 4], [4]]]);
    q.pass(4);
    expect(q.merges()).toEqual([[1, 2], [4]]);
  });

  test("the main line goes on while a failed batch is bisected; PRs proven innocent on a moved line rejoin it first", () => {
    const q = new EngineDriver({ concurrency: 2, batch: true, batchingMinSize: 2, bisectionConcurrency: 2 });
    [1, 2, 3, 4].forEach((n) => q.submit(n));
    expect(q.running()).toEqual([
      [
        [1, 2],
        [1, 2],
      ],
      [
        [1, 2, 3, 4],
        [3, 4],
      ],
    ]);
    q.fail(1);
    // The halves are bisected, and [3, 4] restarts without the failed batch beside them.
    expect(q.running()).toEqual([
      [[1], [1]],
      [[2], [2]],
      [
        [3, 4],
        [3, 4],
      ],
    ]);
    q.pass(3);
    expect(q.merges()).toEqual([[3, 4]]);
    q.pass(1); // #1 passed, but on a target without #3 and #4: it is innocent, and rejoins the line
    expect([q.state(1), q.reason(1)]).toEqual(["pending", "bisection_passed"]);
    q.advance(5); // the batch wait runs out: #1 goes alone
    expect(q.runOf(1)).toMatchObject({ kind: "main", stack: [3, 4, 1] });
    q.fail(2); // #2 fails alone on top of what it was tested on, all merged: tested once more (a flake?)
    expect(q.runOf(2)).toMatchObject({ kind: "bisection", tested: [2], status: "running" });
    q.fail(2); // twice: it is the culprit
    expect(q.state(2)).toBe("failed");
    q.pass(1);
    expect(q.merges()).toEqual([[3, 4], [1]]);
  });

  test("bisection_skip_redundant_tests reuses a result already known instead of running the same tree again", () => {
    const q = new EngineDriver({ batch: true, batchingMinSize: 4, bisectionConcurrency: 1, optimizationMode: "bisection_skip_redundant_tests" });
    [1, 2, 3, 4].forEach((n) => q.submit(n));
    q.fail(1);
    expect(q.running()).toEqual([
      [
        [1, 2],
        [1, 2],
      ],
    ]);
    const started = q.effects.filter((e) => e.kind === "start_run").length;
    q.pass(1);
    // [3, 4] on top of the merged [1, 2] is the very tree that failed: it splits at once.
    expect(q.running()).toEqual([[[1, 2, 3], [3]]]);
    q.fail(3);
    // A PR that failed alone runs once more (its result is never reused: it may have flaked).
    expect(q.running()).toEqual([[[1, 2, 3], [3]]]);
    q.fail(3);
    expect(q.states()).toMatchObject({ 1: "tests_passed", 2: "tests_passed", 3: "failed" });
    q.pass(4);
    expect(q.merges()).toEqual([[1, 2], [4]]);
    // One run fewer than without the optimization.
    expect(q.effects.filter((e) => e.kind === "start_run").length - started).toBe(3);
  });
});

describe("regressions", () => {
  test("a PR going back to pending reorders the line: the runs that relied on it restart too", () => {
    // Found by the crash-safety test: #5 fails while batch [6,7] and then [8,9] test behind it.
    const q = new EngineDriver({ concurrency: 2, batch: true, batchingMinSize: 2 });
    q.submit(5, { noBatch: true });
    [6, 7, 8, 9].forEach((n) => q.submit(n));
    expect(q.running()).toEqual([
      [[5], [5]],
      [
        [5, 6, 7],
        [6, 7],
      ],
    ]);
    q.fail(5);
    expect(q.state(5)).toBe("failed");
    // No run was started on the line as it was before #5 left: the four wait no more and
    // form one batch on the new line.
    expect(q.q.runs.map((r) => [r.stack, r.status])).toEqual([
      [[5], "failed"],
      [[5, 6, 7], "cancelled"],
      [[6, 7, 8, 9], "running"],
    ]);
    q.pass(8);
    expect(q.merges()).toEqual([[6, 7, 8, 9]]);
  });
});

describe("parallel mode: lanes from impacted targets", () => {
  const parallel = (overrides = {}) => new EngineDriver({ mode: "parallel", concurrency: 5, ...overrides });

  test("PRs with disjoint targets test side by side on the target; a PR waits only for those it overlaps", () => {
    const q = parallel();
    q.submit(1, { targets: ["api"] });
    q.submit(2, { targets: ["web"] });
    q.submit(3, { targets: ["api", "docs"] });
    expect(q.running()).toEqual([
      [[1], [1]],
      [[2], [2]],
      [[1, 3], [3]],
    ]);
    // #2 merges first although it came second: nothing it overlaps is ahead of it.
    q.pass(2);
    expect(q.merges()).toEqual([[2]]);
    expect(q.merges()[0]).toEqual([2]);
    expect(q.effects.find((e) => e.kind === "merge")).toMatchObject({ exactTree: false });
    q.pass(3);
    expect(q.states()).toMatchObject({ 1: "testing", 3: "tests_passed" });
    q.pass(1);
    expect(q.merges()).toEqual([[2], [1], [3]]);
  });

  test("an urgent PR restarts only the lanes it shares targets with", () => {
    const q = parallel();
    q.submit(1, { targets: ["api"] });
    q.submit(2, { targets: ["web"] });
    q.submit(3, { targets: ["api"] });
    q.submit(4, { targets: ["api"], priority: 0 });
    expect(q.running()).toEqual([
      [[2], [2]],
      [[4], [4]],
      [[4, 1], [1]],
      [[4, 1, 3], [3]],
    ]);
    // The web lane kept its run: nothing was cancelled there.
    expect(q.effects.filter((e) => e.kind === "cancel_run").map((e) => (e as { runId: string }).runId)).toEqual(["run-1", "run-3"]);
  });

  test("lanes are transitive: a PR holds what the PRs under it depend on", () => {
    const q = parallel();
    q.submit(1, { targets: ["api"] });
    q.submit(2, { targets: ["api", "web"] });
    q.submit(3, { targets: ["web"] });
    expect(q.running()).toEqual([
      [[1], [1]],
      [[1, 2], [2]],
      [[1, 2, 3], [3]],
    ]);
  });

  test('"ALL" depends on everything ahead and everything behind depends on it; an empty list depends on nothing', () => {
    const q = parallel();
    q.submit(1, { targets: ["api"] });
    q.submit(2, { targets: "ALL" });
    q.submit(3, { targets: ["web"] });
    q.submit(4, { targets: [] });
    expect(q.running()).toEqual([
      [[1], [1]],
      [[1, 2], [2]],
      [[1, 2, 3], [3]],
      [[4], [4]],
    ]);
  });

  test("a failure stays in its lane: the other lanes merge, the PRs behind it in its lane retest without it", () => {
    const q = parallel();
    q.submit(1, { targets: ["api"] });
    q.submit(2, { targets: ["web"] });
    q.submit(3, { targets: ["api"] });
    q.fail(1);
    expect(q.state(1)).toBe("failed");
    expect(q.running()).toEqual([
      [[2], [2]],
      [[3], [3]],
    ]);
    q.pass(2);
    q.pass(3);
    expect(q.merges()).toEqual([[2], [3]]);
  });

  test("new targets for a PR in flight move it to the lane they put it in", () => {
    const q = parallel();
    q.submit(1, { targets: ["api"] });
    q.submit(2, { targets: ["web"] });
    q.q.entries.find((e) => e.prNumber === 2)!.targets = ["api"];
    q.send({ kind: "targets_changed", prNumber: 2 });
    expect(q.running()).toEqual([
      [[1], [1]],
      [[1, 2], [2]],
    ]);
  });

  test("a run stays valid while other lanes merge, and is re-described from the new base when they land", () => {
    const q = parallel();
    q.submit(1, { targets: ["api"] });
    q.submit(2, { targets: ["web"] });
    q.pass(1);
    q.send({ kind: "merge_landed", prNumbers: [1], headSha: "head-1" });
    expect(q.q).toMatchObject({ baseSha: "head-1", merged: [] });
    expect(q.runOf(2)).toMatchObject({ baseSha: "head-1", stack: [2] });
    q.pass(2);
    expect(q.merges()).toEqual([[1], [2]]);
  });
});

describe("merges landing", () => {
  test("a landed merge folds into the base: stacks stay short, runs stay valid, a repeat changes nothing", () => {
    const q = new EngineDriver({ concurrency: 3 });
    [1, 2, 3].forEach((n) => q.submit(n));
    q.pass(1);
    expect(q.runOf(3).stack).toEqual([1, 2, 3]);
    q.send({ kind: "merge_landed", prNumbers: [1], headSha: "head-1" });
    q.send({ kind: "merge_landed", prNumbers: [1], headSha: "head-1" });
    expect(q.q).toMatchObject({ baseSha: "head-1", merged: [] });
    expect(q.running()).toEqual([
      [[2], [2]],
      [[2, 3], [3]],
    ]);
    q.pass(2);
    q.pass(3);
    expect(q.merges()).toEqual([[1], [2], [3]]);
  });

  test("a merge the code host refused voids it and every merge decided after it: those PRs go back in line", () => {
    const q = new EngineDriver({ concurrency: 2 });
    [1, 2].forEach((n) => q.submit(n));
    q.pass(1);
    q.pass(2);
    expect(q.q.merged).toEqual([1, 2]);
    q.send({ kind: "merge_failed", prNumbers: [1], headSha: "outside" });
    expect(q.states()).toEqual({ 1: "testing", 2: "testing" });
    expect(q.reason(1)).toBe("testing");
    expect(q.running()).toEqual([
      [[1], [1]],
      [[1, 2], [2]],
    ]);
    expect(q.runOf(1).baseSha).toBe("outside");
  });
});

describe("merges the code host refuses", () => {
  test("a refused merge fails its PRs with the host's message, never retests them; the merges decided after them go back in line", () => {
    const q = new EngineDriver({ concurrency: 3 });
    [1, 2, 3].forEach((n) => q.submit(n));
    q.pass(1);
    q.pass(2);
    expect(q.q.merged).toEqual([1, 2]);
    const message = 'Required status check "build" is expected.';
    q.send({ kind: "merge_refused", prNumbers: [1], message, headSha: "base-0" });
    expect(q.states()).toEqual({ 1: "failed", 2: "testing", 3: "testing" });
    expect(q.reason(1)).toBe("merge_refused");
    expect(q.transitions.find((t) => t.prNumber === 1 && t.to === "failed")).toMatchObject({ reason: "merge_refused", message });
    // #2 was to land on top of #1: retested without it, and #3 on top of #2.
    expect(q.running()).toEqual([
      [[2], [2]],
      [[2, 3], [3]],
    ]);
    expect(q.q.merged).toEqual([]);
    // A late or repeated refusal of a merge no longer decided changes nothing.
    const before = q.transitions.length;
    q.send({ kind: "merge_refused", prNumbers: [1], message, headSha: "base-0" });
    expect(q.transitions.length).toBe(before);
  });

  test("a PR whose head moved since it was tested is cancelled (pr_updated) when its merge is refused; the rest are retested", () => {
    const q = new EngineDriver({ concurrency: 2 });
    [1, 2].forEach((n) => q.submit(n));
    q.pass(1);
    q.pass(2);
    q.send({ kind: "merge_pr_left", prNumber: 1, reason: "pr_updated", headSha: "base-0" });
    expect(q.states()).toEqual({ 1: "cancelled", 2: "testing" });
    expect(q.reason(1)).toBe("pr_updated");
    expect(q.running()).toEqual([[[2], [2]]]);
  });

  test("a partly landed merge: the landed PRs are merged, the others go back in line on the head the host reports", () => {
    const q = new EngineDriver({ concurrency: 2, canOptimisticallyMerge: true });
    [1, 2].forEach((n) => q.submit(n));
    q.pass(2);
    expect(q.merges()).toEqual([[1, 2]]);
    q.send({ kind: "merge_landed", prNumbers: [1], headSha: "after-1" });
    q.send({ kind: "base_moved", sha: "foreign" });
    expect(q.states()).toEqual({ 1: "merged", 2: "testing" });
    expect(q.running()).toEqual([[[2], [2]]]);
    expect(q.runOf(2).baseSha).toBe("foreign");
    expect(q.transitions.filter((t) => t.prNumber === 2).map((t) => [t.to, t.reason])).toContainEqual(["pending", "merge_failed_target_moved"]);
  });

  test("a merge that landed on a target someone else moved: merged all the same, the merges after it retested on the new head", () => {
    const q = new EngineDriver({ concurrency: 3 });
    [1, 2, 3].forEach((n) => q.submit(n));
    q.pass(1);
    q.pass(2);
    q.pass(3);
    expect(q.q.merged).toEqual([1, 2, 3]);
    q.send({ kind: "merge_landed", prNumbers: [1], headSha: "after-1" });
    q.send({ kind: "merge_landed", prNumbers: [2], headSha: "after-foreign-and-2", targetMoved: true });
    expect(q.states()).toEqual({ 1: "merged", 2: "merged", 3: "testing" });
    expect([q.reason(1), q.reason(2)]).toEqual(["merged", "merged_after_target_moved"]);
    expect(q.transitions.filter((t) => t.prNumber === 3).map((t) => t.reason)).toContain("target_moved_during_merge");
    expect(q.running()).toEqual([[[3], [3]]]);
    expect(q.runOf(3).baseSha).toBe("after-foreign-and-2");
  });

  test("a PR being merged cannot be cancelled or restarted: the code host's answer decides", () => {
    const q = new EngineDriver();
    q.submit(1);
    q.pass(1);
    q.send({ kind: "cancelled", prNumber: 1, reason: "pr_updated" });
    q.send({ kind: "restart_requested", prNumber: 1 });
    expect(q.states()).toEqual({ 1: "tests_passed" });
    expect(q.q.merged).toEqual([1]);
    q.confirm([1]);
    expect(q.states()).toEqual({ 1: "merged" });
  });
});

describe("direct merge", () => {
  test("a PR up to date with the target and green merges without a queue run when nothing is ahead of it", () => {
    const q = new EngineDriver({ directMergeMode: "always" });
    q.submit(1, { directMergeBase: "base-0" });
    expect(q.effects).toEqual([{ kind: "merge", prNumbers: [1], runId: null, exactTree: false }]);
    expect(q.reason(1)).toBe("direct_merge");
  });

  test("not when the PR is behind the target, has red checks, or PRs are ahead of it; not when the mode is off", () => {
    const q = new EngineDriver({ directMergeMode: "always" });
    q.submit(1, { directMergeBase: "older" });
    q.submit(2, { directMergeBase: null });
    q.submit(3, { directMergeBase: "base-0" });
    expect(q.merges()).toEqual([]);
    expect(q.state(1)).toBe("testing");
    const off = new EngineDriver();
    off.submit(1, { directMergeBase: "base-0" });
    expect(off.state(1)).toBe("testing");
  });

  test("in parallel mode, a PR alone in its lane merges directly while other lanes test", () => {
    const q = new EngineDriver({ mode: "parallel", directMergeMode: "always", concurrency: 2 });
    q.submit(1, { targets: ["api"] });
    q.submit(2, { targets: ["web"], directMergeBase: "base-0" });
    expect(q.states()).toEqual({ 1: "testing", 2: "tests_passed" });
    q.confirm([2]);
    expect(q.states()).toEqual({ 1: "testing", 2: "merged" });
    expect(q.reason(2)).toBe("direct_merge");
  });
});

describe("flake-aware runs (issue 16)", () => {
  test("a failure proven real by test results fails the PR at once: no blind retry", () => {
    const q = new EngineDriver();
    q.submit(1);
    q.runOf(1).failureConfirmed = true;
    q.fail(1);
    expect([q.state(1), q.reason(1)]).toEqual(["failed", "tests_failed"]);
    expect(q.transitions.map((t) => t.reason)).not.toContain("retrying_failed_run");
  });

  test("run_rerun tests the run's tree again in a new run; the run stacked on it goes on untouched", () => {
    const q = new EngineDriver({ concurrency: 2 });
    q.submit(1);
    q.submit(2);
    const under = q.runOf(1);
    const over = q.runOf(2);
    expect(over.stack).toEqual([1, 2]);
    const effects = q.send({ kind: "run_rerun", runId: under.id });
    const again = q.runOf(1);
    expect(again.id).not.toBe(under.id);
    expect({ stack: again.stack, tested: again.tested, baseSha: again.baseSha }).toEqual({ stack: under.stack, tested: under.tested, baseSha: under.baseSha });
    expect(effects).toEqual([{ kind: "cancel_run", runId: under.id }, { kind: "start_run", runId: again.id, baseSha: under.baseSha, stack: [1], tested: [1] }, expect.objectContaining({ kind: "schedule_timer" })]);
    expect(q.runOf(2)).toMatchObject({ id: over.id, status: "running" });
    expect([q.state(1), q.state(2)]).toEqual(["testing", "testing"]);
    // The new run passes; the stacked one passes: both merge as tested.
    q.pass(1);
    q.pass(2);
    expect(q.merges()).toEqual([[1], [2]]);
    // A late rerun of a run no longer running changes nothing.
    expect(q.send({ kind: "run_rerun", runId: under.id }).filter((e) => e.kind !== "schedule_timer")).toEqual([]);
  });
});
