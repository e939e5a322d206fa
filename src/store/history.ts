import { PR_STATES, type PrState } from "../domain/states.js";
import { oneOf, prismaShaped } from "./columns.js";
import type { Sql } from "./sql.js";

/**
 * The organization's queue history (the dashboard's /history, docs/dashboard.md): every PR that
 * went through one of its queues, live or concluded, newest submission first, filtered, a page at
 * a time cut by key ((submittedAt, id): no OFFSET, so a deep page costs what the first does).
 */

/** A queue of the organization, as the history's filter names it. */
export type HistoryQueue = { id: string; host: string; owner: string; name: string; branch: string };

/** A PR's line in the history. */
export type HistoryEntry = {
  id: string;
  repo: { host: string; owner: string; name: string };
  branch: string;
  prNumber: number;
  prTitle: string;
  prAuthor: string;
  state: PrState;
  stateReason: string;
  stateChangedAt: Date;
  submittedAt: Date;
  isCurrentlySubmitted: boolean;
  /** Transitions a person asked for beyond the submission (a restart, a cancel): an operator acted on it. */
  operatorActions: number;
};

export type HistoryFilter = {
  /** Restricted to these queues (all of them the organization's). */
  queueIds: readonly string[];
  prNumber?: number;
  /** A piece of the title, matched without regard to case. */
  title?: string;
  /** The author's login, without regard to case. */
  author?: string;
  state?: PrState;
  reason?: string;
  /** Submitted at or after this instant, and before `submittedBefore`. */
  submittedFrom?: Date;
  submittedBefore?: Date;
};

/** Where a page starts: after the last row of the page before (older), or before the first row of the one after (newer). */
/**
 * Where a page starts: past a row's key, older or newer than it; `through`, at it (the row
 * itself included: the way back from an empty page, whose only landmark is its own cut).
 */
export type HistoryCut = { older: { submittedAt: Date; id: string }; through?: boolean } | { newer: { submittedAt: Date; id: string }; through?: boolean } | null;

/** The organization's queues (its filter's choices), by repository and branch. */
export function historyQueues(sql: Sql, organizationId: string): Promise<HistoryQueue[]> {
  return sql.all<HistoryQueue>(
    `SELECT q."id" AS "id", r."host" AS "host", r."owner" AS "owner", r."name" AS "name", q."branch" AS "branch"
       FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId"
      WHERE r."organizationId" = ? ORDER BY r."key", q."branch"`,
    [organizationId],
  );
}

/** LIKE's own characters, escaped (with `\`) so the text matches as typed. */
const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** A row's place in the history's order. */
export type HistoryKey = { submittedAt: Date; id: string };

/**
 * One page of the history: at most `take` entries matching `filter`, newest submission first,
 * from `cut` on; whether more lie past the page in its direction; and, when the filters are
 * ones no index serves (title, author, state, reason), where the page's scan stopped.
 *
 * Entries are read in the order of the (submittedAt, id) index from the cut on, each checked
 * against the filters, until the page is full. A filter that matches few rows would read the
 * organization's whole history (263 ms on PostgreSQL, 400 ms on SQLite at 100,000 under load,
 * bench/history.ts): such a page reads at most `scanLimit` entries past its cut, and answers
 * `scannedTo`, the key of the last one, when it stopped there short of a full page; the next
 * page (an Older link) goes on from it. A number is found through the (queueId, prNumber) index.
 */
