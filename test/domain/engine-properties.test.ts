import fc from "fast-check";
import type { Effect, EngineSettings } from "../../src/domain/engine/types.js";
import { EngineDriver } from "./engine-driver.js";

/**
 * Random workloads against the pure engine, checking after every step:
 * - every merge is of a run that passed, on the current base, whose stack is exactly the
 *   merged PRs plus the PRs merged now (the target then holds the tree that was tested);
 * - a PR whose changes really fail never merges (runs fail flakily, but never pass flakily);
 * - no PR merges twice, every terminal state has a reason;
 * - the queue never stalls: while it runs and PRs wait, something runs or a timer is set.
 * At the end, with CI answering truthfully, every PR reaches a terminal state.
 */

type Action =
  | { kind: "submit"; priority: number; bad: boolean; noBatch: boolean }
  | { kind: "finish"; pick: number; flaky: boolean }
  | { kind: "cancel"; pick: number }
  | { kind: "restart"; pick: number }
  | { kind: "ready"; pick: number; ready: boolean }
  | { kind: "base_moved" }
  | { kind: "advance"; minutes: number }
  | { kind: "state"; state: "running" | "paused" | "draining" };

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("submit" as const), priority: fc.constantFrom(0, 10, 100, 100, 100, 200), bad: fc.integer({ min: 0, max: 99 }).map((n) => n < 15), noBatch: fc.boolean() }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("finish" as const), pick: fc.nat(), flaky: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("restart" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("ready" as const), pick: fc.nat(), ready: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: "base_moved" as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("advance" as const), minutes: fc.integer({ min: 1, max: 90 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("state" as const), state: fc.constantFrom("running" as const, "paused" as const, "draining" as const) }) },
);

const settingsArb: fc.Arbitrary<Partial<EngineSettings>> = fc.record({
  concurrency: fc.integer({ min: 1, max: 5 }),
  bisectionConcurrency: fc.integer({ min: 1, max: 4 }),
  testingTimeoutMinutes: fc.integer({ min: 20, max: 120 }),
  pendingFailureDepth: fc.integer({ min: 0, max: 3 }),
  canOptimisticallyMerge: fc.boolean(),
  batch: fc.boolean(),
  batchingMaxWaitTimeMinutes: fc.integer({ min: 1, max: 10 }),
  batchingMinSize: fc.integer({ min: 1, max: 5 }),
  optimizationMode: fc.constantFrom("off" as const, "bisection_skip_redundant_tests" as const),
});

class Checked extends EngineDriver {
  bad = new Set<number>();
  mergedOnce = new Set<number>();
  next = 1;

  /** What CI would say of a run: red if any PR in it is bad; a flaky run may also be red. */
  truth(stack: number[]): "passed" | "failed" {
    return stack.some((pr) => this.bad.has(pr)) ? "failed" : "passed";
  }

  override send(event: Parameters<EngineDriver["send"]>[0]): Effect[] {
    const before = structuredClone(this.q);
    const effects = super.send(event);
    let merged = [...before.merged];
    if (event.kind === "base_moved") merged = [];
    for (const effect of effects) {
      if (effect.kind !== "merge") continue;
      const run = this.q.runs.find((r) => r.id === effect.runId)!;
      expect(run.status).toBe("passed");
      expect(run.baseSha).toBe(this.q.baseSha);
      expect(run.stack).toEqual([...merged, ...effect.prNumbers]);
      for (const pr of effect.prNumbers) {
        expect(this.bad.has(pr)).toBe(false);
        expect(this.mergedOnce.has(pr)).toBe(false);
        this.mergedOnce.add(pr);
      }
      merged.push(...effect.prNumbers);
    }
    for (const entry of this.q.entries) {
      if (["merged", "failed", "cancelled"].includes(entry.state)) expect(entry.reason).not.toBe("");
    }
    this.checkNoStall(effects);
    return effects;
  }

  checkNoStall(effects: Effect[]): void {
    if (this.q.state === "paused" || this.q.state === "switching_modes") return;
    const waiting = this.q.entries.some((e) => e.state === "pending");
    const running = this.q.runs.some((r) => r.status === "running");
    const timer = effects.some((e) => e.kind === "schedule_timer");
    if (waiting && !running && !timer) throw new Error(`stalled: ${JSON.stringify(this.states())}`);
  }

  apply(a: Action): void {
    const live = this.q.entries.filter((e) => !["merged", "failed", "cancelled"].includes(e.state));
    const pick = <T>(list: T[], n: number) => (list.length ? list[n % list.length] : undefined);
    switch (a.kind) {
      case "submit": {
        const pr = this.next++;
        if (a.bad) this.bad.add(pr);
        this.submit(pr, { priority: a.priority, noBatch: a.noBatch });
        return;
      }
      case "finish": {
        const run = pick(this.q.runs.filter((r) => r.status === "running"), a.pick);
        if (!run) return;
        const outcome = a.flaky ? "failed" : this.truth(run.stack);
        this.send({ kind: "run_finished", runId: run.id, outcome });
        return;
      }
      case "cancel": {
        const entry = pick(live, a.pick);
        if (entry) this.send({ kind: "cancelled", prNumber: entry.prNumber, reason: "cancelled_by_user" });
        return;
      }
      case "restart": {
        const entry = pick(live, a.pick);
        if (entry) this.send({ kind: "restart_requested", prNumber: entry.prNumber });
        return;
      }
      case "ready": {
        const entry = pick(live, a.pick);
        if (entry) this.send({ kind: "readiness_changed", prNumber: entry.prNumber, ready: a.ready });
        return;
      }
      case "base_moved":
        this.send({ kind: "base_moved", sha: `base-${this.now}` });
        return;
      case "advance":
        this.advance(a.minutes);
        return;
      case "state":
        this.q.state = a.state;
        this.send({ kind: "config_changed" });
        return;
    }
  }

  /** CI answers truthfully, every PR is ready and the queue runs, until nothing is left. */
  drain(): void {
    this.q.state = "running";
    this.send({ kind: "config_changed" });
    for (const entry of this.q.entries) if (!entry.ready) this.send({ kind: "readiness_changed", prNumber: entry.prNumber, ready: true });
    for (let i = 0; i < 5000; i++) {
      const run = this.q.runs.find((r) => r.status === "running");
      if (run) this.send({ kind: "run_finished", runId: run.id, outcome: this.truth(run.stack) });
      else if (this.q.entries.some((e) => e.state === "pending")) this.advance(60);
      else return;
    }
    throw new Error("the queue did not drain");
  }
}

describe("engine properties", () => {
  test("random workloads keep every invariant, and the queue drains", () => {
    fc.assert(
      fc.property(settingsArb, fc.array(action, { minLength: 1, maxLength: 120 }), (settings, actions) => {
        const sim = new Checked(settings);
        for (const a of actions) sim.apply(a);
        sim.drain();
        for (const entry of sim.q.entries) {
          expect(["merged", "failed", "cancelled"]).toContain(entry.state);
          // Every good PR that was not cancelled merges once CI tells the truth.
          if (!sim.bad.has(entry.prNumber) && entry.state === "failed") {
            // A good PR can only fail through a flaky or timed-out run of its own.
            expect(["tests_failed", "timeout"]).toContain(entry.reason);
          }
          if (sim.bad.has(entry.prNumber)) expect(entry.state).not.toBe("merged");
        }
      }),
      { numRuns: 1500, seed: 42 },
    );
  });
});
