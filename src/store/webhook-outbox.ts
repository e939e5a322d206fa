import { endpointWants, testOrderingKey, type QueuePlace, type WebhookEvent } from "../domain/webhook-events.js";
import { orderedId } from "./ids.js";
import { sqlOf, type Tx } from "./database.js";
import { isSql, type Sql } from "./sql.js";
import type { Queue } from "./queues.js";

/**
 * Outbound webhooks: endpoints, and the outbox of messages to them (one row per event and
 * endpoint), written in the transaction of the change each event tells of.
 */

export type WebhookEndpointRow = {
  id: string;
  organizationId: string;
  url: string;
  description: string;
  events: string[];
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
  enabled: boolean;
  disabledReason: string | null;
  failingSince: Date | null;
  createdAt: Date;
  updatedAt: Date;
};

export type WebhookMessageRow = {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  orderingKey: string;
  payload: string;
  createdAt: Date;
  status: "pending" | "delivered";
  attempts: number;
  nextAttemptAt: Date;
  deliveredAt: Date | null;
  lastAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
};

type EndpointRecord = Omit<WebhookEndpointRow, "events"> & { events: string };

function toEndpoint(row: EndpointRecord): WebhookEndpointRow {
  return { ...row, events: JSON.parse(row.events) as string[] };
}

function toMessage(row: Omit<WebhookMessageRow, "status"> & { status: string }): WebhookMessageRow {
  return { ...row, status: row.status === "delivered" ? "delivered" : "pending" };
}

const MESSAGE_COLUMNS = ["id", "endpointId", "eventId", "eventType", "orderingKey", "payload", "createdAt", "status", "attempts", "nextAttemptAt"] as const;

/**
 * Publishes events of an organization: one message per event and enabled endpoint whose filter
 * takes it, in the caller's transaction (a Prisma transaction or plain SQL). Answers the
 * webhook-ids of the events that some endpoint takes. An organization without endpoints costs
 * one indexed query.
 */
export async function publishEvents(target: Tx | Sql, organizationId: string, events: readonly WebhookEvent[], context: { now: Date; newId: () => string }): Promise<string[]> {
  if (events.length === 0) return [];
  const endpoints = isSql(target)
    ? await target.all<{ id: string; events: string }>(`SELECT "id", "events" FROM "WebhookEndpoint" WHERE "organizationId" = ? AND "enabled" = ? ORDER BY "id"`, [organizationId, true])
    : await target.webhookEndpoint.findMany({ where: { organizationId, enabled: true }, select: { id: true, events: true }, orderBy: { id: "asc" } });
  return insertMessages(
    target,
    endpoints.map((e) => ({ id: e.id, events: JSON.parse(e.events) as string[] })),
    events,
    context,
  );
}

/** Inserts one message per event and endpoint whose filter takes it; answers the webhook-ids of the events some endpoint takes. */
export async function insertMessages(target: Tx | Sql, endpoints: { id: string; events: string[] }[], events: readonly WebhookEvent[], context: { now: Date; newId: () => string }): Promise<string[]> {
  if (endpoints.length === 0) return [];
  let rows: (readonly unknown[])[] = [];
  const published: string[] = [];
  const timestamp = context.now.toISOString();
  for (const event of events) {
    const eventId = `msg_${context.newId().replaceAll("-", "")}`;
    const payload = JSON.stringify({ type: event.type, timestamp, data: event.data });
    const before = rows.length;
    for (const endpoint of endpoints) {
      if (!endpointWants(endpoint.events, event.type)) continue;
      rows.push([context.newId(), endpoint.id, eventId, event.type, event.orderingKey, payload, context.now, "pending", 0, context.now]);
    }
    if (rows.length > before) published.push(eventId);
  }
  if (rows.length === 0) return [];
  const live = await holdEndpoints(target, [...new Set(rows.map((row) => row[1] as string))]);
  if (live) rows = rows.filter((row) => live.has(row[1] as string));
  if (rows.length === 0) return [];
  if (isSql(target)) await target.insert("WebhookMessage", MESSAGE_COLUMNS, rows);
  else await target.webhookMessage.createMany({ data: rows.map((row) => Object.fromEntries(MESSAGE_COLUMNS.map((column, i) => [column, row[i]])) as never) });
  return published;
}

