import type { AuditEntry as AuditRow } from "../generated/sqlite/client.js";
import { AUDIT_ACTIONS, AUDIT_CHANNELS, type AuditRecord } from "../domain/audit.js";
import { ACTOR_KINDS } from "../domain/timeline.js";
import { oneOf } from "./columns.js";
import type { Tx } from "./database.js";
import { isSql, type Sql } from "./sql.js";
import { publishEvents } from "./webhook-outbox.js";

/** The audit log's rows (docs/audit.md): written with the action they record, in its transaction. */

export type NewAuditEntry = Omit<AuditRecord, "at"> & { organizationId: string; at: Date };

/** Writes an entry in the caller's transaction (a Prisma transaction, or plain SQL). */
export async function insertAuditEntry(target: Tx | Sql, entry: NewAuditEntry): Promise<void> {
  const data = {
    id: entry.id,
    organizationId: entry.organizationId,
    at: entry.at,
    actorKind: entry.actor.kind,
    actorName: entry.actor.name,
    channel: entry.channel,
    action: entry.action,
    repository: entry.repository,
    branch: entry.branch,
    reason: entry.reason,
    details: JSON.stringify(entry.details),
  };
  if (isSql(target)) {
    const columns = Object.keys(data) as (keyof typeof data)[];
    await target.insert("AuditEntry", columns, [columns.map((c) => data[c])]);
  } else {
    await target.auditEntry.create({ data });
  }
}

function toRecord(row: AuditRow): AuditRecord {
  return {
    id: row.id,
    at: row.at.toISOString(),
    actor: { kind: oneOf(ACTOR_KINDS, row.actorKind, "AuditEntry.actorKind"), name: row.actorName },
    channel: oneOf(AUDIT_CHANNELS, row.channel, "AuditEntry.channel"),
    action: oneOf(AUDIT_ACTIONS, row.action, "AuditEntry.action"),
    repository: row.repository,
    branch: row.branch,
    reason: row.reason,
    details: JSON.parse(row.details) as Record<string, unknown>,
  };
}

export type AuditFilter = { action?: string; repository?: string };

const whereOf = (organizationId: string, filter: AuditFilter) => ({ organizationId, ...(filter.action ? { action: filter.action } : {}), ...(filter.repository ? { repository: filter.repository } : {}) });

/** How many of the organization's entries match `filter` (one indexed count). */
export function countAuditEntries(tx: Tx, organizationId: string, filter: AuditFilter): Promise<number> {
  return tx.auditEntry.count({ where: whereOf(organizationId, filter) });
}

/**
 * One page of the organization's entries matching `filter`, newest first, cut by sequence
 * (keyset): before `before` (older), after `after` (newer), or the oldest `take` (`oldest`).
 * Reads only the page's rows.
 */
export async function auditEntriesPage(tx: Tx, organizationId: string, filter: AuditFilter, cut: { before?: number; after?: number; oldest?: boolean }, take: number): Promise<(AuditRecord & { seq: number })[]> {
  const where = { ...whereOf(organizationId, filter), ...(cut.before !== undefined ? { seq: { lt: cut.before } } : cut.after !== undefined ? { seq: { gt: cut.after } } : {}) };
  const ascending = cut.after !== undefined || cut.oldest === true;
  const rows = await tx.auditEntry.findMany({ where, orderBy: { seq: ascending ? "asc" : "desc" }, take });
  const newestFirst = ascending ? rows.reverse() : rows;
  return newestFirst.map((row) => ({ ...toRecord(row), seq: row.seq }));
}

/** Whether the organization has an entry matching `filter` older (`before`) or newer (`after`) than a sequence number. */
export async function hasAuditEntry(tx: Tx, organizationId: string, filter: AuditFilter, cut: { before: number } | { after: number }): Promise<boolean> {
  const seq = "before" in cut ? { lt: cut.before } : { gt: cut.after };
  return (await tx.auditEntry.findFirst({ where: { ...whereOf(organizationId, filter), seq }, select: { seq: true } })) !== null;
}

/** Entries recorded before `before` (retention), at most `limit` a statement. */
export function deleteAuditEntries(sql: Sql, before: Date, limit: number): Promise<number> {
  return sql.run(`/* retention */ DELETE FROM "AuditEntry" WHERE "seq" IN (SELECT "seq" FROM "AuditEntry" WHERE "at" < ? LIMIT ?)`, [before, limit]);
}

/**
 * An action of the service's own CLI (token create, token revoke) in the organization's audit
 * log, with its `audit.entry` webhook, in the caller's transaction (the auth layer has no
 * application services: this is recordAudit's record for the one actor it has).
 */
export async function recordCliAudit(tx: Tx, organizationId: string, command: string, action: AuditRecord["action"], details: Record<string, unknown>, now: Date, newId: () => string): Promise<void> {
  const record: AuditRecord = {
    id: newId(),
    at: now.toISOString(),
    actor: { kind: "operator", name: `greenline ${command}` },
    channel: "cli",
    action,
    repository: null,
    branch: null,
    reason: null,
    details: { ...details, command: `greenline ${command}` },
  };
  await insertAuditEntry(tx, { ...record, organizationId, at: now });
  await publishEvents(tx, organizationId, [{ type: "audit.entry", orderingKey: `audit:${organizationId}`, data: { ...record } }], { now, newId });
}
