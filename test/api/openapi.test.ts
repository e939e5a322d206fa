import { OPERATIONS } from "../../src/api/operations.js";
import { BACKENDS } from "../support/backends.js";
import { startTestServer, type TestServer } from "../support/harness.js";

const SPEC_OPERATIONS = [
  "POST /submitPullRequest",
  "POST /cancelPullRequest",
  "POST /restartTestsOnPullRequest",
  "POST /getSubmittedPullRequest",
  "POST /setImpactedTargets",
  "POST /getMergeQueueTestingDetails",
  "POST /createQueue",
  "POST /deleteQueue",
  "POST /getQueue",
  "POST /updateQueue",
  "GET /getMergeQueueMetrics",
  "POST /flaky-tests/list-failing-tests",
  "POST /flaky-tests/list-quarantined-tests",
  "POST /flaky-tests/get-test-details",
];

/** Operations Greenline adds to SPEC.md's (flaky-test ingestion, quarantine control, settings; Trunk's later v1 additions). */
const ADDED_OPERATIONS = [
  "GET /status",
  "POST /listPullRequests",
  "POST /getQueueEvents",
  "POST /checkQueueSetup",
  "POST /flaky-tests/list-unhealthy-tests",
  "POST /flaky-tests/upload",
  "POST /flaky-tests/check-quarantine",
  "POST /flaky-tests/set-quarantine-setting",
  "POST /flaky-tests/link-ticket-to-test-case",
  "POST /flaky-tests/get-settings",
  "POST /flaky-tests/backtest-policy",
  "POST /flaky-tests/update-settings",
  "POST /metrics/getQuarantineConfig",
  "POST /metrics/createBundleUpload",
  "PUT /bundles/{id}",
  "POST /flakytests-cli/upload-metrics",
  "POST /freezeQueue",
  "POST /unfreezeQueue",
  "POST /listQueueFreezes",
  "POST /getAuditLog",
  "POST /webhooks/create-endpoint",
  "GET /webhooks/list-endpoints",
  "POST /webhooks/update-endpoint",
  "POST /webhooks/delete-endpoint",
  "POST /webhooks/list-deliveries",
  "POST /webhooks/redeliver",
];

