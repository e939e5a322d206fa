import fc from "fast-check";
import { overlaps } from "../../src/domain/engine/line.js";
import type { Effect, EngineSettings, Targets } from "../../src/domain/engine/types.js";
import { EngineDriver } from "./engine-driver.js";
import { engineFreeze, freezeStatusAt, type Freeze, type FreezeWindow } from "../../src/domain/freezes.js";

/**
 * Random workloads against the pure engine, with a model of the code host (the target
 * branch's content as the list of changes on it; merges land when the model says so),
 * checking after every step:
 * - every merge is of a run that passed on the current base; when it lands the target holds
 *   the tree that run tested: exactly (single mode), or, in parallel mode, every change that
 *   touches the merged PRs' targets, in the same order (other lanes are independent);
 * - a direct merge lands only a PR up to date with the target and green on its own;
 * - a PR whose changes really fail never merges (runs fail flakily, but never pass flakily);
 * - no PR merges twice, every terminal state has a reason; a PR is merged only once its merge
 *   landed (the code host refuses some: those PRs fail or are cancelled, never merged);
 * - the queue never stalls: while it runs and PRs wait, something runs or a timer is set;
 * - while a merge freeze holds, only hotfixes merge, and only hotfixes start testing when the
 *   freeze holds testing too (freezes now, until a time or until unfrozen, and scheduled ones).
 * - a stacked PR (docs/stacks.md) is never tested without the PRs under it (until they merged)
 *   and never merges before them, nor without them;
 * At the end, with CI answering truthfully, every PR reaches a terminal state.
 */

type Action =
  | { kind: "submit"; priority: number; bad: boolean; noBatch: boolean; targets: Targets; direct: boolean; emergency: boolean; stacked: boolean; inherits: boolean }
  | { kind: "freeze"; inMinutes: number; forMinutes: number | null; testing: boolean }
  | { kind: "unfreeze" }
  | { kind: "finish"; pick: number; flaky: boolean }
  | { kind: "land" }
  | { kind: "refuse"; headMoved: boolean }
  | { kind: "cancel"; pick: number }
  | { kind: "restart"; pick: number }
  | { kind: "ready"; pick: number; ready: boolean }
  | { kind: "retarget"; pick: number; targets: Targets }
  | { kind: "base_moved" }
  | { kind: "advance"; minutes: number }
  | { kind: "state"; state: "running" | "paused" | "draining" };

const targetsArb: fc.Arbitrary<Targets> = fc.oneof(
  { weight: 6, arbitrary: fc.subarray(["api", "web", "db", "docs"], { minLength: 1, maxLength: 2 }) },
  { weight: 1, arbitrary: fc.constant("ALL" as const) },
  { weight: 1, arbitrary: fc.constant([] as string[]) },
);

