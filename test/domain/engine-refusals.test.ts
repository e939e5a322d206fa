import { EngineDriver } from "./engine-driver.js";

/** What the engine does when the code host refuses, for good, what it decided. */
describe("the queue engine, refusals of the code host", () => {
  test("a refused merge fails its PRs; the merges decided after it go back in line and are retested", () => {
    const q = new EngineDriver({ concurrency: 3 });
    [1, 2, 3].forEach((n) => q.submit(n));
    [1, 2, 3].forEach((n) => q.pass(n));
    expect(q.q.merged).toEqual([1, 2, 3]);
    q.send({ kind: "merge_refused", prNumbers: [1], message: 'Required status check "build" is expected.' });
    expect(q.state(1)).toBe("failed");
    expect(q.reason(1)).toBe("merge_refused");
    expect(q.q.merged).toEqual([]);
    // #2 and #3 were tested on top of #1: tested again without it, on the same base.
    expect(q.states()).toEqual({ 1: "failed", 2: "testing", 3: "testing" });
    expect(q.running()).toEqual([
      [[2], [2]],
      [[2, 3], [3]],
    ]);
    expect(q.q.baseSha).toBe("base-0");
  });

  test("a refusal of merges not at the head of the merged list changes nothing", () => {
    const q = new EngineDriver({ concurrency: 2 });
    [1, 2].forEach((n) => q.submit(n));
    [1, 2].forEach((n) => q.pass(n));
    q.send({ kind: "merge_refused", prNumbers: [2], message: "no" });
    // Decided, not yet confirmed by the code host: "Passed, merging".
    expect(q.states()).toEqual({ 1: "tests_passed", 2: "tests_passed" });
    expect(q.q.merged).toEqual([1, 2]);
  });

  test("a run the code host refused to start fails its PR at once, without the anti-flake retry", () => {
    const q = new EngineDriver();
    q.submit(1);
    q.send({ kind: "run_finished", runId: q.runOf(1).id, outcome: "failed", failure: "start_refused" });
    expect(q.state(1)).toBe("failed");
    expect(q.reason(1)).toBe("start_refused");
  });
});
