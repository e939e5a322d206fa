import type { Sql } from "./sql.js";

/**
 * History the queues no longer work with, deleted in short statements of at most `limit` rows
 * (each the caller's transaction of its own: SQLite's one writer is never held long). Every
 * function answers how many rows it deleted; 0 means nothing older than `before` is left.
 * The statements start with `/* retention *\/`: the hourly job's, found by age rather than by
 * queue (its last batch of a run may read a whole table once), which the hot path's plan test
 * (test/store/query-plans.test.ts) leaves out.
 */

/**
 * Effects done (carried out or given up) before `before`. Each queue's last effect stays, done
 * or not: the outbox numbers new effects after its highest `seq`.
 */
export function deleteDoneEffects(sql: Sql, before: Date, limit: number): Promise<number> {
  return sql.run(
    `/* retention */ DELETE FROM "Effect" WHERE "id" IN (
       SELECT e."id" FROM "Effect" e
       WHERE e."doneAt" IS NOT NULL AND e."doneAt" < ?
         AND e."seq" < (SELECT MAX(l."seq") FROM "Effect" l WHERE l."queueId" = e."queueId")
       LIMIT ?)`,
    [before, limit],
  );
}

/**
 * Operator events (queue events) from before `before`. Each queue's latest settings change stays:
 * the engine's `config_changed` (the queue's "settings changed at") and the operator's
 * `settings_changed` (what getQueueEvents shows of it).
 */
export function deleteQueueEvents(sql: Sql, before: Date, limit: number): Promise<number> {
  return sql.run(
    `/* retention */ DELETE FROM "QueueEvent" WHERE "id" IN (
       SELECT e."id" FROM "QueueEvent" e
       WHERE e."at" < ?
         AND NOT (e."kind" IN ('config_changed', 'settings_changed') AND NOT EXISTS (
           SELECT 1 FROM "QueueEvent" c
           WHERE c."queueId" = e."queueId" AND c."kind" = e."kind" AND (c."at" > e."at" OR (c."at" = e."at" AND c."id" > e."id"))))
       LIMIT ?)`,
    [before, limit],
  );
}

/**
 * Archived runs (no PR of theirs is in line) that started before `before`. Test uploads linked
 * to one keep their results (the link is cleared: flaky-test evidence does not expire with it).
 */
export function deleteArchivedRuns(sql: Sql, before: Date, limit: number): Promise<number> {
  return sql.run(`/* retention */ DELETE FROM "TestRun" WHERE "id" IN (SELECT "id" FROM "TestRun" WHERE "archived" = ? AND "startedAt" < ? LIMIT ?)`, [true, before, limit]);
}

/**
 * PRs that left their queue (merged, failed, cancelled; not submitted again) before `before`,
 * with their timelines. A PR the queue still lists as merged-unconfirmed is never one of them:
 * such a PR is not in a final state.
 */
export function deleteFinishedEntries(sql: Sql, before: Date, limit: number): Promise<number> {
  return sql.run(
    `/* retention */ DELETE FROM "QueueEntry" WHERE "id" IN (
       SELECT "id" FROM "QueueEntry"
       WHERE "state" IN ('merged', 'failed', 'cancelled') AND "isCurrentlySubmitted" = ? AND "stateChangedAt" < ?
       LIMIT ?)`,
    [false, before, limit],
  );
}
