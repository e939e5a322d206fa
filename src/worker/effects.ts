import type { OutboxEffect } from "../domain/engine/types.js";
import type { Services } from "../app/services.js";
import { applyMergeOutcome, eventsOfMerge } from "../app/merges.js";
import { applyQueueEvent } from "../app/queue-events.js";
import { completeEffect, nextPendingEffect, recordEffectFailure, type PendingEffect } from "../store/effects.js";
import { findQueueInRepository, type QueueInRepository } from "../store/queues.js";
import { recordTestBranch, runOf } from "../store/runs.js";
import { pinnedHeadsOf } from "../store/entries.js";

/** After this many failed attempts an effect is logged as stuck (it is retried every tick). */
const WARN_AFTER_ATTEMPTS = 5;

/**
 * Executes a queue's pending effects in order, holding the queue's lock so that one process
 * at a time does. Each effect is safe to repeat: after a crash the next holder starts again
 * from the first effect not marked done.
 */
export async function runEffects(services: Services, queueId: string): Promise<number> {
  const done = await services.db.tryWithLock(`greenline-effects:${queueId}`, async () => {
    let count = 0;
    for (;;) {
      const pending = await services.db.read((tx) => nextPendingEffect(tx, queueId));
      if (!pending) break;
      const queue = await services.db.read((tx) => findQueueInRepository(tx, queueId));
      if (!queue) break;
      try {
        await execute(services, queue, pending.effect);
        await services.db.transaction((tx) => completeEffect(tx, pending.id, services.now()));
        count++;
      } catch (error) {
        await recordFailure(services, pending, error);
        break;
      }
    }
    return count;
  });
  return done ?? 0;
}

async function recordFailure(services: Services, pending: PendingEffect, error: unknown): Promise<void> {
  const message = error instanceof Error ? error.message : String(error);
  await services.db.transaction((tx) => recordEffectFailure(tx, pending.id, message));
  if (pending.attempts + 1 >= WARN_AFTER_ATTEMPTS) services.log?.warn({ effect: pending.kind, queueId: pending.queueId, attempts: pending.attempts + 1, error: message }, "effect keeps failing");
}

async function execute(services: Services, queue: QueueInRepository, effect: OutboxEffect): Promise<void> {
  const repo = queue.repository;
  const { codeHost, db } = services;
  switch (effect.kind) {
    case "start_run": {
      const run = await db.read((tx) => runOf(tx, queue.id, effect.runId));
      // A run may have passed already: its CI reported while a crash kept this effect from
      // being marked done. Its testing branch must still be recorded, or it cannot merge.
      if (!run || run.testBranchSha || (run.status !== "running" && run.status !== "passed")) return;
      if (!effect.baseSha) {
        // The queue never learned its base: learn it; the engine restarts the run on it.
        const head = await codeHost.getBranchHead(repo, queue.branch);
        if (head) await applyQueueEvent(services, queue.id, { kind: "base_moved", sha: head });
        return;
      }
      const heads = await db.read((tx) => pinnedHeadsOf(tx, queue.id, effect.stack));
      const started = await codeHost.startTestRun(repo, { queueId: queue.id, runId: effect.runId, targetBranch: queue.branch, baseSha: effect.baseSha, stack: effect.stack, heads });
      if (started.kind === "conflict") {
        await applyQueueEvent(services, queue.id, { kind: "run_finished", runId: effect.runId, outcome: "failed", failure: "merge_conflict" });
        return;
      }
      await db.transaction((tx) => recordTestBranch(tx, run.id, started.testBranch, started.sha));
      return;
    }
    case "cancel_run": {
      const run = await db.read((tx) => runOf(tx, queue.id, effect.runId));
      if (run?.testBranch) await codeHost.cancelTestRun(repo, run.testBranch);
      return;
    }
    case "merge": {
      // A merge decided before an earlier one failed is void: its PRs are back in line. The
      // merges still to land are the queue's merged list, in order; this one must be next.
      const merged = queue.mergedPrs;
      if (!effect.prNumbers.every((pr, i) => merged[i] === pr)) return;
      let tested: { branch: string; sha: string } | null = null;
      if (effect.runId !== null) {
        const run = await db.read((tx) => runOf(tx, queue.id, effect.runId!));
        if (!run?.testBranch || !run.testBranchSha) throw new Error(`run ${effect.runId} has no testing branch to merge`);
        tested = { branch: run.testBranch, sha: run.testBranchSha };
      }
      const expectedHead = queue.targetHead ?? queue.baseSha;
      if (!expectedHead) throw new Error("the queue does not know its target head");
      const heads = await db.read((tx) => pinnedHeadsOf(tx, queue.id, effect.prNumbers));
      const result = await codeHost.mergeTestedRun(repo, {
        targetBranch: queue.branch,
        expectedHead,
        prNumbers: effect.prNumbers,
        heads,
        tested,
        exactTree: effect.exactTree,
        method: queue.mergeMethod,
      });
      // PRs become merged only here, as the code host confirms them; refused ones fail or are
      // cancelled with the host's words, and the merges decided after them go back in line.
      await applyMergeOutcome(services, queue.id, eventsOfMerge(effect.prNumbers, result), result.head);
      if (result.kind === "merged" && tested) await codeHost.cancelTestRun(repo, tested.branch);
      return;
    }
    case "pr_status":
      await codeHost.setPullRequestStatus(repo, effect.sha, { state: effect.state, description: effect.description });
      return;
    case "pr_comment":
      await codeHost.commentOnPullRequest(repo, effect.prNumber, effect.body);
      return;
    case "schedule_timer":
      return;
  }
}
