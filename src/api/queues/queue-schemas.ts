import { z } from "zod";
import { ACTOR_KINDS, OPERATOR_EVENT_KINDS } from "../../domain/timeline.js";
import { BLOCKED_REASON_CODES } from "../../domain/diagnoses.js";
import { DIRECT_MERGE_MODES, FLAKE_HANDLING_MODES, MAX_FLAKY_RETRIES, MERGE_METHODS, OPTIMIZATION_MODES, REQUIRED_STATUSES_SOURCES, TUNING_MODES } from "../../domain/queue-settings.js";
import { PR_STATES, QUEUE_MODES, QUEUE_STATES, REQUESTABLE_QUEUE_STATES } from "../../domain/states.js";
import { caseInsensitiveEnum, storableText, ZName, ZPr, ZRepo } from "../shared/schemas.js";

/**
 * The queue operations' schemas (queue-operations.ts): a queue's address and settings, its
 * record, its entries, its events and why it is blocked. Answers are documentation and tests;
 * handlers build them from queue/records.ts types.
 */

const MAX_UINT32 = 4294967295;
const ZUint32 = z.number().int().min(1).max(MAX_UINT32);

export const ZQueueAddress = z.object({ repo: ZRepo, targetBranch: ZName });
export const ZPullRequestAddress = ZQueueAddress.extend({ pr: ZPr });

export const ZQueueSettings = z.object({
  mode: caseInsensitiveEnum(QUEUE_MODES).optional(),
  concurrency: ZUint32.optional(),
  bisectionConcurrency: ZUint32.optional(),
  testingTimeoutMinutes: ZUint32.optional().describe("greater than checksStartTimeoutMinutes when a request gives both"),
  checksStartTimeoutMinutes: ZUint32.optional().describe(
    "minutes after a run starts by which every required check must have appeared on its testing branch, else the run is diagnosed (default 10); less than testingTimeoutMinutes",
  ),
  pendingFailureDepth: z
    .number()
    .int()
    .min(0)
    .max(MAX_UINT32)
    .optional()
    .describe("successors a failing PR waits for, 0 (the default: only the PRs ahead of it) to 4294967295; Trunk's newer v1 accepts 0, SPEC.md's range starts at 1"),
  canOptimisticallyMerge: z.boolean().optional(),
  batch: z.boolean().optional(),
  batchingMaxWaitTimeMinutes: ZUint32.optional(),
  batchingMinSize: ZUint32.optional(),
  commentsEnabled: z.boolean().optional(),
  commandsEnabled: z.boolean().optional(),
  createPrsForTestingBranches: z.boolean().optional(),
  directMergeMode: caseInsensitiveEnum(DIRECT_MERGE_MODES).optional(),
  optimizationMode: caseInsensitiveEnum(OPTIMIZATION_MODES).optional(),
  mergeMethod: caseInsensitiveEnum(MERGE_METHODS).optional(),
  flakeHandling: caseInsensitiveEnum(FLAKE_HANDLING_MODES)
    .optional()
    .describe(
      "what a failed required check's uploaded test results decide (docs/flaky-queue.md): off (every failure counts), quarantined (default: failures of quarantined tests, or of tests that passed on a retry in the run, do not count), retry_flaky (as quarantined, and failures of known-flaky tests re-run the failed jobs, up to flakyRetries times)",
    ),
  flakyRetries: z.number().int().min(0).max(MAX_FLAKY_RETRIES).optional().describe(`re-runs of a run's failed jobs for known-flaky failures under retry_flaky, 0 to ${MAX_FLAKY_RETRIES} (default 1)`),
  ciBudget: z
    .number()
    .int()
    .min(0)
    .max(MAX_UINT32)
    .optional()
    .describe(
      "the most testing runs in flight at once, main line and bisection together: the queue's CI budget (lowered, runs already in flight finish; none starts until they are under it); 0 (the default) = no budget beyond concurrency + bisectionConcurrency",
    ),
  tuning: caseInsensitiveEnum(TUNING_MODES)
    .optional()
    .describe(
      "fixed (default): runs in flight and batch sizes are as the settings say; adaptive: up to concurrency main-line runs (and half the budget, rounded up, for bisection) within ciBudget, each testing what waits spread over the free runs, up to a batch size from the failure rate it observes (no batching wait; batch, batchingMinSize and batchingMaxWaitTimeMinutes are not used; docs/engine.md)",
    ),
  statusCheckEnabled: z.boolean().optional(),
  requiredStatuses: z.array(z.string().min(1).max(255).check(storableText)).max(100).optional(),
  deleteRequiredStatuses: z.boolean().optional(),
  pullRequestChecks: z
    .array(z.string().min(1).max(255).check(storableText))
    .max(100)
    .optional()
    .describe(
      "required checks satisfied by each pull request's own head (apps that look only at pull requests: CLA, DCO, title linters): testing branches do not wait for them, and GitHub's branch rules check them on each pull request's head when it merges. Each must be required by the branch's rulesets or protection; [] clears the list (docs/preflight.md)",
    ),
  state: caseInsensitiveEnum(REQUESTABLE_QUEUE_STATES).optional(),
});

