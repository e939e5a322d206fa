import { recordAudit } from "../app/audit.js";
import { isIP } from "node:net";
import type { Principal } from "../auth/tokens.js";
import { DEFAULT_WEBHOOK_SETTINGS, type WebhookSettings } from "../config.js";
import * as store from "../store/webhook-outbox.js";
import type { WebhookEndpointRow, WebhookMessageRow } from "../store/webhook-outbox.js";
import { failedPrecondition, invalidArgument, notFound } from "../app/errors.js";
import type { Services } from "../app/services.js";
import { bareHost, generateSigningSecret, isRefusedAddress, sealSecret, secretKeyBytes } from "./security.js";

/**
 * At most this many endpoints per organization (enabled or not), as GitHub allows 20 webhooks
 * per event on an organization or repository: every event is a row per endpoint in the
 * transaction of the change it tells of, so the count bounds what one organization's changes
 * write, and what its deliveries take from the dispatcher (docs/webhooks.md).
 */
export const MAX_ENDPOINTS_PER_ORGANIZATION = 20;

/** After a rotation the previous secret signs too, for this long (receivers switch meanwhile). */
export const SECRET_ROTATION_OVERLAP_MS = 24 * 3600_000;

export type WebhookEndpointRecord = {
  id: string;
  url: string;
  description: string;
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
  failingSince: string | null;
  /** While a rotated-out secret still signs: until when. */
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
};

export type WebhookDeliveryRecord = {
  id: string;
  webhookId: string;
  eventType: string;
  status: "pending" | "delivered";
  attempts: number;
  createdAt: string;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  lastAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  payload: unknown;
};

export const settingsOf = (services: Services): WebhookSettings => services.webhooks ?? DEFAULT_WEBHOOK_SETTINGS;

