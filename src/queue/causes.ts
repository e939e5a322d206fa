import type { Principal } from "../auth/tokens.js";
import { AUDITED_QUEUE_EVENTS } from "../domain/audit.js";
import type { Cause, OperatorEventKind } from "../domain/timeline.js";
import { repositoryKey, type RepoRef } from "../ports/code-host.js";
import type { Tx } from "../store/database.js";
import { insertQueueEvent } from "../store/timeline.js";
import { recordAudit } from "../app/audit.js";
import type { Services } from "../app/services.js";

/** Who acts through a principal, and how (the API operation or the comment command). */
export function causeOf(principal: Principal): Cause {
  return { actor: principal.actor ?? { kind: "token", name: principal.tokenId }, ...(principal.via ? { command: principal.via } : {}) };
}

/**
 * An operator's action on a queue: recorded as a queue event (getQueueEvents, with who and the
 * command) and, for the actions the audit log keeps, in the organization's audit log with why
 * (`reason`), in the caller's transaction.
 */
export async function recordOperatorEvent(
  services: Services,
  tx: Tx,
  principal: Principal,
  target: { queueId: string; repo: RepoRef; branch: string },
  kind: OperatorEventKind,
  payload: Record<string, unknown>,
  reason: string | null = null,
): Promise<void> {
  const cause = causeOf(principal);
  await insertQueueEvent(tx, { id: services.newId(), queueId: target.queueId, kind, at: services.now(), actor: cause.actor, payload: { ...payload, ...(cause.command ? { command: cause.command } : {}) } });
  const action = AUDITED_QUEUE_EVENTS[kind];
  if (action) await recordAudit(services, tx, principal, { action, repository: repositoryKey(target.repo), branch: target.branch, reason, details: payload });
}