export const ZCreateQueueRequest = ZQueueAddress.extend(ZQueueSettings.shape);
export const ZUpdateQueueRequest = ZCreateQueueRequest;

export const ZMetricsQuery = z.object({
  repo: z
    .string()
    .min(3)
    .max(512)
    .regex(/^[^/]+\/[^/]+$/, "must have the form owner/name")
    .check(storableText)
    .optional()
    .describe("owner/name; requires repoHost"),
  repoHost: z.string().min(1).max(255).check(storableText).optional().describe("the repository's host; requires repo"),
});

export const ZQueueRecord = z.strictObject({
  state: z.enum(QUEUE_STATES),
  branch: z.string(),
  mode: z.enum(QUEUE_MODES),
  concurrency: z.number().int(),
  bisectionConcurrency: z.number().int(),
  testingTimeoutMinutes: z.number().int(),
  checksStartTimeoutMinutes: z.number().int(),
  pendingFailureDepth: z.number().int(),
  canOptimisticallyMerge: z.boolean(),
  batch: z.boolean(),
  batchingMaxWaitTimeMinutes: z.number().int(),
  batchingMinSize: z.number().int(),
  commentsEnabled: z.boolean(),
  commandsEnabled: z.boolean(),
  createPrsForTestingBranches: z.boolean(),
  statusCheckEnabled: z.boolean(),
  requiredStatuses: z.array(z.string()).describe("the statuses set on the queue; empty when none is set"),
  requiredStatusesSource: z
    .enum(REQUIRED_STATUSES_SOURCES)
    .describe(
      "merge_instance: testing requires the queue's requiredStatuses; otherwise the target branch's rules on the code host decide: repo_provider_branch_protection (classic branch protection), rulesets, rulesets_and_branch_protection; none: the branch requires no check, a testing branch passes once every check reported on it finished green; unknown: the rules could not be read, testing branches wait",
    ),
  requiredStatusesWarning: z.string().optional().describe("present when the branch requires no check, or its requirements cannot be read: what that means and what to change"),
  directMergeMode: z.enum(DIRECT_MERGE_MODES),
  optimizationMode: z.enum(OPTIMIZATION_MODES),
  mergeMethod: z.enum(MERGE_METHODS),
  flakeHandling: z.enum(FLAKE_HANDLING_MODES),
  flakyRetries: z.number().int(),
  ciBudget: z.number().int(),
  tuning: z.enum(TUNING_MODES),
  pullRequestChecks: z.array(z.string()).describe("required checks taken from each pull request's own head, not waited for on testing branches"),
  tuned: z
    .strictObject({
      concurrency: z.number().int(),
      bisectionConcurrency: z.number().int(),
      largestBatch: z.number().int(),
      observedFailureRate: z.number(),
    })
    .optional()
    .describe("adaptive tuning only: what the queue picks now — main-line and bisection runs in flight at most (within ciBudget), the largest batch, and the per-PR failure rate it observed on recent main-line runs"),
  setupWarnings: z
    .array(z.string())
    .optional()
    .describe(
      "createQueue, and updateQueue when it changes requiredStatuses or createPrsForTestingBranches: the preflight's findings (checkQueueSetup), one per required check that will not report on testing commits, with why and the fix; empty when every one reports",
    ),
});

