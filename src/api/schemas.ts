import { FLAKE_RULES, TEST_JUDGEMENTS, VERDICT_TESTS_MAX } from "../domain/flaky/verdict.js";
import { BLOCKED_REASON_CODES, RUN_DIAGNOSIS_CODES } from "../domain/diagnoses.js";
import { z } from "zod";
import { ERROR_CODES } from "../app/errors.js";
import { PRIORITY_NAMES, type PriorityName } from "../domain/priority.js";
import { DIRECT_MERGE_MODES, FLAKE_HANDLING_MODES, MAX_FLAKY_RETRIES, MERGE_METHODS, OPTIMIZATION_MODES, REQUIRED_STATUSES_SOURCES } from "../domain/queue-settings.js";
import { FLAKY_SETTING_FIELDS, TICKET_KEY } from "../domain/flaky/detection.js";
import { MERGEABILITY, PR_STATES, QUEUE_MODES, QUEUE_STATES, REQUESTABLE_QUEUE_STATES } from "../domain/states.js";
import { unstorableCharacter } from "../domain/text.js";
import { ALL_WEBHOOK_EVENTS, WEBHOOK_EVENT_TYPES } from "../domain/webhook-events.js";
import { ACTOR_KINDS, EVIDENCE_LIST_MAX, OPERATOR_EVENT_KINDS, TIMELINE_MAX } from "../domain/timeline.js";

/**
 * Request and response schemas of the /v1 API. The same schemas validate requests and
 * generate the OpenAPI document (openapi.ts).
 */

/** An enum that accepts lowercase and UPPERCASE on input and always yields lowercase. */
function caseInsensitiveEnum<const T extends readonly [string, ...string[]]>(values: T) {
  const accepted = [...values, ...values.map((v) => v.toUpperCase())] as [string, ...string[]];
  return z.enum(accepted).transform((v) => v.toLowerCase() as T[number]);
}

/**
 * The rule of every free-text request field: no NUL (PostgreSQL text refuses it) and no lone
 * surrogate (not Unicode), so what validation accepts every store can hold. JUnit reports are
 * held to it by their scanner, which names the line and column.
 */
export const storableText = z.superRefine<string>((value, ctx) => {
  const found = unstorableCharacter(value);
  if (!found) return;
  const message = found.kind === "nul" ? `must not contain NUL characters (NUL at index ${found.index})` : `must be valid Unicode (lone surrogate at index ${found.index})`;
  ctx.addIssue({ code: "custom", message, input: value });
});

const MAX_UINT32 = 4294967295;
const ZUint32 = z.number().int().min(1).max(MAX_UINT32);
/**
 * Lengths are checked before surrounding whitespace is trimmed, so the document's maxLength and
 * pattern say exactly what is accepted; trimming is stated in each name's description.
 */
const TRIMMED = "surrounding whitespace is trimmed";
const ZName = z.string().max(255).regex(/\S/, "must not be blank").trim().check(storableText).describe(`not blank; ${TRIMMED}`);

export const ZRepo = z.object({
  host: ZName.describe(`repository host name, e.g. github.com; ${TRIMMED}`),
  owner: ZName.describe(`repository owner or organization; ${TRIMMED}`),
  name: ZName.describe(`repository name; ${TRIMMED}`),
});

/** PR numbers come as integers or, from some CI scripts, as numeric strings: both bounded alike. */
const ZPrNumberValue = z.number().int().min(1).max(2147483647);
const ZPrNumber = z
  .union(
    [
      ZPrNumberValue,
      z
        .string()
        .regex(/^\d{1,10}$/)
        .transform(Number)
        .pipe(ZPrNumberValue),
    ],
    {
      error: "must be an integer from 1 to 2147483647, or its digits as a string",
    },
  )
  .describe("an integer from 1 to 2147483647, or its decimal digits as a string (the same bounds)");

const ZPr = z.object({ number: ZPrNumber });
const ZSha = z.string().regex(/^[0-9a-fA-F]{7,64}$/, "must be a commit sha (hex)");

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
  statusCheckEnabled: z.boolean().optional(),
  requiredStatuses: z.array(z.string().min(1).max(255).check(storableText)).max(100).optional(),
  deleteRequiredStatuses: z.boolean().optional(),
  state: caseInsensitiveEnum(REQUESTABLE_QUEUE_STATES).optional(),
});

