import type { Queue, QueueEntry } from "../generated/sqlite/client.js";
import { skipsTheLine } from "../domain/priority.js";
import type { QueueSettings, RequiredStatusesSource } from "../domain/queue-settings.js";
import type { Readiness } from "../domain/readiness.js";
import type { PrState, QueueState } from "../domain/states.js";

/** The queue record of the API (SPEC.md, "Queue"): every field is always present. */
export type QueueRecord = Omit<QueueSettings, "requiredStatuses"> & { state: QueueState; branch: string } & RequiredStatuses;

/** The statuses a queue requires, as the API shows them: a list even when the queue sets none. */
export type RequiredStatuses = { requiredStatuses: string[]; requiredStatusesSource: RequiredStatusesSource };

export function requiredStatusesOf(row: Pick<Queue, "requiredStatuses">): RequiredStatuses {
  if (row.requiredStatuses === null) return { requiredStatuses: [], requiredStatusesSource: "repo_provider_branch_protection" };
  return { requiredStatuses: JSON.parse(row.requiredStatuses) as string[], requiredStatusesSource: "merge_instance" };
}

export function settingsOf(row: Queue): QueueSettings {
  return {
    mode: row.mode as QueueSettings["mode"],
    concurrency: Number(row.concurrency),
    bisectionConcurrency: Number(row.bisectionConcurrency),
    testingTimeoutMinutes: Number(row.testingTimeoutMinutes),
    pendingFailureDepth: Number(row.pendingFailureDepth),
    canOptimisticallyMerge: row.canOptimisticallyMerge,
    batch: row.batch,
    batchingMaxWaitTimeMinutes: Number(row.batchingMaxWaitTimeMinutes),
    batchingMinSize: Number(row.batchingMinSize),
    commentsEnabled: row.commentsEnabled,
    commandsEnabled: row.commandsEnabled,
    createPrsForTestingBranches: row.createPrsForTestingBranches,
    statusCheckEnabled: row.statusCheckEnabled,
    requiredStatuses: row.requiredStatuses === null ? null : (JSON.parse(row.requiredStatuses) as string[]),
    directMergeMode: row.directMergeMode as QueueSettings["directMergeMode"],
    optimizationMode: row.optimizationMode as QueueSettings["optimizationMode"],
    mergeMethod: row.mergeMethod as QueueSettings["mergeMethod"],
  };
}

export function toQueueRecord(row: Queue): QueueRecord {
  return { state: row.state as QueueState, branch: row.branch, ...settingsOf(row), ...requiredStatusesOf(row) };
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
};

/** getSubmittedPullRequest's record: every field of SPEC.md's table. */
export type SubmittedPullRequestRecord = MergeItemRecord & {
  forceEnqueued: boolean;
  isCurrentlySubmittedToQueue: boolean;
  readiness: Readiness;
};

export function toMergeItemRecord(row: QueueEntry): MergeItemRecord {
  return {
    id: row.id,
    state: row.state as PrState,
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
  };
}
