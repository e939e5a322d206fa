import { capacityOf } from "../domain/engine/capacity.js";
import { skipsTheLine } from "../domain/priority.js";
import type { QueueSettings, RequiredStatusesSource } from "../domain/queue-settings.js";
import type { Readiness } from "../domain/readiness.js";
import { requiredChecksWarning, requiredStatusesSourceOf, type RequiredChecks } from "../domain/status-checks.js";
import type { PrState, QueueState } from "../domain/states.js";
import type { QueueEntry } from "../store/entries.js";
import type { Queue } from "../store/queues.js";

/** The queue record of the API (SPEC.md, "Queue"): every field is always present. */
export type QueueRecord = Omit<QueueSettings, "requiredStatuses"> & { state: QueueState; branch: string; tuned?: TunedRecord; setupWarnings?: string[] } & RequiredStatuses;

/** Adaptive tuning's picks as getQueue shows them (domain/engine/capacity.ts). */
export type TunedRecord = { concurrency: number; bisectionConcurrency: number; largestBatch: number; observedFailureRate: number };

/**
 * The statuses a queue requires, as the API shows them: a list even when the queue sets none,
 * where the requirement comes from, and a warning when the branch requires nothing or its
 * requirements cannot be read.
 */
export type RequiredStatuses = { requiredStatuses: string[]; requiredStatusesSource: RequiredStatusesSource; requiredStatusesWarning?: string };

/** `host`: what the code host requires of the branch (when the queue sets no list of its own). */
export function requiredStatusesOf(queue: Pick<Queue, "requiredStatuses" | "branch">, host: RequiredChecks): RequiredStatuses {
  if (queue.requiredStatuses !== null) return { requiredStatuses: queue.requiredStatuses, requiredStatusesSource: "merge_instance" };
  const warning = requiredChecksWarning(host, queue.branch);
  return { requiredStatuses: [], requiredStatusesSource: requiredStatusesSourceOf(host.source), ...(warning ? { requiredStatusesWarning: warning } : {}) };
}

/** The queue's settings, in the order the API shows them. */
export function settingsOf(queue: Queue): QueueSettings {
  return {
    mode: queue.mode,
    concurrency: queue.concurrency,
    bisectionConcurrency: queue.bisectionConcurrency,
    testingTimeoutMinutes: queue.testingTimeoutMinutes,
    checksStartTimeoutMinutes: queue.checksStartTimeoutMinutes,
    pendingFailureDepth: queue.pendingFailureDepth,
    canOptimisticallyMerge: queue.canOptimisticallyMerge,
    batch: queue.batch,
    batchingMaxWaitTimeMinutes: queue.batchingMaxWaitTimeMinutes,
    batchingMinSize: queue.batchingMinSize,
    commentsEnabled: queue.commentsEnabled,
    commandsEnabled: queue.commandsEnabled,
    createPrsForTestingBranches: queue.createPrsForTestingBranches,
    statusCheckEnabled: queue.statusCheckEnabled,
    requiredStatuses: queue.requiredStatuses,
    directMergeMode: queue.directMergeMode,
    optimizationMode: queue.optimizationMode,
    mergeMethod: queue.mergeMethod,
    flakeHandling: queue.flakeHandling,
    flakyRetries: queue.flakyRetries,
    ciBudget: queue.ciBudget,
    tuning: queue.tuning,
    pullRequestChecks: queue.pullRequestChecks,
  };
}

export function toQueueRecord(queue: Queue, host: RequiredChecks): QueueRecord {
  const capacity = capacityOf({ settings: queue, observed: queue.observed });
  const tuned = capacity.adaptive && {
    concurrency: capacity.concurrency,
    bisectionConcurrency: capacity.bisectionConcurrency,
    largestBatch: capacity.largestBatch,
    observedFailureRate: Math.round(capacity.adaptive.failureRate * 10_000) / 10_000,
  };
  return { state: queue.state, branch: queue.branch, ...settingsOf(queue), ...requiredStatusesOf(queue, host), ...(tuned ? { tuned } : {}) };
}

/** A queue entry as getQueue lists it (Trunk's merge-item record without readiness). */
export type MergeItemRecord = {
  id: string;
  state: PrState;
  stateChangedAt: string;
  /** Why the PR is in its state, e.g. "cancelled_by_user" or "readiness_met". */
  stateReason: string;
  priorityValue: number;
  priorityName: string;
  /** Only when the default priority was applied (SPEC.md: a string, not required). */
  usedDefaultPriorityName?: string;
  skipTheLine: boolean;
  noBatch: boolean;
  prNumber: number;
  prTitle: string;
  prSha: string;
  prBaseBranch: string;
  prAuthor: string;
  /** A failed PR the code host refused for good: its own words. */
  failureMessage?: string;
  /** Stacked on this PR (docs/stacks.md). */
  stackedOn?: number;
};

/** getSubmittedPullRequest's record: every field of SPEC.md's table. */
export type SubmittedPullRequestRecord = MergeItemRecord & {
  forceEnqueued: boolean;
  isCurrentlySubmittedToQueue: boolean;
  readiness: Readiness;
};

/** A timeline event as the API (and the pull_request.* webhook events) answer it: domain/timeline.ts. */
export { toTimelineRecord, type TimelineRecord } from "../domain/timeline.js";

export function toMergeItemRecord(row: QueueEntry): MergeItemRecord {
  return {
    id: row.id,
    state: row.state,
    stateChangedAt: row.stateChangedAt.toISOString(),
    stateReason: row.stateReason,
    priorityValue: row.priorityValue,
    priorityName: row.priorityName,
    ...(row.usedDefaultPriorityName !== null ? { usedDefaultPriorityName: row.usedDefaultPriorityName } : {}),
    skipTheLine: skipsTheLine(row.priorityValue),
    noBatch: row.noBatch,
    prNumber: row.prNumber,
    prTitle: row.prTitle,
    prSha: row.prSha,
    prBaseBranch: row.prBaseBranch,
    prAuthor: row.prAuthor,
    ...(row.state === "failed" && row.failureMessage !== null ? { failureMessage: row.failureMessage } : {}),
    ...(row.stackBelowPr !== null ? { stackedOn: row.stackBelowPr } : {}),
  };
}