export const ZMergeItem = z.strictObject({
  id: z.string(),
  state: z.enum(PR_STATES),
  stateChangedAt: z.iso.datetime(),
  stateReason: z.string(),
  priorityValue: z.number().int(),
  priorityName: z.string(),
  usedDefaultPriorityName: z.string().optional().describe("the default priority applied because the submission named none; absent otherwise"),
  skipTheLine: z.boolean(),
  noBatch: z.boolean(),
  prNumber: z.number().int(),
  prTitle: z.string(),
  prSha: z.string(),
  prBaseBranch: z.string(),
  failureMessage: z.string().optional().describe("a failed PR the code host refused for good (stateReason merge_refused or start_refused): the code host's own words; absent otherwise"),
  prAuthor: z.string(),
  stackedOn: z.number().int().optional().describe("a stacked PR (its base is another PR's head branch: docs/stacks.md): the PR it is stacked on, which merges before it; absent otherwise"),
});

export const ZPosition = z
  .strictObject({
    index: z.number().int().min(1).describe("1-based place in the line (single mode) or in the PR's lane (parallel mode)"),
    ahead: z.number().int().min(0).describe("how many PRs are ahead of it there"),
  })
  .nullable()
  .describe("null when the PR is not in line (not ready, being merged, or out of the queue)");
export const ZEstimatedMergeAt = z.iso
  .datetime()
  .nullable()
  .describe("when the PR should merge, from the queue's recent CI durations and failure rate (docs/engine.md); null without history or when the PR is not in line");

/** A getQueue entry: a merge item with its place in line and estimate. */
export const ZQueuedItem = ZMergeItem.extend({ position: ZPosition, estimatedMergeAt: ZEstimatedMergeAt });

export const ZActor = z.strictObject({
  kind: z
    .enum(ACTOR_KINDS)
    .describe(
      "token: an API token (its name); user: a code host user's comment command (their login); engine: the queue's own decision; code_host: CI results, pushes, closed PRs, refusals (the host's name); fork_run: a fork PR's workflow run (its id); operator: the service's own CLI, run where it runs",
    ),
  name: z.string(),
});

export const ZGetQueueEventsRequest = ZQueueAddress.extend({
  cursor: z.string().min(1).max(64).check(storableText).optional().describe("an earlier answer's nextCursor; omit for the first page"),
  limit: z.number().int().min(1).max(100).default(50).describe("page size"),
});
export const ZQueueEvent = z.strictObject({
  id: z.string(),
  kind: z.enum(OPERATOR_EVENT_KINDS),
  at: z.iso.datetime(),
  actor: ZActor,
  details: z
    .record(z.string(), z.unknown())
    .describe(
      "paused/resumed/draining: from, to; settings_changed: changes (field → from, to); urgent_submission: prNumber; cancelled_by_other: prNumber, submittedBy; freeze_added/freeze_removed: freeze (as listQueueFreezes answers it); freeze_started: reasons, until, testing, freezeIds; freeze_ended: since, reasons, freezeIds; emergency_submission: prNumber, reason; command: the API operation or comment command used",
    ),
});
export const ZGetQueueEventsResponse = z.strictObject({
  events: z.array(ZQueueEvent).describe("operator actions, newest first"),
  nextCursor: z.string().optional().describe("present when more events follow: send it as cursor for the next page"),
});