export const ZCreateQueueRequest = ZQueueAddress.extend(ZQueueSettings.shape);
export const ZUpdateQueueRequest = ZCreateQueueRequest;

const priorityNames = Object.keys(PRIORITY_NAMES) as [PriorityName, ...PriorityName[]];
export const ZPriority = z
  .union([
    z.number().int().min(0).max(255),
    caseInsensitiveEnum(priorityNames),
    z
      .string()
      .regex(/^\d{1,3}$/, "must be a priority name or a number from 0 to 255")
      .transform(Number)
      .pipe(z.number().max(255)),
  ])
  .nullable()
  .describe("urgent (0), high (10), medium (100, the default), low (200), or any integer from 0 (first) to 255 (last)");

export const ZSubmitPullRequestRequest = ZPullRequestAddress.extend({
  priority: ZPriority.optional(),
  noBatch: z.boolean().optional().describe("test this PR on its own, never in a batch"),
});

/** The most targets one upload may name; all are kept and answered (docs/decisions.md). */
export const MAX_IMPACTED_TARGETS = 5_000_000;
const TOO_MANY_TARGETS = `must list at most ${MAX_IMPACTED_TARGETS} targets (send "ALL" instead)`;

export const ZImpactedTargets = z
  .union([z.enum(["ALL", "IMPACTS_ALL"]).transform(() => "ALL" as const), z.array(z.string().max(4096).check(storableText)).max(MAX_IMPACTED_TARGETS, TOO_MANY_TARGETS)], {
    // A list too long is refused naming the limit, not as "not a list".
    error: (issue) => (Array.isArray(issue.input) && issue.input.length > MAX_IMPACTED_TARGETS ? TOO_MANY_TARGETS : 'must be "ALL" or a list of target names'),
  })
  .describe('the targets the PR changes, or "ALL" (it impacts every target)');

export const ZSetImpactedTargetsRequest = ZQueueAddress.extend({
  pr: ZPr.extend({ sha: ZSha.optional().describe("head commit the targets were computed for; defaults to the PR's head") }),
  impactedTargets: ZImpactedTargets,
});

/** Trunk's clients name the run (`testRunId`); Greenline's also accept the PR (its latest run). */
export const ZTestingDetailsRequest = ZQueueAddress.extend({
  pr: ZPr.optional().describe("the pull request whose latest test run to read; ignored when testRunId is given"),
  testRunId: z.string().min(1).max(64).check(storableText).optional().describe("the test run to read (an earlier answer's testRunId); required unless pr is given"),
}).superRefine((value, ctx) => {
  if (value.pr === undefined && value.testRunId === undefined) ctx.addIssue({ code: "custom", path: ["testRunId"], message: "required (or pr)" });
});

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

const ZPageQuery = z.object({
  page_size: z.number().int().min(1).max(100),
  page_token: z.string().max(1024).check(storableText).default("").describe("a page token this server issued in an earlier answer's page; empty for the first page"),
});
/** The length is checked before the URL parser trims surrounding whitespace, as the document's maxLength says. */
const ZLink = z
  .string()
  .max(2048)
  .url({ protocol: /^https?$/ })
  .check(storableText);
const ZDateTime = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

export const ZListFailingTestsRequest = z.object({
  repo: ZRepo,
  org_url_slug: ZName,
  start_time: ZDateTime,
  end_time: ZDateTime,
  page_query: ZPageQuery,
});
export const ZListQuarantinedTestsRequest = z.object({ repo: ZRepo, org_url_slug: ZName, page_query: ZPageQuery });
export const ZGetTestDetailsRequest = z.object({ repo: ZRepo, org_url_slug: ZName, test_id: z.uuid() });

