import { z } from "zod";
import { ACTOR_KINDS, OPERATOR_EVENT_KINDS } from "../../domain/timeline.js";
import { BLOCKED_REASON_CODES } from "../../domain/diagnoses.js";
import { DEFAULT_QUEUE_SETTINGS, DIRECT_MERGE_MODES, FLAKE_HANDLING_MODES, MAX_FLAKY_RETRIES, MERGE_METHODS, OPTIMIZATION_MODES, REQUIRED_STATUSES_SOURCES, TUNING_MODES } from "../../domain/queue-settings.js";
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

/**
 * What each setting is called, what it does and in what unit, in people's words: the OpenAPI
 * document's titles and descriptions, and the dashboard's settings form (labels, help, units,
 * a new queue's value as `x-default`: src/web/settings-form.ts) are generated from these.
 */
type SettingWords = { title: string; help: string; unit?: string };

function setting<T extends z.ZodType>(schema: T, name: keyof typeof DEFAULT_QUEUE_SETTINGS | "deleteRequiredStatuses" | "state", words: SettingWords): T {
  const fallback = (DEFAULT_QUEUE_SETTINGS as Record<string, unknown>)[name];
  return schema.meta({
    title: words.title,
    description: words.help,
    ...(words.unit ? { "x-unit": words.unit } : {}),
    ...(fallback !== undefined && fallback !== null ? { "x-default": fallback } : {}),
  });
}

