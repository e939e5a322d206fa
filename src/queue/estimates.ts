import { estimatesOf, type Estimate } from "../domain/engine/estimates.js";
import type { Tx } from "../store/database.js";
import { loadQueueState } from "../store/queue-state.js";
import type { Queue } from "../store/queues.js";
import { recentRunStats } from "../store/timeline.js";

export type PlaceRecord = { position: { index: number; ahead: number } | null; estimatedMergeAt: string | null };

const NOWHERE: PlaceRecord = { position: null, estimatedMergeAt: null };

/**
 * Every PR in line's place and estimated merge time, from the queue's state as the engine sees
 * it and its recent runs (docs/engine.md, "Position and estimated time to merge").
 */
export async function placesInQueue(tx: Tx, queue: Queue, now: Date): Promise<(prNumber: number) => PlaceRecord> {
  const loaded = await loadQueueState(tx, queue);
  const estimates = estimatesOf(loaded.engine, await recentRunStats(tx, queue.id), now.getTime());
  return (prNumber) => toPlaceRecord(estimates.get(prNumber), now);
}

function toPlaceRecord(estimate: Estimate | undefined, now: Date): PlaceRecord {
  if (!estimate) return NOWHERE;
  const seconds = estimate.estimatedSecondsToMerge;
  return { position: estimate.position, estimatedMergeAt: seconds === null ? null : new Date(now.getTime() + seconds * 1000).toISOString() };
}