const MAX_REPORTS = 1000;
export const ZUploadTestResultsRequest = z.object({
  repo: ZRepo,
  org_url_slug: ZName,
  commit_sha: ZSha,
  branch: ZName,
  pr_number: ZPrNumber.optional(),
  job_url: ZLink.optional().describe("the CI job's http(s) link"),
  check_name: ZName.optional().describe(
    `the CI check (job) the results come from, as the code host names it (a commit status's context, a check run's name): the merge queue reads a failed check's failures from the uploads that name it (docs/flaky-queue.md); ${TRIMMED}`,
  ),
  check_run_id: z
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe("the check run of the CI job the results come from (in GitHub Actions, the job context's check_run_id): attributes them to that check exactly"),
  variant: z.string().max(255).trim().check(storableText).optional().describe(TRIMMED),
  junit_xml: z.array(z.string().min(1, "must not be empty").describe("one JUnit XML report")).min(1).max(MAX_REPORTS).describe("JUnit XML reports, one string each"),
  codeowners: z
    .string()
    .max(1024 * 1024)
    .check(storableText)
    .optional()
    .describe("the repository's CODEOWNERS file; when absent it is read from the code host at commit_sha"),
});
export const ZUploadTestResultsResponse = z.strictObject({
  upload_id: z.string(),
  test_cases: z.number().int().describe("distinct tests in the upload"),
  failures: z.number().int().describe("distinct tests that failed"),
  unnamed_test_cases: z.number().int().describe("testcases with neither name nor classname: not stored, as no test can be followed by them"),
  infrastructure_failure: z.boolean().describe("the upload reads as an infrastructure failure (most tests failed, or one failure across unrelated tests): its failures mark no test flaky or broken"),
  infrastructure_failure_reason: z.string().optional().describe("why, when infrastructure_failure"),
  run: z
    .strictObject({
      id: z.string().describe("the run's testRunId"),
      number: z.number().int().describe("the run's number in its queue (run-<n>)"),
      queue: z.string().describe("the queue's target branch"),
    })
    .optional()
    .describe("the merge-queue run that tested the commit (its testing branch at commit_sha), when there is one"),
});

const ZTestScope = { repo: ZRepo, org_url_slug: ZName };
export const ZSetQuarantineSettingRequest = z.object({
  ...ZTestScope,
  test_id: z.uuid(),
  setting: z
    .enum(["always", "never", "auto", "ALWAYS", "NEVER", "AUTO", "ALWAYS_QUARANTINE", "NEVER_QUARANTINE", "AUTO_QUARANTINE"])
    .transform((v) => v.toLowerCase().replace("_quarantine", "") as "always" | "never" | "auto")
    .describe("always or never quarantine this test, or auto (quarantined while flaky)"),
  reason: z.string().max(1000).trim().check(storableText).optional().describe("why (shown with the test; empty or absent clears the previous reason)"),
});
/**
 * Greenline's body ({repo, org_url_slug, test_case_id, ticket_url}) or Trunk's
 * ({repo, test_case_id, external_ticket_id}: docs.trunk.io, "Link a ticket to a test case").
 */
export const ZLinkTicketRequest = z
  .object({
    repo: ZRepo,
    org_url_slug: ZName.optional().describe("the token's organization when absent (Trunk's request has none)"),
    test_case_id: z.uuid(),
    ticket_url: ZLink.nullable().optional().describe("the ticket's http(s) link; null unlinks. Give it or external_ticket_id"),
    external_ticket_id: z
      .string()
      .max(2048)
      .regex(/\S/, "must not be blank")
      .trim()
      .check(storableText)
      .optional()
      .describe(`Trunk's field: the ticket's key (KAN-123), linked through the repository's ticketUrlTemplate (flaky-tests/update-settings), or the ticket's http(s) link. Give it or ticket_url; ${TRIMMED}`),
  })
  .superRefine((value, ctx) => {
    if (value.ticket_url === undefined && value.external_ticket_id === undefined) ctx.addIssue({ code: "custom", path: ["external_ticket_id"], message: "required (or ticket_url)" });
    if (value.ticket_url !== undefined && value.external_ticket_id !== undefined) ctx.addIssue({ code: "custom", path: ["ticket_url"], message: "give ticket_url or external_ticket_id, not both" });
  });
export const ZCheckQuarantineRequest = z
  .object({
    ...ZTestScope,
    variant: z.string().max(255).trim().check(storableText).default("").describe(TRIMMED),
    test_ids: z.array(z.uuid()).max(10_000).default([]),
    tests: z
      .array(
        z.object({
          name: z.string().max(4096).check(storableText),
          classname: z.string().max(4096).check(storableText).default(""),
          file: z.string().max(4096).check(storableText).default(""),
          parent: z.string().max(4096).check(storableText).default(""),
          id: z.string().max(255).check(storableText).optional(),
        }),
      )
      .max(10_000)
      .default([]),
  })
  .describe("tests named by id or by identity (name, classname, file, parent as in the JUnit report)");
