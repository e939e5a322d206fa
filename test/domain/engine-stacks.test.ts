import { lineOf } from "../../src/domain/engine/order.js";
import { EngineDriver, engineEntry } from "./engine-driver.js";

/** Stacked PRs in the engine (docs/stacks.md): tested as a unit, bisected by prefixes, merged bottom-up. */

/** Submits a stack as the application enters one, in one decision: `prs[0]` on the target, each next one on the one before. */
function submitStack(sim: EngineDriver, prs: number[]): void {
  prs.forEach((pr, i) => sim.q.entries.push(engineEntry(pr, "not_ready", { stateChangedAt: sim.now, submittedAt: sim.now, reason: "submitted", ...(i > 0 ? { stackBelow: prs[i - 1]! } : {}) })));
  sim.now += 1000;
  sim.send({ kind: "submitted", prNumber: prs.at(-1)! });
}

describe("stacked pull requests in the engine", () => {
  test("a stack is tested in one run and merges bottom-up, whatever the batch size", () => {
    const sim = new EngineDriver({ concurrency: 3 });
    submitStack(sim, [1, 2, 3]);
    sim.submit(4);
    expect(sim.running()).toEqual([
      [
        [1, 2, 3],
        [1, 2, 3],
      ],
      [[1, 2, 3, 4], [4]],
    ]);
    sim.pass(1);
    expect(sim.merges()).toEqual([[1, 2, 3]]);
    sim.confirm([1, 2, 3]);
    expect(sim.states()).toEqual({ 1: "merged", 2: "merged", 3: "merged", 4: "testing" });
  });

  test("a stack waiting in line stays together, after the PRs ahead of it", () => {
    const entries = [
      engineEntry(5, "pending", { submittedAt: 1, priority: 100 }),
      engineEntry(7, "pending", { submittedAt: 3, priority: 100, stackBelow: 6 }),
      engineEntry(6, "pending", { submittedAt: 2, priority: 100 }),
      engineEntry(8, "pending", { submittedAt: 0, priority: 0 }),
      // Stacked PR sorting before the PR under it (a higher priority) still comes after it.
      engineEntry(9, "pending", { submittedAt: 0, priority: 0, stackBelow: 7 }),
    ];
    expect(lineOf(entries).map((e) => e.prNumber)).toEqual([8, 5, 6, 7, 9]);
  });

  test("a failing stack is bisected by prefixes: the PR that fails is named, those under it merge, those above it leave", () => {
    const sim = new EngineDriver({ batch: true, batchingMinSize: 1, bisectionConcurrency: 2 });
    submitStack(sim, [1, 2, 3, 4]);
    expect(sim.running()).toEqual([
      [
        [1, 2, 3, 4],
        [1, 2, 3, 4],
      ],
    ]);
    sim.fail(1);
    // Groups of two: the upper group is tested on the PRs under it.
    expect(sim.running()).toEqual([
      [
        [1, 2],
        [1, 2],
      ],
      [
        [1, 2, 3, 4],
        [3, 4],
      ],
    ]);
    sim.fail(1);
    sim.fail(3);
    expect(sim.running()).toEqual([
      [[1], [1]],
      [[1, 2], [2]],
    ]);
    sim.pass(1);
    sim.fail(2);
    // #1 is innocent and merges; #2 failed on #1 alone (twice: with #1, and as the lower half of the stack).
    expect(sim.merges()).toEqual([[1]]);
    sim.confirm([1]);
    expect(sim.state(1)).toBe("merged");
    expect(sim.state(2)).toBe("failed");
    expect(sim.transitions.filter((t) => t.prNumber === 2 && t.to === "failed")[0]?.evidence?.bisection?.culprit).toBe(2);
    // #3 and #4 cannot merge without #2: they leave, and say why.
    expect([sim.state(3), sim.reason(3), sim.state(4), sim.reason(4)]).toEqual(["cancelled", "stack_below_left", "cancelled", "stack_below_left"]);
    expect(sim.transitions.find((t) => t.prNumber === 3 && t.to === "cancelled")?.evidence?.blamedPr).toBe(2);
    expect(sim.running()).toEqual([]);
  });

  test("cancelling a PR in the middle of a stack takes the PRs above it out; the ones under it are tested again alone", () => {
    const sim = new EngineDriver();
    submitStack(sim, [1, 2, 3]);
    sim.send({ kind: "cancelled", prNumber: 2, reason: "pr_updated" });
    expect(sim.states()).toEqual({ 1: "testing", 2: "cancelled", 3: "cancelled" });
    expect(sim.reason(3)).toBe("stack_below_left");
    expect(sim.running()).toEqual([[[1], [1]]]);
    sim.pass(1);
    expect(sim.merges()).toEqual([[1]]);
  });

  test("a stacked PR waits, not ready, while the PR under it is not ready", () => {
    const sim = new EngineDriver();
    sim.submit(1, { ready: false });
    sim.submit(2, { stackBelow: 1 });
    expect(sim.state(2)).toBe("not_ready");
    expect(sim.running()).toEqual([]);
    sim.send({ kind: "readiness_changed", prNumber: 1, ready: true });
    expect(sim.running()).toEqual([
      [
        [1, 2],
        [1, 2],
      ],
    ]);
  });

  test("a PR stacked on one already merging is tested on the target with that merge, and merges after it", () => {
    const sim = new EngineDriver();
    sim.submit(1);
    sim.pass(1);
    expect(sim.merges()).toEqual([[1]]);
    sim.submit(2, { stackBelow: 1 });
    expect(sim.running()).toEqual([[[1, 2], [2]]]);
    sim.confirm([1]);
    sim.pass(2);
    expect(sim.merges()).toEqual([[1], [2]]);
  });

  test("a stacked PR is never merged directly", () => {
    const sim = new EngineDriver({ directMergeMode: "always" });
    sim.submit(1);
    sim.pass(1);
    sim.confirm([1]);
    sim.submit(2, { stackBelow: 1, directMergeBase: sim.q.baseSha });
    expect(sim.running()).toEqual([[[2], [2]]]);
  });

  test("a stacked PR less urgent than the PR under it is never grouped with it: urgent PRs go first, nothing loops (review finding)", () => {
    const sim = new EngineDriver();
    sim.submit(1, { priority: 0 });
    sim.submit(2, { priority: 100, stackBelow: 1 });
    sim.submit(3, { priority: 0 });
    expect(() => sim.fail(1)).not.toThrow();
    sim.send({ kind: "base_moved", sha: "pushed" });
    for (let i = 0; i < 12 && sim.q.runs.some((r) => r.status === "running"); i++) {
      const run = sim.q.runs.find((r) => r.status === "running")!;
      sim.send({ kind: "run_finished", runId: run.id, outcome: "passed" });
      for (const merge of sim.effects.filter((e) => e.kind === "merge").slice(sim.merges().length - 1)) void merge;
      if (sim.q.merged.length > 0) sim.confirm([...sim.q.merged]);
    }
    expect(sim.states()).toEqual({ 1: "merged", 2: "merged", 3: "merged" });
    // #2 merged after #1, and the urgent #3 was never held behind the medium #2.
    const order = sim.merges().flat();
    expect(order.indexOf(1)).toBeLessThan(order.indexOf(2));
    expect(order.indexOf(3)).toBeLessThan(order.indexOf(2));
  });

  test("a PR stacked on one being bisected joins the bisection pool: the main line goes on (review finding)", () => {
    const sim = new EngineDriver({ batch: true, batchingMinSize: 2, bisectionConcurrency: 2 });
    sim.submit(5);
    sim.submit(1);
    expect(sim.running()).toEqual([
      [
        [5, 1],
        [5, 1],
      ],
    ]);
    sim.fail(5);
    // [5,1] failed: both bisected. #2, stacked on #1, and the unrelated #6 arrive.
    sim.submit(2, { stackBelow: 1 });
    sim.submit(6);
    sim.advance(10);
    expect(sim.running().map(([, tested]) => tested)).toEqual(expect.arrayContaining([[6]]));
    expect(sim.q.entries.find((e) => e.prNumber === 2)!.bisectionGroupLimit).not.toBeNull();
  });

  test("a PR under a stack merged outside the queue: the PRs stacked on it stay and merge (review finding)", () => {
    const sim = new EngineDriver();
    submitStack(sim, [1, 2]);
    sim.send({ kind: "cancelled", prNumber: 1, reason: "merged_outside_queue" });
    expect([sim.state(1), sim.state(2)]).toEqual(["cancelled", "testing"]);
    sim.send({ kind: "base_moved", sha: "with-1" });
    expect(sim.running()).toEqual([[[2], [2]]]);
    sim.pass(2);
    expect(sim.merges()).toEqual([[2]]);
  });

  test("a hotfix stacked on a PR that is none: a freeze holding testing lets both through, as one unit (review finding)", () => {
    const sim = new EngineDriver({}, { freeze: { frozen: true, testing: false, until: null, nextChangeAt: null } });
    sim.submit(1);
    expect(sim.running()).toEqual([]);
    sim.submit(2, { stackBelow: 1, emergency: true, priority: 0 });
    expect(sim.running().map(([, tested]) => tested)).toEqual([[1]]);
    sim.pass(1);
    expect(sim.running().map(([stack, tested]) => [stack, tested])).toEqual([[[1, 2], [2]]]);
    sim.pass(2);
    expect(sim.merges().flat()).toEqual([1, 2]);
  });
});