/**
 * PostgreSQL: holds the endpoints `ids` (FOR KEY SHARE) until the caller's transaction ends and
 * answers those that still exist. The endpoints were read earlier in the transaction; one
 * deleted since (deleteWebhookEndpoint committing meanwhile) failed the message inserts on the
 * foreign key, and with them the caller's whole request (issue 22: 500s on cancelPullRequest,
 * updateQueue under load). Now its messages are skipped, and a delete not yet committed waits
 * for the caller. SQLite runs one write transaction at a time: null, nothing to do.
 */
async function holdEndpoints(target: Tx | Sql, ids: string[]): Promise<Set<string> | null> {
  if (isSql(target)) {
    if (target.kind !== "postgres") return null;
    const [inList, param] = target.anyOf(`"id"`, ids);
    return new Set((await target.all<{ id: string }>(`SELECT "id" FROM "WebhookEndpoint" WHERE ${inList} FOR KEY SHARE`, [param])).map((row) => row.id));
  }
  if ((target as unknown as { _activeProvider?: string })._activeProvider !== "postgresql") return null;
  const rows = await target.$queryRawUnsafe<{ id: string }[]>(`SELECT "id" FROM "WebhookEndpoint" WHERE "id" = ANY($1::text[]) FOR KEY SHARE`, ids);
  return new Set(rows.map((row) => row.id));
}

/** The enabled endpoints of the organization that owns a repository, and the repository's name; null when it has none. */
export async function endpointsOfRepository(tx: Tx, repositoryId: string): Promise<{ organizationId: string; repository: string; endpoints: { id: string; events: string[] }[] } | null> {
  // Plain SQL (sqlOf): every decision with events asks, and most organizations have no endpoint.
  const endpoints = await sqlOf(tx).all<{ id: string; events: string; organizationId: string }>(
    `SELECT e."id", e."events", e."organizationId" FROM "WebhookEndpoint" e JOIN "Repository" r ON r."organizationId" = e."organizationId" WHERE r."id" = ? AND e."enabled" = ? ORDER BY e."id" ASC`,
    [repositoryId, true],
  );
  if (endpoints.length === 0) return null;
  const repository = await tx.repository.findUniqueOrThrow({ where: { id: repositoryId }, select: { host: true, owner: true, name: true } });
  return {
    organizationId: endpoints[0]!.organizationId,
    repository: `${repository.host}/${repository.owner}/${repository.name}`,
    endpoints: endpoints.map((e) => ({ id: e.id, events: JSON.parse(e.events) as string[] })),
  };
}

/** The place (repository name, branch) of a queue, for events published outside saveDecision. */
export async function queuePlace(tx: Tx, queueId: string): Promise<(QueuePlace & { organizationId: string }) | null> {
  // Plain SQL (sqlOf): every submission and cancellation publishes.
  const [row] = await sqlOf(tx).all<{ branch: string; host: string; owner: string; name: string; organizationId: string }>(
    `SELECT q."branch", r."host", r."owner", r."name", r."organizationId" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE q."id" = ?`,
    [queueId],
  );
  if (!row) return null;
  return { queueId, branch: row.branch, repository: `${row.host}/${row.owner}/${row.name}`, organizationId: row.organizationId };
}

/** The organization of a repository and its name (plain SQL: the flaky-test code's transactions). */
export async function repositoryPlace(sql: Sql, repositoryId: string): Promise<{ organizationId: string; repository: string } | null> {
  const [row] = await sql.all<{ organizationId: string; host: string; owner: string; name: string }>(`SELECT "organizationId", "host", "owner", "name" FROM "Repository" WHERE "id" = ?`, [repositoryId]);
  return row ? { organizationId: row.organizationId, repository: `${row.host}/${row.owner}/${row.name}` } : null;
}

