import type { MergeResult } from "../ports/code-host.js";
import type { EngineEvent } from "../domain/engine/types.js";
import type { Tx } from "../store/database.js";
import { lockQueueRow, recordTargetHead } from "../store/queues.js";
import { applyEvent } from "./queue-events.js";
import type { Services } from "../app/services.js";

/**
 * What the code host's answer to a merge tells the queue engine, in order: the PRs that did
 * land first (merge_landed: only now are they `merged`), then why the others did not.
 */
export function eventsOfMerge(prNumbers: readonly number[], result: MergeResult): EngineEvent[] {
  if (result.kind === "merged") return [{ kind: "merge_landed", prNumbers: [...prNumbers], headSha: result.head }];
  const events: EngineEvent[] = result.landed ? [{ kind: "merge_landed", prNumbers: result.landed.prNumbers, headSha: result.landed.head }] : [];
  switch (result.kind) {
    case "target_moved":
      // Landed by an earlier attempt, with the target where it is now: whether someone else's
      // commit is under them is unknown, so no run counts as exact on it.
      if (result.landed?.head === result.head) return [{ kind: "merge_landed", prNumbers: result.landed.prNumbers, headSha: result.head, targetMoved: true }];
      events.push({ kind: "merge_failed", prNumbers: prNumbers.filter((pr) => !result.landed?.prNumbers.includes(pr)), headSha: result.head });
      break;
    case "landed_on_moved_target":
      events.push({ kind: "merge_landed", prNumbers: [result.movedUnder], headSha: result.head, targetMoved: true });
      break;
    case "refused":
      events.push(
        result.reason === "head_moved"
          ? { kind: "merge_head_moved", prNumber: result.prNumber, headSha: result.head }
          : { kind: "merge_refused", prNumbers: [result.prNumber], message: result.message, headSha: result.head },
      );
      break;
  }
  return events;
}

/**
 * Applies a merge's outcome in one transaction, under the queue's lock, and records where the
 * target is now: landing and voiding commit together, so a crash in between cannot leave PRs
 * merged on the code host and waiting in the queue.
 */
export async function applyMergeOutcome(services: Services, queueId: string, events: readonly EngineEvent[], targetHead: string | null): Promise<void> {
  await services.db.transaction(async (tx: Tx) => {
    for (const event of events) {
      const queue = await lockQueueRow(tx, queueId);
      if (!queue) return;
      await applyEvent(services, tx, queue, event);
    }
    if (targetHead !== null) await recordTargetHead(tx, queueId, targetHead);
  });
}