const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("submit" as const),
      priority: fc.constantFrom(0, 10, 100, 100, 100, 200),
      bad: fc.integer({ min: 0, max: 99 }).map((n) => n < 15),
      noBatch: fc.boolean(),
      targets: targetsArb,
      direct: fc.integer({ min: 0, max: 9 }).map((n) => n < 3),
      emergency: fc.integer({ min: 0, max: 9 }).map((n) => n < 1),
      stacked: fc.integer({ min: 0, max: 9 }).map((n) => n < 3),
      inherits: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("freeze" as const),
      inMinutes: fc.constantFrom(0, 0, 30),
      forMinutes: fc.option(fc.integer({ min: 5, max: 240 }), { nil: null }),
      testing: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "unfreeze" as const }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("finish" as const), pick: fc.nat(), flaky: fc.boolean() }) },
  { weight: 4, arbitrary: fc.constant({ kind: "land" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("refuse" as const), headMoved: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("restart" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("ready" as const), pick: fc.nat(), ready: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("retarget" as const), pick: fc.nat(), targets: targetsArb }) },
  { weight: 1, arbitrary: fc.constant({ kind: "base_moved" as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("advance" as const), minutes: fc.integer({ min: 1, max: 90 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("state" as const), state: fc.constantFrom("running" as const, "paused" as const, "draining" as const) }) },
);

const settingsArb: fc.Arbitrary<Partial<EngineSettings>> = fc.record({
  mode: fc.constantFrom("single" as const, "parallel" as const),
  concurrency: fc.integer({ min: 1, max: 5 }),
  bisectionConcurrency: fc.integer({ min: 1, max: 4 }),
  testingTimeoutMinutes: fc.integer({ min: 20, max: 120 }),
  pendingFailureDepth: fc.integer({ min: 0, max: 3 }),
  canOptimisticallyMerge: fc.boolean(),
  batch: fc.boolean(),
  batchingMaxWaitTimeMinutes: fc.integer({ min: 1, max: 10 }),
  batchingMinSize: fc.integer({ min: 1, max: 5 }),
  optimizationMode: fc.constantFrom("off" as const, "bisection_skip_redundant_tests" as const),
  directMergeMode: fc.constantFrom("off" as const, "always" as const),
  ciBudget: fc.integer({ min: 0, max: 6 }),
  tuning: fc.constantFrom("fixed" as const, "adaptive" as const),
});

/** A change on a branch: a PR, or a push made outside the queue (it touches everything). */
type Change = number | string;
type PendingMerge = Extract<Effect, { kind: "merge" }>;

class Checked extends EngineDriver {
  bad = new Set<number>();
  /** PRs whose merge landed on the target. */
  mergedOnce = new Set<number>();
  next = 1;
  /** The code host: what each known commit holds, and the target's head. */
  contents = new Map<string, Change[]>([["base-0", []]]);
  target = "base-0";
  pendingMerges: PendingMerge[] = [];
  /** The content of each testing branch, as built. */
  built = new Map<string, Change[]>();
  commits = 0;
  /** The queue's merge freezes (the application reads them at each event's time). */
  freezes: Freeze[] = [];

  /** What CI would say of a run: red if any PR in it is bad; a flaky run may also be red. */
  truth(stack: number[]): "passed" | "failed" {
    return stack.some((pr) => this.bad.has(pr)) ? "failed" : "passed";
  }

  targetsOf(change: Change): Targets | null {
    return typeof change === "string" ? "ALL" : (this.q.entries.find((e) => e.prNumber === change)?.targets ?? null);
  }

  override send(event: Parameters<EngineDriver["send"]>[0]): Effect[] {
    const freeze = engineFreeze(freezeStatusAt(this.freezes, this.now));
    this.q.freeze = freeze;
    // A hotfix, or a PR under one in its stack (the hotfix cannot merge without it: docs/stacks.md).
    const chainUnder = (pr: number): number[] => {
      const out: number[] = [];
      for (let below = this.q.entries.find((e) => e.prNumber === pr)?.stackBelow; below !== undefined && !out.includes(below); below = this.q.entries.find((e) => e.prNumber === below)?.stackBelow) out.push(below);
      return out;
    };
    const live = (state: string) => !["merged", "failed", "cancelled"].includes(state);
    const hotfix = (pr: number) => this.q.entries.some((e) => e.emergency === true && (e.prNumber === pr || (live(e.state) && chainUnder(e.prNumber).includes(pr))));
    const effects = super.send(event);
    for (const effect of effects) {
      // A freeze lets only hotfixes merge, and, holding testing too, start.
      if (freeze.frozen && effect.kind === "merge") expect([effect.prNumbers, effect.prNumbers.every(hotfix)]).toEqual([effect.prNumbers, true]);
      if (freeze.frozen && !freeze.testing && effect.kind === "start_run") expect([effect.tested, effect.tested.every(hotfix)]).toEqual([effect.tested, true]);
    }
    const under = (pr: number) => this.q.entries.find((e) => e.prNumber === pr)?.stackBelow;
    const decided = new Set([...this.mergedOnce, ...this.pendingMerges.flatMap((m) => m.prNumbers)]);
    for (const effect of effects) {
      // A stacked PR is tested on the PRs under it (those merged are in the base), and merges after them.
      const list = effect.kind === "start_run" ? effect.stack : effect.kind === "merge" ? effect.prNumbers : [];
      for (const [i, pr] of list.entries()) {
        const below = under(pr);
        if (below !== undefined && !this.mergedOnce.has(below) && !(effect.kind === "merge" && decided.has(below))) expect([pr, below, list.slice(0, i).includes(below)]).toEqual([pr, below, true]);
      }
      if (effect.kind === "merge") for (const pr of effect.prNumbers) decided.add(pr);
    }
    for (const effect of effects) {
      // What the testing branch holds is fixed when it is built, whatever the engine says later.
      if (effect.kind === "start_run") this.built.set(effect.runId, [...this.contents.get(effect.baseSha)!, ...effect.stack]);
      if (effect.kind !== "merge") continue;
      if (effect.runId !== null) {
        const run = this.q.runs.find((r) => r.id === effect.runId)!;
        expect(run.status).toBe("passed");
        expect(run.baseSha).toBe(this.q.baseSha);
      }
      for (const pr of effect.prNumbers) expect(this.bad.has(pr)).toBe(false);
      this.pendingMerges.push(effect);
    }
    for (const entry of this.q.entries) {
      if (["merged", "failed", "cancelled"].includes(entry.state)) expect(entry.reason).not.toBe("");
      if (entry.state === "merged") expect(this.mergedOnce.has(entry.prNumber)).toBe(true);
    }
    this.checkNoStall(effects);
    // The CI budget holds whatever happens: never more runs in flight than it allows.
    if (this.q.settings.ciBudget > 0) expect(this.q.runs.filter((r) => r.status === "running").length).toBeLessThanOrEqual(this.q.settings.ciBudget);
    return effects;
  }

  /** The code host carries out the oldest merge not yet done, as the effect runner would. */
  land(): void {
    const merge = this.pendingMerges.shift();
    if (!merge) return;
    for (const pr of merge.prNumbers) {
      expect(this.mergedOnce.has(pr)).toBe(false);
      this.mergedOnce.add(pr);
    }
    const now = this.contents.get(this.target)!;
    const after = [...now, ...merge.prNumbers];
    if (merge.runId === null) {
      const entry = this.q.entries.find((e) => e.prNumber === merge.prNumbers[0])!;
      // A direct merge: the PR's head was checked green on exactly the target as it is.
      expect(entry.directMergeBase).toBe(this.target);
    } else {
      const tested = this.built.get(merge.runId)!;
      if (merge.exactTree) expect(after).toEqual(tested);
      else {
        // The lane: the merged PRs and every earlier change they depend on, directly or
        // through another change (a PR's patch was built on the ones it overlaps).
        const lane = new Set<Change>(merge.prNumbers);
        for (const change of [...after].reverse()) {
          if ([...lane].some((member) => member !== change && overlaps(this.targetsOf(change), this.targetsOf(member)))) lane.add(change);
        }
        // Same changes, and any two that overlap in the same order (independent ones commute).
        const a = tested.filter((c) => lane.has(c));
        const b = after.filter((c) => lane.has(c));
        expect([...a].sort()).toEqual([...b].sort());
        for (const [i, x] of a.entries()) {
          for (const y of a.slice(i + 1)) {
            if (overlaps(this.targetsOf(x), this.targetsOf(y))) expect([x, y, b.indexOf(x) < b.indexOf(y)]).toEqual([x, y, true]);
          }
        }
      }
    }
    this.target = `head-${++this.commits}`;
    this.contents.set(this.target, after);
    this.send({ kind: "merge_landed", prNumbers: merge.prNumbers, headSha: this.target });
  }

  checkNoStall(effects: Effect[]): void {
    if (this.q.state === "paused" || this.q.state === "switching_modes") return;
    // A freeze that holds testing holds the PRs that are no hotfix, like a pause (a timer is set when it ends).
    const held = this.q.freeze?.frozen === true && !this.q.freeze.testing;
    if (held && this.q.freeze?.nextChangeAt === null && !this.q.entries.some((e) => e.state === "pending" && e.emergency)) return;
    const waiting = this.q.entries.some((e) => e.state === "pending" && (!held || e.emergency || this.q.freeze?.nextChangeAt !== null));
    const running = this.q.runs.some((r) => r.status === "running");
    const timer = effects.some((e) => e.kind === "schedule_timer");
    const merging = this.pendingMerges.length > 0 || effects.some((e) => e.kind === "merge");
    if (waiting && !running && !timer && !merging) throw new Error(`stalled: ${JSON.stringify(this.states())}`);
  }

  apply(a: Action): void {
    const live = this.q.entries.filter((e) => !["merged", "failed", "cancelled"].includes(e.state));
    const pick = <T>(list: T[], n: number) => (list.length ? list[n % list.length] : undefined);
    switch (a.kind) {
      case "submit": {
        const pr = this.next++;
        if (a.bad) this.bad.add(pr);
        // Stacked on the latest PR still in the queue: with its priority (as the application enters
        // a stack), or with one of its own (a PR already queued keeps its own; a priority set later).
        const below = a.stacked ? live.at(-1) : undefined;
        if (below) {
          const own = { priority: a.emergency ? 0 : a.priority, ...(a.emergency ? { emergency: true } : {}) };
          const inherited = { priority: below.priority, ...(below.emergency ? { emergency: true } : {}) };
          this.submit(pr, { ...(a.inherits ? inherited : own), noBatch: a.noBatch, targets: a.targets, directMergeBase: null, stackBelow: below.prNumber });
          return;
        }
        this.submit(pr, { priority: a.emergency ? 0 : a.priority, noBatch: a.noBatch, targets: a.targets, directMergeBase: a.direct && !a.bad ? this.target : null, ...(a.emergency ? { emergency: true } : {}) });
        return;
      }
      case "freeze": {
        const from = this.now + a.inMinutes * 60_000;
        const window: FreezeWindow =
          a.inMinutes === 0
            ? { kind: "now", until: a.forMinutes === null ? null : new Date(from + a.forMinutes * 60_000).toISOString() }
            : { kind: "once", from: new Date(from).toISOString(), until: new Date(from + (a.forMinutes ?? 60) * 60_000).toISOString() };
        this.freezes.push({ id: `f${this.freezes.length}`, reason: "sim", testing: a.testing, window, createdAt: new Date(this.now).toISOString(), createdBy: { kind: "token", name: "sim" } });
        this.send({ kind: "config_changed" });
        return;
      }
      case "unfreeze":
        this.freezes = [];
        this.send({ kind: "config_changed" });
        return;
      case "finish": {
        const run = pick(
          this.q.runs.filter((r) => r.status === "running"),
          a.pick,
        );
        if (!run) return;
        const outcome = a.flaky ? "failed" : this.truth(run.stack);
        this.send({ kind: "run_finished", runId: run.id, outcome });
        return;
      }
      case "land":
        this.land();
        return;
      case "refuse": {
        // The code host refuses the next merge: for a reason of its own, or because a PR's
        // head moved since it was tested. The merges decided after it are void too.
        const refused = this.pendingMerges[0];
        if (!refused) return;
        this.pendingMerges = [];
        if (a.headMoved) this.send({ kind: "merge_pr_left", prNumber: refused.prNumbers[0]!, reason: "pr_updated", headSha: this.target });
        else this.send({ kind: "merge_refused", prNumbers: refused.prNumbers, message: "Required status check is expected.", headSha: this.target });
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
      case "retarget": {
        const entry = pick(live, a.pick);
        if (!entry) return;
        entry.targets = a.targets;
        this.send({ kind: "targets_changed", prNumber: entry.prNumber });
        return;
      }
      case "base_moved": {
        // Someone pushes to the target. A merge not yet done then finds the target moved.
        const before = this.contents.get(this.target)!;
        this.target = `outside-${++this.commits}`;
        this.contents.set(this.target, [...before, this.target]);
        if (this.pendingMerges.length > 0) {
          const failed = this.pendingMerges[0]!;
          this.pendingMerges = [];
          this.send({ kind: "merge_failed", prNumbers: failed.prNumbers, headSha: this.target });
        } else this.send({ kind: "base_moved", sha: this.target });
        return;
      }
      case "advance":
        this.advance(a.minutes);
        return;
      case "state":
        this.q.state = a.state;
        this.send({ kind: "config_changed" });
        return;
    }
  }

  /** CI answers truthfully, merges land, every PR is ready and the queue runs, until nothing is left. */
  drain(): void {
    this.q.state = "running";
    this.freezes = [];
    this.send({ kind: "config_changed" });
    for (const entry of this.q.entries) if (!entry.ready) this.send({ kind: "readiness_changed", prNumber: entry.prNumber, ready: true });
    for (let i = 0; i < 5000; i++) {
      const run = this.q.runs.find((r) => r.status === "running");
      if (this.pendingMerges.length > 0) this.land();
      else if (run) this.send({ kind: "run_finished", runId: run.id, outcome: this.truth(run.stack) });
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
            expect(["tests_failed", "timeout", "merge_refused"]).toContain(entry.reason);
          }
          if (sim.bad.has(entry.prNumber)) expect(entry.state).not.toBe("merged");
        }
      }),
      { numRuns: 1500, seed: 42 },
    );
  });
});