/** Whether the organization has an enabled endpoint (cheap check before building events). */
export async function hasEnabledEndpoints(sql: Sql, organizationId: string): Promise<boolean> {
  const rows = await sql.all(`SELECT "id" FROM "WebhookEndpoint" WHERE "organizationId" = ? AND "enabled" = ? LIMIT 1`, [organizationId, true]);
  return rows.length > 0;
}

// Endpoints.

/**
 * How many endpoints the organization has, read while holding its row (a no-op UPDATE): two
 * creates of the same organization counting at once are serialized, so a limit checked on
 * this count holds under concurrency (PostgreSQL; SQLite has one writer anyway).
 */
export async function countEndpointsLocked(tx: Tx, organizationId: string): Promise<number> {
  await tx.$executeRaw`UPDATE "Organization" SET "slug" = "slug" WHERE "id" = ${organizationId}`;
  return tx.webhookEndpoint.count({ where: { organizationId } });
}

export async function insertEndpoint(tx: Tx, row: Omit<WebhookEndpointRow, "previousSecret" | "previousSecretExpiresAt" | "disabledReason" | "failingSince">): Promise<WebhookEndpointRow> {
  const created = await tx.webhookEndpoint.create({ data: { ...row, events: JSON.stringify(row.events) } });
  return toEndpoint(created);
}

export async function endpointsOf(tx: Tx, organizationId: string): Promise<WebhookEndpointRow[]> {
  return (await tx.webhookEndpoint.findMany({ where: { organizationId }, orderBy: { id: "asc" } })).map(toEndpoint);
}

/** The organization's endpoint `id`, or null (another organization's is null as well). */
export async function findEndpoint(tx: Tx, organizationId: string, id: string): Promise<WebhookEndpointRow | null> {
  const row = await tx.webhookEndpoint.findFirst({ where: { id, organizationId } });
  return row ? toEndpoint(row) : null;
}

export type EndpointChanges = Partial<Pick<WebhookEndpointRow, "url" | "description" | "events" | "secret" | "previousSecret" | "previousSecretExpiresAt" | "enabled" | "disabledReason" | "failingSince">>;

export async function updateEndpoint(tx: Tx, id: string, changes: EndpointChanges, now: Date): Promise<WebhookEndpointRow> {
  const { events, ...rest } = changes;
  const row = await tx.webhookEndpoint.update({ where: { id }, data: { ...rest, ...(events ? { events: JSON.stringify(events) } : {}), updatedAt: now } });
  return toEndpoint(row);
}

/**
 * Stops the organization's endpoint `id` from getting messages, before its deletion: disabled,
 * so no event is published to it and the dispatcher leaves it. Answers false when the
 * organization has no such endpoint.
 */
export async function disableEndpointForDeletion(tx: Tx, organizationId: string, id: string, at: Date): Promise<boolean> {
  const { count } = await tx.webhookEndpoint.updateMany({ where: { id, organizationId }, data: { enabled: false, disabledReason: "being deleted (delete it again if this stays)", updatedAt: at } });
  return count === 1;
}

/**
 * Deletes at most `limit` of an endpoint's messages (one short statement); answers how many.
 * On PostgreSQL the endpoint's row is locked first, as a round's record of its outcomes locks it
 * (`lockEndpointsForOutcomes`): the two take their message rows in different orders, and
 * without one lock before them a batch and a record deadlocked (bench:api-load, issue 22).
 */
export async function deleteMessagesOfEndpoint(sql: Sql, endpointId: string, limit: number): Promise<number> {
  if (sql.kind === "postgres") await sql.all(`SELECT "id" FROM "WebhookEndpoint" WHERE "id" = ? FOR UPDATE`, [endpointId]);
  return sql.run(`DELETE FROM "WebhookMessage" WHERE "id" IN (SELECT "id" FROM "WebhookMessage" WHERE "endpointId" = ? LIMIT ?)`, [endpointId, limit]);
}

