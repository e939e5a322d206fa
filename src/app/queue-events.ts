import type { Queue } from "../generated/sqlite/client.js";
import { repositoryKey, type RepoRef } from "../ports/code-host.js";
import { decide } from "../domain/engine/engine.js";
import type { Decision, EngineEvent } from "../domain/engine/types.js";
import type { Services } from "./services.js";
import type { Tx } from "../store/database.js";
import { loadQueueState, lockQueueRow, saveDecision } from "./queue-state.js";

/**
 * Feeds one event to the engine inside the caller's transaction (which holds the queue's
 * lock) and stores the decision: state, transitions with reasons, effects. The API, the
 * worker and webhooks all change a queue through here.
 */
export async function applyEvent(services: Services, tx: Tx, queue: Queue, event: EngineEvent): Promise<Decision> {
  const loaded = await loadQueueState(tx, queue, event.kind === "merge_failed" ? event.prNumbers : []);
  const now = services.now();
  const decision = decide(loaded.engine, event, now.getTime());
  await saveDecision(tx, loaded, decision, { now, newId: services.newId, event, notify: services.codeHost.notifiesPullRequests });
  return decision;
}

/**
 * Applies an event in a transaction of its own. `guard` runs first, under the queue's lock;
 * when it answers false nothing is applied (the event was already delivered, say).
 */
export async function applyQueueEvent(
  services: Services,
  queueId: string,
  event: EngineEvent,
  guard?: (tx: Tx, queue: Queue) => Promise<boolean>,
): Promise<Decision | null> {
  return services.db.transaction(async (tx) => {
    const queue = await lockQueueRow(tx, queueId);
    if (!queue) return null;
    if (guard && !(await guard(tx, queue))) return null;
    return applyEvent(services, tx, queue, event);
  });
}

/**
 * The code host says the target branch is at `head`. If that is not where the queue left it,
 * someone pushed outside the queue: its runs were built on a stale base. A merge of the
 * queue's own still under way explains a new head, so nothing is concluded then (if the push
 * was someone else's, that merge finds the target moved and says so). Answers whether the
 * queue took note.
 */
export async function noticeTargetHead(services: Services, queueId: string, head: string): Promise<boolean> {
  const pendingMerge = await services.db.read((tx) => tx.effect.count({ where: { queueId, doneAt: null, kind: "merge" } }));
  if (pendingMerge > 0) return false;
  const applied = await applyQueueEvent(services, queueId, { kind: "base_moved", sha: head }, async (tx, fresh) => {
    if ((fresh.targetHead ?? fresh.baseSha) === head) return false;
    await tx.queue.update({ where: { id: queueId }, data: { targetHead: head } });
    return true;
  });
  return applied !== null;
}

/** The code host says a branch of a repository is at `head`: every queue of that target takes note. */
export async function noticeBranchHead(services: Services, repo: RepoRef, branch: string, head: string): Promise<void> {
  const key = repositoryKey(repo);
  const queues = await services.db.read((tx) => tx.queue.findMany({ where: { branch, repository: { key } }, select: { id: true } }));
  for (const { id } of queues) await noticeTargetHead(services, id, head);
}
