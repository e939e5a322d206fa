import { z } from "zod";
import { RUN_DIAGNOSIS_CODES } from "../../domain/diagnoses.js";
import { FLAKE_RULES, TEST_JUDGEMENTS, VERDICT_TESTS_MAX } from "../../domain/flaky/verdict.js";
import { PRIORITY_NAMES, type PriorityName } from "../../domain/priority.js";
import { REQUIRED_STATUSES_SOURCES } from "../../domain/queue-settings.js";
import { MERGEABILITY, PR_STATES } from "../../domain/states.js";
import { EVIDENCE_LIST_MAX, TIMELINE_MAX } from "../../domain/timeline.js";
import { caseInsensitiveEnum, storableText, ZDateTime, ZPr, ZSha } from "../shared/schemas.js";
import { ZActor, ZEstimatedMergeAt, ZMergeItem, ZPosition, ZPullRequestAddress, ZQueueAddress } from "./queue-schemas.js";

/**
 * The pull request operations' schemas (pull-request-operations.ts): submitting, impacted
 * targets, a submitted PR and its timeline, test runs, the list of a queue's PRs.
 */

const priorityNames = Object.keys(PRIORITY_NAMES) as [PriorityName, ...PriorityName[]];
export const ZPriority = z
  .union([
    z.number().int().min(0).max(255),
    caseInsensitiveEnum([...priorityNames, "emergency"]),
    z
      .string()
      .regex(/^\d{1,3}$/, "must be a priority name or a number from 0 to 255")
      .transform(Number)
      .pipe(z.number().max(255)),
  ])
  .nullable()
  .describe(
    "urgent (0), high (10), medium (100, the default), low (200), or any integer from 0 (first) to 255 (last); emergency: ahead of everything and merged through a freeze, with emergencyReason, by an admin token (docs/freezes.md)",
  );

export const ZSubmitPullRequestRequest = ZPullRequestAddress.extend({
  priority: ZPriority.optional(),
  noBatch: z.boolean().optional().describe("test this PR on its own, never in a batch"),
  emergencyReason: z
    .string()
    .max(255)
    .regex(/\S/, "must not be blank")
    .trim()
    .check(storableText)
    .optional()
    .describe(
      "an emergency merge (a hotfix), with why: tested ahead of every other pull request and merged even while the queue is frozen; needs an API token with role admin; implies priority emergency (docs/freezes.md); resubmitting without it ends the emergency",
    ),
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
export type TTestingDetailsRequest = z.output<typeof ZTestingDetailsRequest>;

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
