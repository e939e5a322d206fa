import type { Decision } from "../domain/engine/types.js";
import type { TimelineEvent } from "../domain/timeline.js";
import { decisionEvents, decisionHasEvents, type DecisionBefore } from "../domain/webhook-events.js";
import type { Tx } from "../store/database.js";
import type { Loaded } from "../store/queue-state.js";
import { endpointsOfRepository, insertMessages } from "../store/webhook-outbox.js";

/**
 * Publishes the webhook events of an engine decision (domain/webhook-events.ts) to the enabled
 * endpoints of the queue's organization, in the decision's transaction: the events commit with
 * the state they tell of, or not at all (docs/webhooks.md). A decision that tells nothing, or
 * whose queue's lock found no enabled endpoint, reads no endpoint.
 */
export async function publishDecisionEvents(tx: Tx, loaded: Loaded, decision: Decision, context: { now: Date; newId: () => string; timeline: readonly TimelineEvent[] }): Promise<void> {
  const before: DecisionBefore = {
    state: loaded.engine.state,
    runStatus: (runId) => loaded.runs.get(runId)?.status,
    prOf: (prNumber) => {
      const entry = loaded.entries.get(prNumber);
      return entry && { sha: entry.prSha, title: entry.prTitle };
    },
  };
  // The queue's lock said whether the organization has an enabled endpoint (lockQueueRow):
  // without one there is nothing to publish to, and no need to ask again.
  if (loaded.queue.webhookEndpointsEnabled === false || !decisionHasEvents(before, decision)) return;
  const targets = await endpointsOfRepository(tx, loaded.queue.repositoryId);
  if (!targets) return;
  const place = { queueId: loaded.queue.id, repository: targets.repository, branch: loaded.queue.branch };
  await insertMessages(tx, targets.endpoints, decisionEvents(place, before, decision, context.timeline, context.now.toISOString()), context);
}