export const ZCheckQuarantineResponse = z.strictObject({
  quarantining_enabled: z.boolean(),
  quarantined_test_ids: z.array(z.uuid()),
});
export const ZFlakySettingsRequest = z.object(ZTestScope);
/** A ticket link holding TICKET_KEY (checked beyond the document's shape: the description says so). */
const ZTicketUrlTemplate = ZLink.refine((s) => s.includes(TICKET_KEY), `must contain ${TICKET_KEY}, where the ticket's key goes`);
export const ZUpdateFlakySettingsRequest = z.object({
  ...ZTestScope,
  settings: z
    .object({
      ...FLAKY_SETTING_FIELDS,
      ticketUrlTemplate: ZTicketUrlTemplate.nullable().describe(
        `a ticket's http(s) link with ${TICKET_KEY} where its key goes (https://acme.atlassian.net/browse/${TICKET_KEY}): link-ticket-to-test-case links external_ticket_id keys by it; null removes it`,
      ),
    })
    .partial()
    .strict(),
});
export const ZFlakySettingsResponse = z.strictObject({
  settings: z.strictObject({ ...FLAKY_SETTING_FIELDS, ticketUrlTemplate: z.string().optional().describe("absent when the repository sets none") }),
});

// Responses (documentation and tests; handlers build them from queue/records.ts types).

export const ZEmptyResponse = z.strictObject({}).strict();

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
});

export const ZSubmittedPullRequest = ZMergeItem.extend({
  forceEnqueued: z.boolean(),
  isCurrentlySubmittedToQueue: z.boolean(),
  readiness: z.strictObject({
    requiresImpactedTargets: z.boolean(),
    doesBaseBranchMatch: z.boolean(),
    hasImpactedTargets: z.boolean(),
    gitHubMergeability: z.enum(MERGEABILITY),
  }),
});

const ZPosition = z
  .strictObject({
    index: z.number().int().min(1).describe("1-based place in the line (single mode) or in the PR's lane (parallel mode)"),
    ahead: z.number().int().min(0).describe("how many PRs are ahead of it there"),
  })
  .nullable()
  .describe("null when the PR is not in line (not ready, being merged, or out of the queue)");
const ZEstimatedMergeAt = z.iso.datetime().nullable().describe("when the PR should merge, from the queue's recent CI durations and failure rate (docs/engine.md); null without history or when the PR is not in line");

/** A getQueue entry: a merge item with its place in line and estimate. */
export const ZQueuedItem = ZMergeItem.extend({ position: ZPosition, estimatedMergeAt: ZEstimatedMergeAt });

export const ZActor = z.strictObject({
  kind: z
    .enum(ACTOR_KINDS)
    .describe(
      "token: an API token (its name); user: a code host user's comment command (their login); engine: the queue's own decision; code_host: CI results, pushes, closed PRs, refusals (the host's name); fork_run: a fork PR's workflow run (its id)",
    ),
  name: z.string(),
});
const ZPrList = z.array(z.number().int());
const ZCheckEvidence = z.strictObject({ name: z.string(), state: z.enum(["pending", "success", "failure", "error"]), url: z.string().nullable() });
export const ZEvidence = z
  .strictObject({
    run: z
      .strictObject({
        id: z.string(),
        kind: z.enum(["main", "bisection"]),
        testBranch: z.string().nullable(),
        testedHead: z.string().nullable(),
        tested: ZPrList,
        testedTotal: z.number().int().optional(),
        stack: ZPrList,
        stackTotal: z.number().int().optional(),
      })
      .optional(),
    failingChecks: z.array(ZCheckEvidence).optional(),
    failingChecksTotal: z.number().int().optional(),
    missingChecks: z.array(z.string()).optional(),
    missingChecksTotal: z.number().int().optional(),
    seenChecks: z.array(z.string()).optional().describe("a diagnosis entry's checks that did appear on the testing branch"),
    seenChecksTotal: z.number().int().optional(),
    suggestions: z.record(z.string(), z.array(z.string())).optional().describe("a diagnosis entry's close names, per missing check (docs/diagnoses.md)"),
    blamedPr: z.number().int().optional(),
    bisection: z.strictObject({ batch: ZPrList, batchTotal: z.number().int().optional(), groupSize: z.number().int().optional(), culprit: z.number().int().optional() }).optional(),
    effect: z.strictObject({ kind: z.enum(["start_run", "merge"]), message: z.string() }).optional(),
    command: z.string().optional(),
    prHead: z.string().optional(),
    flaky: z
      .strictObject({
        decision: z.enum(["fail", "excuse", "retry"]),
        rule: z.enum(FLAKE_RULES),
        checks: z.array(z.string()),
        tests: z.array(z.strictObject({ id: z.string(), name: z.string(), file: z.string(), judgement: z.enum(TEST_JUDGEMENTS), failure: z.string().nullable() })),
        testsTotal: z.number().int().optional(),
        attempt: z.number().int().optional(),
        infrastructure: z.string().optional(),
      })
      .optional()
      .describe(`what the run's uploaded test results decided of its failed checks (docs/flaky-queue.md); tests keep at most ${VERDICT_TESTS_MAX}`),
  })
  .describe(`what the queue knew when the PR moved; lists keep at most ${EVIDENCE_LIST_MAX} items (…Total then says how many there were)`);