export const ZQueueSettings = z.object({
  mode: setting(caseInsensitiveEnum(QUEUE_MODES).optional(), "mode", {
    title: "Queue mode",
    help: "single: one line, each pull request tested on top of those ahead of it; parallel: lanes from each pull request's impacted targets, so changes that touch different things do not wait for each other (docs/engine.md).",
  }),
  concurrency: setting(ZUint32.optional(), "concurrency", {
    title: "Concurrency",
    unit: "runs",
    help: "How many runs the line keeps testing at once, each on top of everything ahead of it: more merge a long line sooner and spend more CI.",
  }),
  bisectionConcurrency: setting(ZUint32.optional(), "bisectionConcurrency", {
    title: "Runs at once while a failed batch is bisected",
    unit: "runs",
    help: "How many runs test parts of a failed batch at once to find the pull request that broke it.",
  }),
  testingTimeoutMinutes: setting(ZUint32.optional(), "testingTimeoutMinutes", {
    title: "Testing timeout",
    unit: "minutes",
    help: "A run whose required checks have not all passed after this long fails. Must be greater than checksStartTimeoutMinutes when a request gives both.",
  }),
  checksStartTimeoutMinutes: setting(ZUint32.optional(), "checksStartTimeoutMinutes", {
    title: "Time for required checks to start",
    unit: "minutes",
    help: "A run on whose testing branch a required check has not appeared this long after it started is diagnosed: the queue says which check and why (docs/diagnoses.md). Must be less than testingTimeoutMinutes.",
  }),
  pendingFailureDepth: setting(z.number().int().min(0).max(MAX_UINT32).optional(), "pendingFailureDepth", {
    title: "Pull requests behind a failure to wait for",
    unit: "pull requests",
    help: "When a run fails, how many runs behind it may finish first: one that passes proves the failure was flaky. 0 to 4294967295; 0 waits only for the pull requests ahead of it.",
  }),
  canOptimisticallyMerge: setting(z.boolean().optional(), "canOptimisticallyMerge", {
    title: "Merge when a pull request behind passes",
    help: "A passing run of a later pull request, which contains this one, proves this one too: merge both without waiting for this one's own run.",
  }),
  batch: setting(z.boolean().optional(), "batch", {
    title: "Test pull requests in batches",
    help: "Test several pull requests in one run; a batch that fails is bisected to find the one that broke it.",
  }),
  batchingMaxWaitTimeMinutes: setting(ZUint32.optional(), "batchingMaxWaitTimeMinutes", {
    title: "Longest wait to fill a batch",
    unit: "minutes",
    help: "How long a batch waits for batchingMinSize pull requests before it starts with fewer.",
  }),
  batchingMinSize: setting(ZUint32.optional(), "batchingMinSize", {
    title: "Smallest batch",
    unit: "pull requests",
    help: "A batch starts once this many pull requests wait, or after the longest wait.",
  }),
  commentsEnabled: setting(z.boolean().optional(), "commentsEnabled", {
    title: "Comment on pull requests",
    help: "Comment on a pull request when the queue removes it, or does something to it that needs explaining, saying why.",
  }),
  commandsEnabled: setting(z.boolean().optional(), "commandsEnabled", {
    title: "Accept /greenline commands in comments",
    help: "Let people submit (with a priority), cancel, freeze and unfreeze with /greenline comments on pull requests; each command needs the commenter's own permission on the repository.",
  }),
  createPrsForTestingBranches: setting(z.boolean().optional(), "createPrsForTestingBranches", {
    title: "Open a pull request for each testing branch",
    help: "For CI that runs only on pull requests: each testing branch gets a draft pull request, so it is tested.",
  }),
  directMergeMode: setting(caseInsensitiveEnum(DIRECT_MERGE_MODES).optional(), "directMergeMode", {
    title: "Merge up-to-date green pull requests directly",
    help: "always: a pull request already tested green on exactly the target branch's tip merges without a new run; off: every pull request is tested in the queue.",
  }),
  optimizationMode: setting(caseInsensitiveEnum(OPTIMIZATION_MODES).optional(), "optimizationMode", {
    title: "Optimization",
    help: "bisection_skip_redundant_tests: while bisecting, skip runs whose outcome another run already tells; off: run every step.",
  }),
  mergeMethod: setting(caseInsensitiveEnum(MERGE_METHODS).optional(), "mergeMethod", {
    title: "Merge method",
    help: "How pull requests land on the target branch: squash (one commit each), merge_commit, or rebase.",
  }),
  flakeHandling: setting(caseInsensitiveEnum(FLAKE_HANDLING_MODES).optional(), "flakeHandling", {
    title: "Flaky test handling",
    help: "What uploaded test results decide when a required check fails (docs/flaky-queue.md): off, every failure counts; quarantined, failures of quarantined tests, or of tests that passed on a retry in the run, do not count; retry_flaky, as quarantined, and failures of known-flaky tests re-run the failed jobs, up to flakyRetries times.",
  }),
  flakyRetries: setting(z.number().int().min(0).max(MAX_FLAKY_RETRIES).optional(), "flakyRetries", {
    title: "Re-runs for known-flaky failures",
    unit: "re-runs",
    help: `Under retry_flaky, how many times a run's failed jobs are re-run when only known-flaky tests failed, 0 to ${MAX_FLAKY_RETRIES}.`,
  }),
  ciBudget: setting(z.number().int().min(0).max(MAX_UINT32).optional(), "ciBudget", {
    title: "CI budget",
    unit: "runs at once",
    help: "The most testing runs in flight at once, main line and bisection together. Lowered, runs in flight finish and none starts until they are under it. 0: no budget beyond concurrency + bisectionConcurrency.",
  }),
  tuning: setting(caseInsensitiveEnum(TUNING_MODES).optional(), "tuning", {
    title: "Tuning",
    help: "fixed: runs in flight and batch sizes are as set here; adaptive: up to concurrency main-line runs (and half the budget, rounded up, for bisection) within ciBudget, each testing what waits spread over the free runs, up to a batch size from the failure rate it observes (no batching wait; batch, batchingMinSize and batchingMaxWaitTimeMinutes are not used; docs/engine.md).",
  }),
  statusCheckEnabled: setting(z.boolean().optional(), "statusCheckEnabled", {
    title: "Set a status on pull requests",
    help: "Show each pull request's place and state in the queue as a commit status on its head.",
  }),
  requiredStatuses: setting(z.array(z.string().min(1).max(255).check(storableText)).max(100).optional(), "requiredStatuses", {
    title: "Required checks",
    help: "The checks a testing branch must pass, when the queue sets its own (at most 100); unset, the target branch's rules on the code host decide.",
  }),
  deleteRequiredStatuses: setting(z.boolean().optional(), "deleteRequiredStatuses", {
    title: "Clear the required checks",
    help: "true drops the queue's own required checks: the target branch's rules decide again.",
  }),
  pullRequestChecks: setting(z.array(z.string().min(1).max(255).check(storableText)).max(100).optional(), "pullRequestChecks", {
    title: "Checks taken from each pull request's head",
    help: "Required checks satisfied by each pull request's own head (apps that look only at pull requests: CLA, DCO, title linters): testing branches do not wait for them, and GitHub's branch rules check them on each pull request's head when it merges. Each must be required by the branch's rulesets or protection; [] clears the list (docs/preflight.md).",
  }),
  state: setting(caseInsensitiveEnum(REQUESTABLE_QUEUE_STATES).optional(), "state", {
    title: "Queue state",
    help: "running; paused: nothing starts testing and nothing merges; draining: runs in flight finish, nothing new starts.",
  }),
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