/** Deletes the organization's endpoint `id` (what messages it still has go with it). */
export async function deleteEndpoint(tx: Tx, organizationId: string, id: string): Promise<boolean> {
  const { count } = await tx.webhookEndpoint.deleteMany({ where: { id, organizationId } });
  return count === 1;
}

// Messages (deliveries).

/** An endpoint's messages, newest first, after the cursor `before` (a message id). */
export async function messagesOf(tx: Tx, endpointId: string, before: string | undefined, take: number): Promise<WebhookMessageRow[]> {
  const rows = await tx.webhookMessage.findMany({ where: { endpointId, ...(before ? { id: { lt: before } } : {}) }, orderBy: { id: "desc" }, take });
  return rows.map(toMessage);
}

export async function findMessage(tx: Tx, endpointId: string, id: string): Promise<WebhookMessageRow | null> {
  const row = await tx.webhookMessage.findFirst({ where: { id, endpointId } });
  return row ? toMessage(row) : null;
}

/** A message still pending is made due now; a delivered one is sent again as a new message with the same webhook-id (after the key's pending ones). */
export async function redeliverMessage(tx: Tx, message: WebhookMessageRow, context: { now: Date; newId: () => string }): Promise<WebhookMessageRow> {
  if (message.status === "pending") {
    const row = await tx.webhookMessage.update({ where: { id: message.id }, data: { nextAttemptAt: context.now } });
    return toMessage(row);
  }
  const row = await tx.webhookMessage.create({
    data: {
      id: context.newId(),
      endpointId: message.endpointId,
      eventId: message.eventId,
      eventType: message.eventType,
      orderingKey: message.orderingKey,
      payload: message.payload,
      createdAt: context.now,
      status: "pending",
      nextAttemptAt: context.now,
    },
  });
  return toMessage(row);
}

// The dispatcher.

/** Enabled endpoints with messages pending, with their organization. */
export async function endpointsWithPending(tx: Tx): Promise<{ id: string; organizationId: string }[]> {
  // An EXISTS per endpoint on (endpointId, status, id): a `distinct` would read every pending row.
  // Plain SQL: every replica asks at every poll, 10 times a second (issue 23 goal 3).
  return sqlOf(tx).all<{ id: string; organizationId: string }>(
    `SELECT e."id", e."organizationId" FROM "WebhookEndpoint" e WHERE e."enabled" = ? AND EXISTS (SELECT 1 FROM "WebhookMessage" m WHERE m."endpointId" = e."id" AND m."status" = 'pending') ORDER BY e."id"`,
    [true],
  );
}

/**
 * The oldest pending message of each ordering key of an endpoint (among its first `scanLimit`
 * pending ones), due or not: a key's later messages wait behind it.
 */
export async function pendingHeads(tx: Tx, endpointId: string, scanLimit: number): Promise<{ id: string; nextAttemptAt: Date }[]> {
  const rows = await tx.webhookMessage.findMany({ where: { endpointId, status: "pending" }, orderBy: { id: "asc" }, take: scanLimit, select: { id: true, orderingKey: true, nextAttemptAt: true } });
  const heads = new Map<string, { id: string; nextAttemptAt: Date }>();
  for (const row of rows) if (!heads.has(row.orderingKey)) heads.set(row.orderingKey, { id: row.id, nextAttemptAt: row.nextAttemptAt });
  return [...heads.values()];
}

export type ClaimedMessage = { id: string; endpointId: string; eventId: string; payload: string; attempts: number };

/**
 * Takes due pending messages for one dispatcher until `leaseUntil` (another, or this one after a
 * crash, may take them again after that): one UPDATE that answers the rows it changed, so two
 * replicas claiming the same rows each get a different share (PostgreSQL re-checks the WHERE of
 * a row another transaction updated; SQLite has one writer).
 */