export const ZTimelineEntry = z.strictObject({
  at: z.iso.datetime(),
  state: z.enum(PR_STATES),
  previousState: z.enum(PR_STATES).nullable(),
  reason: z.string().describe("a stable reason code (docs/reasons.md)"),
  message: z.string().describe("the sentence the PR's status and comment on the code host say"),
  actor: ZActor,
  evidence: ZEvidence,
});

export const ZGetSubmittedPullRequestRequest = ZPullRequestAddress.extend({
  includeTimeline: z.boolean().optional().describe(`answer the PR's timeline: every transition, oldest first (at most ${TIMELINE_MAX}: the first and the latest are kept)`),
});
export const ZSubmittedPullRequestAnswer = ZSubmittedPullRequest.extend({
  position: ZPosition,
  estimatedMergeAt: ZEstimatedMergeAt,
  timeline: z.array(ZTimelineEntry).optional().describe("present when includeTimeline was true"),
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
      "paused/resumed/draining: from, to; settings_changed: changes (field → from, to); urgent_submission: prNumber; cancelled_by_other: prNumber, submittedBy; command: the API operation or comment command used",
    ),
});
export const ZGetQueueEventsResponse = z.strictObject({
  events: z.array(ZQueueEvent).describe("operator actions, newest first"),
  nextCursor: z.string().optional().describe("present when more events follow: send it as cursor for the next page"),
});

export const ZRunDiagnosis = z
  .strictObject({
    code: z.enum(RUN_DIAGNOSIS_CODES),
    message: z.string(),
    missingChecks: z.array(z.string()).describe("required checks with no report at all on the testing branch"),
    seenChecks: z.array(z.string()).describe("the checks that did appear on it"),
    suggestions: z.record(z.string(), z.array(z.string())).describe("per missing check, seen names it may have been meant as (case, punctuation, a few edits)"),
    at: z.iso.datetime(),
  })
  .describe(
    "why required checks had not appeared on the testing branch checksStartTimeoutMinutes after the run started (docs/diagnoses.md): no_checks_started (no check of any kind: CI does not trigger on greenline/**), check_names_mismatch (other checks appeared), path_filter_likely (they appeared on earlier testing branches of the queue). The run keeps waiting until the testing timeout",
  );

export const ZBlockedReason = z
  .strictObject({
    code: z.enum(BLOCKED_REASON_CODES),
    message: z.string(),
    since: z.iso.datetime().nullable(),
    evidence: z.record(z.string(), z.unknown()),
  })
  .describe("why the queue merges nothing while pull requests wait (docs/diagnoses.md)");

export const ZQueueWithEntries = ZQueueRecord.extend({
  neverSeenRequiredChecks: z.array(z.string()).describe("required checks never reported on any of the queue's latest 200 testing branches (empty until one of them had checksStartTimeoutMinutes to report)"),
  blockedReason: ZBlockedReason.nullable(),
  enqueuedPullRequests: z.array(ZQueuedItem),
});

const ZPageInfo = z.strictObject({
  total_rows: z.number().int(),
  total_pages: z.number().int(),
  next_page_token: z.string(),
  prev_page_token: z.string(),
  last_page_token: z.string(),
  page_index: z.number().int(),
});