export const ZBlockedReason = z
  .strictObject({
    code: z.enum(BLOCKED_REASON_CODES),
    message: z.string(),
    since: z.iso.datetime().nullable(),
    evidence: z.record(z.string(), z.unknown()),
  })
  .describe("why the queue merges nothing while pull requests wait (docs/diagnoses.md)");

export const ZFreezeStatus = z
  .strictObject({
    frozen: z.boolean(),
    since: z.iso.datetime().nullable(),
    until: z.iso.datetime().nullable().describe("when the freeze ends (windows that overlap or touch joined); null while frozen: when someone unfreezes it"),
    testing: z.boolean().describe("whether pull requests are tested while frozen"),
    reasons: z.array(z.string()),
    nextChangeAt: z.iso.datetime().nullable().describe("when a scheduled freeze next starts, or the current one ends"),
  })
  .describe("the queue's merge freeze now: while frozen only hotfixes merge (docs/freezes.md)");

export const ZQueueWithEntries = ZQueueRecord.extend({
  neverSeenRequiredChecks: z.array(z.string()).describe("required checks never reported on any of the queue's latest 200 testing branches (empty until one of them had checksStartTimeoutMinutes to report)"),
  blockedReason: ZBlockedReason.nullable(),
  freeze: ZFreezeStatus,
  enqueuedPullRequests: z.array(ZQueuedItem),
});

/** checkQueueSetup: the queue's address, and optionally the testing mode to judge. */
export const ZCheckQueueSetupRequest = ZQueueAddress.extend({
  mode: z
    .enum(["push", "draft_pr"])
    .optional()
    .describe(
      "how testing commits reach CI: pushed `greenline/**` branches (`push`), or also a draft pull request (`draft_pr`, the queue's createPrsForTestingBranches); default: the queue's, or `push` for a queue not created yet",
    ),
});

const ZCheckPrediction = z.strictObject({
  context: z.string().describe("a required check"),
  verdict: z
    .enum(["reports", "passes_without_running", "never", "maybe", "unknown", "pull_request_head"])
    .describe(
      "`reports`: a workflow job runs and reports it on testing commits; `passes_without_running`: its job is skipped there, which GitHub counts as passing; `never`: nothing will report it (the queue's runs would wait for it until their timeout); `maybe`: it depends on what the PRs change or on values the workflow file does not settle; `unknown`: reported by something Greenline cannot read (an App, CI outside GitHub Actions); `pull_request_head`: taken from each pull request's own head (the queue's pullRequestChecks), not waited for on testing commits",
    ),
  sources: z.array(z.string()).describe("the workflow jobs reporting it, as `path: job`"),
  reportedBy: z.string().nullable().describe("who reported it on recent pull requests, when no workflow job does"),
  why: z.string(),
  fix: z.string().nullable().describe("the change that makes it report, when there is one"),
});

const ZWorkflowJobPrediction = z.strictObject({
  job: z.string(),
  checkNames: z.array(z.string()).describe("the check names it reports under; `*` where GitHub fills them in at run time"),
  verdict: z.enum(["runs", "skipped", "never", "maybe"]),
  why: z.string(),
  fix: z.string().nullable(),
});

export const ZQueueSetupRecord = z.strictObject({
  ok: z.boolean().describe("every required check will report on testing commits"),
  mode: z.enum(["push", "draft_pr"]),
  queueExists: z.boolean().describe("the queue exists: its mode and requiredStatuses were used"),
  requiredStatusesSource: z.enum(REQUIRED_STATUSES_SOURCES).describe("where the required checks come from, as getQueue names it"),
  checks: z.array(ZCheckPrediction),
  warnings: z.array(z.string()),
  workflows: z.array(z.strictObject({ path: z.string(), called: z.boolean().describe("only `workflow_call`: run through its callers"), error: z.string().nullable(), jobs: z.array(ZWorkflowJobPrediction) })),
  workflowsNotRead: z.array(z.string()).describe("workflow files past the 50 read"),
  workflowsUnavailable: z.string().nullable().describe("why no workflow file was read (a code host that runs none)"),
});