describe("OpenAPI document", () => {
  let server: TestServer;
  let document: any;
  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!);
    const response = await fetch(`${server.url}/v1/openapi.json`);
    expect(response.status).toBe(200);
    document = await response.json();
  });
  afterAll(() => server?.close());

  test("is OpenAPI 3.1 and lists exactly the fourteen operations of SPEC.md and Greenline's additions", () => {
    expect(document.openapi).toBe("3.1.0");
    const listed = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods as object).map((m) => `${m.toUpperCase()} ${path}`));
    expect(listed.sort()).toEqual([...SPEC_OPERATIONS, ...ADDED_OPERATIONS].sort());
  });

  test("every documented operation is served (no 404) and every served operation is documented", async () => {
    for (const op of OPERATIONS) {
      expect(document.paths[op.path]?.[op.method]?.operationId).toBe(op.operationId);
      const response = await fetch(`${server.url}/v1${op.path}`, {
        method: op.method.toUpperCase(),
        headers: { "content-type": "application/json", "x-api-token": server.api.token },
        body: op.method === "post" ? "{}" : undefined,
      });
      expect([op.path, response.status === 404 && ((await response.json()) as any).error.message.startsWith("no such path")]).toEqual([op.path, false]);
    }
  });

  test("request schemas come from the validating zod schemas: bounds, enums in both cases, required fields", () => {
    const update = document.paths["/updateQueue"].post.requestBody.content["application/json"].schema;
    expect(update.required).toEqual(expect.arrayContaining(["repo", "targetBranch"]));
    expect(update.properties.concurrency).toMatchObject({ type: "integer", minimum: 1, maximum: 4294967295 });
    expect(update.properties.state.enum).toEqual(["running", "paused", "draining", "RUNNING", "PAUSED", "DRAINING"]);
    const metrics = document.paths["/getMergeQueueMetrics"].get;
    expect(metrics.parameters.map((p: { name: string }) => p.name).sort()).toEqual(["repo", "repoHost"]);
    expect(Object.keys(metrics.responses["200"].content)).toEqual(["text/plain; version=0.0.4; charset=utf-8"]);
    const details = document.paths["/getSubmittedPullRequest"].post.responses["200"].content["application/json"].schema;
    expect(details.required).toEqual(expect.arrayContaining(["state", "stateChangedAt", "readiness", "prSha", "isCurrentlySubmittedToQueue"]));
  });

  test("the document states Trunk's shapes: testing details' strings optional not nullable, check enums UPPERCASE, ticket an optional object, link-ticket taking Trunk's request", () => {
    const details = document.paths["/getMergeQueueTestingDetails"].post.responses["200"].content["application/json"].schema;
    for (const field of ["testBranch", "testBranchSha"]) {
      expect([field, details.properties[field].type]).toEqual([field, "string"]);
      expect(details.required).not.toContain(field);
    }
    const check = details.properties.statusChecks.items;
    expect(check.properties.state.enum).toEqual(["PENDING", "SUCCESS", "FAILURE", "ERROR"]);
    expect(check.properties.url.type).toBe("string");
    expect(check.required).not.toContain("url");
    const checkRun = details.properties.checkSuites.items.properties.checkRuns.items;
    expect(checkRun.properties.status.enum).toEqual(["QUEUED", "IN_PROGRESS", "COMPLETED"]);
    expect(checkRun.properties.conclusion.enum).toEqual(["SUCCESS", "FAILURE"]);
    expect(checkRun.required).toEqual(expect.arrayContaining(["name", "url"]));
    expect(details.properties.testedPullRequests.items.properties.prUrl.type).toBe("string");
    const test = document.paths["/flaky-tests/get-test-details"].post.responses["200"].content["application/json"].schema.properties.test;
    expect(test.properties.ticket).toMatchObject({ type: "object", required: ["html_url"] });
    expect(test.required).not.toContain("ticket");
    const link = document.paths["/flaky-tests/link-ticket-to-test-case"].post.requestBody.content["application/json"].schema;
    expect(link.required.sort()).toEqual(["repo", "test_case_id"]);
    expect(Object.keys(link.properties)).toEqual(expect.arrayContaining(["external_ticket_id", "ticket_url", "org_url_slug"]));
  });

  test("pr.number's bounds hold for both its forms, and names say they are trimmed (openapi-bounds.test.ts probes every bound)", () => {
    const submit = document.paths["/submitPullRequest"].post.requestBody.content["application/json"].schema;
    expect(submit.properties.pr.properties.number.anyOf[0]).toEqual({ type: "integer", minimum: 1, maximum: 2147483647 });
    expect(submit.properties.pr.properties.number.description).toContain("1 to 2147483647");
    expect(submit.properties.targetBranch).toMatchObject({ maxLength: 255, pattern: "\\S", description: expect.stringContaining("whitespace is trimmed") });
    expect(submit.properties.repo.properties.owner.description).toContain("whitespace is trimmed");
  });

  test("every operation needs the x-api-token header; setImpactedTargets also takes a fork PR's workflow run id; the bundle PUT is authorized by its signed URL", () => {
    expect(document.components.securitySchemes.apiToken).toEqual({ type: "apiKey", in: "header", name: "x-api-token" });
    expect(document.components.securitySchemes.forkedWorkflowRun).toMatchObject({ type: "apiKey", in: "header", name: "x-forked-workflow-run-id" });
    for (const [path, methods] of Object.entries(document.paths) as [string, Record<string, any>][]) {
      const expected = path === "/setImpactedTargets" ? [{ apiToken: [] }, { forkedWorkflowRun: [] }] : path === "/bundles/{id}" ? [] : [{ apiToken: [] }];
      for (const op of Object.values(methods)) expect([path, op.security]).toEqual([path, expected]);
    }
  });
});
