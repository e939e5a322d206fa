import { z } from "zod";
import { ZBundleReceived } from "./flaky/bundle-schemas.js";
import { ZEmptyResponse, ZErrorResponse } from "./shared/schemas.js";
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
  "503": "The code host (GitHub) did not answer, the service is saturated or busy, or it is shutting down: retry after the Retry-After header's seconds",
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
    if (op.writes) responses["403"] = { description: 'The x-api-token is read-only (role "read"): this operation changes something', ...errorResponse };
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
  const errors = (statuses: Record<string, string>) => Object.fromEntries(Object.entries(statuses).map(([status, description]) => [status, { description, ...errorResponse }]));
  // Trunk's analytics CLI's bundle PUT and telemetry: not JSON operations, served beside them (app.ts).
  paths["/bundles/{id}"] = {
    put: {
      operationId: "putBundle",
      summary: "Trunk's analytics CLI: PUT a test bundle (tar + zstd) to the URL createBundleUpload answered; stored as a JUnit upload",
      description:
        "No token: the URL's grant and signature authorize it until it expires. The bundle holds meta.json, internal.bin, the JUnit files (junit/<n>) and optionally CODEOWNERS; a truncated or corrupt bundle is refused and nothing is stored; a bundle sent again is stored once.",
      security: [],
      parameters: [
        { name: "id", in: "path", required: true, schema: { type: "string" } },
        { name: "grant", in: "query", required: true, schema: { type: "string" } },
        { name: "signature", in: "query", required: true, schema: { type: "string" } },
      ],
      requestBody: { required: true, content: { "application/octet-stream": { schema: { type: "string", contentMediaType: "application/zstd" } } } },
      responses: {
        "200": { description: "Stored (or stored already)", content: { "application/json": { schema: schemaOf(ZBundleReceived, "output") } } },
        ...errors({
          "400": "The bundle cannot be read (truncated, corrupt, over 64 MiB unpacked) or its results are invalid: nothing is stored",
          "403": "The URL's signature is not valid, or the URL expired",
          "405": ERROR_STATUSES["405"]!,
          "409": "The same bundle is being stored by a concurrent request: retry",
          "413": ERROR_STATUSES["413"]!,
        }),
      },
    },
  };
  paths["/flakytests-cli/upload-metrics"] = {
    post: {
      operationId: "uploadCliMetrics",
      summary: "Trunk's analytics CLI's telemetry (protobuf): accepted and dropped",
      security: [{ apiToken: [] }],
      requestBody: { required: false, content: { "application/x-protobuf": { schema: { type: "string" } } } },
      responses: {
        "200": { description: "OK", content: { "application/json": { schema: schemaOf(ZEmptyResponse, "output") } } },
        ...errors({ "401": ERROR_STATUSES["401"]!, "413": "Body over 1 MiB" }),
      },
    },
  };
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
