import type { EngineEntry, EngineQueue, Targets } from "./types.js";
import { isInFlight, lineOf } from "./order.js";

/**
 * Whether two PRs' changes can interact, by their impacted targets: "ALL" overlaps every
 * non-empty list, an empty list overlaps nothing (nothing depends on it), and two lists
 * overlap when they share a target. Unknown targets (null) are assumed to overlap.
 */
export function overlaps(a: Targets | null, b: Targets | null): boolean {
  if (a === null || b === null) return true;
  if ((a !== "ALL" && a.length === 0) || (b !== "ALL" && b.length === 0)) return false;
  if (a === "ALL" || b === "ALL") return true;
  const set = new Set(a);
  return b.some((target) => set.has(target));
}

/**
 * The line in order, and which PRs ahead each PR depends on. In single mode a PR depends on
 * every PR ahead of it. In parallel mode it depends on the PRs ahead whose impacted targets
 * overlap its own, and on what those depend on (their changes are under it on its testing
 * branch): the PRs of its lane.
 *
 * PRs being bisected (their batch failed) are nobody's dependency: the line goes on without
 * them while the bisection pool finds the culprit. They depend on nothing either: each bisection
 * group is tested on the target alone (with the merges under way), so that what fails or
 * restarts in the main line never throws its bisection away; a group found innocent is tested
 * again in the line before it merges.
 */
const isBisecting = (entry: EngineEntry) => entry.bisectionGroupLimit !== null;
const NONE: ReadonlySet<number> = new Set();

export class Line {
  readonly entries: EngineEntry[];
  readonly #index = new Map<number, number>();
  /** Parallel mode: the PRs each PR depends on, by index; null in single mode (computed from the order). */
  readonly #deps: Set<number>[] | null;
  /** Single mode: whether any PR in line is being bisected (then the order alone does not say who depends on whom). */
  readonly #bisecting: boolean;
  /** Whether a PR in line is stacked on another PR in line (docs/stacks.md). */
  readonly #stacked: boolean;

