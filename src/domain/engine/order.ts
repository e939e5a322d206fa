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
export function compareEntries(a: EngineEntry, b: EngineEntry): number {
  const urgent = (e: EngineEntry) => (e.emergency ? 0 : e.priority === PRIORITY_NAMES.urgent ? 1 : 2);
  const flight = (e: EngineEntry) => (isInFlight(e.state) ? 0 : 1);
  const position = (e: EngineEntry) => (isInFlight(e.state) ? (e.position ?? 0) : 0);
  return urgent(a) - urgent(b) || flight(a) - flight(b) || position(a) - position(b) || a.priority - b.priority || a.submittedAt - b.submittedAt || a.prNumber - b.prNumber;
}

/** The PRs in line (pending or in flight), in queue order. */
export function lineOf(entries: readonly EngineEntry[]): EngineEntry[] {
  return entries.filter((e) => isInLine(e.state)).sort(compareEntries);
}
