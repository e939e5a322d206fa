import { z } from "zod";
import { ALL_WEBHOOK_EVENTS, WEBHOOK_EVENT_TYPES } from "../../domain/webhook-events.js";
import { storableText } from "../shared/schemas.js";

// Outbound webhooks (docs/webhooks.md).

const ZWebhookEventFilter = z
  .array(z.enum([...WEBHOOK_EVENT_TYPES, ALL_WEBHOOK_EVENTS]))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length + 1)
  .describe(`the event types to send: any of ${WEBHOOK_EVENT_TYPES.join(", ")}, or "*" for every one`);
const ZWebhookUrl = z.string().min(1).max(2048).check(storableText).describe("where events are POSTed: https:// (http:// and private addresses only when the operator allows them)");
const ZEndpointId = z.string().min(1).max(64).check(storableText).describe("the endpoint's id");

export const ZCreateWebhookEndpointRequest = z.strictObject({
  url: ZWebhookUrl,
  events: ZWebhookEventFilter,
  description: z.string().max(500).check(storableText).optional(),
  secret: z.string().max(200).check(storableText).optional().describe("a Standard Webhooks secret (whsec_ + base64 of 24 to 64 bytes); generated when absent"),
});

export const ZWebhookEndpoint = z.strictObject({
  id: z.string(),
  url: z.string(),
  description: z.string(),
  events: z.array(z.string()),
  enabled: z.boolean(),
  disabledReason: z.string().nullable().describe("why it is disabled: by a user, after failing for 24 h, or after a 410 Gone"),
  failingSince: z.string().nullable().describe("the first failed attempt since the last success"),
  previousSecretExpiresAt: z.string().nullable().describe("after a rotation: until when the previous secret signs too"),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const ZWebhookEndpointWithSecret = z.strictObject({
  endpoint: ZWebhookEndpoint,
  secret: z.string().optional().describe("the signing secret, answered only when created or rotated"),
});

export const ZListWebhookEndpointsRequest = z.object({});
export const ZListWebhookEndpointsResponse = z.strictObject({ endpoints: z.array(ZWebhookEndpoint) });

export const ZUpdateWebhookEndpointRequest = z.strictObject({
  id: ZEndpointId,
  url: ZWebhookUrl.optional(),
  events: ZWebhookEventFilter.optional(),
  description: z.string().max(500).check(storableText).optional(),
  enabled: z.boolean().optional().describe("false disables it; true enables it again (its pending deliveries resume)"),
  rotateSecret: z.boolean().optional().describe("a new secret is answered; the previous one signs too for 24 hours"),
});

export const ZWebhookEndpointAddress = z.strictObject({ id: ZEndpointId });

export const ZListWebhookDeliveriesRequest = z.strictObject({
  id: ZEndpointId,
  pageSize: z.number().int().min(1).max(500).optional().describe("default 50"),
  pageToken: z.string().max(64).check(storableText).optional().describe("the previous page's nextPageToken"),
});

export const ZWebhookDelivery = z.strictObject({
  id: z.string(),
  webhookId: z.string().describe("the webhook-id header: the same on every attempt and redelivery"),
  eventType: z.string(),
  status: z.enum(["pending", "delivered"]),
  attempts: z.number(),
  createdAt: z.string(),
  nextAttemptAt: z.string().nullable(),
  deliveredAt: z.string().nullable(),
  lastAttemptAt: z.string().nullable(),
  lastStatus: z.number().nullable().describe("the HTTP status of the last attempt; null when there was no answer"),
  lastError: z.string().nullable(),
  payload: z.unknown(),
});

export const ZListWebhookDeliveriesResponse = z.strictObject({ deliveries: z.array(ZWebhookDelivery), nextPageToken: z.string().describe("empty on the last page") });
export const ZRedeliverWebhookRequest = z.strictObject({ id: ZEndpointId, deliveryId: z.string().min(1).max(64).check(storableText) });
export const ZRedeliverWebhookResponse = z.strictObject({ delivery: ZWebhookDelivery });
