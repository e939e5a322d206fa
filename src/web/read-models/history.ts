import { unstorableCharacter } from "../../domain/text.js";
import { AppError } from "../../app/errors.js";
import type { Services } from "../../app/services.js";
import type { Principal } from "../../auth/tokens.js";
import { DAY_MS } from "../../domain/time.js";
import { isReasonCode } from "../../domain/reasons.js";
import { PR_STATES, type PrState } from "../../domain/states.js";
import { type HistoryCut, type HistoryEntry, type HistoryFilter, type HistoryKey, type HistoryQueue, historyPage, historyQueues } from "../../store/history.js";

/**
 * The history page's read model (/history, docs/dashboard.md): the query's parameters checked
 * (a bad one answers 400 naming it and its rule), then one page of the organization's history.
 */

/** The parameters as the page's form and links carry them (each as given, trimmed; "" when absent). */
export type HistoryQuery = { q: string; author: string; state: string; reason: string; queue: string; from: string; to: string; size: string; before: string; after: string };
export const HISTORY_FIELDS = ["q", "author", "state", "reason", "queue", "from", "to", "size", "before", "after"] as const satisfies readonly (keyof HistoryQuery)[];

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;
/** A page filtered by title, author, state or reason reads at most this many PRs past its cut (src/store/history.ts). */
export const HISTORY_SCAN_LIMIT = 10_000;

export type HistoryView = {
  query: HistoryQuery;
  queues: HistoryQueue[];
  entries: HistoryEntry[];
  /** The links' page tokens: past the last row (older), before the first (newer); "" when there is nothing there. */
  older: string;
  newer: string;
  /** When the page's search stopped at HISTORY_SCAN_LIMIT PRs short of a full page: the submission time it searched to (its link in the page's direction goes on from there). */
  scannedTo: Date | null;
};

export type { HistoryEntry };

const invalid = (message: string) => new AppError("invalid_argument", message);

/** Each parameter once, as text. */
export function historyQueryOf(query: Record<string, unknown>): HistoryQuery {
  const text = (name: string) => {
    const value = query[name];
    if (value === undefined) return "";
    if (typeof value !== "string") throw invalid(`${name}: must be given once, as text`);
    return value.trim();
  };
  return Object.fromEntries(HISTORY_FIELDS.map((name) => [name, text(name)])) as HistoryQuery;
}

/** A page token: the key of the row the page starts past, `<submitted ms>.<entry id>`. */
const tokenOf = (key: HistoryKey) => `${key.submittedAt.getTime()}.${key.id}`;

/** The instants both databases store and compare as the same time (years 0001 to 9999): a token or day outside them is refused, not sent. */
const FIRST_INSTANT = Date.parse("0001-01-01T00:00:00Z");
const LAST_DAY = Date.UTC(9998, 11, 31);

/** A page token: `<submitted ms>.<entry id>`, past that row; with a trailing `~`, through it (the row included). */
function keyOf(name: string, token: string): { key: { submittedAt: Date; id: string }; through: boolean } {
  const match = /^(\d{1,15})\.([A-Za-z0-9_-]{1,64})(~?)$/.exec(token);
  if (!match || Number(match[1]) > LAST_DAY) throw invalid(`${name}: must be a page token from the page's own Older or Newer link`);
  return { key: { submittedAt: new Date(Number(match[1])), id: match[2]! }, through: match[3] === "~" };
}

/** A YYYY-MM-DD day (UTC), from 0001-01-01 to 9998-12-31, as the instant it starts. */
function dayOf(name: string, value: string): number {
  const time = /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(`${value}T00:00:00Z`) : Number.NaN;
  if (Number.isNaN(time) || new Date(time).toISOString().slice(0, 10) !== value) throw invalid(`${name}: must be a day as YYYY-MM-DD`);
  if (time < FIRST_INSTANT || time > LAST_DAY) throw invalid(`${name}: must be a day from 0001-01-01 to 9998-12-31`);
  return time;
}

/** The queue filter's text for a queue: `host/owner/name:branch`. */
export const queueKeyOf = (queue: Pick<HistoryQueue, "host" | "owner" | "name" | "branch">) => `${queue.host}/${queue.owner}/${queue.name}:${queue.branch}`;
const repoKeyOf = (queue: Pick<HistoryQueue, "host" | "owner" | "name">) => `${queue.host}/${queue.owner}/${queue.name}`.toLowerCase();

