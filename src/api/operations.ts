import type { z } from "zod";
import type { Principal } from "../auth/tokens.js";
import { renderMetrics } from "../app/metrics.js";
import { uploadTestResults } from "../flaky/ingest.js";
import { checkQuarantine, getFlakySettings, getTestDetails, linkTicket, listFailingTests, listQuarantinedTests, listUnhealthyTests, setQuarantineSetting, updateFlakySettings } from "../flaky/queries.js";
import { cancelPullRequest, getMergeQueueTestingDetails, getSubmittedPullRequestJson, restartTestsOnPullRequest, setImpactedTargets, submitPullRequest, type TestRunAddress } from "../app/pull-requests.js";
import type { ForkedRunUpload } from "../app/forked-runs.js";
import { listPullRequests } from "../app/pull-request-list.js";
import { createQueue, deleteQueue, getQueueEvents, getQueueJson, updateQueue } from "../app/queues.js";
import type { Services } from "../app/services.js";
import * as s from "./schemas.js";

export type OperationContext = { services: Services; principal: Principal };

/** A response that is not JSON (the metrics text). */
export type RawResponse = { raw: true; contentType: string; body: string };

export type Operation<S extends z.ZodType = z.ZodType> = {
  operationId: string;
  method: "post" | "get";
  /** Path below /v1. */
  path: string;
  summary: string;
  /** Validates the JSON body (POST) or the query string (GET). */
  request: S;
  response: z.ZodType;
  responseContentType?: string;
  handle(context: OperationContext, input: z.output<S>): Promise<object | RawResponse>;
  /**
   * Present when a fork PR's workflow run may stand in for the token (x-forked-workflow-run-id):
   * what the request says the run is for, checked by app/forked-runs.ts.
   */
  forkedRun?(input: z.output<S>): ForkedRunUpload;
};

function operation<S extends z.ZodType>(op: Operation<S>): Operation {
  return op as unknown as Operation;
}

const EMPTY = {};
/** An answer already serialized (from the ReadCache). */
const json = (body: string): RawResponse => ({ raw: true, contentType: "application/json; charset=utf-8", body });
const prAddress = (input: { repo: s.TRepo; targetBranch: string; pr: { number: number } }) => ({
  repo: input.repo,
  targetBranch: input.targetBranch,
  prNumber: input.pr.number,
});

/** The run asked for: by testRunId (Trunk's clients), else the PR's latest (the schema requires one of them). */
function testRunAddress(input: z.output<typeof s.ZTestingDetailsRequest>): TestRunAddress {
  const queue = { repo: input.repo, targetBranch: input.targetBranch };
  if (input.testRunId !== undefined) return { ...queue, testRunId: input.testRunId };
  if (input.pr === undefined) throw new Error("ZTestingDetailsRequest let through a body with neither testRunId nor pr");
  return { ...queue, prNumber: input.pr.number };
}