const ZTestCase = z.strictObject({
  id: z.uuid(),
  repository: z.strictObject({ html_url: z.string() }),
  html_url: z.string(),
  name: z.string(),
  variant: z.string(),
  status: z.strictObject({ value: z.enum(["healthy", "flaky", "broken"]), reason: z.string(), timestamp: z.iso.datetime() }),
  most_common_failures: z.array(z.strictObject({ summary: z.string(), occurrence_count: z.number().int(), last_occurrence: z.iso.datetime() })),
  failure_rate_last_7d: z.number(),
  failure_rate_last_24h: z.number(),
  codeowners: z.array(z.string()),
  pull_requests_impacted_last_7d: z.number().int(),
  quarantined: z.boolean(),
  quarantine_setting: z.enum(["auto", "always", "never"]),
  quarantine_reason: z.string().nullable().describe("why the quarantine setting was last set, when a reason was given"),
  file_path: z.string(),
  parent: z.string(),
  classname: z.string(),
  ticket: z.strictObject({ html_url: z.string() }).optional().describe("the linked ticket; absent when none is linked (Trunk documents an object, never null)"),
});

export const ZListFailingTestsResponse = z.strictObject({ tests: z.array(ZTestCase), page: ZPageInfo });
export const ZListQuarantinedTestsResponse = z.strictObject({
  quarantined_tests: z.array(
    z.strictObject({
      name: z.string(),
      parent: z.string(),
      file: z.string(),
      classname: z.string(),
      status: z.enum(["HEALTHY", "FLAKY", "BROKEN"]),
      codeowners: z.array(z.string()),
      quarantine_setting: z.enum(["ALWAYS_QUARANTINE", "AUTO_QUARANTINE"]),
      quarantined_at: z.iso.datetime(),
      status_last_updated_at: z.iso.datetime(),
      test_case_id: z.uuid(),
      variant: z.string(),
    }),
  ),
  page: ZPageInfo,
});
export const ZListUnhealthyTestsRequest = z.object({
  repo: ZRepo,
  org_url_slug: ZName,
  page_query: ZPageQuery,
  status: caseInsensitiveEnum(["flaky", "broken"] as const)
    .optional()
    .describe("only tests of this status (FLAKY or BROKEN); omit for both"),
});
export const ZListUnhealthyTestsResponse = z.strictObject({
  unhealthy_tests: z.array(
    z.strictObject({
      name: z.string(),
      parent: z.string(),
      file: z.string(),
      classname: z.string(),
      status: z.enum(["FLAKY", "BROKEN"]),
      codeowners: z.array(z.string()),
      quarantined: z.boolean(),
      status_last_updated_at: z.iso.datetime(),
      test_case_id: z.uuid(),
      variant: z.string(),
    }),
  ),
  page: ZPageInfo,
});
export const ZTestCaseResponse = z.strictObject({ test: ZTestCase });
export const ZGetTestDetailsResponse = z.strictObject({
  test: ZTestCase,
  history: z.strictObject({
    days: z.array(z.strictObject({ date: z.iso.date(), runs: z.number().int(), failures: z.number().int() })).describe("runs and failed runs per UTC day, the last 30 days, oldest first"),
    pull_requests_impacted: z
      .array(z.strictObject({ number: z.number().int(), html_url: z.string(), failures: z.number().int(), last_failure: z.iso.datetime() }))
      .describe("pull requests the test failed on in the last 7 days, most recent first (at most 50)"),
  }),
});

export const ZErrorResponse = z.strictObject({
  error: z.strictObject({
    code: z.enum(ERROR_CODES),
    message: z.string(),
    details: z.array(z.strictObject({ path: z.string(), message: z.string() })),
  }),
});
export type TRepo = z.output<typeof ZRepo>;

/**
 * Trunk's v1 enums of a testing branch's checks (docs.trunk.io openapi.json,
 * getMergeQueueTestingDetails): GitHub's own values, UPPERCASE (docs/decisions.md).
 */
const CHECK_STATES = ["PENDING", "SUCCESS", "FAILURE", "ERROR"] as const;
const CHECK_RUN_STATUSES = ["QUEUED", "IN_PROGRESS", "COMPLETED"] as const;
const CHECK_RUN_CONCLUSIONS = ["SUCCESS", "FAILURE"] as const;