/** The store's filter and cut from the checked parameters, against the organization's queues. */
export function historyFilterOf(query: HistoryQuery, queues: HistoryQueue[]): { filter: HistoryFilter; cut: HistoryCut; size: number } {
  const filter: HistoryFilter = { queueIds: queues.map((q) => q.id) };
  if (query.q !== "") {
    if (query.q.length > 200) throw invalid("q: must be at most 200 characters");
    // Text a database stores as sent: no control characters (PostgreSQL's text cannot hold NUL), no lone surrogates.
    if ([...query.q].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f) || unstorableCharacter(query.q) !== null) throw invalid("q: must be text without control characters or lone surrogates");
    const number = /^#?(\d{1,10})$/.exec(query.q);
    if (number && Number(number[1]) >= 1 && Number(number[1]) <= 2_147_483_647) filter.prNumber = Number(number[1]);
    else filter.title = query.q;
  }
  if (query.author !== "") {
    if (!/^@?[A-Za-z0-9][A-Za-z0-9_.[\]-]{0,99}$/.test(query.author)) throw invalid("author: must be a login (letters, digits, - _ . [ ], an @ before it allowed), at most 100 characters");
    filter.author = query.author.replace(/^@/, "");
  }
  if (query.state !== "") {
    if (!(PR_STATES as readonly string[]).includes(query.state)) throw invalid(`state: must be one of ${PR_STATES.join(", ")}`);
    filter.state = query.state as PrState;
  }
  if (query.reason !== "") {
    if (!isReasonCode(query.reason)) throw invalid("reason: must be a reason code (docs/reasons.md)");
    filter.reason = query.reason;
  }
  if (query.queue !== "") {
    // A queue (host/owner/name:branch) or all of a repository's (host/owner/name); another
    // organization's is refused exactly like one that does not exist.
    const chosen = query.queue.includes(":") ? queues.filter((q) => queueKeyOf(q).toLowerCase() === query.queue.toLowerCase()) : queues.filter((q) => repoKeyOf(q) === query.queue.toLowerCase());
    if (chosen.length === 0) throw invalid("queue: must be one of the organization's queues, as host/owner/name:branch, or a repository, as host/owner/name");
    filter.queueIds = chosen.map((q) => q.id);
  }
  const from = query.from === "" ? undefined : dayOf("from", query.from);
  const to = query.to === "" ? undefined : dayOf("to", query.to);
  if (from !== undefined && to !== undefined && from > to) throw invalid("to: must not be before from");
  if (from !== undefined) filter.submittedFrom = new Date(from);
  // `to` is inclusive: everything submitted before the next day starts.
  if (to !== undefined) filter.submittedBefore = new Date(to + DAY_MS);
  let size = DEFAULT_PAGE_SIZE;
  if (query.size !== "") {
    size = /^\d{1,4}$/.test(query.size) ? Number(query.size) : Number.NaN;
    if (!(size >= 1 && size <= MAX_PAGE_SIZE)) throw invalid(`size: must be a whole number from 1 to ${MAX_PAGE_SIZE}`);
  }
  if (query.before !== "" && query.after !== "") throw invalid("before: must not be given with after");
  const before = query.before !== "" ? keyOf("before", query.before) : null;
  const after = query.after !== "" ? keyOf("after", query.after) : null;
  const cut: HistoryCut = before ? { older: before.key, through: before.through } : after ? { newer: after.key, through: after.through } : null;
  return { filter, cut, size };
}

/** One page of the organization's history, as the query asks. */
export async function historyView(services: Services, principal: Principal, query: HistoryQuery, scanLimit = HISTORY_SCAN_LIMIT): Promise<HistoryView> {
  return services.db.sqlRead(async (sql) => {
    const queues = await historyQueues(sql, principal.organizationId);
    const { filter, cut, size } = historyFilterOf(query, queues);
    const { entries, more, scannedTo } = await historyPage(sql, filter, cut, size, scanLimit);
    const first = entries[0];
    const last = entries.at(-1);
    // In the page's own direction: past its last row when more matched, else past where its
    // search stopped; behind it: there is, whenever the page was reached from there.
    const towardsNewer = cut !== null && "newer" in cut;
    const ahead = more ? (towardsNewer ? first : last) : scannedTo;
    // Behind the page: past its first row; an empty page has none, and the way back goes
    // through its own cut (the row the previous page ended at is that page's, and must stay on it).
    const nearest = towardsNewer ? last : first;
    const behind = cut === null ? "" : nearest ? tokenOf(nearest) : `${tokenOf("older" in cut ? cut.older : cut.newer)}~`;
    const older = towardsNewer ? behind : ahead ? tokenOf(ahead) : "";
    const newer = towardsNewer ? (ahead ? tokenOf(ahead) : "") : behind;
    return { query, queues, entries, older, newer, scannedTo: scannedTo?.submittedAt ?? null };
  });
}
