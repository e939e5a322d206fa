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
export type HistoryCut = { older: { submittedAt: Date; id: string } } | { newer: { submittedAt: Date; id: string } } | null;

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

/**
 * One page of the history: at most `take` entries matching `filter`, newest submission first,
 * from `cut` on; and whether more lie past the page in its direction. The title's match is a
 * scan of the queues' entries in submission order that stops once the page is full (bounded by
 * the LIMIT, measured in bench/history.ts).
 */
export async function historyPage(sql: Sql, filter: HistoryFilter, cut: HistoryCut, take: number): Promise<{ entries: HistoryEntry[]; more: boolean }> {
  if (filter.queueIds.length === 0) return { entries: [], more: false };
  const where: string[] = [];
  const params: unknown[] = [];
  const [queueIn, queueParam] = sql.anyOf(`e."queueId"`, filter.queueIds);
  where.push(queueIn);
  params.push(queueParam);
  if (filter.prNumber !== undefined) {
    where.push(`e."prNumber" = ?`);
    params.push(filter.prNumber);
  }
  if (filter.title !== undefined) {
    where.push(sql.kind === "postgres" ? `e."prTitle" ILIKE ? ESCAPE '\\'` : `e."prTitle" LIKE ? ESCAPE '\\'`);
    params.push(likePattern(filter.title));
  }
  if (filter.author !== undefined) {
    where.push(`LOWER(e."prAuthor") = ?`);
    params.push(filter.author.toLowerCase());
  }
  if (filter.state !== undefined) {
    where.push(`e."state" = ?`);
    params.push(filter.state);
  }
  if (filter.reason !== undefined) {
    where.push(`e."stateReason" = ?`);
    params.push(filter.reason);
  }
  if (filter.submittedFrom !== undefined) {
    where.push(`e."submittedAt" >= ?`);
    params.push(filter.submittedFrom);
  }
  if (filter.submittedBefore !== undefined) {
    where.push(`e."submittedAt" < ?`);
    params.push(filter.submittedBefore);
  }
  const newer = cut !== null && "newer" in cut;
  if (cut !== null) {
    const key = "older" in cut ? cut.older : cut.newer;
    where.push(`(e."submittedAt", e."id") ${newer ? ">" : "<"} (?, ?)`);
    params.push(key.submittedAt, key.id);
  }
  const order = newer ? "ASC" : "DESC";
  const rows = await sql.all<Record<string, unknown>>(
    `SELECT e."id" AS "id", e."prNumber" AS "prNumber", e."prTitle" AS "prTitle", e."prAuthor" AS "prAuthor", e."state" AS "state", e."stateReason" AS "stateReason",
            e."stateChangedAt" AS "stateChangedAt", e."submittedAt" AS "submittedAt", e."isCurrentlySubmitted" AS "isCurrentlySubmitted",
            r."host" AS "host", r."owner" AS "owner", r."name" AS "name", q."branch" AS "branch"
       FROM "QueueEntry" e JOIN "Queue" q ON q."id" = e."queueId" JOIN "Repository" r ON r."id" = q."repositoryId"
      WHERE ${where.join(" AND ")}
      ORDER BY e."submittedAt" ${order}, e."id" ${order}
      LIMIT ?`,
    [...params, take + 1],
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
  return { entries, more };
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