export const ZTestingDetails = z.strictObject({
  testRunId: z.string(),
  testBranch: z.string().optional().describe("absent until the run's testing branch is built (Trunk documents a string: never null)"),
  testBranchSha: z.string().optional().describe("absent until the run's testing branch is built (Trunk documents a string: never null)"),
  status: z.enum(["in_progress", "failed", "cancelled", "succeeded"]),
  failureReason: z.string().nullable(),
  isBisection: z.boolean(),
  requiredStatuses: z.array(z.string()),
  requiredStatusesSource: z.enum(REQUIRED_STATUSES_SOURCES),
  requiredStatusesWarning: z.string().optional(),
  statusChecks: z
    .array(
      z.strictObject({
        context: z.string(),
        url: z.string().optional().describe("absent: Greenline keeps no link for a commit status"),
        state: z.enum(CHECK_STATES).describe("GitHub's commit status state, in Trunk's UPPERCASE enum"),
      }),
    )
    .describe("the commit statuses of the testing branch (the required ones, pending until reported)"),
  checkSuites: z.array(
    z.strictObject({
      checkRuns: z.array(
        z.strictObject({
          name: z.string(),
          url: z.string().describe("the check run's page, or the testing commit's checks page when the run's id is not known"),
          status: z.enum(CHECK_RUN_STATUSES).describe("GitHub's check run status, in Trunk's UPPERCASE enum"),
          conclusion: z.enum(CHECK_RUN_CONCLUSIONS).optional().describe("present once status is COMPLETED"),
        }),
      ),
    }),
  ),
  testedPullRequests: z.array(z.strictObject({ prNumber: z.number().int(), prUrl: z.string(), title: z.string() })),
  impactedTargets: z.union([z.array(z.string()), z.literal("ALL")]),
  dependentPrs: z.array(z.number().int()),
  createdAt: z.iso.datetime(),
  finishedAt: z.iso.datetime().nullable(),
  diagnosis: ZRunDiagnosis.nullable(),
});

export const ZStatusQuery = z.object({});
export const ZStatusResponse = z.strictObject({ status: z.literal("ok") });

export const ZListPullRequestsRequest = ZQueueAddress.extend({
  state: caseInsensitiveEnum(PR_STATES).optional().describe("only PRs in this state now"),
  since: ZDateTime.optional().describe("only PRs that concluded (merged, failed, cancelled) at or after this time"),
  until: ZDateTime.optional().describe("only PRs that concluded at or before this time"),
  cursor: z.string().min(1).max(64).check(storableText).optional().describe("an earlier answer's nextCursor; omit for the first page"),
  take: z.number().int().min(1).max(100).default(50).describe("page size"),
}).superRefine((value, ctx) => {
  if (value.since && value.until && value.since > value.until) ctx.addIssue({ code: "custom", path: ["until"], message: "must not be before since" });
});
export const ZListPullRequestsResponse = z.strictObject({
  pullRequests: z.array(ZMergeItem),
  nextCursor: z.string().optional().describe("present when more PRs follow: send it as cursor for the next page"),
});

// Trunk's analytics CLI (`trunk flakytests upload`): camelCase bodies as it sends them
// (trunk-io/analytics-cli api/src/message.rs; a test as bundle/src/types.rs `Test`).

const ZCliText = z.string().max(4096).check(storableText);
const ZTrunkTest = z.object({
  name: ZCliText,
  parentName: ZCliText,
  className: ZCliText.nullish(),
  file: ZCliText.nullish(),
  id: ZCliText.describe("the client's id of the test (derived as Greenline derives ids, or the testcase's id attribute)"),
  timestamp_millis: z.number().int().min(-8.64e15).max(8.64e15).nullish(),
  is_quarantined: z.boolean().optional(),
  failure_message: z
    .string()
    .max(1024 * 1024)
    .check(storableText)
    .nullish(),
  variant: z.string().max(255).check(storableText).nullish(),
});
export const ZGetQuarantineConfigRequest = z.object({
  repo: ZRepo,
  orgUrlSlug: ZName,
  remoteUrls: z.array(z.string().max(4096).check(storableText)).max(100).optional(),
  testIdentifiers: z.array(ZTrunkTest).max(100_000).default([]).describe("the run's failed tests"),
});
export const ZGetQuarantineConfigResponse = z.strictObject({
  isDisabled: z.boolean().describe("always false: quarantine is never off for a repository (a test set to always stays quarantined)"),
  testIds: z.array(z.string()).describe("the ids, as the client sent them, of the tests that are quarantined"),
});
export const ZCreateBundleUploadRequest = z.object({
  repo: ZRepo,
  orgUrlSlug: ZName,
  clientVersion: ZName.optional(),
  remoteUrls: z.array(z.string().max(4096).check(storableText)).max(100).optional(),
  externalId: z.string().max(1024).check(storableText).nullish(),
  testCollectionShortId: z.string().max(1024).check(storableText).nullish(),
});
export const ZCreateBundleUploadResponse = z.strictObject({
  id: z.string().describe("the bundle's id; its results are stored as the upload of this id"),
  idV2: z.string().describe("the same id"),
  url: z.string().describe("where to PUT the bundle: absolute, signed, valid until it expires (GREENLINE_BUNDLE_URL_TTL_SECONDS)"),
  key: z.string().describe("a name for the bundle (Trunk's clients show it)"),
});
export const ZBundleReceived = z.strictObject({
  id: z.string(),
  stored: z.boolean().describe("false when the bundle was stored already (sent again)"),
  test_cases: z.number().int(),
  failures: z.number().int(),
});
// Outbound webhooks (docs/webhooks.md).

