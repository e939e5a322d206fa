/** Pull request states of SPEC.md, written lowercase on the wire. */
export const PR_STATES = ["not_ready", "pending", "testing", "tests_passed", "pending_failure", "merged", "failed", "cancelled"] as const;
export type PrState = (typeof PR_STATES)[number];

/** A PR in one of these states has left the queue for good (until it is submitted again). */
export const TERMINAL_PR_STATES: ReadonlySet<PrState> = new Set(["merged", "failed", "cancelled"]);

/**
 * The states of a PR still in play. Queries list them (`state IN (…)`) rather than excluding
 * the terminal ones: an IN list uses the (queueId, state) index, a NOT IN scans every PR the
 * queue ever had.
 */
export const LIVE_PR_STATES: PrState[] = PR_STATES.filter((s) => !TERMINAL_PR_STATES.has(s));

export function isTerminal(state: PrState): boolean {
  return TERMINAL_PR_STATES.has(state);
}

export const QUEUE_STATES = ["running", "paused", "draining", "switching_modes"] as const;
export type QueueState = (typeof QUEUE_STATES)[number];
/** switching_modes is entered by the queue itself, never requested. */
export const REQUESTABLE_QUEUE_STATES = ["running", "paused", "draining"] as const;

export const QUEUE_MODES = ["single", "parallel"] as const;
export type QueueMode = (typeof QUEUE_MODES)[number];

export const MERGEABILITY = ["unspecified", "in_progress", "mergeable", "not_mergeable"] as const;
export type Mergeability = (typeof MERGEABILITY)[number];

/**
 * Why a PR changed state. Stored with every transition and shown to users, so they are
 * stable, lowercase and specific.
 */
export type TransitionReason = "submitted" | "resubmitted" | "readiness_met" | "readiness_lost" | "cancelled_by_user" | "restart_requested";
