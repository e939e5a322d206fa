import type { z } from "zod";
import type { Principal } from "../auth/tokens.js";
import { renderMetrics } from "../queue/metrics.js";
import { createBundleUpload, getQuarantineConfig, type BundleUrls } from "../flaky/bundle-uploads.js";
import { uploadTestResults } from "../flaky/ingest.js";
import { checkQuarantine, getFlakySettings, getTestDetails, linkTicket, listFailingTests, listQuarantinedTests, listUnhealthyTests, setQuarantineSetting, updateFlakySettings } from "../flaky/queries.js";
import { cancelPullRequest, getMergeQueueTestingDetails, getSubmittedPullRequestJson, restartTestsOnPullRequest, setImpactedTargets, submitPullRequest, type TestRunAddress } from "../queue/pull-requests.js";
import type { ForkedRunUpload } from "../queue/forked-runs.js";
import { listPullRequests } from "../queue/pull-request-list.js";
import { createQueue, deleteQueue, getQueueEvents, getQueueJson, updateQueue } from "../queue/queues.js";
import type { Services } from "../app/services.js";
import { createWebhookEndpoint, deleteWebhookEndpoint, listWebhookDeliveries, listWebhookEndpoints, redeliverWebhook, updateWebhookEndpoint } from "../outbound/endpoints.js";
import * as s from "./schemas.js";

export type OperationContext = {
  services: Services;
  principal: Principal;
  /** The service's public address (GREENLINE_PUBLIC_URL, else the request's), for URLs answered. */
  origin: string;
  bundleUrls: BundleUrls;
  /**
   * Told, in its users' words, when an operation succeeded without doing what was asked (a
   * restart of a PR that never started testing). The API answers as usual; the dashboard shows it.
   */
  explain?: (sentence: string) => void;
};

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
   * what the request says the run is for, checked by queue/forked-runs.ts.
   */
  forkedRun?(input: z.output<S>): ForkedRunUpload;
  /** The operation changes something: a read-only token is refused (403). */
  writes?: true;
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
    writes: true,
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
    writes: true,
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
    writes: true,
    method: "post",
    path: "/restartTestsOnPullRequest",
    summary: "Re-run the tests of a pull request in the queue",
    request: s.ZPullRequestAddress,
    response: s.ZEmptyResponse,
    async handle({ services, principal, explain }, input) {
      const outcome = await restartTestsOnPullRequest(services, principal, prAddress(input));
      if (!outcome.restarted) explain?.(outcome.why);
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
    writes: true,
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
    writes: true,
    method: "post",
    path: "/createQueue",
    summary: "Create a queue for a branch, optionally with any updateQueue setting",
    request: s.ZCreateQueueRequest,
    response: s.ZQueueRecord,
    handle: ({ services, principal }, input) => createQueue(services, principal, input),
  }),
  operation({
    operationId: "deleteQueue",
    writes: true,
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
    writes: true,
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
    writes: true,
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
    writes: true,
    method: "post",
    path: "/flaky-tests/set-quarantine-setting",
    summary: "Always or never quarantine a test, or return it to automatic quarantine",
    request: s.ZSetQuarantineSettingRequest,
    response: s.ZTestCaseResponse,
    handle: ({ services, principal }, input) => setQuarantineSetting(services, principal, input),
  }),
  operation({
    operationId: "linkTicketToTestCase",
    writes: true,
    method: "post",
    path: "/flaky-tests/link-ticket-to-test-case",
    summary: "Link a ticket to a test case (null unlinks)",
    request: s.ZLinkTicketRequest,
    response: s.ZTestCaseResponse,
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
    writes: true,
    method: "post",
    path: "/flaky-tests/update-settings",
    summary: "Change a repository's detection and quarantine settings; tests are re-judged",
    request: s.ZUpdateFlakySettingsRequest,
    response: s.ZFlakySettingsResponse,
    handle: ({ services, principal }, input) => updateFlakySettings(services, principal, input),
  }),
  operation({
    operationId: "getQuarantineConfig",
    method: "post",
    path: "/metrics/getQuarantineConfig",
    summary: "Trunk's analytics CLI: which of a run's failed tests are quarantined (answered by the client's ids)",
    request: s.ZGetQuarantineConfigRequest,
    response: s.ZGetQuarantineConfigResponse,
    handle: ({ services, principal }, input) => getQuarantineConfig(services, principal, input),
  }),
  operation({
    operationId: "createBundleUpload",
    writes: true,
    method: "post",
    path: "/metrics/createBundleUpload",
    summary: "Trunk's analytics CLI: a signed, short-lived URL on Greenline to PUT a test bundle to (PUT /bundles/{id})",
    request: s.ZCreateBundleUploadRequest,
    response: s.ZCreateBundleUploadResponse,
    handle: async ({ services, principal, origin, bundleUrls }, input) => createBundleUpload(services, principal, bundleUrls, origin, input),
  }),
  operation({
    operationId: "createWebhookEndpoint",
    writes: true,
    method: "post",
    path: "/webhooks/create-endpoint",
    summary: "Create an outbound webhook endpoint: its URL, the events it receives, its signing secret (answered once); at most 20 per organization (409 past it)",
    request: s.ZCreateWebhookEndpointRequest,
    response: s.ZWebhookEndpointWithSecret,
    handle: ({ services, principal }, input) => createWebhookEndpoint(services, principal, input),
  }),
  operation({
    operationId: "listWebhookEndpoints",
    method: "get",
    path: "/webhooks/list-endpoints",
    summary: "List the organization's outbound webhook endpoints (disabled ones say why)",
    request: s.ZListWebhookEndpointsRequest,
    response: s.ZListWebhookEndpointsResponse,
    handle: ({ services, principal }) => listWebhookEndpoints(services, principal),
  }),
  operation({
    operationId: "updateWebhookEndpoint",
    writes: true,
    method: "post",
    path: "/webhooks/update-endpoint",
    summary: "Change an endpoint's URL, events or description, enable or disable it, or rotate its secret",
    request: s.ZUpdateWebhookEndpointRequest,
    response: s.ZWebhookEndpointWithSecret,
    handle: ({ services, principal }, input) => updateWebhookEndpoint(services, principal, input),
  }),
  operation({
    operationId: "deleteWebhookEndpoint",
    writes: true,
    method: "post",
    path: "/webhooks/delete-endpoint",
    summary: "Delete an endpoint and its deliveries",
    request: s.ZWebhookEndpointAddress,
    response: s.ZEmptyResponse,
    async handle({ services, principal }, input) {
      await deleteWebhookEndpoint(services, principal, input.id);
      return EMPTY;
    },
  }),
  operation({
    operationId: "listWebhookDeliveries",
    method: "post",
    path: "/webhooks/list-deliveries",
    summary: "List an endpoint's deliveries, newest first (paged), with their attempts and last answer",
    request: s.ZListWebhookDeliveriesRequest,
    response: s.ZListWebhookDeliveriesResponse,
    handle: ({ services, principal }, input) => listWebhookDeliveries(services, principal, input),
  }),
  operation({
    operationId: "redeliverWebhook",
    writes: true,
    method: "post",
    path: "/webhooks/redeliver",
    summary: "Send a delivery again (the same webhook-id): now if still pending, else as a new delivery",
    request: s.ZRedeliverWebhookRequest,
    response: s.ZRedeliverWebhookResponse,
    handle: ({ services, principal }, input) => redeliverWebhook(services, principal, input),
  }),
];
