import type { Effect as EffectRow, Queue, Repository } from "../generated/sqlite/client.js";
import type { OutboxEffect } from "../domain/engine/types.js";
import type { Services } from "../app/services.js";
import type { RepoRef } from "../ports/code-host.js";
import { applyQueueEvent } from "../app/queue-events.js";

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
      const row = await services.db.read((tx) => tx.effect.findFirst({ where: { queueId, doneAt: null }, orderBy: { seq: "asc" } }));
      if (!row) break;
      const queue = await services.db.read((tx) => tx.queue.findUnique({ where: { id: queueId }, include: { repository: true } }));
      if (!queue) break;
      try {
        await execute(services, queue, JSON.parse(row.payload) as OutboxEffect);
        await services.db.transaction((tx) => tx.effect.updateMany({ where: { id: row.id, doneAt: null }, data: { doneAt: services.now() } }));
        count++;
      } catch (error) {
        await recordFailure(services, row, error);
        break;
      }
    }
    return count;
  });
  return done ?? 0;
}

async function recordFailure(services: Services, row: EffectRow, error: unknown): Promise<void> {
  const message = error instanceof Error ? error.message : String(error);
  // updateMany: the queue, and its effects with it, may have been deleted meanwhile.
  await services.db.transaction((tx) => tx.effect.updateMany({ where: { id: row.id }, data: { attempts: { increment: 1 }, lastError: message.slice(0, 2000) } }));
  if (row.attempts + 1 >= WARN_AFTER_ATTEMPTS) services.log?.warn({ effect: row.kind, queueId: row.queueId, attempts: row.attempts + 1, error: message }, "effect keeps failing");
}

const repoOf = (repository: Repository): RepoRef => ({ host: repository.host, owner: repository.owner, name: repository.name });

async function execute(services: Services, queue: Queue & { repository: Repository }, effect: OutboxEffect): Promise<void> {
  const repo = repoOf(queue.repository);
  const { codeHost, db } = services;
  switch (effect.kind) {
    case "start_run": {
      const run = await db.read((tx) => tx.testRun.findUnique({ where: { queueId_runId: { queueId: queue.id, runId: effect.runId } } }));
      // A run may have passed already: its CI reported while a crash kept this effect from
      // being marked done. Its testing branch must still be recorded, or it cannot merge.
      if (!run || run.testBranchSha || (run.status !== "running" && run.status !== "passed")) return;
      if (!effect.baseSha) {
        // The queue never learned its base: learn it; the engine restarts the run on it.
        const head = await codeHost.getBranchHead(repo, queue.branch);
        if (head) await applyQueueEvent(services, queue.id, { kind: "base_moved", sha: head });
        return;
      }
      const started = await codeHost.startTestRun(repo, { queueId: queue.id, runId: effect.runId, targetBranch: queue.branch, baseSha: effect.baseSha, stack: effect.stack });
      if (started.kind === "conflict") {
        await applyQueueEvent(services, queue.id, { kind: "run_finished", runId: effect.runId, outcome: "failed", failure: "merge_conflict" });
        return;
      }
      await db.transaction((tx) => tx.testRun.update({ where: { id: run.id }, data: { testBranch: started.testBranch, testBranchSha: started.sha } }));
      return;
    }
    case "cancel_run": {
      const run = await db.read((tx) => tx.testRun.findUnique({ where: { queueId_runId: { queueId: queue.id, runId: effect.runId } } }));
      if (run?.testBranch) await codeHost.cancelTestRun(repo, run.testBranch);
      return;
    }
    case "merge": {
      // A merge decided before an earlier one failed is void: its PRs are back in line. The
      // merges still to land are the queue's merged list, in order; this one must be next.
      const merged = JSON.parse(queue.mergedPrs) as number[];
      if (!effect.prNumbers.every((pr, i) => merged[i] === pr)) return;
      let tested: { branch: string; sha: string } | null = null;
      if (effect.runId !== null) {
        const run = await db.read((tx) => tx.testRun.findUnique({ where: { queueId_runId: { queueId: queue.id, runId: effect.runId! } } }));
        if (!run?.testBranch || !run.testBranchSha) throw new Error(`run ${effect.runId} has no testing branch to merge`);
        tested = { branch: run.testBranch, sha: run.testBranchSha };
      }
      const expectedHead = queue.targetHead ?? queue.baseSha;
      if (!expectedHead) throw new Error("the queue does not know its target head");
      const result = await codeHost.mergeTestedRun(repo, {
        targetBranch: queue.branch,
        expectedHead,
        prNumbers: effect.prNumbers,
        tested,
        exactTree: effect.exactTree,
        method: queue.mergeMethod as "merge_commit" | "squash" | "rebase",
      });
      const event = result.kind === "merged" ? ({ kind: "merge_landed", prNumbers: effect.prNumbers, headSha: result.head } as const) : ({ kind: "merge_failed", prNumbers: effect.prNumbers, headSha: result.head } as const);
      await applyQueueEvent(services, queue.id, event, async (tx) => {
        await tx.queue.update({ where: { id: queue.id }, data: { targetHead: result.head } });
        return true;
      });
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
