import { backtestFlakyPolicy } from "../../flaky/backtest.js";
import { createBundleUpload, getQuarantineConfig } from "../../flaky/bundle-uploads.js";
import { uploadTestResults } from "../../flaky/ingest.js";
import { uploadTestResultsPart } from "../../flaky/upload-parts.js";
import { checkQuarantine, getFlakySettings, getTestDetails, linkTicket, listFailingTests, listQuarantinedTests, listUnhealthyTests, setQuarantineSetting, updateFlakySettings } from "../../flaky/queries.js";
import { type Operation, operation } from "../shared/operation.js";
import { ZCreateBundleUploadRequest, ZCreateBundleUploadResponse, ZGetQuarantineConfigRequest, ZGetQuarantineConfigResponse } from "./bundle-schemas.js";
import {
  ZBacktestFlakyPolicyRequest,
  ZBacktestFlakyPolicyResponse,
  ZCheckQuarantineRequest,
  ZCheckQuarantineResponse,
  ZFlakySettingsRequest,
  ZFlakySettingsResponse,
  ZGetTestDetailsRequest,
  ZGetTestDetailsResponse,
  ZLinkTicketRequest,
  ZListFailingTestsRequest,
  ZListFailingTestsResponse,
  ZListQuarantinedTestsRequest,
  ZListQuarantinedTestsResponse,
  ZListUnhealthyTestsRequest,
  ZListUnhealthyTestsResponse,
  ZSetQuarantineSettingRequest,
  ZTestCaseResponse,
  ZUpdateFlakySettingsRequest,
} from "./test-schemas.js";
import { ZUploadTestResultsRequest, ZUploadTestResultsResponse } from "./upload-schemas.js";

/**
 * The flaky tests: list and read them, upload JUnit results, quarantine and tickets, settings;
 * and Trunk's analytics CLI's quarantine check and bundle uploads (the bundle's PUT is served
 * beside the operations: app.ts).
 */
export const FLAKY_TEST_OPERATIONS: Operation[] = [
  operation({
    operationId: "listFailingTests",
    method: "post",
    path: "/flaky-tests/list-failing-tests",
    summary: "List distinct tests that failed in [start_time, end_time)",
    request: ZListFailingTestsRequest,
    response: ZListFailingTestsResponse,
    handle: ({ services, principal }, input) => listFailingTests(services, principal, input),
  }),
  operation({
    operationId: "listQuarantinedTests",
    method: "post",
    path: "/flaky-tests/list-quarantined-tests",
    summary: "List quarantined tests",
    request: ZListQuarantinedTestsRequest,
    response: ZListQuarantinedTestsResponse,
    handle: ({ services, principal }, input) => listQuarantinedTests(services, principal, input),
  }),
  operation({
    operationId: "listUnhealthyTests",
    method: "post",
    path: "/flaky-tests/list-unhealthy-tests",
    summary: "List the tests flaky or broken now (status narrows to one)",
    request: ZListUnhealthyTestsRequest,
    response: ZListUnhealthyTestsResponse,
    handle: ({ services, principal }, input) => listUnhealthyTests(services, principal, input),
  }),
  operation({
    operationId: "getTestDetails",
    method: "post",
    path: "/flaky-tests/get-test-details",
    summary: "Read one test case",
    request: ZGetTestDetailsRequest,
    response: ZGetTestDetailsResponse,
    handle: ({ services, principal }, input) => getTestDetails(services, principal, input),
  }),
  operation({
    operationId: "uploadTestResults",
    writes: true,
    method: "post",
    path: "/flaky-tests/upload",
    summary: "Upload JUnit XML results of one CI job (atomic: all stored, or nothing)",
    request: ZUploadTestResultsRequest,
    response: ZUploadTestResultsResponse,
    // A report larger than a request may be comes in parts (`part`), stored as one upload when the last is in.
    handle: ({ services, principal }, input) => (input.part ? uploadTestResultsPart(services, principal, { ...input, part: input.part }) : uploadTestResults(services, principal, input)),
  }),
  operation({
    operationId: "checkQuarantine",
    method: "post",
    path: "/flaky-tests/check-quarantine",
    summary: "Which of the given tests are quarantined (for CI deciding whether failures may pass)",
    request: ZCheckQuarantineRequest,
    response: ZCheckQuarantineResponse,
    handle: ({ services, principal }, input) => checkQuarantine(services, principal, input),
  }),
  operation({
    operationId: "setQuarantineSetting",
    writes: true,
    method: "post",
    path: "/flaky-tests/set-quarantine-setting",
    summary: "Always or never quarantine a test, or return it to automatic quarantine",
    request: ZSetQuarantineSettingRequest,
    response: ZTestCaseResponse,
    handle: ({ services, principal }, input) => setQuarantineSetting(services, principal, input),
  }),
  operation({
    operationId: "linkTicketToTestCase",
    writes: true,
    method: "post",
    path: "/flaky-tests/link-ticket-to-test-case",
    summary: "Link a ticket to a test case (null unlinks)",
    request: ZLinkTicketRequest,
    response: ZTestCaseResponse,
    handle: ({ services, principal }, input) => linkTicket(services, principal, input),
  }),
  operation({
    operationId: "getFlakySettings",
    method: "post",
    path: "/flaky-tests/get-settings",
    summary: "Read a repository's detection and quarantine settings",
    request: ZFlakySettingsRequest,
    response: ZFlakySettingsResponse,
    handle: ({ services, principal }, input) => getFlakySettings(services, principal, input),
  }),
  operation({
    operationId: "updateFlakySettings",
    writes: true,
    method: "post",
    path: "/flaky-tests/update-settings",
    summary: "Change a repository's detection and quarantine settings; tests are re-judged",
    request: ZUpdateFlakySettingsRequest,
    response: ZFlakySettingsResponse,
    handle: ({ services, principal }, input) => updateFlakySettings(services, principal, input),
  }),
  operation({
    operationId: "backtestFlakyPolicy",
    method: "post",
    path: "/flaky-tests/backtest-policy",
    summary: "Replay a repository's stored results under other detection and quarantine settings: what would have changed",
    request: ZBacktestFlakyPolicyRequest,
    response: ZBacktestFlakyPolicyResponse,
    handle: async ({ services, principal }, input) => (await backtestFlakyPolicy(services, principal, input)).answer,
  }),
  operation({
    operationId: "getQuarantineConfig",
    method: "post",
    path: "/metrics/getQuarantineConfig",
    summary: "Trunk's analytics CLI: which of a run's failed tests are quarantined (answered by the client's ids)",
    request: ZGetQuarantineConfigRequest,
    response: ZGetQuarantineConfigResponse,
    handle: ({ services, principal }, input) => getQuarantineConfig(services, principal, input),
  }),
  operation({
    operationId: "createBundleUpload",
    writes: true,
    method: "post",
    path: "/metrics/createBundleUpload",
    summary: "Trunk's analytics CLI: a signed, short-lived URL on Greenline to PUT a test bundle to (PUT /bundles/{id})",
    request: ZCreateBundleUploadRequest,
    response: ZCreateBundleUploadResponse,
    handle: async ({ services, principal, origin, bundleUrls }, input) => createBundleUpload(services, principal, bundleUrls, origin, input),
  }),
];