export async function historyPage(sql: Sql, filter: HistoryFilter, cut: HistoryCut, take: number, scanLimit: number): Promise<{ entries: HistoryEntry[]; more: boolean; scannedTo: HistoryKey | null }> {
  if (filter.queueIds.length === 0) return { entries: [], more: false, scannedTo: null };
  const byNumber = filter.prNumber !== undefined;
  // The rows' order is the (submittedAt, id) index's; the queues are a filter on each row.
  // SQLite's planner, without statistics, would rather read the organization's every entry
  // through the queue's index and sort them (771 ms at 100,000): the unary + keeps it off that
  // index, except for a number, which that index finds at once. PostgreSQL's planner weighs
  // them by its statistics.
  const [queueIn, queueParam] = sql.anyOf(sql.kind === "sqlite" && !byNumber ? `+e."queueId"` : `e."queueId"`, filter.queueIds);
  // The conditions every row in range meets (the queues, the dates, the cut) …
  const range: string[] = [queueIn];
  const rangeParams: unknown[] = [queueParam];
  if (filter.submittedFrom !== undefined) {
    range.push(`e."submittedAt" >= ?`);
    rangeParams.push(filter.submittedFrom);
  }
  if (filter.submittedBefore !== undefined) {
    range.push(`e."submittedAt" < ?`);
    rangeParams.push(filter.submittedBefore);
  }
  const newer = cut !== null && "newer" in cut;
  if (cut !== null) {
    const key = "older" in cut ? cut.older : cut.newer;
    range.push(`(e."submittedAt", e."id") ${newer ? ">" : "<"}${cut.through ? "=" : ""} (?, ?)`);
    rangeParams.push(key.submittedAt, key.id);
  }
  const order = newer ? "ASC" : "DESC";
  // … and those checked row by row.
  const checks: string[] = [];
  const checkParams: unknown[] = [];
  if (byNumber) {
    checks.push(`e."prNumber" = ?`);
    checkParams.push(filter.prNumber);
  }
  if (filter.title !== undefined) {
    checks.push(sql.kind === "postgres" ? `e."prTitle" ILIKE ? ESCAPE '\\'` : `e."prTitle" LIKE ? ESCAPE '\\'`);
    checkParams.push(likePattern(filter.title));
  }
  if (filter.author !== undefined) {
    checks.push(`LOWER(e."prAuthor") = ?`);
    checkParams.push(filter.author.toLowerCase());
  }
  if (filter.state !== undefined) {
    // Not through the (state, readinessRecheckAt) index on SQLite: it would read every entry in
    // that state and sort them (224 ms for "failed" at 100,000), where the order's index stops.
    checks.push(sql.kind === "sqlite" ? `+e."state" = ?` : `e."state" = ?`);
    checkParams.push(filter.state);
  }
  if (filter.reason !== undefined) {
    checks.push(`e."stateReason" = ?`);
    checkParams.push(filter.reason);
  }
  // The scan's bound: the key of the scanLimit-th row in range (none when fewer remain).
  let bound: HistoryKey | null = null;
  if (checks.length > 0 && !byNumber) {
    const [last] = await sql.all<{ submittedAt: Date | string; id: string }>(
      `SELECT e."submittedAt" AS "submittedAt", e."id" AS "id" FROM "QueueEntry" e WHERE ${range.join(" AND ")} ORDER BY e."submittedAt" ${order}, e."id" ${order} LIMIT 1 OFFSET ?`,
      [...rangeParams, scanLimit - 1],
    );
    if (last) {
      bound = { submittedAt: last.submittedAt instanceof Date ? last.submittedAt : new Date(last.submittedAt), id: last.id };
      checks.push(`(e."submittedAt", e."id") ${newer ? "<=" : ">="} (?, ?)`);
      checkParams.push(bound.submittedAt, bound.id);
    }
  }
  const rows = await sql.all<Record<string, unknown>>(
    `SELECT e."id" AS "id", e."prNumber" AS "prNumber", e."prTitle" AS "prTitle", e."prAuthor" AS "prAuthor", e."state" AS "state", e."stateReason" AS "stateReason",
            e."stateChangedAt" AS "stateChangedAt", e."submittedAt" AS "submittedAt", e."isCurrentlySubmitted" AS "isCurrentlySubmitted",
            r."host" AS "host", r."owner" AS "owner", r."name" AS "name", q."branch" AS "branch"
       FROM "QueueEntry" e JOIN "Queue" q ON q."id" = e."queueId" JOIN "Repository" r ON r."id" = q."repositoryId"
      WHERE ${[...range, ...checks].join(" AND ")}
      ORDER BY e."submittedAt" ${order}, e."id" ${order}
      LIMIT ?`,
    [...rangeParams, ...checkParams, take + 1],
  );
  const more = rows.length > take;
  const page = rows.slice(0, take);
  if (newer) page.reverse();
  const acted = await operatorActionsOf(
    sql,
    page.map((row) => String(row.id)),
  );
  const entries = page.map((raw) => {
    const row = prismaShaped<Record<string, unknown> & { stateChangedAt: Date; submittedAt: Date; isCurrentlySubmitted: boolean }>(raw, ["isCurrentlySubmitted"], ["stateChangedAt", "submittedAt"]);
    const id = String(row.id);
    return {
      id,
      repo: { host: String(row.host), owner: String(row.owner), name: String(row.name) },
      branch: String(row.branch),
      prNumber: Number(row.prNumber),
      prTitle: String(row.prTitle),
      prAuthor: String(row.prAuthor),
      state: oneOf(PR_STATES, String(row.state), "QueueEntry.state"),
      stateReason: String(row.stateReason),
      stateChangedAt: row.stateChangedAt,
      submittedAt: row.submittedAt,
      isCurrentlySubmitted: row.isCurrentlySubmitted,
      operatorActions: acted.get(id) ?? 0,
    };
  });
  return { entries, more, scannedTo: more ? null : bound };
}

/** The reasons of transitions a person asked for, past the submission (docs/reasons.md). */
const OPERATOR_REASONS = ["restart_requested", "cancelled_by_user"];

/** How many operator-asked transitions each entry's timeline holds (its (entryId, at) index, a page's entries at a time). */
async function operatorActionsOf(sql: Sql, entryIds: readonly string[]): Promise<Map<string, number>> {
  if (entryIds.length === 0) return new Map();
  const [entryIn, entryParam] = sql.anyOf(`t."entryId"`, entryIds);
  const [reasonIn, reasonParam] = sql.anyOf(`t."reason"`, OPERATOR_REASONS);
  const rows = await sql.all<{ entryId: string; n: number | string }>(`SELECT t."entryId" AS "entryId", COUNT(*) AS "n" FROM "Transition" t WHERE ${entryIn} AND ${reasonIn} GROUP BY t."entryId"`, [
    entryParam,
    reasonParam,
  ]);
  return new Map(rows.map((row) => [row.entryId, Number(row.n)]));
}
