import type { Actor } from "./timeline.js";

/**
 * The audit log (docs/audit.md): every operator action in an organization — who, when, what, why
 * and through which way in — readable through getAuditLog, the dashboard's audit page and the
 * `audit.entry` outbound webhook.
 */

/** The ways in: an API token, a `/greenline` comment, the dashboard, the service's own CLI. */
export const AUDIT_CHANNELS = ["api", "comment", "dashboard", "cli"] as const;
export type AuditChannel = (typeof AUDIT_CHANNELS)[number];

export const AUDIT_ACTIONS = [
  "queue.created",
  "queue.deleted",
  "queue.paused",
  "queue.resumed",
  "queue.draining",
  "queue.settings_changed",
  "queue.freeze_added",
  "queue.freeze_removed",
  "pull_request.urgent",
  "pull_request.emergency",
  "pull_request.emergency_ended",
  "pull_request.priority_changed",
  "pull_request.restarted",
  "pull_request.cancelled_by_other",
  "webhook_endpoint.created",
  "webhook_endpoint.updated",
  "webhook_endpoint.deleted",
  "webhook.redelivered",
  "flaky.settings_updated",
  "test.quarantine_overridden",
  "test.ticket_linked",
  "token.created",
  "token.revoked",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** An entry as the API answers it and the webhook carries it. */
export type AuditRecord = {
  id: string;
  at: string;
  actor: Actor;
  channel: AuditChannel;
  action: AuditAction;
  repository: string | null;
  branch: string | null;
  reason: string | null;
  details: Record<string, unknown>;
};

/** An entry to record: what the action is about, and what it changed. */
export type AuditInput = { action: AuditAction; repository?: string | null; branch?: string | null; reason?: string | null; details?: Record<string, unknown> };

/** The way in of a principal's action: its `via` names the dashboard or a comment command; an operator's is the CLI; else the API. */
export function channelOf(actor: Actor, via: string | undefined): AuditChannel {
  if (via?.startsWith("dashboard")) return "dashboard";
  if (via?.startsWith("/greenline")) return "comment";
  if (actor.kind === "operator") return "cli";
  return "api";
}

/** The queue operator events (getQueueEvents) that are audited, and as what; a freeze starting or ending is their consequence, not an action. */
export const AUDITED_QUEUE_EVENTS: Readonly<Record<string, AuditAction>> = {
  paused: "queue.paused",
  resumed: "queue.resumed",
  draining: "queue.draining",
  settings_changed: "queue.settings_changed",
  urgent_submission: "pull_request.urgent",
  emergency_submission: "pull_request.emergency",
  emergency_ended: "pull_request.emergency_ended",
  cancelled_by_other: "pull_request.cancelled_by_other",
  freeze_added: "queue.freeze_added",
  freeze_removed: "queue.freeze_removed",
};