export async function claimMessages(sql: Sql, ids: readonly string[], now: Date, leaseUntil: Date): Promise<ClaimedMessage[]> {
  if (ids.length === 0) return [];
  const [inIds, param] = sql.anyOf(`"id"`, ids as string[]);
  const rows = await sql.all<ClaimedMessage>(
    `UPDATE "WebhookMessage" SET "nextAttemptAt" = ? WHERE ${inIds} AND "status" = 'pending' AND "nextAttemptAt" <= ? RETURNING "id", "endpointId", "eventId", "payload", "attempts"`,
    [leaseUntil, param, now],
  );
  return rows.map((row) => ({ ...row, attempts: Number(row.attempts) }));
}

export async function endpointsByIds(tx: Tx, ids: readonly string[]): Promise<WebhookEndpointRow[]> {
  return (await tx.webhookEndpoint.findMany({ where: { id: { in: [...ids] } } })).map(toEndpoint);
}

// The outcomes of a round are recorded in plain SQL (one short transaction): through Prisma each
// of up to 50 updates cost milliseconds of client time while holding SQLite's one writer, which
// every other organization's deliveries and API writes wait for (issue 22, defect 12).

/** Marks messages delivered, grouped by the status the endpoint answered. */
/**
 * Locks the endpoints whose messages a round's outcomes update, in one order, before those
 * updates (PostgreSQL; SQLite has one writer): a deletion of one of them waits for the record,
 * or the record for the deletion's batch, instead of each holding message rows the other wants.
 * KEY SHARE: it never waits for an endpoint's plain updates (disabling, outcome notes).
 */
export async function lockEndpointsForOutcomes(sql: Sql, endpointIds: readonly string[]): Promise<void> {
  if (sql.kind !== "postgres" || endpointIds.length === 0) return;
  const [inIds, param] = sql.anyOf(`"id"`, [...endpointIds]);
  await sql.all(`SELECT "id" FROM "WebhookEndpoint" WHERE ${inIds} ORDER BY "id" FOR KEY SHARE`, [param]);
}

export async function markDelivered(sql: Sql, delivered: { id: string; status: number }[], at: Date): Promise<void> {
  const byStatus = new Map<number, string[]>();
  for (const d of delivered) byStatus.set(d.status, [...(byStatus.get(d.status) ?? []), d.id]);
  for (const [status, ids] of byStatus) {
    const [inIds, param] = sql.anyOf(`"id"`, ids);
    await sql.run(`UPDATE "WebhookMessage" SET "status" = 'delivered', "deliveredAt" = ?, "lastAttemptAt" = ?, "lastStatus" = ?, "lastError" = NULL, "attempts" = "attempts" + 1 WHERE ${inIds} AND "status" = 'pending'`, [
      at,
      at,
      status,
      param,
    ]);
  }
}

export async function markFailed(sql: Sql, id: string, failure: { status: number | null; error: string; retryAt: Date }, at: Date): Promise<void> {
  await sql.run(`UPDATE "WebhookMessage" SET "attempts" = "attempts" + 1, "lastAttemptAt" = ?, "lastStatus" = ?, "lastError" = ?, "nextAttemptAt" = ? WHERE "id" = ? AND "status" = 'pending'`, [
    at,
    failure.status,
    failure.error.slice(0, 2000),
    failure.retryAt,
    id,
  ]);
}

/** Counts an endpoint's success (failingSince cleared) or failure (set, if not yet). */
export async function noteEndpointOutcome(sql: Sql, id: string, succeeded: boolean, at: Date): Promise<void> {
  if (succeeded) await sql.run(`UPDATE "WebhookEndpoint" SET "failingSince" = NULL WHERE "id" = ? AND "failingSince" IS NOT NULL`, [id]);
  else await sql.run(`UPDATE "WebhookEndpoint" SET "failingSince" = ? WHERE "id" = ? AND "failingSince" IS NULL`, [at, id]);
}