function toRecord(row: WebhookEndpointRow, now: Date): WebhookEndpointRecord {
  const overlap = row.previousSecret !== null && row.previousSecretExpiresAt !== null && row.previousSecretExpiresAt > now;
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events,
    enabled: row.enabled,
    disabledReason: row.disabledReason,
    failingSince: row.failingSince?.toISOString() ?? null,
    previousSecretExpiresAt: overlap ? row.previousSecretExpiresAt!.toISOString() : null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

function toDelivery(row: WebhookMessageRow): WebhookDeliveryRecord {
  return {
    id: row.id,
    webhookId: row.eventId,
    eventType: row.eventType,
    status: row.status,
    attempts: row.attempts,
    createdAt: row.createdAt.toISOString(),
    nextAttemptAt: row.status === "pending" ? row.nextAttemptAt.toISOString() : null,
    deliveredAt: row.deliveredAt?.toISOString() ?? null,
    lastAttemptAt: row.lastAttemptAt?.toISOString() ?? null,
    lastStatus: row.lastStatus,
    lastError: row.lastError,
    payload: JSON.parse(row.payload) as unknown,
  };
}

/**
 * Checks an endpoint URL: http(s), no credentials, https unless the operator allows private
 * endpoints, and not a refused address when it is one (hostnames are checked at each delivery,
 * as they resolve then).
 */
export function checkEndpointUrl(text: string, settings: WebhookSettings): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidArgument("url", "must be an absolute URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw invalidArgument("url", "must be an https:// URL");
  if (url.protocol === "http:" && !settings.allowPrivate) throw invalidArgument("url", "must be an https:// URL (http:// only when the operator sets GREENLINE_WEBHOOK_ALLOW_PRIVATE=true)");
  if (url.username || url.password) throw invalidArgument("url", "must not hold credentials (the signature authenticates the sender)");
  const host = bareHost(url);
  if (!settings.allowPrivate && ((isIP(host) !== 0 && isRefusedAddress(host)) || host === "localhost" || host.endsWith(".localhost"))) {
    throw invalidArgument("url", "must not be a loopback, private or reserved address (an operator can allow them with GREENLINE_WEBHOOK_ALLOW_PRIVATE=true)");
  }
  return url.toString();
}

function checkSecret(secret: string): string {
  if (!secretKeyBytes(secret)) throw invalidArgument("secret", "must be a Standard Webhooks secret: whsec_ followed by 24 to 64 bytes in base64");
  return secret;
}

async function ownEndpoint(services: Services, principal: Principal, id: string): Promise<WebhookEndpointRow> {
  const row = await services.db.read((tx) => store.findEndpoint(tx, principal.organizationId, id));
  if (!row) throw notFound(`no webhook endpoint ${id}`);
  return row;
}

export type CreateEndpointInput = { url: string; events: string[]; description?: string; secret?: string };

/** Creates an endpoint; answers it with its signing secret (shown this once). */
/** An endpoint's address as the audit log keeps it: scheme and host only (a path may hold a secret: Slack's, Teams'). */
const originOf = (url: string) => new URL(url).origin;

export async function createWebhookEndpoint(services: Services, principal: Principal, input: CreateEndpointInput): Promise<{ endpoint: WebhookEndpointRecord; secret: string }> {
  const settings = settingsOf(services);
  const url = checkEndpointUrl(input.url, settings);
  const secret = input.secret !== undefined ? checkSecret(input.secret) : generateSigningSecret();
  const now = services.now();
  const row = await services.db.transaction(async (tx) => {
    if ((await store.countEndpointsLocked(tx, principal.organizationId)) >= MAX_ENDPOINTS_PER_ORGANIZATION) {
      throw failedPrecondition(`an organization has at most ${MAX_ENDPOINTS_PER_ORGANIZATION} webhook endpoints (the limit of endpoints per organization): delete one first`);
    }
    const created = await store.insertEndpoint(tx, {
      id: services.newId(),
      organizationId: principal.organizationId,
      url,
      description: input.description ?? "",
      events: [...new Set(input.events)],
      secret: sealSecret(secret, settings.secretKey),
      enabled: true,
      createdAt: now,
      updatedAt: now,
    });
    // The audit log names the endpoint and its events, never its secret.
    await recordAudit(services, tx, principal, { action: "webhook_endpoint.created", details: { endpointId: created.id, origin: originOf(url), events: [...new Set(input.events)] } });
    return created;
  });
  return { endpoint: toRecord(row, now), secret };
}

export async function listWebhookEndpoints(services: Services, principal: Principal): Promise<{ endpoints: WebhookEndpointRecord[] }> {
  const rows = await services.db.read((tx) => store.endpointsOf(tx, principal.organizationId));
  const now = services.now();
  return { endpoints: rows.map((row) => toRecord(row, now)) };
}

export type UpdateEndpointInput = { id: string; url?: string; events?: string[]; description?: string; enabled?: boolean; rotateSecret?: boolean };

/**
 * Changes an endpoint. Enabling it again clears why it was disabled and its failing time (its
 * pending messages are delivered again). Rotating the secret answers the new one; the previous
 * one signs too for SECRET_ROTATION_OVERLAP_MS.
 */
export async function updateWebhookEndpoint(services: Services, principal: Principal, input: UpdateEndpointInput): Promise<{ endpoint: WebhookEndpointRecord; secret?: string }> {
  const settings = settingsOf(services);
  const url = input.url !== undefined ? checkEndpointUrl(input.url, settings) : undefined;
  const now = services.now();
  const secret = input.rotateSecret ? generateSigningSecret() : undefined;
  const row = await services.db.transaction(async (tx) => {
    const existing = await store.findEndpoint(tx, principal.organizationId, input.id);
    if (!existing) throw notFound(`no webhook endpoint ${input.id}`);
    const changes: store.EndpointChanges = {
      ...(url !== undefined ? { url } : {}),
      ...(input.events !== undefined ? { events: [...new Set(input.events)] } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.enabled === true && !existing.enabled ? { enabled: true, disabledReason: null, failingSince: null } : {}),
      ...(input.enabled === false && existing.enabled ? { enabled: false, disabledReason: "disabled by a user" } : {}),
      ...(secret !== undefined ? { secret: sealSecret(secret, settings.secretKey), previousSecret: existing.secret, previousSecretExpiresAt: new Date(now.getTime() + SECRET_ROTATION_OVERLAP_MS) } : {}),
    };
    const updated = await store.updateEndpoint(tx, existing.id, changes, now);
    const changed = Object.keys(changes).filter((k) => k !== "secret" && k !== "previousSecret" && k !== "previousSecretExpiresAt");
    await recordAudit(services, tx, principal, {
      action: "webhook_endpoint.updated",
      details: {
        endpointId: existing.id,
        changed,
        ...(url !== undefined ? { origin: originOf(url) } : {}),
        ...(input.events !== undefined ? { events: input.events } : {}),
        ...(secret !== undefined ? { secretRotated: true } : {}),
      },
    });
    return updated;
  });
  return { endpoint: toRecord(row, now), ...(secret !== undefined ? { secret } : {}) };
}

/** An endpoint's messages are deleted this many per statement, each its own transaction. */
export const DELETE_BATCH = 1_000;

/**
 * Deletes an endpoint and its messages. However many are queued, no statement holds the
 * database long (SQLite has one writer): the endpoint is first disabled (nothing more is
 * published to it, nothing delivered), then its messages go DELETE_BATCH at a time, each batch
 * its own transaction with a yield between (other writers go in between), then the endpoint.
 * Interrupted (a crash), the endpoint stays disabled, saying it is being deleted; deleting it
 * again finishes.
 */
export async function deleteWebhookEndpoint(services: Services, principal: Principal, id: string): Promise<void> {
  const found = await services.db.transaction(async (tx) => {
    const disabled = await store.disableEndpointForDeletion(tx, principal.organizationId, id, services.now());
    if (disabled) await recordAudit(services, tx, principal, { action: "webhook_endpoint.deleted", details: { endpointId: id } });
    return disabled;
  });
  if (!found) throw notFound(`no webhook endpoint ${id}`);
  while ((await services.db.sqlTransaction((sql) => store.deleteMessagesOfEndpoint(sql, id, DELETE_BATCH))) > 0) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  await services.db.transaction((tx) => store.deleteEndpoint(tx, principal.organizationId, id));
}

/** An endpoint's deliveries, newest first, `pageSize` at a time (pageToken: the last page's nextPageToken). */
export async function listWebhookDeliveries(
  services: Services,
  principal: Principal,
  input: { id: string; pageSize?: number; pageToken?: string },
): Promise<{ deliveries: WebhookDeliveryRecord[]; nextPageToken: string }> {
  const endpoint = await ownEndpoint(services, principal, input.id);
  const take = input.pageSize ?? 50;
  const rows = await services.db.read((tx) => store.messagesOf(tx, endpoint.id, input.pageToken || undefined, take + 1));
  const page = rows.slice(0, take);
  return { deliveries: page.map(toDelivery), nextPageToken: rows.length > take ? page.at(-1)!.id : "" };
}

/** Sends a delivery again: due now if still pending, else as a new delivery with the same webhook-id. */
export async function redeliverWebhook(services: Services, principal: Principal, input: { id: string; deliveryId: string }): Promise<{ delivery: WebhookDeliveryRecord }> {
  const endpoint = await ownEndpoint(services, principal, input.id);
  const row = await services.db.transaction(async (tx) => {
    const message = await store.findMessage(tx, endpoint.id, input.deliveryId);
    if (!message) throw notFound(`no delivery ${input.deliveryId} of webhook endpoint ${endpoint.id}`);
    const redelivered = await store.redeliverMessage(tx, message, { now: services.now(), newId: services.newId });
    await recordAudit(services, tx, principal, { action: "webhook.redelivered", details: { endpointId: endpoint.id, deliveryId: input.deliveryId } });
    return redelivered;
  });
  return { delivery: toDelivery(row) };
}
