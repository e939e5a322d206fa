import { engineFreeze, freezeStatusAt } from "../domain/freezes.js";
import { estimatesOf, type Estimate } from "../domain/engine/estimates.js";
import type { Tx } from "../store/database.js";
import { loadQueueState } from "../store/queue-state.js";
import type { Queue } from "../store/queues.js";
import type { QueueEntry } from "../store/entries.js";
import { isTerminal } from "../domain/states.js";
import { recentRunStats } from "../store/timeline.js";

export type PlaceRecord = { position: { index: number; ahead: number } | null; estimatedMergeAt: string | null };

const NOWHERE: PlaceRecord = { position: null, estimatedMergeAt: null };

/**
 * The queue's PRs still in play, in getQueue's order (priority, then submission, then number),
 * and every PR in line's place and estimated merge time, from the queue's state as the engine
 * sees it and its recent runs (docs/engine.md, "Position and estimated time to merge"): one
 * reading of the line serves both. `entries` also holds what else that state loads (PRs merged
 * but not yet confirmed, say).
 */
export async function lineWithPlaces(tx: Tx, queue: Queue): Promise<{ live: QueueEntry[]; entries: ReadonlyMap<number, QueueEntry>; placesAt: (now: Date) => (prNumber: number) => PlaceRecord }> {
  const loaded = await loadQueueState(tx, queue, [], { peek: true });
  const stats = await recentRunStats(tx, queue.id);
  const live = [...loaded.entries.values()].filter((e) => !isTerminal(e.state)).sort(inGetQueueOrder);
  // Estimates count from the time they are asked at (a run's elapsed time): computed for that
  // time, and kept while the next asker asks at the same time.
  let last: { at: number; placeOf: (prNumber: number) => PlaceRecord } | null = null;
  const placesAt = (now: Date) => {
    if (last?.at !== now.getTime()) {
      // The freeze as of the time asked (a scheduled one may have begun since the last decision).
      const estimates = estimatesOf({ ...loaded.engine, freeze: engineFreeze(freezeStatusAt(queue.freezes, now.getTime())) }, stats, now.getTime());
      last = { at: now.getTime(), placeOf: (prNumber) => toPlaceRecord(estimates.get(prNumber), now) };
    }
    return last.placeOf;
  };
  return { live, entries: loaded.entries, placesAt };
}

/** liveEntriesInOrder's order. */
function inGetQueueOrder(a: QueueEntry, b: QueueEntry): number {
  return a.priorityValue - b.priorityValue || a.submittedAt.getTime() - b.submittedAt.getTime() || a.prNumber - b.prNumber;
}

function toPlaceRecord(estimate: Estimate | undefined, now: Date): PlaceRecord {
  if (!estimate) return NOWHERE;
  const seconds = estimate.estimatedSecondsToMerge;
  return { position: estimate.position, estimatedMergeAt: seconds === null ? null : new Date(now.getTime() + seconds * 1000).toISOString() };
}
