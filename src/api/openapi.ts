import { z } from "zod";
import { ZErrorResponse } from "./schemas.js";
import type { Operation } from "./operations.js";

type JsonSchema = Record<string, unknown>;

function schemaOf(type: z.ZodType, io: "input" | "output"): JsonSchema {
  const { $schema: _ignored, ...schema } = z.toJSONSchema(type, { io, unrepresentable: "any", target: "draft-2020-12" }) as JsonSchema;
  return schema;
}

const ERROR_STATUSES: Record<string, string> = {
  "400": "Invalid argument: the error names each bad field and the rule it breaks",
  "401": "Missing or unknown x-api-token (setImpactedTargets: or a x-forked-workflow-run-id refused, the message names the rule)",
  "404": "Not found (also for another organization's resources)",
  "405": "Wrong HTTP method",
  "409": "Conflict or failed precondition",
  "413": "Body over 20 MiB",
  "415": "Body is not application/json",
  "429": "The code host's (GitHub's) rate limit for the App is spent: retry when the message says",
  "503": "The code host (GitHub) did not answer, or the service is shutting down: retry later",
};

/** The OpenAPI 3.1 document of the /v1 API, generated from the schemas that validate requests. */
export function buildOpenApiDocument(operations: Operation[]): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  const errorResponse = { content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };
  for (const op of operations) {
    const responses: Record<string, unknown> = {
      "200": {
        description: "OK",
        content: op.responseContentType ? { [op.responseContentType]: { schema: { type: "string" } } } : { "application/json": { schema: schemaOf(op.response, "output") } },
      },
    };
    for (const [status, description] of Object.entries(ERROR_STATUSES)) {
      if (op.method === "get" && (status === "413" || status === "415")) continue;
      responses[status] = { description, ...errorResponse };
    }
    const input = schemaOf(op.request, "input");
    const parameters =
      op.method === "get"
        ? Object.entries((input.properties ?? {}) as Record<string, JsonSchema>).map(([name, schema]) => ({
            name,
            in: "query",
            required: ((input.required as string[] | undefined) ?? []).includes(name),
            schema,
          }))
        : undefined;
    paths[op.path] = {
      [op.method]: {
        operationId: op.operationId,
        summary: op.summary,
        // setImpactedTargets: a fork PR's CI names its workflow run instead (empty x-api-token).
        security: op.forkedRun ? [{ apiToken: [] }, { forkedWorkflowRun: [] }] : [{ apiToken: [] }],
        ...(parameters ? { parameters } : { requestBody: { required: true, content: { "application/json": { schema: input } } } }),
        responses,
      },
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: "Greenline API", version: "1.0.0", description: "Merge queue and flaky-test API (Trunk-compatible v1)." },
    servers: [{ url: "/v1" }],
    paths,
    components: {
      securitySchemes: {
        apiToken: { type: "apiKey", in: "header", name: "x-api-token" },
        forkedWorkflowRun: {
          type: "apiKey",
          in: "header",
          name: "x-forked-workflow-run-id",
          description: "setImpactedTargets only, with x-api-token empty or absent: the GitHub Actions run id (github.run_id) of a fork PR's live workflow run, for pr.sha, the PR's head",
        },
      },
      schemas: { Error: schemaOf(ZErrorResponse, "output") },
    },
  };
}
