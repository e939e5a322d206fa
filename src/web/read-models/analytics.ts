import type { Principal } from "../../auth/tokens.js";
import type { Services } from "../../app/services.js";
import { AppError } from "../../app/errors.js";
import { DAY_MS } from "../../domain/time.js";
import { findQueueVersion } from "../../queue/queues.js";
import { type AnalyticsData, type AnalyticsDay, type AnalyticsQueue, analyticsQueues, loadAnalytics, NOTHING } from "../../store/analytics.js";

/** The windows the page offers, in days (the last N UTC days, today included). */
export const WINDOWS = [7, 30, 90] as const;
export type AnalyticsWindow = (typeof WINDOWS)[number];
export const DEFAULT_WINDOW: AnalyticsWindow = 30;

/** The queues the page lists to choose from. */
export const QUEUES_LISTED = 200;

/** A queue as the page's `queue` parameter names it: host/owner/repo/branch (the branch may hold slashes). */
export type QueueChoice = { repo: { host: string; owner: string; name: string }; branch: string };

export const queueParameterOf = (q: QueueChoice) => `${q.repo.host}/${q.repo.owner}/${q.repo.name}/${q.branch}`;

export type AnalyticsView = {
  window: AnalyticsWindow;
  /** The queue shown, or null: every queue of the organization. */
  queue: QueueChoice | null;
  queues: AnalyticsQueue[];
  /** The window: [from, to), from the start of its first UTC day. */
  from: Date;
  to: Date;
  /** One row per day of the window, oldest first (days without anything hold zeros). */
  days: AnalyticsDay[];
  total: AnalyticsData["total"];
  failures: AnalyticsData["failures"];
  /** Submissions per hour of day (UTC), 24 of them. */
  hours: number[];
};

/** The request's parameters, checked: each once, as text; a bad one is a 400 naming it. */
export function analyticsParameters(query: Record<string, unknown>): { window: AnalyticsWindow; queue: QueueChoice | null } {
  const text = (name: string) => {
    const value = query[name];
    if (value === undefined) return "";
    if (typeof value !== "string" || value.length > 1024) throw new AppError("invalid_argument", `${name}: must be given once, as text`);
    return value.trim();
  };
  const windowText = text("window");
  const window = windowText === "" ? DEFAULT_WINDOW : (WINDOWS.find((w) => String(w) === windowText) ?? null);
  if (window === null) throw new AppError("invalid_argument", `window: must be one of ${WINDOWS.join(", ")} (days)`);
  const queueText = text("queue");
  if (queueText === "") return { window, queue: null };
  const [host, owner, name, ...branch] = queueText.split("/");
  if (!host || !owner || !name || branch.length === 0 || branch.join("/") === "") throw new AppError("invalid_argument", "queue: must be host/owner/repo/branch, e.g. github.com/acme/web/main");
  return { window, queue: { repo: { host, owner, name }, branch: branch.join("/") } };
}

/** The analytics page's figures: another organization's queue is not found, like a missing one. */
export async function analyticsView(services: Services, principal: Principal, parameters: { window: AnalyticsWindow; queue: QueueChoice | null }): Promise<AnalyticsView> {
  const { window, queue } = parameters;
  const queueId = queue ? (await findQueueVersion(services, principal, { repo: queue.repo, targetBranch: queue.branch })).id : undefined;
  const now = services.now().getTime();
  const firstDay = Math.floor(now / DAY_MS) * DAY_MS - (window - 1) * DAY_MS;
  const from = new Date(firstDay);
  const to = new Date(now + 1);
  const { data, queues } = await services.db.sqlRead(async (sql) => ({
    data: await loadAnalytics(sql, { organizationId: principal.organizationId, ...(queueId ? { queueId } : {}) }, from, to),
    queues: await analyticsQueues(sql, principal.organizationId, QUEUES_LISTED),
  }));
  const byDay = new Map(data.days.map((d) => [d.day, d]));
  const days = Array.from({ length: window }, (_, i) => firstDay + i * DAY_MS).map((day) => byDay.get(day) ?? { day, ...NOTHING });
  const hours = new Array<number>(24).fill(0);
  for (const h of data.hours) hours[h.hour] = h.submissions;
  const shown = queueId ? (queues.find((q) => q.id === queueId) ?? { id: queueId, ...queue! }) : null;
  return { window, queue: shown ? { repo: shown.repo, branch: shown.branch } : null, queues, from, to, days, total: data.total, failures: data.failures, hours };
}
