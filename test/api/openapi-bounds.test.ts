import { OPERATIONS, type Operation } from "../../src/api/operations.js";
import { BACKENDS } from "../support/backends.js";
import { startTestServer, type ApiResponse, type TestServer } from "../support/harness.js";
import { ABSENT, documentAllows, isPlainObject, sampleOf, type JsonSchema } from "../support/json-schema.js";

// The OpenAPI document says exactly what the validators enforce: for every field of every
// operation's request, values at and just past each bound the document states (minimum,
// maximum, lengths, item counts, enums), and values any field could be sent (blank, padded,
// null, absent, of another type), are accepted by the live API exactly when the document
// allows them, and refused with a 400 naming the field when it does not.

/** Values the document cannot describe (a JUnit report's content, an ordered time range). */
const VALID_CONTENT: Record<string, Record<string, unknown>> = {
  uploadTestResults: { "junit_xml.0": "<testsuite/>" },
  listFailingTests: { start_time: "2026-11-01T00:00:00Z", end_time: "2026-11-02T00:00:00Z" },
  createWebhookEndpoint: { url: "https://hooks.example/greenline", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
  updateWebhookEndpoint: { url: "https://hooks.example/greenline" },
  createQueue: { testingTimeoutMinutes: 2 },
  updateQueue: { testingTimeoutMinutes: 2 },
  // One of ticket_url and external_ticket_id (Trunk's request): external_ticket_id alone.
  linkTicketToTestCase: { ticket_url: ABSENT },
  updateFlakySettings: { "settings.ticketUrlTemplate": "https://tickets.example/browse/{id}" },
  // An emergency needs an admin token: the bounds of the rest are checked without one.
  submitPullRequest: { emergencyReason: ABSENT },
  // A one-off window in the future (weekly is another shape of freeze: not with from and until).
  freezeQueue: { from: "2099-01-01T00:00Z", until: "2099-01-02T00:00Z", weekly: ABSENT, "weekly.from": "08:00", "weekly.until": "18:00", "weekly.timeZone": "UTC" },
};

/**
 * Fields the server checks beyond their shape, each with the words of its documented rule. For
 * these, only a refusal by the document must be a refusal by the server.
 */
const RULES_BEYOND_SHAPE: Record<string, string> = {
  "listFailingTests page_query.page_token": "a page token this server issued",
  "listQuarantinedTests page_query.page_token": "a page token this server issued",
  "listUnhealthyTests page_query.page_token": "a page token this server issued",
  "getAuditLog page_query.page_token": "a page token this server issued",
  "listPullRequests cursor": "an earlier answer's nextCursor",
  "getMergeQueueTestingDetails testRunId": "an earlier answer's testRunId",
  "uploadTestResults junit_xml.0": "JUnit XML",
  "uploadTestResults part.index": "less than part.count",
  "getMergeQueueMetrics repo": "requires repoHost",
  "getMergeQueueMetrics repoHost": "requires repo",
  "createWebhookEndpoint url": "https://",
  "updateWebhookEndpoint url": "https://",
  "createWebhookEndpoint secret": "whsec_",
  "listWebhookDeliveries pageToken": "nextPageToken",
  "createQueue checksStartTimeoutMinutes": "less than testingTimeoutMinutes",
  "updateQueue checksStartTimeoutMinutes": "less than testingTimeoutMinutes",
  "createQueue testingTimeoutMinutes": "greater than checksStartTimeoutMinutes",
  "updateQueue testingTimeoutMinutes": "greater than checksStartTimeoutMinutes",
  "linkTicketToTestCase ticket_url": "Give it or external_ticket_id",
  "linkTicketToTestCase external_ticket_id": "Give it or ticket_url",
  "updateFlakySettings settings.ticketUrlTemplate": "with {id} where its key goes",
  "freezeQueue weekly.timeZone": "an IANA time zone",
  "submitPullRequest emergencyReason": "needs an API token with role admin",
  "createQueue pullRequestChecks": "required by the branch's rulesets or protection",
  "updateQueue pullRequestChecks": "required by the branch's rulesets or protection",
  "freezeQueue from": "with `until`",
  "freezeQueue until": "in the future",
  "freezeQueue weekly": "not with `from`/`until`",
  "freezeQueue weekly.until": "not after `from`",
};

/** `union`: the nearest enclosing field of several shapes, which may answer for a value none of them takes. */
type Field = { path: string; schema: JsonSchema; required: boolean; union?: string; place: (value: unknown) => unknown };

/** Every field of a request (and the body itself, as "(body)"), with how to put a value there. */
function fieldsOf(schema: JsonSchema, current: unknown, place: (value: unknown) => unknown, path: string[] = [], required = true, union?: string): Field[] {
  const fields: Field[] = [{ path: path.join(".") || "(body)", schema, required, union, place }];
  if (schema.anyOf) union = path.join(".");
  for (const branch of schema.anyOf ?? [schema]) {
    if (branch.type === "object") {
      const parent = isPlainObject(current) ? current : (sampleOf(branch) as Record<string, unknown>);
      for (const [key, child] of Object.entries(branch.properties ?? {})) {
        const placeChild = (value: unknown) => place(withField(parent, key, value));
        fields.push(...fieldsOf(child, parent[key], placeChild, [...path, key], (branch.required ?? []).includes(key), union));
      }
    }
    if (branch.type === "array" && branch.items) {
      fields.push(...fieldsOf(branch.items, sampleOf(branch.items), (value) => place([value]), [...path, "0"], true, union));
    }
  }
  return fields;
}

function withField(object: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const { [key]: _replaced, ...rest } = object;
  return value === ABSENT ? rest : { ...rest, [key]: value };
}

const padded = (sample: string, length: number) => (length <= sample.length ? sample.slice(0, Math.max(length, 0)) : sample + "a".repeat(length - sample.length));

/**
 * impactedTargets' 5,000,000 targets fill the 20 MiB body and take minutes to validate on a
 * shared machine: lists are probed at their bounds up to this many items.
 */
const MAX_PROBED_ITEMS = 100_000;

/** The values to try in a field: its documented edges and just past them, and what any field may be sent. */
function probesOf(field: Field): unknown[] {
  const probes: unknown[] = [null, true, "x", 1, [], {}, ...(field.required ? [] : [ABSENT])];
  for (const schema of field.schema.anyOf ?? [field.schema]) probes.push(...edgesOf(schema));
  return probes;
}

function edgesOf(schema: JsonSchema): unknown[] {
  switch (schema.type) {
    case "integer":
    case "number":
      return numberEdges(schema);
    case "string":
      return stringEdges(schema);
    case "array": {
      const item = sampleOf(schema.items ?? {});
      const counts = [schema.minItems, schema.maxItems].filter((n): n is number => n !== undefined).flatMap((n) => [n - 1, n, n + 1]);
      return counts.filter((n) => n >= 0 && n <= MAX_PROBED_ITEMS).map((n) => Array.from({ length: n }, () => item));
    }
    case "object":
      return [{ ...(sampleOf(schema) as object), unexpected: 1 }];
    default:
      return (schema.enum ?? []).flatMap((value) => (typeof value === "string" ? [value, `${value}_x`, value.charAt(0).toUpperCase() + value.slice(1)] : [value]));
  }
}

function numberEdges(schema: JsonSchema): number[] {
  const step = schema.type === "integer" ? 1 : 1e-9;
  const edges = [-1, 0, 0.5, 1, 1.5, 255, 256, 2147483647, 2147483648, 4294967295, 4294967296, 1e308];
  if (schema.minimum !== undefined) edges.push(schema.minimum, schema.minimum - step, schema.minimum + 0.5);
  if (schema.maximum !== undefined) edges.push(schema.maximum, schema.maximum + step);
  if (schema.exclusiveMinimum !== undefined) edges.push(schema.exclusiveMinimum, schema.exclusiveMinimum + step);
  if (schema.exclusiveMaximum !== undefined) edges.push(schema.exclusiveMaximum, schema.exclusiveMaximum - step);
  return [...new Set(edges)];
}

function stringEdges(schema: JsonSchema): string[] {
  if (schema.enum) return (schema.enum as string[]).flatMap((value) => [value, `${value}_x`, value.charAt(0).toUpperCase() + value.slice(1).toLowerCase()]);
  const sample = sampleOf(schema) as string;
  const edges = [sample, sample.toUpperCase(), sample.toLowerCase(), ` ${sample} `];
  if (!schema.format) edges.push("", " ", "\t\n", "a");
  for (const length of [schema.minLength, schema.maxLength].filter((n): n is number => n !== undefined)) {
    edges.push(padded(sample, length - 1), padded(sample, length), padded(sample, length + 1));
  }
  // Surrounding whitespace counts towards the documented length.
  if (schema.maxLength !== undefined) edges.push(` ${padded(sample, schema.maxLength - 1)}`, ` ${padded(sample, schema.maxLength)}`);
  return [...new Set(edges)];
}

async function send(server: TestServer, op: Operation, body: unknown): Promise<ApiResponse> {
  if (op.method === "post") return server.api.call(op.path.slice(1), body);
  const query = new URLSearchParams(body as Record<string, string>).toString();
  const response = await server.api.get(`${op.path.slice(1)}?${query}`);
  return { ...response, body: response.status === 200 ? response.text : JSON.parse(response.text) };
}

/** Whether the answer refuses the value in `field`: a 400 naming the field, a field inside it, or its enclosing union. */
function refuses(response: ApiResponse, field: Field): boolean {
  if (response.status !== 400) return false;
  const named = (path: string) => path === field.path || path.startsWith(`${field.path}.`) || path === field.union;
  return (response.body.error.details as { path: string }[]).some((d) => named(d.path));
}

function requestSchemaOf(document: any, op: Operation): JsonSchema {
  const operation = document.paths[op.path][op.method];
  if (op.method === "post") return operation.requestBody.content["application/json"].schema;
  const parameters = operation.parameters as { name: string; required: boolean; schema: JsonSchema }[];
  return {
    type: "object",
    properties: Object.fromEntries(parameters.map((p) => [p.name, p.schema])),
    required: parameters.filter((p) => p.required).map((p) => p.name),
  };
}

describe("the OpenAPI document states exactly what the validators enforce", () => {
  let server: TestServer;
  let document: any;
  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!);
    document = await (await fetch(`${server.url}/v1/openapi.json`)).json();
  });
  afterAll(() => server?.close());

  test.each(OPERATIONS.map((op) => [op.operationId, op] as const))("%s: every documented bound, through the live API", async (operationId, op) => {
    const schema = requestSchemaOf(document, op);
    // A field set to ABSENT in VALID_CONTENT is left out of the base body.
    const base = Object.fromEntries(Object.entries(sampleOf(schema, VALID_CONTENT[operationId]) as object).filter(([, value]) => value !== ABSENT));
    const baseAnswer = await send(server, op, base);
    expect([operationId, baseAnswer.status === 400 ? baseAnswer.body : "valid"]).toEqual([operationId, "valid"]);

    const disagreements: unknown[] = [];
    for (const field of fieldsOf(schema, base, (value) => value)) {
      const rule = RULES_BEYOND_SHAPE[`${operationId} ${field.path}`];
      if (rule) expect([field.path, field.schema.description ?? ""]).toEqual([field.path, expect.stringContaining(rule)]);
      for (const probe of field.path === "(body)" ? [{ ...(base as object), unexpected: 1 }] : probesOf(field)) {
        if (op.method === "get" && typeof probe !== "string" && probe !== ABSENT) continue; // a query holds only strings
        const body = field.path === "(body)" ? probe : field.place(probe);
        const documented = field.path === "(body)" ? documentAllows(schema, body) : probe === ABSENT ? !field.required : documentAllows(field.schema, probe);
        const answer = await send(server, op, body);
        expect([field.path, answer.status < 500]).toEqual([field.path, true]);
        const refused = refuses(answer, field);
        if (rule ? !documented && !refused : documented === refused) {
          disagreements.push({ field: field.path, value: describeProbe(probe), document: documented ? "allows" : "refuses", server: answer.status === 400 ? answer.body.error.message : answer.status });
        }
      }
    }
    expect(disagreements).toEqual([]);
  });
});

function describeProbe(value: unknown): unknown {
  if (value === ABSENT) return "(absent)";
  if (Array.isArray(value)) return value.length > 3 ? `[${value.length} items]` : value;
  if (typeof value === "string" && value.length > 20) return `${JSON.stringify(value.slice(0, 8))}… (${value.length} characters)`;
  return value;
}
