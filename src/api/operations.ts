import { FLAKY_TEST_OPERATIONS } from "./flaky/operations.js";
import { OUTBOUND_WEBHOOK_OPERATIONS } from "./outbound/operations.js";
import { PULL_REQUEST_OPERATIONS } from "./queues/pull-request-operations.js";
import { QUEUE_OPERATIONS } from "./queues/queue-operations.js";
import { FREEZE_OPERATIONS } from "./queues/freeze-operations.js";
import { AUDIT_OPERATIONS } from "./audit/operations.js";
import type { Operation } from "./shared/operation.js";
import { STATUS_OPERATION } from "./status.js";

export type { Operation, OperationContext, RawResponse } from "./shared/operation.js";

/**
 * The /v1 API's operations: the server routes them (app.ts), the OpenAPI document lists them in
 * this order (openapi.ts), and the dashboard acts through them. Each area keeps its operations
 * beside its request and response schemas: queues/ (pull requests, queues), flaky/ (flaky tests,
 * uploads, Trunk's CLI bundles), outbound/ (outbound webhook endpoints); shared/ holds what they
 * share.
 */
export const OPERATIONS: Operation[] = [STATUS_OPERATION, ...PULL_REQUEST_OPERATIONS, ...QUEUE_OPERATIONS, ...FREEZE_OPERATIONS, ...FLAKY_TEST_OPERATIONS, ...OUTBOUND_WEBHOOK_OPERATIONS, ...AUDIT_OPERATIONS];
