import { decide } from "../../src/domain/engine/engine.js";
import type { EngineQueue } from "../../src/domain/engine/types.js";
import { engineEntry, settings } from "./engine-driver.js";

const NOW = Date.parse("2026-11-22T09:00:00Z");
const HELD = { frozen: true, testing: false, until: null, nextChangeAt: null };
const FROZEN = { frozen: true, testing: true, until: NOW + 3_600_000, nextChangeAt: NOW + 3_600_000 };

function queue(overrides: Partial<EngineQueue>): EngineQueue {
  const s = settings({ bisectionConcurrency: 1 });
  return { state: "running", mode: "single", pendingMode: null, settings: s, baseSha: "base-0", merged: [], entries: [], runs: [], nextRunNumber: 1, ...overrides };
}

/** The engine under a merge freeze (docs/freezes.md), on hand-made lines: the cases random workloads reach rarely. */
describe("the engine under a merge freeze", () => {
  test("an emergency being bisected is tested on its own, not in a group with PRs the freeze holds back", () => {
    const entries = [1, 2, 3, 4].map((n) => engineEntry(n, "pending", { bisectionGroupLimit: 2, ...(n === 1 ? { emergency: true, priority: 0 } : {}) }));
    const decision = decide(queue({ entries, freeze: HELD }), { kind: "config_changed" }, NOW);
    const started = decision.effects.filter((e) => e.kind === "start_run");
    expect(started.map((e) => (e.kind === "start_run" ? e.tested : []))).toEqual([[1]]);
  });

  test("a passing run of an emergency merges while frozen; one holding another PR waits, and merges at the thaw untested again", () => {
    const entries = [engineEntry(1, "testing", { position: 1 }), engineEntry(2, "testing", { position: 2, emergency: true, priority: 0 })];
    const runs = [
      { id: "run-1", kind: "main" as const, baseSha: "base-0", stack: [2], tested: [2], status: "running" as const, startedAt: NOW, finishedAt: null, failure: null },
      { id: "run-2", kind: "main" as const, baseSha: "base-0", stack: [2, 1], tested: [1], status: "running" as const, startedAt: NOW, finishedAt: null, failure: null },
    ];
    let q = queue({ entries, runs, nextRunNumber: 3, freeze: FROZEN });
    q = decide(q, { kind: "run_finished", runId: "run-2", outcome: "passed" }, NOW).queue;
    const emergency = decide(q, { kind: "run_finished", runId: "run-1", outcome: "passed" }, NOW);
    expect(emergency.effects.filter((e) => e.kind === "merge")).toEqual([{ kind: "merge", prNumbers: [2], runId: "run-1", exactTree: true }]);
    const landed = decide(emergency.queue, { kind: "merge_landed", prNumbers: [2], headSha: "head-1" }, NOW);
    expect(landed.effects.some((e) => e.kind === "merge")).toBe(false);
    expect(landed.queue.entries.find((e) => e.prNumber === 1)!.state).toBe("tests_passed");
    // The freeze's end wakes the queue: PR 1's run (on top of the emergency) merges it, no new run.
    expect(landed.effects).toContainEqual({ kind: "schedule_timer", at: FROZEN.until });
    const thawed = decide({ ...landed.queue, freeze: undefined }, { kind: "timer_fired" }, FROZEN.until);
    expect(thawed.effects.filter((e) => e.kind === "merge" || e.kind === "start_run")).toEqual([{ kind: "merge", prNumbers: [1], runId: "run-2", exactTree: true }]);
  });

  test("a merge decided before the freeze and held by the worker waits, tests passed, and is decided again at the thaw", () => {
    const entries = [engineEntry(1, "tests_passed", { reason: "merging", position: 1 })];
    const runs = [{ id: "run-1", kind: "main" as const, baseSha: "base-0", stack: [1], tested: [1], status: "passed" as const, startedAt: NOW, finishedAt: NOW, failure: null }];
    const held = decide(queue({ entries, runs, merged: [1], nextRunNumber: 2, freeze: FROZEN }), { kind: "merge_held", prNumbers: [1] }, NOW);
    expect(held.queue.merged).toEqual([]);
    expect(held.queue.entries[0]).toMatchObject({ state: "tests_passed", reason: "tests_passed" });
    expect(held.effects.filter((e) => e.kind === "merge" || e.kind === "start_run")).toEqual([]);
    const thawed = decide({ ...held.queue, freeze: undefined }, { kind: "timer_fired" }, FROZEN.until);
    expect(thawed.effects.filter((e) => e.kind === "merge")).toEqual([{ kind: "merge", prNumbers: [1], runId: "run-1", exactTree: true }]);
  });
});
