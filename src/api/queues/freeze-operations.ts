import { freezeQueue, listQueueFreezes, unfreezeQueue } from "../../queue/freezes.js";
import { type Operation, operation } from "../shared/operation.js";
import { ZQueueAddress } from "./queue-schemas.js";
import { ZFreezeQueueRequest, ZFreezeQueueResponse, ZListQueueFreezesResponse, ZUnfreezeQueueRequest, ZUnfreezeQueueResponse } from "./freeze-schemas.js";

/** Merge freezes: while a queue is frozen only hotfixes merge (docs/freezes.md). */
export const FREEZE_OPERATIONS: Operation[] = [
  operation({
    operationId: "freezeQueue",
    writes: true,
    method: "post",
    path: "/freezeQueue",
    summary: "Freeze merges now (until a time, or until unfrozen), in a one-off window, or every week in a time zone; pull requests are still submitted and, by default, tested",
    request: ZFreezeQueueRequest,
    response: ZFreezeQueueResponse,
    handle: ({ services, principal }, input) => freezeQueue(services, principal, input),
  }),
  operation({
    operationId: "unfreezeQueue",
    writes: true,
    method: "post",
    path: "/unfreezeQueue",
    summary: "End the freezes holding now (a weekly one for its current window), or remove one freeze by its id",
    request: ZUnfreezeQueueRequest,
    response: ZUnfreezeQueueResponse,
    handle: ({ services, principal }, input) => unfreezeQueue(services, principal, input),
  }),
  operation({
    operationId: "listQueueFreezes",
    method: "post",
    path: "/listQueueFreezes",
    summary: "The queue's merge freeze now, and its current and scheduled freezes",
    request: ZQueueAddress,
    response: ZListQueueFreezesResponse,
    handle: ({ services, principal }, input) => listQueueFreezes(services, principal, input),
  }),
];
