import { estimatesOf, type RunStats } from "./engine/estimates.js";
import type { EngineQueue } from "./engine/types.js";
import type { PrState } from "./states.js";
import { placeOf } from "./reasons.js";
import { frozenPlaceOf } from "./freezes.js";

/**
 * How many PRs at the front of the line have their place kept current on their status: every
 * PR moving up rewrites its status, so only these do (at most this many writes a decision); the
 * PRs behind them say only that they wait behind them, which stays true until they get there.
 * 10, not 20 (issue 23, goal 5): in a long line every merge rewrote 20 statuses, the largest
 * share of the GitHub calls per merged PR (docs/decisions.md, "Places on statuses stay current").
 */
export const STATUS_PLACES_SHOWN = 10;

/** The states whose status shows a place in line. */
const WAITING: ReadonlySet<PrState> = new Set(["pending", "testing"]);

/** The place a PR's status shows, from its estimate: "3rd in line, ~10 min", or that it waits behind the first ones. */
export function statusPlaceOf(estimate: { position: { index: number } | null; estimatedSecondsToMerge: number | null } | undefined): string {
  if (!estimate) return "";
  if (estimate.position && estimate.position.index > STATUS_PLACES_SHOWN) return `behind the first ${STATUS_PLACES_SHOWN} in line`;
  return placeOf(estimate.position, estimate.estimatedSecondsToMerge);
}

/**
 * The place each waiting PR's status shows (PRs not waiting answer none). While the queue is
 * frozen, every PR but a hotfix says so instead, and so does one whose tests passed and that waits
 * for the freeze to end to merge.
 */
export function statusPlacesOf(q: EngineQueue, stats: RunStats | null, now: number): Map<number, string> {
  const out = new Map<number, string>();
  const freeze = q.freeze;
  if (freeze?.frozen) {
    const frozen = frozenPlaceOf(freeze);
    for (const entry of q.entries) if (!entry.emergency && (WAITING.has(entry.state) || (entry.state === "tests_passed" && !q.merged.includes(entry.prNumber)))) out.set(entry.prNumber, frozen);
    if (!q.entries.some((e) => e.emergency && WAITING.has(e.state))) return out;
  }
  const estimates = estimatesOf(q, stats, now);
  for (const entry of q.entries) if (WAITING.has(entry.state) && !out.has(entry.prNumber)) out.set(entry.prNumber, statusPlaceOf(estimates.get(entry.prNumber)));
  return out;
}

/**
 * The waiting PRs whose status should show a new place after a decision: those that stayed
 * waiting (a PR that moved has a status of its own) and whose shown place or estimate bucket
 * differs from what the state before the decision showed, both read at the same `now` with the
 * same run statistics, so time passing alone never rewrites a status; and the `named` PRs
 * still waiting (just submitted: their first status). Answers PR → new place.
 */
export function movedPlaces(before: EngineQueue, after: EngineQueue, stats: RunStats | null, now: number, moved: ReadonlySet<number>, named: ReadonlySet<number> = new Set()): Map<number, string> {
  const old = statusPlacesOf(before, stats, now);
  const out = new Map<number, string>();
  for (const [pr, place] of statusPlacesOf(after, stats, now)) {
    if (moved.has(pr)) continue;
    const was = old.get(pr);
    if (named.has(pr) || (was !== undefined && was !== place)) out.set(pr, place);
  }
  return out;
}