const ZWebhookEventFilter = z
  .array(z.enum([...WEBHOOK_EVENT_TYPES, ALL_WEBHOOK_EVENTS]))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length + 1)
  .describe(`the event types to send: any of ${WEBHOOK_EVENT_TYPES.join(", ")}, or "*" for every one`);
const ZWebhookUrl = z.string().min(1).max(2048).check(storableText).describe("where events are POSTed: https:// (http:// and private addresses only when the operator allows them)");
const ZEndpointId = z.string().min(1).max(64).check(storableText).describe("the endpoint's id");

export const ZCreateWebhookEndpointRequest = z.strictObject({
  url: ZWebhookUrl,
  events: ZWebhookEventFilter,
  description: z.string().max(500).check(storableText).optional(),
  secret: z.string().max(200).check(storableText).optional().describe("a Standard Webhooks secret (whsec_ + base64 of 24 to 64 bytes); generated when absent"),
});

export const ZWebhookEndpoint = z.strictObject({
  id: z.string(),
  url: z.string(),
  description: z.string(),
  events: z.array(z.string()),
  enabled: z.boolean(),
  disabledReason: z.string().nullable().describe("why it is disabled: by a user, after failing for 24 h, or after a 410 Gone"),
  failingSince: z.string().nullable().describe("the first failed attempt since the last success"),
  previousSecretExpiresAt: z.string().nullable().describe("after a rotation: until when the previous secret signs too"),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const ZWebhookEndpointWithSecret = z.strictObject({
  endpoint: ZWebhookEndpoint,
  secret: z.string().optional().describe("the signing secret, answered only when created or rotated"),
});

export const ZListWebhookEndpointsRequest = z.object({});
export const ZListWebhookEndpointsResponse = z.strictObject({ endpoints: z.array(ZWebhookEndpoint) });

export const ZUpdateWebhookEndpointRequest = z.strictObject({
  id: ZEndpointId,
  url: ZWebhookUrl.optional(),
  events: ZWebhookEventFilter.optional(),
  description: z.string().max(500).check(storableText).optional(),
  enabled: z.boolean().optional().describe("false disables it; true enables it again (its pending deliveries resume)"),
  rotateSecret: z.boolean().optional().describe("a new secret is answered; the previous one signs too for 24 hours"),
});

export const ZWebhookEndpointAddress = z.strictObject({ id: ZEndpointId });

export const ZListWebhookDeliveriesRequest = z.strictObject({
  id: ZEndpointId,
  pageSize: z.number().int().min(1).max(500).optional().describe("default 50"),
  pageToken: z.string().max(64).check(storableText).optional().describe("the previous page's nextPageToken"),
});

export const ZWebhookDelivery = z.strictObject({
  id: z.string(),
  webhookId: z.string().describe("the webhook-id header: the same on every attempt and redelivery"),
  eventType: z.string(),
  status: z.enum(["pending", "delivered"]),
  attempts: z.number(),
  createdAt: z.string(),
  nextAttemptAt: z.string().nullable(),
  deliveredAt: z.string().nullable(),
  lastAttemptAt: z.string().nullable(),
  lastStatus: z.number().nullable().describe("the HTTP status of the last attempt; null when there was no answer"),
  lastError: z.string().nullable(),
  payload: z.unknown(),
});

export const ZListWebhookDeliveriesResponse = z.strictObject({ deliveries: z.array(ZWebhookDelivery), nextPageToken: z.string().describe("empty on the last page") });
export const ZRedeliverWebhookRequest = z.strictObject({ id: ZEndpointId, deliveryId: z.string().min(1).max(64).check(storableText) });
export const ZRedeliverWebhookResponse = z.strictObject({ delivery: ZWebhookDelivery });
