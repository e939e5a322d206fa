import type { Services } from "../app/services.js";
import { DEFAULT_RETENTION, type RetentionSettings } from "../config.js";
import { DAY_MS } from "../domain/time.js";
import { deleteArchivedRuns, deleteDoneEffects, deleteFinishedEntries, deleteQueueEvents } from "../store/retention.js";
import type { Sql } from "../store/sql.js";
import { deleteAuditEntries } from "../store/audit.js";

/** Rows one statement deletes at most: each batch is a short transaction of its own. */
export const PRUNE_BATCH = 1_000;

/** What one pass deleted, per kind of history. */
export type Pruned = { effects: number; queueEvents: number; runs: number; pullRequests: number; auditEntries: number };

/**
 * Deletes the history past its retention, so that the rows the queues work with (and their
 * indexes) stay the size of the work in flight, not of everything the service ever did: effects
 * done more than `effectDays` ago; PRs that left their queue (with their timelines), archived
 * runs and operator events older than `historyDays`; audit log entries older than `auditDays`. In batches of PRUNE_BATCH rows, each its own
 * transaction, yielding between them (other writers go in between). Safe on any number of
 * replicas at once (a row is deleted once; the worker runs it under a lock anyway).
 */
export async function pruneHistory(services: Services, settings: RetentionSettings = services.retention ?? DEFAULT_RETENTION, batch = PRUNE_BATCH): Promise<Pruned> {
  const now = services.now().getTime();
  const pruned: Pruned = { effects: 0, queueEvents: 0, runs: 0, pullRequests: 0, auditEntries: 0 };
  const drain = async (kind: keyof Pruned, days: number, remove: (sql: Sql, before: Date, limit: number) => Promise<number>) => {
    if (days <= 0) return;
    const before = new Date(now - days * DAY_MS);
    for (;;) {
      const deleted = await services.db.sqlTransaction((sql) => remove(sql, before, batch));
      pruned[kind] += deleted;
      if (deleted < batch) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  await drain("effects", settings.effectDays, deleteDoneEffects);
  await drain("queueEvents", settings.historyDays, deleteQueueEvents);
  await drain("runs", settings.historyDays, deleteArchivedRuns);
  await drain("pullRequests", settings.historyDays, deleteFinishedEntries);
  await drain("auditEntries", settings.auditDays ?? DEFAULT_RETENTION.auditDays, deleteAuditEntries);
  return pruned;
}
