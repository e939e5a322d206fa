import { PRIORITY_NAMES } from "../priority.js";
import type { PrState } from "../states.js";
import type { EngineEntry } from "./types.js";

const IN_FLIGHT: ReadonlySet<PrState> = new Set(["testing", "tests_passed", "pending_failure"]);
const IN_LINE: ReadonlySet<PrState> = new Set(["pending", "testing", "tests_passed", "pending_failure"]);

export const isInFlight = (state: PrState) => IN_FLIGHT.has(state);
export const isInLine = (state: PrState) => IN_LINE.has(state);

/**
 * The order of the line, as one comparison with numbered tie-breaks:
 * 1. hotfixes, then other urgent PRs first (only urgent skips the line, displacing what is in
 *    flight; a hotfix goes first so that it merges during a freeze on nothing but hotfixes);
 * 2. PRs already in flight before pending ones (other priorities never interrupt testing),
 *    in the order they started testing;
 * 3. priority value, lower first;
 * 4. submission time, earlier first;
 * 5. PR number.
 */
/** 0: an emergency, 1: another urgent PR, 2: any other. */
export const urgencyOf = (e: EngineEntry) => (e.emergency ? 0 : e.priority === PRIORITY_NAMES.urgent ? 1 : 2);

export function compareEntries(a: EngineEntry, b: EngineEntry): number {
  const urgent = urgencyOf;
  const flight = (e: EngineEntry) => (isInFlight(e.state) ? 0 : 1);
  const position = (e: EngineEntry) => (isInFlight(e.state) ? (e.position ?? 0) : 0);
  return urgent(a) - urgent(b) || flight(a) - flight(b) || position(a) - position(b) || a.priority - b.priority || a.submittedAt - b.submittedAt || a.prNumber - b.prNumber;
}

/**
 * The PRs in line (pending or in flight), in queue order. A stacked PR (docs/stacks.md) always
 * comes after the PR it is stacked on, and right after it while both wait, so that a stack
 * waiting in line starts as one unit: the comparison places the others.
 */
export function lineOf(entries: readonly EngineEntry[]): EngineEntry[] {
  const line = entries.filter((e) => isInLine(e.state)).sort(compareEntries);
  if (!line.some((e) => e.stackBelow !== undefined)) return line;
  const byNumber = new Map(line.map((e) => [e.prNumber, e]));
  // A PR follows the one under it when that one is in line.
  const below = (e: EngineEntry) => (e.stackBelow !== undefined && e.stackBelow !== e.prNumber ? byNumber.get(e.stackBelow) : undefined);
  // Waiting right on top of a waiting PR of the same urgency: placed with it, as one unit (an
  // urgent PR never waits behind a PR stacked on another urgent one that is not urgent itself).
  const attached = (e: EngineEntry) => {
    const under = below(e);
    return e.state === "pending" && under?.state === "pending" && urgencyOf(under) === urgencyOf(e);
  };
  const followers = new Map<number, EngineEntry[]>();
  for (const e of line) {
    const under = below(e);
    if (under) followers.set(under.prNumber, [...(followers.get(under.prNumber) ?? []), e]);
  }
  const out: EngineEntry[] = [];
  const placed = new Set<number>();
  /** PRs met in the comparison's order before the PR under them: placed right after it. */
  const deferred = new Set<number>();
  const place = (e: EngineEntry) => {
    placed.add(e.prNumber);
    out.push(e);
    for (const up of followers.get(e.prNumber) ?? []) if (!placed.has(up.prNumber) && (attached(up) || deferred.has(up.prNumber))) place(up);
  };
  for (const e of line) {
    if (placed.has(e.prNumber) || attached(e)) continue;
    const under = below(e);
    if (under && !placed.has(under.prNumber)) deferred.add(e.prNumber);
    else place(e);
  }
  // A cycle (the application never makes one: a PR cannot be based on its own stack) keeps them, last.
  for (const e of line) if (!placed.has(e.prNumber)) out.push(e);
  return out;
}
