import { cancelPullRequest, getMergeQueueTestingDetails, getSubmittedPullRequestJson, restartTestsOnPullRequest, setImpactedTargets, submitPullRequest, type TestRunAddress } from "../../queue/pull-requests.js";
import { listPullRequests } from "../../queue/pull-request-list.js";
import { EMPTY, json, type Operation, operation } from "../shared/operation.js";
import { type TRepo, ZEmptyResponse } from "../shared/schemas.js";
import {
  type TTestingDetailsRequest,
  ZGetSubmittedPullRequestRequest,
  ZListPullRequestsRequest,
  ZListPullRequestsResponse,
  ZSetImpactedTargetsRequest,
  ZSubmitPullRequestRequest,
  ZSubmittedPullRequestAnswer,
  ZTestingDetails,
  ZTestingDetailsRequest,
} from "./pull-request-schemas.js";
import { ZPullRequestAddress } from "./queue-schemas.js";

const prAddress = (input: { repo: TRepo; targetBranch: string; pr: { number: number } }) => ({
  repo: input.repo,
  targetBranch: input.targetBranch,
  prNumber: input.pr.number,
});

/** The run asked for: by testRunId (Trunk's clients), else the PR's latest (the schema requires one of them). */
function testRunAddress(input: TTestingDetailsRequest): TestRunAddress {
  const queue = { repo: input.repo, targetBranch: input.targetBranch };
  if (input.testRunId !== undefined) return { ...queue, testRunId: input.testRunId };
  if (input.pr === undefined) throw new Error("ZTestingDetailsRequest let through a body with neither testRunId nor pr");
  return { ...queue, prNumber: input.pr.number };
}

/** A queue's pull requests: submit, cancel, restart, read, list, impacted targets, test runs. */
export const PULL_REQUEST_OPERATIONS: Operation[] = [
  operation({
    operationId: "submitPullRequest",
    writes: true,
    method: "post",
    path: "/submitPullRequest",
    summary: "Submit a pull request to the queue, or update its priority and batching if it is queued",
    request: ZSubmitPullRequestRequest,
    response: ZEmptyResponse,
    async handle({ services, principal }, input) {
      await submitPullRequest(services, principal, { ...prAddress(input), priority: input.priority, noBatch: input.noBatch, emergencyReason: input.emergencyReason ?? null });
      return EMPTY;
    },
  }),
  operation({
    operationId: "cancelPullRequest",
    writes: true,
    method: "post",
    path: "/cancelPullRequest",
    summary: "Remove a pull request from the queue",
    request: ZPullRequestAddress,
    response: ZEmptyResponse,
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
    request: ZPullRequestAddress,
    response: ZEmptyResponse,
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
    request: ZGetSubmittedPullRequestRequest,
    response: ZSubmittedPullRequestAnswer,
    handle: async ({ services, principal }, input) => json(await getSubmittedPullRequestJson(services, principal, { ...prAddress(input), includeTimeline: input.includeTimeline === true })),
  }),
  operation({
    operationId: "listPullRequests",
    method: "post",
    path: "/listPullRequests",
    summary: "List the queue's pull requests, most recently submitted first, by state or by when they concluded (paged)",
    request: ZListPullRequestsRequest,
    response: ZListPullRequestsResponse,
    handle: ({ services, principal }, input) => listPullRequests(services, principal, input),
  }),
  operation({
    operationId: "setImpactedTargets",
    writes: true,
    method: "post",
    path: "/setImpactedTargets",
    summary: "Set the targets a pull request impacts (parallel mode builds lanes from them)",
    request: ZSetImpactedTargetsRequest,
    response: ZEmptyResponse,
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
    request: ZTestingDetailsRequest,
    response: ZTestingDetails,
    handle: ({ services, principal }, input) => getMergeQueueTestingDetails(services, principal, testRunAddress(input)),
  }),
];
