import { OPERATIONS, type Operation } from "../../src/api/operations.js";
import { ZErrorResponse } from "../../src/api/shared/schemas.js";

/**
 * Every answer a test receives through the ApiClient is checked against the schema the OpenAPI
 * document is generated from: a 200 against its operation's response schema, anything else
 * against the error schema. The response schemas are strict, so a field the document does not
 * list fails as surely as a missing or mistyped one: answers cannot drift from the document.
 */
export function checkAnswer(path: string, method: string, status: number, contentType: string | null, body: unknown): void {
  const op = operationAt(path);
  if (status === 200 && op && op.method === method.toLowerCase()) return checkSuccess(op, contentType, body);
  if (status === 200) return; // not an operation of the API (e.g. /v1/openapi.json)
  const parsed = ZErrorResponse.safeParse(body);
  if (!parsed.success) throw new Error(`${method} ${path} answered ${status} with a body the Error schema refuses: ${describe(parsed.error.issues)}\n${JSON.stringify(body)}`);
}

function checkSuccess(op: Operation, contentType: string | null, body: unknown): void {
  if (op.responseContentType) {
    if (contentType !== op.responseContentType) throw new Error(`${op.operationId} answered ${contentType}, documented as ${op.responseContentType}`);
    return;
  }
  const parsed = op.response.safeParse(body);
  if (!parsed.success) throw new Error(`${op.operationId} answered 200 with a body its response schema refuses: ${describe(parsed.error.issues)}\n${JSON.stringify(body)}`);
}

/** The operation served at `path` ("getQueue", "flaky-tests/upload", "getMergeQueueMetrics?repo=…"). */
function operationAt(path: string): Operation | undefined {
  const route = `/${path.split("?")[0]}`;
  return OPERATIONS.find((op) => op.path === route);
}

function describe(issues: { path: PropertyKey[]; message: string }[]): string {
  return issues.map((issue) => `${issue.path.map(String).join(".") || "(body)"}: ${issue.message}`).join("; ");
}
