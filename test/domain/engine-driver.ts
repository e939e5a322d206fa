import { decide } from "../../src/domain/engine/engine.js";
import type { Decision, Effect, EngineEntry, EngineEvent, EngineQueue, EngineRun, EngineSettings, Transition } from "../../src/domain/engine/types.js";

export const MINUTE = 60_000;

export function settings(overrides: Partial<EngineSettings> = {}): EngineSettings {
  return {
    mode: "single",
    concurrency: 1,
    bisectionConcurrency: 1,
    testingTimeoutMinutes: 60,
    pendingFailureDepth: 0,
    canOptimisticallyMerge: false,
    batch: false,
    batchingMaxWaitTimeMinutes: 5,
    batchingMinSize: 2,
    optimizationMode: "off",
    directMergeMode: "off",
    ciBudget: 0,
    tuning: "fixed",
    ...overrides,
  };
}

/** A PR as the engine sees it, in `state`, with the defaults of a plain submission (`reason`: its state). */
export function engineEntry(prNumber: number, state: EngineEntry["state"], overrides: Partial<EngineEntry> = {}): EngineEntry {
  return {
    prNumber,
    state,
    stateChangedAt: 0,
    priority: 100,
    submittedAt: prNumber,
    noBatch: false,
    ready: true,
    bisectionGroupLimit: null,
    reason: state,
    position: null,
    targets: null,
    directMergeBase: null,
    ...overrides,
  };
}

/**
 * Drives the pure engine the way the runner will: one event at a time, with an injected clock.
 * Speaks in queue verbs (submit, pass, fail) so tests read like the product.
 */
export class EngineDriver {
  q: EngineQueue;
  now = Date.parse("2026-11-22T09:00:00Z");
  effects: Effect[] = [];
  transitions: Transition[] = [];
  /** Merges the code host confirmed (`confirm`), to name the heads they made. */
  #landed = 0;

  constructor(overrides: Partial<EngineSettings> = {}, queue: Partial<EngineQueue> = {}) {
    const s = settings(overrides);
    this.q = { state: "running", mode: s.mode, pendingMode: null, settings: s, baseSha: "base-0", merged: [], entries: [], runs: [], nextRunNumber: 1, ...queue };
  }

  /** The latest decision (its archived runs and their clean-ups). */
  decision: Decision | null = null;

  send(event: EngineEvent): Effect[] {
    const decision = decide(this.q, event, this.now);
    this.decision = decision;
    this.q = decision.queue;
    this.effects.push(...decision.effects);
    this.transitions.push(...decision.transitions);
    return decision.effects;
  }

  submit(prNumber: number, overrides: Partial<EngineEntry> = {}): Effect[] {
    this.q.entries.push(engineEntry(prNumber, "not_ready", { stateChangedAt: this.now, submittedAt: this.now, reason: "submitted", ...overrides }));
    this.now += 1000;
    return this.send({ kind: "submitted", prNumber });
  }

  /** The code host confirms the merge of these PRs (the next ones the queue decided to merge). */
  confirm(prNumbers: number[]): Effect[] {
    return this.send({ kind: "merge_landed", prNumbers, headSha: `landed-${++this.#landed}` });
  }

  advance(minutes: number): Effect[] {
    this.now += minutes * MINUTE;
    return this.send({ kind: "timer_fired" });
  }

  /** The run currently testing `prNumber`. */
  runOf(prNumber: number): EngineRun {
    const run = [...this.q.runs].reverse().find((r) => r.status === "running" && r.tested.includes(prNumber));
    if (!run) throw new Error(`no running run tests #${prNumber}; runs: ${JSON.stringify(this.q.runs.map((r) => [r.id, r.stack, r.tested, r.status]))}`);
    return run;
  }

  pass(prNumber: number): Effect[] {
    return this.send({ kind: "run_finished", runId: this.runOf(prNumber).id, outcome: "passed" });
  }

  fail(prNumber: number): Effect[] {
    return this.send({ kind: "run_finished", runId: this.runOf(prNumber).id, outcome: "failed" });
  }

  state(prNumber: number): string {
    return this.q.entries.find((e) => e.prNumber === prNumber)!.state;
  }

  reason(prNumber: number): string {
    return this.q.entries.find((e) => e.prNumber === prNumber)!.reason;
  }

  states(): Record<number, string> {
    return Object.fromEntries(this.q.entries.map((e) => [e.prNumber, e.state]));
  }

  /** Stacks of the runs now running, as [stack, tested]. */
  running(): [number[], number[]][] {
    return this.q.runs.filter((r) => r.status === "running").map((r) => [r.stack, r.tested]);
  }

  merges(): number[][] {
    return this.effects.filter((e) => e.kind === "merge").map((e) => (e as { prNumbers: number[] }).prNumbers);
  }
}
