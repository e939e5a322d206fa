import type { MergeRefusalReason, MergeResult } from "../ports/code-host.js";
import type { EngineEvent, MergeLeaveReason } from "../domain/engine/types.js";
import type { Tx } from "../store/database.js";
import { lockQueueRow, recordTargetHead } from "../store/queues.js";
import { applyEvent } from "./queue-events.js";
import type { Services } from "../app/services.js";

/** The reason a PR leaves the queue with when the host will not merge it because it changed (not a refusal of the host's own). */
const LEFT_BECAUSE: Record<Exclude<MergeRefusalReason, "cannot_merge">, MergeLeaveReason> = { head_moved: "pr_updated", closed: "pr_closed", base_changed: "base_branch_changed" };

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
        result.reason === "cannot_merge"
          ? { kind: "merge_refused", prNumbers: [result.prNumber], message: result.message, headSha: result.head }
          : { kind: "merge_pr_left", prNumber: result.prNumber, reason: LEFT_BECAUSE[result.reason], headSha: result.head },
      );
      break;
    case "landed_elsewhere":
      // GitHub merged it into the branch it was moved to: never a merge into the target.
      events.push({
        kind: "merge_pr_left",
        prNumber: result.prNumber,
        reason: "merged_into_other_branch",
        headSha: result.head,
        message: `GitHub merged it into ${result.branch} (${result.sha.slice(0, 7)}), not into the queue's branch.`,
      });
      break;
  }
  return events;
}

/**
 * Applies a merge's outcome in one transaction, under the queue's lock, and records where the
 * target is now: landing and voiding commit together, so a crash in between cannot leave PRs
 * merged on the code host and waiting in the queue.
 */
export async function applyMergeOutcome(services: Services, queueId: string, events: readonly EngineEvent[], targetHead: string | null, alsoInTx?: (tx: Tx) => Promise<void>): Promise<void> {
  await services.db.transaction(async (tx: Tx) => {
    for (const event of events) {
      const queue = await lockQueueRow(tx, queueId);
      if (!queue) return;
      await applyEvent(services, tx, queue, event);
    }
    if (targetHead !== null) await recordTargetHead(tx, queueId, targetHead);
    // The merge effect's own done mark (src/worker/effects.ts), in the same commit, after the
    // queue's lock (the order every writer of a queue's effects takes).
    await alsoInTx?.(tx);
  });
}