/** Disables an endpoint still enabled; answers whether it did. */
export async function disableEndpoint(sql: Sql, id: string, reason: string, at: Date, onlyFailingSinceBefore?: Date): Promise<boolean> {
  const failing = onlyFailingSinceBefore ? ` AND "failingSince" IS NOT NULL AND "failingSince" <= ?` : "";
  const count = await sql.run(`UPDATE "WebhookEndpoint" SET "enabled" = ?, "disabledReason" = ?, "updatedAt" = ? WHERE "id" = ? AND "enabled" = ?${failing}`, [
    false,
    reason,
    at,
    id,
    true,
    ...(onlyFailingSinceBefore ? [onlyFailingSinceBefore] : []),
  ]);
  return count === 1;
}

/** How many messages are pending, in all (the bench and the tests watch it drain). */
export async function countPendingMessages(tx: Tx): Promise<number> {
  return tx.webhookMessage.count({ where: { status: "pending" } });
}

/**
 * Publishes events about a queue, built from its place; nothing when its organization has no
 * enabled endpoint. Given the queue as its lock in this transaction answered it (lockQueueRow),
 * a queue whose organization had none then asks nothing more.
 */
export async function publishQueueEvents(tx: Tx, queue: string | Pick<Queue, "id" | "webhookEndpointsEnabled">, build: (place: QueuePlace) => WebhookEvent[], context: { now: Date; newId: () => string }): Promise<void> {
  if (typeof queue !== "string" && queue.webhookEndpointsEnabled === false) return;
  const queueId = typeof queue === "string" ? queue : queue.id;
  const place = await queuePlace(tx, queueId);
  if (!place) return;
  if (!(await hasEnabledEndpoints(sqlOf(tx), place.organizationId))) return;
  await publishEvents(tx, place.organizationId, build(place), context);
}

/** A test whose status or quarantine detection changed. */
export type TestChange = { key: number; status?: { from: string; to: string; reason: string }; quarantined?: { from: boolean; to: boolean } };

/**
 * Publishes test.status_changed and test.quarantine_changed for tests of a repository, in the
 * flaky-test code's plain-SQL transaction; nothing when its organization has no enabled endpoint.
 */
export async function publishTestEvents(sql: Sql, repositoryId: string, changes: readonly TestChange[], now: Date): Promise<void> {
  if (changes.length === 0) return;
  const place = await repositoryPlace(sql, repositoryId);
  if (!place || !(await hasEnabledEndpoints(sql, place.organizationId))) return;
  const [inKeys, param] = sql.anyOf(
    `"key"`,
    changes.map((c) => c.key),
  );
  const tests = await sql.all<{ key: number; id: string; name: string; file: string; classname: string; parent: string; variant: string }>(
    `SELECT "key", "id", "name", "file", "classname", "parent", "variant" FROM "TestCase" WHERE ${inKeys}`,
    [param],
  );
  const byKey = new Map(tests.map((t) => [Number(t.key), t]));
  const at = now.toISOString();
  const events: WebhookEvent[] = [];
  for (const change of changes) {
    const t = byKey.get(change.key);
    if (!t) continue;
    const test = { id: t.id, name: t.name, file: t.file, classname: t.classname, parent: t.parent, variant: t.variant };
    const orderingKey = testOrderingKey(repositoryId, t.id);
    if (change.status) events.push({ type: "test.status_changed", orderingKey, data: { repository: place.repository, test, from: change.status.from, to: change.status.to, reason: change.status.reason, at } });
    if (change.quarantined) events.push({ type: "test.quarantine_changed", orderingKey, data: { repository: place.repository, test, quarantined: change.quarantined.to, at } });
  }
  await publishEvents(sql, place.organizationId, events, { now, newId: () => orderedId() });
}

/** Forgets messages delivered before `before` (their endpoint's deliveries list no longer shows them). */
export async function pruneDeliveredMessages(tx: Tx, before: Date): Promise<number> {
  const { count } = await tx.webhookMessage.deleteMany({ where: { status: "delivered", deliveredAt: { lt: before } } });
  return count;
}
