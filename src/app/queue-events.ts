import type { Queue } from "../generated/sqlite/client.js";
import { decide } from "../domain/engine/engine.js";
import type { Decision, EngineEvent } from "../domain/engine/types.js";
import type { Services } from "./services.js";
import type { Tx } from "../store/database.js";
import { loadQueueState, saveDecision } from "./queue-state.js";

/**
 * Feeds one event to the engine inside the caller's transaction (which holds the queue's
 * lock) and stores the decision: state, transitions with reasons, effects. The API, the
 * worker and webhooks all change a queue through here.
 */
export async function applyEvent(services: Services, tx: Tx, queue: Queue, event: EngineEvent): Promise<Decision> {
  const loaded = await loadQueueState(tx, queue, event.kind === "merge_failed" ? event.prNumbers : []);
  const now = services.now();
  const decision = decide(loaded.engine, event, now.getTime());
  await saveDecision(tx, loaded, decision, { now, newId: services.newId, event, notify: services.codeHost.kind === "github" });
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
    const locked = await tx.queue.updateMany({ where: { id: queueId }, data: { version: { increment: 1 } } });
    if (locked.count === 0) return null;
    const queue = await tx.queue.findUniqueOrThrow({ where: { id: queueId } });
    if (guard && !(await guard(tx, queue))) return null;
    return applyEvent(services, tx, queue, event);
  });
}
