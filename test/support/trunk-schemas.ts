import { type JsonSchema, schemaErrors } from "./json-schema.js";

/**
 * Trunk's documented v1 shapes that Greenline's answers must fit, as Trunk's OpenAPI document
 * states them (trunk-io/docs2 openapi.json at de8b223, served as docs.trunk.io/api/v1): types,
 * enums and required fields only, transcribed by hand. Trunk allows fields beyond these
 * (no additionalProperties), so Greenline's own extra fields pass.
 */
const string: JsonSchema = { type: "string" };
const number: JsonSchema = { type: "number" };
const strings: JsonSchema = { type: "array", items: string };

/** getMergeQueueTestingDetails' 200 answer. */
export const TRUNK_TESTING_DETAILS: JsonSchema = {
  type: "object",
  properties: {
    requiredStatuses: strings,
    requiredStatusesSource: { type: "string" },
    testBranch: string,
    testBranchSha: string,
    createdAt: string,
    status: { type: "string", enum: ["in_progress", "failed", "cancelled", "succeeded"] },
    checkSuites: {
      type: "array",
      items: {
        type: "object",
        properties: {
          checkRuns: {
            type: "array",
            items: {
              type: "object",
              properties: {
                name: string,
                url: string,
                status: { type: "string", enum: ["QUEUED", "IN_PROGRESS", "COMPLETED"] },
                conclusion: { type: "string", enum: ["ACTION_REQUIRED", "CANCELLED", "FAILURE", "NEUTRAL", "SUCCESS", "SKIPPED", "STALE", "TIMED_OUT"] },
              },
              required: ["name", "url"],
            },
          },
        },
        required: ["checkRuns"],
      },
    },
    statusChecks: {
      type: "array",
      items: {
        type: "object",
        properties: { context: string, url: string, state: { type: "string", enum: ["ERROR", "FAILURE", "PENDING", "SUCCESS"] } },
        required: ["context"],
      },
    },
    testedPullRequests: {
      type: "array",
      items: { type: "object", properties: { prNumber: number, prUrl: string, title: string }, required: ["prNumber", "prUrl", "title"] },
    },
    impactedTargets: strings,
    impactedTargetsForTestedPrs: strings,
    dependentPrs: { type: "array", items: number },
  },
  required: ["requiredStatuses", "testBranch", "testBranchSha", "checkSuites", "statusChecks", "testedPullRequests"],
};

/** The answer for a run whose testing branch is not built yet: the same, testBranch and testBranchSha left out (never null). */
export const TRUNK_TESTING_DETAILS_UNBUILT: JsonSchema = { ...TRUNK_TESTING_DETAILS, required: TRUNK_TESTING_DETAILS.required!.filter((f) => f !== "testBranch" && f !== "testBranchSha") };

/** A test of list-failing-tests (and get-test-details' test). */
export const TRUNK_TEST_CASE: JsonSchema = {
  type: "object",
  properties: {
    id: string,
    repository: { type: "object", properties: { html_url: { type: "string", format: "uri" } }, required: ["html_url"] },
    html_url: { type: "string", format: "uri" },
    name: string,
    variant: string,
    status: {
      type: "object",
      properties: { value: { type: "string", enum: ["healthy", "flaky", "broken"] }, reason: string, timestamp: { type: "string", format: "date-time" } },
      required: ["value", "reason", "timestamp"],
    },
    most_common_failures: {
      type: "array",
      items: { type: "object", properties: { summary: string, occurrence_count: { type: "integer" }, last_occurrence: { type: "string", format: "date-time" } }, required: ["summary", "occurrence_count"] },
    },
    failure_rate_last_7d: number,
    failure_rate_last_24h: number,
    file_path: string,
    parent: string,
    classname: string,
    codeowners: strings,
    pull_requests_impacted_last_7d: { type: "integer" },
    quarantined: { type: "boolean" },
    ticket: { type: "object", properties: { html_url: { type: "string", format: "uri" } }, required: ["html_url"] },
  },
  required: ["id", "repository", "html_url", "name", "variant", "status", "most_common_failures", "failure_rate_last_7d", "failure_rate_last_24h", "codeowners", "pull_requests_impacted_last_7d", "quarantined"],
};

/** What is wrong with an answer against Trunk's document (empty when it fits). */
export function trunkErrors(schema: JsonSchema, value: unknown): string[] {
  return schemaErrors(schema, value, { formats: ["uri", "date-time"] });
}
