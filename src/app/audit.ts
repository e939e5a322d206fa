import type { Principal } from "../auth/tokens.js";
import { channelOf, type AuditInput, type AuditRecord } from "../domain/audit.js";
import type { Actor } from "../domain/timeline.js";
import type { Tx } from "../store/database.js";
import type { Sql } from "../store/sql.js";
import { auditEntriesPage, countAuditEntries, hasAuditEntry, insertAuditEntry } from "../store/audit.js";
import type { PageInfo, PageQuery } from "./pages.js";
import { repositoryKey, type RepoRef } from "../ports/code-host.js";
import { publishEvents } from "../store/webhook-outbox.js";
import type { Services } from "./services.js";
import { invalidArgument } from "./errors.js";

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

export type AuditLogInput = { page_query: PageQuery; action?: string | undefined; repo?: RepoRef | undefined };

/** A page token of the audit log: base64url of where the page is cut, with its filter (`q`). */
type AuditCursor = { p: number; before?: number; after?: number; oldest?: true; q: string };

const encode = (cursor: AuditCursor) => Buffer.from(JSON.stringify(cursor)).toString("base64url");

function decode(token: string, scope: string): AuditCursor | null {
  if (token === "") return null;
  let c: Record<string, unknown> | null = null;
  try {
    c = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as Record<string, unknown>;
  } catch {
    c = null;
  }
  const int = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
  const cuts = c ? [c.before !== undefined, c.after !== undefined, c.oldest !== undefined].filter(Boolean).length : 0;
  if (!c || !int(c.p) || cuts !== 1 || (c.before !== undefined && !int(c.before)) || (c.after !== undefined && !int(c.after)) || (c.oldest !== undefined && c.oldest !== true) || typeof c.q !== "string") {
    throw invalidArgument("page_query.page_token", "is not a page token this server issued");
  }
  if (c.q !== scope) throw invalidArgument("page_query.page_token", "is a page token of another list (its filters differ): start again without a token");
  return c as AuditCursor;
}

/**
 * getAuditLog: the organization's audit log, newest first, paged as the flaky-test lists are
 * (page_query in, page out), cut by key: entries recorded while a client pages never repeat or
 * skip one, and a page reads only its own rows and one count. Filtered by action and
 * repository; only the principal's own organization's entries.
 */
export async function getAuditLog(services: Services, principal: Principal, input: AuditLogInput): Promise<{ entries: AuditRecord[]; page: PageInfo }> {
  const repository = input.repo ? repositoryKey(input.repo) : undefined;
  const filter = { ...(input.action ? { action: input.action } : {}), ...(repository ? { repository } : {}) };
  const scope = JSON.stringify(filter);
  const cursor = decode(input.page_query.page_token, scope);
  const size = input.page_query.page_size;
  return services.db.read(async (tx) => {
    const org = principal.organizationId;
    const total = await countAuditEntries(tx, org, filter);
    const totalPages = Math.ceil(total / size);
    const oldestSize = total % size || size;
    const rows = cursor?.oldest
      ? await auditEntriesPage(tx, org, filter, { oldest: true }, oldestSize)
      : await auditEntriesPage(tx, org, filter, cursor?.after !== undefined ? { after: cursor.after } : cursor?.before !== undefined ? { before: cursor.before } : {}, size);
    const index = cursor?.oldest ? Math.max(0, totalPages - 1) : cursor ? cursor.p : 0;
    const newest = rows[0]?.seq;
    const oldest = rows.at(-1)?.seq;
    const older = oldest !== undefined && (await hasAuditEntry(tx, org, filter, { before: oldest }));
    const newer = newest !== undefined && (await hasAuditEntry(tx, org, filter, { after: newest }));
    const page: PageInfo = {
      total_rows: total,
      total_pages: totalPages,
      next_page_token: older ? encode({ p: index + 1, before: oldest!, q: scope }) : "",
      prev_page_token: newer ? encode({ p: Math.max(0, index - 1), after: newest!, q: scope }) : "",
      last_page_token: totalPages > 0 ? encode({ p: totalPages - 1, oldest: true, q: scope }) : "",
      page_index: newer ? index : 0,
    };
    return { entries: rows.map(({ seq: _seq, ...record }) => record), page };
  });
}
