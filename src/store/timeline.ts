import { ACTOR_KINDS, TIMELINE_MAX, type Actor, type Cause, type Evidence, type TimelineEvent } from "../domain/timeline.js";
import type { TransitionDurations } from "../domain/durations.js";
import { sentenceOf } from "../domain/reasons.js";
import { PR_STATES } from "../domain/states.js";
import { sqlOf, type Tx } from "./database.js";
import { oneOf, oneOfOrNull, prismaShaped } from "./columns.js";

/** The Transition rows of timeline events, for createMany; `durations` (by the event's index) what each records of time (transitionDurations), none for notes. */
export function transitionRows(
  events: readonly TimelineEvent[],
  ids: { queueId: string; entryIdOf: (prNumber: number) => string; newId: () => string },
  durations: (index: number) => TransitionDurations = () => NO_DURATIONS,
) {
  return events.map((e, index) => ({
    id: ids.newId(),
    entryId: ids.entryIdOf(e.prNumber),
    queueId: ids.queueId,
    fromState: e.previousState,
    toState: e.state,
    reason: e.reason,
    at: e.at,
    actorKind: e.actor.kind,
    actorName: e.actor.name,
    message: e.hostMessage,
    evidence: JSON.stringify(e.evidence),
    ...durations(index),
  }));
}

const NO_DURATIONS: TransitionDurations = { stateMs: null, queuedMs: null };

const TRANSITION_COLUMNS = ["id", "entryId", "queueId", "fromState", "toState", "reason", "at", "actorKind", "actorName", "message", "evidence", "stateMs", "queuedMs"] as const;

/** Inserts Transition rows (transitionRows) in one statement batch (plain SQL: every decision and submission writes them). */
export async function insertTransitions(tx: Tx, rows: ReturnType<typeof transitionRows>): Promise<void> {
  if (rows.length === 0) return;
  await sqlOf(tx).insert(
    "Transition",
    TRANSITION_COLUMNS,
    rows.map((row) => TRANSITION_COLUMNS.map((column) => row[column])),
  );
}

/**
 * Keeps a PR's timeline within TIMELINE_MAX transitions once `count` (its timelineCount after
 * this write) passes it: the oldest go, except the first (how the PR entered the queue), so the
 * latest transitions — its current state's — are always there.
 */
export async function pruneTimeline(tx: Tx, entryId: string, count: number): Promise<void> {
  if (count <= TIMELINE_MAX) return;
  const excess = await tx.transition.findMany({ where: { entryId }, orderBy: [{ at: "asc" }, { id: "asc" }], skip: 1, take: count - TIMELINE_MAX, select: { id: true } });
  await tx.transition.deleteMany({ where: { id: { in: excess.map((row) => row.id) } } });
  await tx.queueEntry.update({ where: { id: entryId }, data: { timelineCount: TIMELINE_MAX } });
}

/** Adds an entry to a PR's timeline that is no transition of the engine's (a diagnosis, a verdict on its run's test results), kept within TIMELINE_MAX. */
export async function appendTimelineEvent(tx: Tx, queueId: string, entryId: string, event: TimelineEvent, newId: () => string): Promise<void> {
  await tx.transition.createMany({ data: transitionRows([event], { queueId, entryIdOf: () => entryId, newId }) });
  const { timelineCount } = await tx.queueEntry.update({ where: { id: entryId }, data: { timelineCount: { increment: 1 } }, select: { timelineCount: true } });
  await pruneTimeline(tx, entryId, timelineCount);
}

function actorOf(kind: string | null, name: string | null): Actor {
  return { kind: oneOf(ACTOR_KINDS, kind ?? "engine", "actorKind"), name: name ?? "greenline" };
}

function evidenceOf(text: string): Evidence {
  const parsed: unknown = JSON.parse(text);
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error(`Transition.evidence is not a JSON object: ${text.slice(0, 100)}`);
  return parsed as Evidence;
}

/** A PR's timeline, oldest first (ties in the order they were written). */
export async function timelineOf(tx: Tx, entryId: string, prNumber: number): Promise<TimelineEvent[]> {
  const rows = await tx.transition.findMany({ where: { entryId }, orderBy: [{ at: "asc" }, { id: "asc" }] });
  return rows.map((row) => ({
    prNumber,
    at: row.at,
    previousState: oneOfOrNull(PR_STATES, row.fromState, "Transition.fromState"),
    state: oneOf(PR_STATES, row.toState, "Transition.toState"),
    reason: row.reason,
    message: sentenceOf(row.reason, row.message),
    hostMessage: row.message,
    actor: actorOf(row.actorKind, row.actorName),
    evidence: evidenceOf(row.evidence),
  }));
}

/**
 * What caused each entry's latest transition into `state` (who, and the API operation or comment
 * command they used), by entry id; an entry with no such transition is absent.
 */
