import { renderMetrics } from "../../queue/metrics.js";
import { createQueue, deleteQueue, getQueueEvents, getQueueJson, updateQueue } from "../../queue/queues.js";
import { EMPTY, json, type Operation, operation, type RawResponse } from "../shared/operation.js";
import { ZEmptyResponse } from "../shared/schemas.js";
import { checkQueueSetup } from "../../queue/preflight.js";
import { requiredStatusesSourceOf } from "../../domain/status-checks.js";
import {
  ZCheckQueueSetupRequest,
  ZQueueSetupRecord,
  ZCreateQueueRequest,
  ZGetQueueEventsRequest,
  ZGetQueueEventsResponse,
  ZMetricsQuery,
  ZQueueAddress,
  ZQueueRecord,
  ZQueueWithEntries,
  ZUpdateQueueRequest,
} from "./queue-schemas.js";

/** The queues themselves: create, delete, read, their events, settings and state, metrics. */
export const QUEUE_OPERATIONS: Operation[] = [
  operation({
    operationId: "createQueue",
    writes: true,
    method: "post",
    path: "/createQueue",
    summary: "Create a queue for a branch, optionally with any updateQueue setting",
    request: ZCreateQueueRequest,
    response: ZQueueRecord,
    handle: ({ services, principal }, input) => createQueue(services, principal, input),
  }),
  operation({
    operationId: "deleteQueue",
    writes: true,
    method: "post",
    path: "/deleteQueue",
    summary: "Delete a queue that holds no pull requests still in play",
    request: ZQueueAddress,
    response: ZEmptyResponse,
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
    request: ZQueueAddress,
    response: ZQueueWithEntries,
    handle: async ({ services, principal }, input) => json(await getQueueJson(services, principal, input)),
  }),
  operation({
    operationId: "getQueueEvents",
    method: "post",
    path: "/getQueueEvents",
    summary: "List who paused, resumed or drained the queue, changed its settings, submitted urgently or cancelled someone else's pull request, newest first (paged)",
    request: ZGetQueueEventsRequest,
    response: ZGetQueueEventsResponse,
    handle: ({ services, principal }, input) => getQueueEvents(services, principal, input),
  }),
  operation({
    operationId: "updateQueue",
    writes: true,
    method: "post",
    path: "/updateQueue",
    summary: "Change a queue's state or settings; omitted fields are unchanged",
    request: ZUpdateQueueRequest,
    response: ZQueueRecord,
    handle: ({ services, principal }, input) => updateQueue(services, principal, input),
  }),
  operation({
    operationId: "checkQueueSetup",
    method: "post",
    path: "/checkQueueSetup",
    summary:
      "Preflight: will each check the queue requires report on its testing commits? Reads the required checks, the repository's workflow files and who reported checks on recent pull requests (reads only; the queue need not exist)",
    request: ZCheckQueueSetupRequest,
    response: ZQueueSetupRecord,
    async handle({ services, principal }, input) {
      const { requiredSource, ...report } = await checkQueueSetup(services, principal, input);
      return { ...report, requiredStatusesSource: requiredStatusesSourceOf(requiredSource) };
    },
  }),
  operation({
    operationId: "getMergeQueueMetrics",
    method: "get",
    path: "/getMergeQueueMetrics",
    summary: "Queue metrics in the Prometheus text format",
    request: ZMetricsQuery,
    response: ZEmptyResponse,
    responseContentType: "text/plain; version=0.0.4; charset=utf-8",
    async handle({ services, principal }, input) {
      const { contentType, body } = await renderMetrics(services, principal, input);
      return { raw: true, contentType, body } satisfies RawResponse;
    },
  }),
];