  constructor(q: EngineQueue) {
    // PRs whose merge is decided (awaiting the code host) are under the line, not in it.
    const merging = new Set(q.merged);
    this.entries = lineOf(q.entries).filter((entry) => !merging.has(entry.prNumber));
    this.entries.forEach((entry, i) => this.#index.set(entry.prNumber, i));
    this.#bisecting = this.entries.some(isBisecting);
    this.#stacked = this.entries.some((entry) => entry.stackBelow !== undefined && this.#index.has(entry.stackBelow));
    if (q.mode !== "parallel") {
      // One line: a PR depends on every PR ahead of it that is not being bisected, and a PR being
      // bisected on none. Answered from the order (a set per PR made a line of 1,000 PRs under
      // bisection cost a second to build).
      this.#deps = null;
      return;
    }
    this.#deps = [];
    for (let i = 0; i < this.entries.length; i++) {
      const deps = new Set<number>();
      // A stacked PR depends on the PRs under it, bisected or not, and on what they depend on.
      for (const c of this.#chainOf(i)) {
        deps.add(this.entries[c]!.prNumber);
        for (const pr of this.#deps[c]!) deps.add(pr);
      }
      // A PR being bisected is tested on the target alone (with the merges under way).
      if (isBisecting(this.entries[i]!)) {
        this.#deps.push(deps);
        continue;
      }
      for (let j = 0; j < i; j++) {
        if (isBisecting(this.entries[j]!)) continue;
        if (!overlaps(this.entries[i]!.targets, this.entries[j]!.targets)) continue;
        deps.add(this.entries[j]!.prNumber);
        for (const pr of this.#deps[j]!) deps.add(pr);
      }
      this.#deps.push(deps);
    }
  }

  /**
   * The indices of the PRs in line under a stacked PR, nearest first (docs/stacks.md): it can
   * never be tested without them, being bisected or not. They are ahead of it (lineOf).
   */
  #chainOf(i: number): number[] {
    const chain: number[] = [];
    for (let below = this.entries[i]!.stackBelow; below !== undefined; ) {
      const j = this.#index.get(below);
      if (j === undefined || j >= i || chain.includes(j)) break;
      chain.push(j);
      below = this.entries[j]!.stackBelow;
    }
    return chain;
  }

  /**
   * Single mode with PRs being bisected or stacked: the indices of the PRs the PR at `i` depends
   * on. One not being bisected depends on every PR ahead that is not; one being bisected on
   * none; a stacked PR also on the PRs under it and, for those not being bisected, on what they
   * depend on.
   */
  #singleDepsOf(i: number): number[] {
    const chain = this.#chainOf(i);
    const own = isBisecting(this.entries[i]!) ? -1 : i - 1;
    const last = Math.max(own, ...chain.filter((c) => !isBisecting(this.entries[c]!)));
    const deps = new Set(chain);
    for (let j = 0; j <= last; j++) if (!isBisecting(this.entries[j]!)) deps.add(j);
    return [...deps].sort((a, b) => a - b);
  }

  has(prNumber: number): boolean {
    return this.#index.has(prNumber);
  }

  indexOf(prNumber: number): number {
    return this.#index.get(prNumber) ?? -1;
  }

  /** Whether `behind` depends on `ahead` (both in line). */
  dependsOn(behind: number, ahead: number): boolean {
    const b = this.indexOf(behind);
    const a = this.indexOf(ahead);
    if (b < 0 || a < 0 || a >= b) return false;
    if (this.#deps === null) {
      // Without a bisection every PR ahead is a dependency (a stacked PR's chain is ahead of it).
      if (this.#stacked && this.#bisecting) return this.#singleDepsOf(b).includes(a);
      return !this.#bisecting || (!isBisecting(this.entries[a]!) && !isBisecting(this.entries[b]!));
    }
    return this.#deps[b]!.has(ahead);
  }

  /** The PRs ahead of this one that it depends on, in line order. */
  depsOf(prNumber: number): EngineEntry[] {
    const i = this.indexOf(prNumber);
    if (i < 0) return [];
    if (this.#deps === null) {
      if (!this.#bisecting) return this.entries.slice(0, i);
      if (this.#stacked) return this.#singleDepsOf(i).map((j) => this.entries[j]!);
      return isBisecting(this.entries[i]!) ? [] : this.entries.slice(0, i).filter((e) => !isBisecting(e));
    }
    const deps = this.#deps[i]!;
    return this.entries.slice(0, i).filter((e) => deps.has(e.prNumber));
  }

  /**
   * The line's PRs a testing branch for `prs` must hold, in line order: the PRs themselves and
   * everything they depend on. Null when one of them is not in line.
   */
  lane(prs: readonly number[]): number[] | null {
    const indices = prs.map((pr) => this.indexOf(pr));
    if (indices.some((i) => i < 0)) return null;
    if (this.#deps === null) {
      if (!this.#bisecting) return this.entries.slice(0, Math.max(...indices) + 1).map((e) => e.prNumber);
      // Every PR not being bisected up to the last of `prs` that is not, and `prs` themselves
      // (with the PRs stacked under them and what those depend on).
      const members = new Set(indices);
      if (this.#stacked) for (const i of indices) for (const j of this.#singleDepsOf(i)) members.add(j);
      const last = Math.max(-1, ...[...members].filter((i) => !isBisecting(this.entries[i]!)));
      return this.entries.filter((e, i) => members.has(i) || (i <= last && !isBisecting(e))).map((e) => e.prNumber);
    }
    const members = new Set(prs);
    for (const i of indices) for (const pr of this.#deps[i]!) members.add(pr);
    return this.entries.filter((e) => members.has(e.prNumber)).map((e) => e.prNumber);
  }

  /**
   * Whether every PR this one depends on is in flight (so it can start testing on them). A
   * stacked PR in the main line also waits while a PR under it is being bisected: it cannot be
   * tested without it, and that one is nobody's dependency until it is back in the line.
   */
  depsInFlight(prNumber: number, alsoStarting: ReadonlySet<number> = NONE): boolean {
    const ready = (e: EngineEntry) => isInFlight(e.state) || alsoStarting.has(e.prNumber);
    const i = this.indexOf(prNumber);
    if (this.#stacked && i >= 0) {
      const chain = this.#chainOf(i);
      if (!isBisecting(this.entries[i]!) && chain.some((c) => isBisecting(this.entries[c]!))) return false;
      if (!chain.every((c) => ready(this.entries[c]!))) return false;
    }
    if (this.#deps !== null) return this.depsOf(prNumber).every(ready);
    if (this.#stacked && this.#bisecting && i >= 0) return this.#singleDepsOf(i).every((j) => ready(this.entries[j]!));
    // Single line: every PR ahead, looked at in place (no copy of the line per PR: startRuns asks for each).
    if (this.#bisecting && i >= 0 && isBisecting(this.entries[i]!)) return true;
    for (let j = 0; j < i; j++) if (!ready(this.entries[j]!) && !(this.#bisecting && isBisecting(this.entries[j]!))) return false;
    return true;
  }
}

/** The line as people read it: its lanes (parallel mode) and the PRs being bisected with their group size. */
export type LineGroups = {
  /** Parallel mode: PRs linked by what they depend on, each lane in line order, lanes by their first PR; null in single mode. */
  lanes: number[][] | null;
  /** PRs of failed batches being bisected, in line order, by the group size they are tested in. */
  bisecting: { prs: number[]; groupSize: number }[];
};

export function lineGroupsOf(q: EngineQueue): LineGroups {
  const line = new Line(q);
  const bisecting: LineGroups["bisecting"] = [];
  for (const entry of line.entries) {
    if (!isBisecting(entry)) continue;
    const group = bisecting.find((g) => g.groupSize === entry.bisectionGroupLimit);
    if (group) group.prs.push(entry.prNumber);
    else bisecting.push({ prs: [entry.prNumber], groupSize: entry.bisectionGroupLimit! });
  }
  if (q.mode !== "parallel") return { lanes: null, bisecting };
  // A lane is a connected group of the dependency graph: a PR joins the lane of every PR it depends on.
  const laneOf = new Map<number, number[]>();
  for (const entry of line.entries) {
    if (isBisecting(entry)) continue;
    let lane: number[] = [entry.prNumber];
    for (const dep of line.depsOf(entry.prNumber)) {
      const other = laneOf.get(dep.prNumber);
      if (!other || other === lane) continue;
      // Merged in line order: both are in line order, so is their union sorted by index.
      lane = [...other, ...lane.filter((pr) => !other.includes(pr))].sort((a, b) => line.indexOf(a) - line.indexOf(b));
    }
    for (const pr of lane) laneOf.set(pr, lane);
  }
  const lanes = [...new Set(laneOf.values())].sort((a, b) => line.indexOf(a[0]!) - line.indexOf(b[0]!));
  return { lanes, bisecting };
}
