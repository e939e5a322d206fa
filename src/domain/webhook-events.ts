import type { BlockedReason } from "./diagnoses.js";
import type { Decision, RunStatus } from "./engine/types.js";
import type { PrState, QueueState } from "./states.js";
import { toTimelineRecord, type TimelineEvent } from "./timeline.js";

/**
 * The events Greenline sends to an organization's webhook endpoints (docs/webhooks.md). Each is
 * delivered as a Standard Webhooks message whose body is `{ type, timestamp, data }`.
 */
export const WEBHOOK_EVENT_TYPES = [
  "pull_request.submitted",
  "pull_request.testing",
  "pull_request.merged",
  "pull_request.failed",
  "pull_request.cancelled",
  "run.started",
  "run.finished",
  "queue.state_changed",
  "queue.blocked",
  "queue.unblocked",
  "queue.frozen",
  "queue.unfrozen",
  "audit.entry",
  "test.status_changed",
  "test.quarantine_changed",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** An endpoint's filter: event types, or "*" for every one. */
export const ALL_WEBHOOK_EVENTS = "*";

/**
 * An event to publish. Events with the same `orderingKey` reach each endpoint in the order they
 * were published (a PR's, a queue's, a test's); `data` is the body's data.
 */
export type WebhookEvent = { type: WebhookEventType; orderingKey: string; data: Record<string, unknown> };

export function endpointWants(filter: readonly string[], type: string): boolean {
  return filter.includes(ALL_WEBHOOK_EVENTS) || filter.includes(type);
}

/** Where a queue is: its repository and branch, as every queue event names it. */
export type QueuePlace = { queueId: string; repository: string; branch: string };

export const prOrderingKey = (queueId: string, prNumber: number) => `pr:${queueId}:${prNumber}`;
export const queueOrderingKey = (queueId: string) => `queue:${queueId}`;
export const testOrderingKey = (repositoryId: string, testId: string) => `test:${repositoryId}:${testId}`;

/** The pull request event a transition is, if any: entering the queue, testing, and leaving it. */
export function pullRequestEventOf(from: PrState | null, to: PrState): WebhookEventType | null {
  if (to === "merged" || to === "failed" || to === "cancelled") return `pull_request.${to}`;
  if (to === "testing" && from !== "testing") return "pull_request.testing";
  if ((to === "pending" || to === "not_ready") && (from === null || from === "merged" || from === "failed" || from === "cancelled")) return "pull_request.submitted";
  return null;
}

/**
 * The event of a PR's transition, if any, carrying its timeline entry exactly as the API's
 * timeline answers it (toTimelineRecord): state, previous state, reason, sentence, actor, evidence.
 */
export function pullRequestEvent(place: QueuePlace, event: TimelineEvent, extra: Record<string, unknown> = {}): WebhookEvent | null {
  const type = pullRequestEventOf(event.previousState, event.state);
  if (!type) return null;
  return {
    type,
    orderingKey: prOrderingKey(place.queueId, event.prNumber),
    data: { repository: place.repository, branch: place.branch, pullRequest: { number: event.prNumber, state: event.state, ...extra }, timelineEntry: toTimelineRecord(event) },
  };
}

export function queueStateChanged(place: QueuePlace, from: QueueState, to: QueueState, at: string): WebhookEvent {
  return { type: "queue.state_changed", orderingKey: queueOrderingKey(place.queueId), data: { repository: place.repository, branch: place.branch, from, to, at } };
}

/**
 * A queue that merges nothing while PRs wait, and why: its blockedReason (code, sentence, since,
 * evidence) when it becomes blocked or the reason changes.
 */
/** A merge freeze started (`reasons`, `until`: null until someone unfreezes it) or ended (`since`). */
export function queueFrozen(place: QueuePlace, details: Record<string, unknown>, at: string): WebhookEvent {
  return { type: "queue.frozen", orderingKey: queueOrderingKey(place.queueId), data: { repository: place.repository, branch: place.branch, ...details, at } };
}

export function queueUnfrozen(place: QueuePlace, details: Record<string, unknown>, at: string): WebhookEvent {
  return { type: "queue.unfrozen", orderingKey: queueOrderingKey(place.queueId), data: { repository: place.repository, branch: place.branch, ...details, at } };
}

export function queueBlocked(place: QueuePlace, reason: BlockedReason, at: string): WebhookEvent {
  return {
    type: "queue.blocked",
    orderingKey: queueOrderingKey(place.queueId),
    data: { repository: place.repository, branch: place.branch, reason: reason.code, message: reason.message, since: reason.since, evidence: reason.evidence, at },
  };
}

/** A blocked queue that can go on again (or has no PR left waiting): the reason that cleared. */
export function queueUnblocked(place: QueuePlace, previousReason: string, at: string): WebhookEvent {
  return { type: "queue.unblocked", orderingKey: queueOrderingKey(place.queueId), data: { repository: place.repository, branch: place.branch, previousReason, at } };
}

/**
 * An effect the queue needed (a merge, a testing branch, a status) given up after repeated
 * failures or a permanent refusal: a one-off notice (the queue goes on without it), so no
 * queue.unblocked follows it.
 */
export function effectGivenUp(place: QueuePlace, details: { effect: string; attempts: number; error: string }, at: string): WebhookEvent {
  return { type: "queue.blocked", orderingKey: queueOrderingKey(place.queueId), data: { repository: place.repository, branch: place.branch, reason: "effect_given_up", ...details, at } };
}

/** What a decision's events are read from: the queue before it, and each PR's head and title. */
export type DecisionBefore = { state: QueueState; runStatus: (runId: string) => RunStatus | undefined; prOf: (prNumber: number) => { sha: string; title: string } | undefined };

/**
 * The webhook events of an engine decision: each PR transition that enters, tests or leaves the
 * queue (with its timeline entry, as the API answers it), runs started and finished, and the
 * queue's own state changing.
 */
export function decisionEvents(place: QueuePlace, before: DecisionBefore, decision: Decision, timeline: readonly TimelineEvent[], at: string): WebhookEvent[] {
  const events: WebhookEvent[] = [];
  for (const e of timeline) {
    const event = pullRequestEvent(place, e, before.prOf(e.prNumber) ?? {});
    if (event) events.push(event);
  }
  for (const run of decision.queue.runs) {
    const was = before.runStatus(run.id);
    const data = { repository: place.repository, branch: place.branch, run: { id: run.id, kind: run.kind, baseSha: run.baseSha, stack: run.stack, tested: run.tested, status: run.status, failure: run.failure } };
    if (was === undefined) events.push({ type: "run.started", orderingKey: queueOrderingKey(place.queueId), data: { ...data, at } });
    if (run.status !== "running" && (was === undefined || was === "running")) events.push({ type: "run.finished", orderingKey: queueOrderingKey(place.queueId), data: { ...data, at } });
  }
  if (decision.queue.state !== before.state) events.push(queueStateChanged(place, before.state, decision.queue.state, at));
  return events;
}

/** Whether a decision tells anything an endpoint could hear of (checked before any endpoint is read). */
export function decisionHasEvents(before: DecisionBefore, decision: Decision): boolean {
  if (decision.transitions.length > 0 || decision.queue.state !== before.state) return true;
  return decision.queue.runs.some((run) => before.runStatus(run.id) !== run.status);
}
