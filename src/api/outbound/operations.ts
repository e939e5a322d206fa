import { createWebhookEndpoint, deleteWebhookEndpoint, listWebhookDeliveries, listWebhookEndpoints, redeliverWebhook, updateWebhookEndpoint } from "../../outbound/endpoints.js";
import { EMPTY, type Operation, operation } from "../shared/operation.js";
import { ZEmptyResponse } from "../shared/schemas.js";
import {
  ZCreateWebhookEndpointRequest,
  ZListWebhookDeliveriesRequest,
  ZListWebhookDeliveriesResponse,
  ZListWebhookEndpointsRequest,
  ZListWebhookEndpointsResponse,
  ZRedeliverWebhookRequest,
  ZRedeliverWebhookResponse,
  ZUpdateWebhookEndpointRequest,
  ZWebhookEndpointAddress,
  ZWebhookEndpointWithSecret,
} from "./schemas.js";

/** The organization's outbound webhook endpoints and their deliveries (docs/webhooks.md). */
export const OUTBOUND_WEBHOOK_OPERATIONS: Operation[] = [
  operation({
    operationId: "createWebhookEndpoint",
    writes: true,
    method: "post",
    path: "/webhooks/create-endpoint",
    summary: "Create an outbound webhook endpoint: its URL, the events it receives, its signing secret (answered once); at most 20 per organization (409 past it)",
    request: ZCreateWebhookEndpointRequest,
    response: ZWebhookEndpointWithSecret,
    handle: ({ services, principal }, input) => createWebhookEndpoint(services, principal, input),
  }),
  operation({
    operationId: "listWebhookEndpoints",
    method: "get",
    path: "/webhooks/list-endpoints",
    summary: "List the organization's outbound webhook endpoints (disabled ones say why)",
    request: ZListWebhookEndpointsRequest,
    response: ZListWebhookEndpointsResponse,
    handle: ({ services, principal }) => listWebhookEndpoints(services, principal),
  }),
  operation({
    operationId: "updateWebhookEndpoint",
    writes: true,
    method: "post",
    path: "/webhooks/update-endpoint",
    summary: "Change an endpoint's URL, events or description, enable or disable it, or rotate its secret",
    request: ZUpdateWebhookEndpointRequest,
    response: ZWebhookEndpointWithSecret,
    handle: ({ services, principal }, input) => updateWebhookEndpoint(services, principal, input),
  }),
  operation({
    operationId: "deleteWebhookEndpoint",
    writes: true,
    method: "post",
    path: "/webhooks/delete-endpoint",
    summary: "Delete an endpoint and its deliveries",
    request: ZWebhookEndpointAddress,
    response: ZEmptyResponse,
    async handle({ services, principal }, input) {
      await deleteWebhookEndpoint(services, principal, input.id);
      return EMPTY;
    },
  }),
  operation({
    operationId: "listWebhookDeliveries",
    method: "post",
    path: "/webhooks/list-deliveries",
    summary: "List an endpoint's deliveries, newest first (paged), with their attempts and last answer",
    request: ZListWebhookDeliveriesRequest,
    response: ZListWebhookDeliveriesResponse,
    handle: ({ services, principal }, input) => listWebhookDeliveries(services, principal, input),
  }),
  operation({
    operationId: "redeliverWebhook",
    writes: true,
    method: "post",
    path: "/webhooks/redeliver",
    summary: "Send a delivery again (the same webhook-id): now if still pending, else as a new delivery",
    request: ZRedeliverWebhookRequest,
    response: ZRedeliverWebhookResponse,
    handle: ({ services, principal }, input) => redeliverWebhook(services, principal, input),
  }),
];