export const OPERATIONS: Operation[] = [
  operation({
    operationId: "getStatus",
    method: "get",
    path: "/status",
    summary: "Whether the service is up and the x-api-token is valid (clients check it before they start)",
    request: s.ZStatusQuery,
    response: s.ZStatusResponse,
    handle: async () => ({ status: "ok" }),
  }),
  operation({
    operationId: "submitPullRequest",
    method: "post",
    path: "/submitPullRequest",
    summary: "Submit a pull request to the queue, or update its priority and batching if it is queued",
    request: s.ZSubmitPullRequestRequest,
    response: s.ZEmptyResponse,
    async handle({ services, principal }, input) {
      await submitPullRequest(services, principal, { ...prAddress(input), priority: input.priority, noBatch: input.noBatch });
      return EMPTY;
    },
  }),
  operation({
    operationId: "cancelPullRequest",
    method: "post",
    path: "/cancelPullRequest",
    summary: "Remove a pull request from the queue",
    request: s.ZPullRequestAddress,
    response: s.ZEmptyResponse,
    async handle({ services, principal }, input) {
      await cancelPullRequest(services, principal, prAddress(input));
      return EMPTY;
    },
  }),
  operation({
    operationId: "restartTestsOnPullRequest",
    method: "post",
    path: "/restartTestsOnPullRequest",
    summary: "Re-run the tests of a pull request in the queue",
    request: s.ZPullRequestAddress,
    response: s.ZEmptyResponse,
    async handle({ services, principal }, input) {
      await restartTestsOnPullRequest(services, principal, prAddress(input));
      return EMPTY;
    },
  }),
  operation({
    operationId: "getSubmittedPullRequest",
    method: "post",
    path: "/getSubmittedPullRequest",
    summary: "Read a submitted pull request's state, priority, readiness, place in line and estimated merge time, and (includeTimeline) its timeline",
    request: s.ZGetSubmittedPullRequestRequest,
    response: s.ZSubmittedPullRequestAnswer,
    handle: async ({ services, principal }, input) => json(await getSubmittedPullRequestJson(services, principal, { ...prAddress(input), includeTimeline: input.includeTimeline === true })),
  }),
  operation({
    operationId: "listPullRequests",
    method: "post",
    path: "/listPullRequests",
    summary: "List the queue's pull requests, most recently submitted first, by state or by when they concluded (paged)",
    request: s.ZListPullRequestsRequest,
    response: s.ZListPullRequestsResponse,
    handle: ({ services, principal }, input) => listPullRequests(services, principal, input),
  }),
  operation({
    operationId: "setImpactedTargets",
    method: "post",
    path: "/setImpactedTargets",
    summary: "Set the targets a pull request impacts (parallel mode builds lanes from them)",
    request: s.ZSetImpactedTargetsRequest,
    response: s.ZEmptyResponse,
    forkedRun: (input) => ({ ...prAddress(input), sha: input.pr.sha }),
    async handle({ services, principal }, input) {
      await setImpactedTargets(services, principal, { ...prAddress(input), sha: input.pr.sha, impactedTargets: input.impactedTargets });
      return EMPTY;
    },
  }),
  operation({
    operationId: "getMergeQueueTestingDetails",
    method: "post",
    path: "/getMergeQueueTestingDetails",
    summary: "Read a test run: the one named by testRunId, or the pull request's current one",
    request: s.ZTestingDetailsRequest,
    response: s.ZTestingDetails,
    handle: ({ services, principal }, input) => getMergeQueueTestingDetails(services, principal, testRunAddress(input)),
  }),
  operation({
    operationId: "createQueue",
    method: "post",
    path: "/createQueue",
    summary: "Create a queue for a branch, optionally with any updateQueue setting",
    request: s.ZCreateQueueRequest,
    response: s.ZQueueRecord,
    handle: ({ services, principal }, input) => createQueue(services, principal, input),
  }),
  operation({
    operationId: "deleteQueue",
    method: "post",
    path: "/deleteQueue",
    summary: "Delete a queue that holds no pull requests still in play",
    request: s.ZQueueAddress,
    response: s.ZEmptyResponse,
    async handle({ services, principal }, input) {
      await deleteQueue(services, principal, input);
      return EMPTY;
    },
  }),
  operation({
    operationId: "getQueue",
    method: "post",
    path: "/getQueue",
    summary: "Read a queue's state, settings and enqueued pull requests",
    request: s.ZQueueAddress,
    response: s.ZQueueWithEntries,
    handle: async ({ services, principal }, input) => json(await getQueueJson(services, principal, input)),
  }),
  operation({
    operationId: "getQueueEvents",
    method: "post",
    path: "/getQueueEvents",
    summary: "List who paused, resumed or drained the queue, changed its settings, submitted urgently or cancelled someone else's pull request, newest first (paged)",
    request: s.ZGetQueueEventsRequest,
    response: s.ZGetQueueEventsResponse,
    handle: ({ services, principal }, input) => getQueueEvents(services, principal, input),
  }),
  operation({
    operationId: "updateQueue",
    method: "post",
    path: "/updateQueue",
    summary: "Change a queue's state or settings; omitted fields are unchanged",
    request: s.ZUpdateQueueRequest,
    response: s.ZQueueRecord,
    handle: ({ services, principal }, input) => updateQueue(services, principal, input),
  }),
  operation({
    operationId: "getMergeQueueMetrics",
    method: "get",
    path: "/getMergeQueueMetrics",
    summary: "Queue metrics in the Prometheus text format",
    request: s.ZMetricsQuery,
    response: s.ZEmptyResponse,
    responseContentType: "text/plain; version=0.0.4; charset=utf-8",
    async handle({ services, principal }, input) {
      const { contentType, body } = await renderMetrics(services, principal, input);
      return { raw: true, contentType, body } satisfies RawResponse;
    },
  }),
  operation({
    operationId: "listFailingTests",
    method: "post",
    path: "/flaky-tests/list-failing-tests",
    summary: "List distinct tests that failed in [start_time, end_time)",
    request: s.ZListFailingTestsRequest,
    response: s.ZListFailingTestsResponse,
    handle: ({ services, principal }, input) => listFailingTests(services, principal, input),
  }),
  operation({
    operationId: "listQuarantinedTests",
    method: "post",
    path: "/flaky-tests/list-quarantined-tests",
    summary: "List quarantined tests",
    request: s.ZListQuarantinedTestsRequest,
    response: s.ZListQuarantinedTestsResponse,
    handle: ({ services, principal }, input) => listQuarantinedTests(services, principal, input),
  }),
  operation({
    operationId: "listUnhealthyTests",
    method: "post",
    path: "/flaky-tests/list-unhealthy-tests",
    summary: "List the tests flaky or broken now (status narrows to one)",
    request: s.ZListUnhealthyTestsRequest,
    response: s.ZListUnhealthyTestsResponse,
    handle: ({ services, principal }, input) => listUnhealthyTests(services, principal, input),
  }),
  operation({
    operationId: "getTestDetails",
    method: "post",
    path: "/flaky-tests/get-test-details",
    summary: "Read one test case",
    request: s.ZGetTestDetailsRequest,
    response: s.ZGetTestDetailsResponse,
    handle: ({ services, principal }, input) => getTestDetails(services, principal, input),
  }),
  operation({
    operationId: "uploadTestResults",
    method: "post",
    path: "/flaky-tests/upload",
    summary: "Upload JUnit XML results of one CI job (atomic: all stored, or nothing)",
    request: s.ZUploadTestResultsRequest,
    response: s.ZUploadTestResultsResponse,
    handle: ({ services, principal }, input) => uploadTestResults(services, principal, input),
  }),
  operation({
    operationId: "checkQuarantine",
    method: "post",
    path: "/flaky-tests/check-quarantine",
    summary: "Which of the given tests are quarantined (for CI deciding whether failures may pass)",
    request: s.ZCheckQuarantineRequest,
    response: s.ZCheckQuarantineResponse,
    handle: ({ services, principal }, input) => checkQuarantine(services, principal, input),
  }),
  operation({
    operationId: "setQuarantineSetting",
    method: "post",
    path: "/flaky-tests/set-quarantine-setting",
    summary: "Always or never quarantine a test, or return it to automatic quarantine",
    request: s.ZSetQuarantineSettingRequest,
    response: s.ZGetTestDetailsResponse,
    handle: ({ services, principal }, input) => setQuarantineSetting(services, principal, input),
  }),
  operation({
    operationId: "linkTicketToTestCase",
    method: "post",
    path: "/flaky-tests/link-ticket-to-test-case",
    summary: "Link a ticket to a test case (null unlinks)",
    request: s.ZLinkTicketRequest,
    response: s.ZGetTestDetailsResponse,
    handle: ({ services, principal }, input) => linkTicket(services, principal, input),
  }),
  operation({
    operationId: "getFlakySettings",
    method: "post",
    path: "/flaky-tests/get-settings",
    summary: "Read a repository's detection and quarantine settings",
    request: s.ZFlakySettingsRequest,
    response: s.ZFlakySettingsResponse,
    handle: ({ services, principal }, input) => getFlakySettings(services, principal, input),
  }),
  operation({
    operationId: "updateFlakySettings",
    method: "post",
    path: "/flaky-tests/update-settings",
    summary: "Change a repository's detection and quarantine settings; tests are re-judged",
    request: s.ZUpdateFlakySettingsRequest,
    response: s.ZFlakySettingsResponse,
    handle: ({ services, principal }, input) => updateFlakySettings(services, principal, input),
  }),
];
