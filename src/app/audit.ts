import type { Principal } from "../auth/tokens.js";
import { channelOf, type AuditInput, type AuditRecord } from "../domain/audit.js";
import type { Actor } from "../domain/timeline.js";
import type { Tx } from "../store/database.js";
import type { Sql } from "../store/sql.js";
import { auditEntriesBySeq, auditSeqs, insertAuditEntry } from "../store/audit.js";
import { paginate, type PageInfo, type PageQuery } from "../app/pages.js";
import { repositoryKey, type RepoRef } from "../ports/code-host.js";
import { publishEvents } from "../store/webhook-outbox.js";
import type { Services } from "./services.js";

/** Who acted, for the audit log: a principal (API token, comment, dashboard), or the service's own CLI. */
export type AuditActor = Pick<Principal, "organizationId" | "tokenId" | "actor" | "via">;

/** The service's own CLI, acting for an organization (token create, token revoke). */
export const operatorActor = (organizationId: string, command: string): AuditActor => ({ organizationId, tokenId: "", actor: { kind: "operator", name: `greenline ${command}` }, via: `greenline ${command}` });

/**
 * Records an operator action in the organization's audit log and publishes it as an `audit.entry`
 * outbound webhook, in the caller's transaction: the action and its record commit together.
 */
export async function recordAudit(services: Pick<Services, "now" | "newId">, tx: Tx | Sql, who: AuditActor, input: AuditInput): Promise<AuditRecord> {
  const actor: Actor = who.actor ?? { kind: "token", name: who.tokenId };
  const at = services.now();
  const record: AuditRecord = {
    id: services.newId(),
    at: at.toISOString(),
    actor,
    channel: channelOf(actor, who.via),
    action: input.action,
    repository: input.repository ?? null,
    branch: input.branch ?? null,
    reason: input.reason ?? null,
    details: { ...(input.details ?? {}), ...(who.via ? { command: who.via } : {}) },
  };
  await insertAuditEntry(tx, { ...record, organizationId: who.organizationId, at });
  await publishEvents(tx, who.organizationId, [{ type: "audit.entry", orderingKey: `audit:${who.organizationId}`, data: { ...record } }], { now: at, newId: services.newId });
  return record;
}

/** Newest first: the pager cuts ascending keys, so an entry's key falls as its sequence rises. */
const KEY_OF_SEQ = 2 ** 31 - 1;

export type AuditLogInput = { page_query: PageQuery; action?: string | undefined; repo?: RepoRef | undefined };

/**
 * getAuditLog: the organization's audit log, newest first, paged as the flaky-test lists are
 * (keyset tokens: entries recorded while a client pages never repeat or skip one), filtered by
 * action and repository. Only the principal's own organization's entries.
 */
export async function getAuditLog(services: Services, principal: Principal, input: AuditLogInput): Promise<{ entries: AuditRecord[]; page: PageInfo }> {
  const repository = input.repo ? repositoryKey(input.repo) : undefined;
  const filter = { ...(input.action ? { action: input.action } : {}), ...(repository ? { repository } : {}) };
  const scope = JSON.stringify(filter) === "{}" ? undefined : `audit:${JSON.stringify(filter)}`;
  return services.db.read(async (tx) => {
    const keys = (await auditSeqs(tx, principal.organizationId, filter)).map((seq) => KEY_OF_SEQ - seq).reverse();
    const { page, info } = paginate(keys, input.page_query, scope);
    return {
      entries: await auditEntriesBySeq(
        tx,
        principal.organizationId,
        page.map((key) => KEY_OF_SEQ - key),
      ),
      page: info,
    };
  });
}