export async function latestCausesOf(tx: Tx, entryIds: readonly string[], state: string): Promise<Map<string, Cause>> {
  const causes = new Map<string, Cause>();
  if (entryIds.length === 0) return causes;
  const rows = await tx.transition.findMany({
    where: { entryId: { in: [...entryIds] }, toState: state },
    orderBy: [{ at: "desc" }, { id: "desc" }],
    select: { entryId: true, actorKind: true, actorName: true, evidence: true },
  });
  for (const row of rows) {
    if (causes.has(row.entryId)) continue;
    const { command } = evidenceOf(row.evidence);
    causes.set(row.entryId, { actor: actorOf(row.actorKind, row.actorName), ...(command ? { command } : {}) });
  }
  return causes;
}

/** Who last submitted the PR (the actor of its latest submitted or resubmitted transition). */
export async function submitterOf(tx: Tx, entryId: string): Promise<Actor | null> {
  const row = await tx.transition.findFirst({ where: { entryId, reason: { in: ["submitted", "resubmitted"] } }, orderBy: [{ at: "desc" }, { id: "desc" }], select: { actorKind: true, actorName: true } });
  return row ? actorOf(row.actorKind, row.actorName) : null;
}

export type QueueEventRecord = { id: string; kind: string; at: Date; actor: Actor | null; payload: Record<string, unknown> };

export async function insertQueueEvent(tx: Tx, event: QueueEventRow): Promise<void> {
  // Plain SQL (sqlOf): every decision writes one.
  await sqlOf(tx).run(QUEUE_EVENT_INSERT, queueEventParams(event));
}

export type QueueEventRow = { id: string; queueId: string; kind: string; at: Date; actor: Actor; payload: object };

/** The insert of a queue event (also in saveDecision's one statement on PostgreSQL); its parameters: queueEventParams. */
export const QUEUE_EVENT_INSERT = `INSERT INTO "QueueEvent" ("id", "queueId", "kind", "at", "actorKind", "actorName", "payload") VALUES (?, ?, ?, ?, ?, ?, ?)`;

export function queueEventParams(event: QueueEventRow): unknown[] {
  return [event.id, event.queueId, event.kind, event.at, event.actor.kind, event.actor.name, JSON.stringify(event.payload)];
}

/**
 * A page of the queue's events of these kinds, newest first (ties by id, so a page never splits
 * them). `after`: the id of the last event of the previous page; null when it is not an event
 * of these kinds in this queue.
 */
export async function queueEventsPage(tx: Tx, queueId: string, kinds: readonly string[], after: string | undefined, take: number): Promise<{ events: QueueEventRecord[]; more: boolean } | null> {
  let where: object = { queueId, kind: { in: [...kinds] } };
  if (after !== undefined) {
    const cursor = await tx.queueEvent.findFirst({ where: { id: after, queueId, kind: { in: [...kinds] } }, select: { id: true, at: true } });
    if (!cursor) return null;
    where = { ...where, OR: [{ at: { lt: cursor.at } }, { at: cursor.at, id: { lt: cursor.id } }] };
  }
  const rows = await tx.queueEvent.findMany({ where, orderBy: [{ at: "desc" }, { id: "desc" }], take: take + 1 });
  const events = rows.slice(0, take).map((row) => ({
    id: row.id,
    kind: row.kind,
    at: row.at,
    actor: row.actorKind === null ? null : actorOf(row.actorKind, row.actorName),
    payload: JSON.parse(row.payload) as Record<string, unknown>,
  }));
  return { events, more: rows.length > take };
}

/** How the queue's recent runs went: mean duration of finished main runs, and the share that failed. */
export async function recentRunStats(tx: Tx, queueId: string, take = 50): Promise<{ runs: number; meanSeconds: number; failureRate: number } | null> {
  // Plain SQL (sqlOf): a decision that moves the line reads it for the estimates.
  const sql = sqlOf(tx);
  const rows = (
    await sql.all<Record<string, unknown>>(
      `SELECT "status", "startedAt", "finishedAt" FROM "TestRun" WHERE "queueId" = ? AND "kind" = 'main' AND "status" IN ('passed', 'failed') AND "finishedAt" IS NOT NULL ORDER BY "startedAt" DESC LIMIT ?`,
      [queueId, take],
    )
  ).map((row) => prismaShaped<{ status: string; startedAt: Date; finishedAt: Date | null }>(row, [], ["startedAt", "finishedAt"]));
  if (rows.length === 0) return null;
  const total = rows.reduce((sum, r) => sum + Math.max(0, r.finishedAt!.getTime() - r.startedAt.getTime()), 0);
  return { runs: rows.length, meanSeconds: total / rows.length / 1000, failureRate: rows.filter((r) => r.status === "failed").length / rows.length };
}
