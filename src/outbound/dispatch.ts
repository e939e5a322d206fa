import { exponentialBackoffMs } from "../domain/backoff.js";
import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import type { WebhookSettings } from "../config.js";
import {
  claimMessages,
  disableEndpoint,
  endpointsByIds,
  endpointsWithPending,
  markDelivered,
  lockEndpointsForOutcomes,
  markFailed,
  noteEndpointOutcome,
  pendingHeads,
  pruneDeliveredMessages,
  type ClaimedMessage,
  type WebhookEndpointRow,
} from "../store/webhook-outbox.js";
import type { Services } from "../app/services.js";
import { settingsOf } from "./endpoints.js";
import { bareHost, guardedLookup, isRefusedAddress, openSecret, RefusedAddressError, signatureHeader } from "./security.js";

/** How many pending messages of an endpoint one round looks at to find each ordering key's oldest. */
const SCAN_LIMIT = 500;
/** At most this many messages of one endpoint in flight per round (and per dispatcher). */
const PER_ENDPOINT = 50;
/**
 * At most this many endpoints of one organization deliver at once in this process (each with up
 * to PER_ENDPOINT messages in flight): an organization with many slow or failing endpoints and
 * a deep backlog takes this share of the dispatcher and of the database, never the others'.
 */
export const ORGANIZATION_ENDPOINTS_IN_FLIGHT = 2;
/** An endpoint's turn: at most this many rounds, then it gives its organization's slot to the next of its endpoints. */
export const ROUNDS_PER_TURN = 4;
/** A Retry-After is honoured up to this (a longer one is read as this): a day, the default disabling window. */
export const RETRY_AFTER_MAX_MS = 24 * 3600_000;
/** How much of a failed answer's body is kept with the delivery. */
const ERROR_BODY_CHARS = 300;

/** The wait before attempt n+1 after n failures: base·2^(n-1), capped, with jitter (half to all of it). */
export function webhookRetryDelayMs(failures: number, settings: WebhookSettings, random: () => number): number {
  const exponential = exponentialBackoffMs(failures, settings.retryBaseMs, settings.retryMaxMs);
  return Math.round(exponential * (0.5 + random() * 0.5));
}

type Outcome = { message: ClaimedMessage; ok: boolean; status: number | null; error: string; gone: boolean; retryAfterMs: number | null };

/**
 * Delivers one endpoint's webhook messages: one round. The oldest pending message of each
 * ordering key, if due, is claimed (a lease: another dispatcher takes it again only if this one
 * dies), sent, and recorded: 2xx delivered; anything else (3xx included: redirects are not
 * followed) retried with backoff; 410 Gone disables the endpoint. An endpoint that has not
 * succeeded for `disableAfterMs` is disabled with the reason. A key's later messages wait until
 * its oldest is delivered, so the endpoint receives them in order. Answers how many messages
 * were attempted.
 */
export async function dispatchEndpoint(services: Services, agents: WebhookAgents, endpointId: string): Promise<number> {
  const settings = settingsOf(services);
  const now = services.now();
  const heads = await services.db.read((tx) => pendingHeads(tx, endpointId, SCAN_LIMIT));
  const due = heads
    .filter((h) => h.nextAttemptAt <= now)
    .map((h) => h.id)
    .slice(0, PER_ENDPOINT);
  if (due.length === 0) return 0;
  const leaseUntil = new Date(now.getTime() + leaseMs(settings));
  const claimed = await services.db.sqlTransaction((sql) => claimMessages(sql, due, now, leaseUntil));
  if (claimed.length === 0) return 0;
  const [endpoint] = await services.db.read((tx) => endpointsByIds(tx, [endpointId]));
  const outcomes = await Promise.all(claimed.map((message) => attempt(services, settings, agents, endpoint, message)));
  await record(services, settings, outcomes);
  return claimed.length;
}

/**
 * Serves organizations fairly, and each endpoint on its own: an endpoint's rounds follow one
 * another and never wait for another endpoint's (a slow or failing endpoint holds only its own
 * deliveries). Per organization, at most ORGANIZATION_ENDPOINTS_IN_FLIGHT endpoints deliver at
 * once here, each for a turn of at most ROUNDS_PER_TURN rounds, its organization's endpoints
 * taking turns round-robin: one organization's many endpoints, slow or failing, with a deep
 * backlog, use its own budget of connections, database transactions and CPU, and another
 * organization's endpoint starts at the next poll whatever that one's backlog (issue 22,
 * defect 12). Across processes, the claims keep a message with one dispatcher at a time, and
 * the organization's budget is shared: each turn holds one of its slots (#inOrganizationSlot).
 */
export class WebhookDispatcher {
  readonly #busy = new Map<string, { organizationId: string; work: Promise<number> }>();
  /** Per organization, the endpoint whose turn came last: the next turn goes to the one after it. */
  readonly #lastTurn = new Map<string, string>();

  constructor(
    private readonly services: Services,
    private readonly agents: WebhookAgents,
  ) {}

  /**
   * One round for each endpoint with messages pending and none in flight here, whatever its
   * organization's budget (tests, driving rounds with an injected clock until none is due);
   * answers how many messages they attempted.
   */
  async roundOfIdle(): Promise<number> {
    const rounds = await this.#startIdle((id) => dispatchEndpoint(this.services, this.agents, id), undefined, Number.POSITIVE_INFINITY);
    return (await Promise.all(rounds)).reduce((a, b) => a + b, 0);
  }

  /**
   * For each endpoint with messages pending, none in flight here, and its organization's turn,
   * rounds one after another until none of its messages is due, its turn is over, or `going()`
   * says stop, without waiting for them. Answers how many endpoints it started.
   */
  async startIdle(going: () => boolean, onError: (error: unknown, endpointId: string) => void): Promise<number> {
    const loops = await this.#startIdle(async (id) => {
      let total = 0;
      for (let round = 0; round < ROUNDS_PER_TURN && going(); round++) {
        const attempted = await dispatchEndpoint(this.services, this.agents, id);
        if (attempted === 0) break;
        total += attempted;
      }
      return total;
    }, onError);
    return loops.length;
  }

  /** Waits for the rounds in flight (stopping). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#busy.values()].map((b) => b.work));
  }

  async #startIdle(run: (endpointId: string) => Promise<number>, onError?: (error: unknown, endpointId: string) => void, budget = ORGANIZATION_ENDPOINTS_IN_FLIGHT): Promise<Promise<number>[]> {
    const pending = await this.services.db.read((tx) => endpointsWithPending(tx));
    const byOrganization = new Map<string, string[]>();
    for (const e of pending) byOrganization.set(e.organizationId, [...(byOrganization.get(e.organizationId) ?? []), e.id]);
    const inFlight = new Map<string, number>();
    for (const b of this.#busy.values()) inFlight.set(b.organizationId, (inFlight.get(b.organizationId) ?? 0) + 1);
    const started: Promise<number>[] = [];
    for (const [organizationId, ids] of byOrganization) {
      let free = budget - (inFlight.get(organizationId) ?? 0);
      if (free <= 0) continue;
      // Round-robin: the endpoints (sorted by id) after the one whose turn came last, then from the start.
      const last = this.#lastTurn.get(organizationId);
      const from = last === undefined ? 0 : ids.findIndex((id) => id > last);
      const order = from <= 0 ? ids : [...ids.slice(from), ...ids.slice(0, from)];
      for (const id of order) {
        if (free <= 0) break;
        if (this.#busy.has(id)) continue;
        free--;
        this.#lastTurn.set(organizationId, id);
        // One round of an endpoint at a time across processes (a lock PostgreSQL drops with a dead
        // process's session): a live round that outlasts its claims' lease (a stalled process) is
        // never overlapped by another replica re-claiming and re-sending its messages; after a
        // crash the lease alone decides when they go again.
        const turn = async () => (await this.services.db.tryWithLock(`greenline-webhooks-endpoint:${id}`, () => run(id))) ?? 0;
        const work = (Number.isFinite(budget) ? this.#inOrganizationSlot(organizationId, budget, turn) : turn()).finally(() => this.#busy.delete(id));
        this.#busy.set(id, { organizationId, work });
        if (onError) work.catch((error: unknown) => onError(error, id));
        started.push(work);
      }
    }
    return started;
  }

  /**
   * Runs an endpoint's turn in one of its organization's `budget` slots, across every process on
   * the database: a slot is a named lock (a PostgreSQL session advisory lock; within a process a
   * name), tried in order, so N replicas together have the organization's budget, not N times
   * it. With every slot held elsewhere the turn is skipped (0): the next poll tries again.
   */
  async #inOrganizationSlot(organizationId: string, budget: number, run: () => Promise<number>): Promise<number> {
    for (let slot = 0; slot < budget; slot++) {
      const done = await this.services.db.tryWithLock(`greenline-webhooks:${organizationId}:${slot}`, run);
      if (done !== null) return done;
    }
    return 0;
  }
}

/** A claim outlives any attempt: the request's timeout, twice, and a second. */
function leaseMs(settings: WebhookSettings): number {
  return 2 * settings.timeoutMs + 1000;
}

async function attempt(services: Services, settings: WebhookSettings, agents: WebhookAgents, endpoint: WebhookEndpointRow | undefined, message: ClaimedMessage): Promise<Outcome> {
  const failed = (error: string, status: number | null = null): Outcome => ({ message, ok: false, status, error, gone: false, retryAfterMs: null });
  if (!endpoint) return failed("the endpoint is gone");
  let secrets: string[];
  try {
    secrets = [openSecret(endpoint.secret, settings.secretKey)];
    if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > services.now()) secrets.push(openSecret(endpoint.previousSecret, settings.secretKey));
  } catch (error) {
    return failed(`cannot sign: ${(error as Error).message}`);
  }
  // The timestamp is the wall clock's: receivers compare it with theirs (Standard Webhooks allows 5 minutes).
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = {
    "content-type": "application/json",
    "user-agent": "Greenline-Webhooks/1",
    "webhook-id": message.eventId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signatureHeader(secrets, message.eventId, timestamp, message.payload),
  };
  try {
    const answer = await post(endpoint.url, headers, message.payload, settings, agents);
    if (answer.status >= 200 && answer.status < 300) return { message, ok: true, status: answer.status, error: "", gone: false, retryAfterMs: null };
    const what =
      answer.status >= 300 && answer.status < 400
        ? `redirect ${answer.status} not followed${answer.location ? ` (to ${answer.location.slice(0, 200)})` : ""}`
        : `answered ${answer.status}${answer.body ? `: ${answer.body}` : ""}`;
    return { message, ok: false, status: answer.status, error: what, gone: answer.status === 410, retryAfterMs: answer.retryAfterMs };
  } catch (error) {
    return failed(error instanceof Error ? error.message : String(error));
  }
}

async function record(services: Services, settings: WebhookSettings, outcomes: Outcome[]): Promise<void> {
  const at = services.now();
  const random = services.random ?? Math.random;
  const delivered = outcomes.filter((o) => o.ok).map((o) => ({ id: o.message.id, status: o.status! }));
  const succeeded = new Set(outcomes.filter((o) => o.ok).map((o) => o.message.endpointId));
  const failing = new Set(outcomes.filter((o) => !o.ok && !succeeded.has(o.message.endpointId)).map((o) => o.message.endpointId));
  const gone = new Set(outcomes.filter((o) => o.gone).map((o) => o.message.endpointId));
  const disabled: { endpointId: string; reason: string }[] = [];
  await services.db.sqlTransaction(async (tx) => {
    await lockEndpointsForOutcomes(tx, [...new Set(outcomes.map((o) => o.message.endpointId))].sort());
    await markDelivered(tx, delivered, at);
    for (const o of outcomes) {
      if (o.ok) continue;
      // The backoff is capped; a Retry-After is honoured beyond that cap (up to RETRY_AFTER_MAX_MS).
      const delay = Math.max(webhookRetryDelayMs(o.message.attempts + 1, settings, random), Math.min(o.retryAfterMs ?? 0, RETRY_AFTER_MAX_MS));
      await markFailed(tx, o.message.id, { status: o.status, error: o.error, retryAt: new Date(at.getTime() + delay) }, at);
    }
    for (const id of succeeded) await noteEndpointOutcome(tx, id, true, at);
    for (const id of failing) {
      await noteEndpointOutcome(tx, id, false, at);
      const hours = Math.round((settings.disableAfterMs / 3600_000) * 10) / 10;
      const reason = `disabled after failing for ${hours} h without a success (last error: ${outcomes.find((o) => o.message.endpointId === id && !o.ok)?.error.slice(0, 300)})`;
      if (await disableEndpoint(tx, id, reason, at, new Date(at.getTime() - settings.disableAfterMs))) disabled.push({ endpointId: id, reason });
    }
    for (const id of gone) {
      const reason = "disabled: the endpoint answered 410 Gone";
      if (await disableEndpoint(tx, id, reason, at)) disabled.push({ endpointId: id, reason });
    }
  });
  for (const d of disabled) services.log?.warn({ webhookEndpoint: d.endpointId, reason: d.reason }, "webhook endpoint disabled");
}

/** Delivered messages are kept this long (an endpoint's deliveries list, redelivery). */
export const DELIVERED_RETENTION_MS = 7 * 24 * 3600_000;

/** Forgets messages delivered longer ago than the retention. */
export async function pruneWebhookMessages(services: Services): Promise<number> {
  const before = new Date(services.now().getTime() - DELIVERED_RETENTION_MS);
  return services.db.transaction((tx) => pruneDeliveredMessages(tx, before));
}

/** Keep-alive connections to endpoints, reused across rounds. */
export type WebhookAgents = { http: http.Agent; https: https.Agent };

export function createWebhookAgents(): WebhookAgents {
  return { http: new http.Agent({ keepAlive: true, maxSockets: PER_ENDPOINT }), https: new https.Agent({ keepAlive: true, maxSockets: PER_ENDPOINT }) };
}

export function closeWebhookAgents(agents: WebhookAgents): void {
  agents.http.destroy();
  agents.https.destroy();
}

/** A Retry-After header (RFC 9110 10.2.3): delay-seconds or an HTTP-date; null when absent or malformed. */
export function retryAfterMs(value: string | undefined, nowMs: number): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isFinite(at) && /[a-z]/i.test(text) ? Math.max(0, at - nowMs) : null;
}

type Answer = { status: number; body: string; location: string | null; retryAfterMs: number | null };

/**
 * POSTs a body to an endpoint: to an address checked against the refused ranges (an IP in the
 * URL directly, a hostname in the connection's lookup), never following a redirect, and given
 * up after the timeout.
 */
async function post(urlText: string, headers: Record<string, string>, body: string, settings: WebhookSettings, agents: WebhookAgents): Promise<Answer> {
  try {
    return await postOnce(urlText, headers, body, settings, agents);
  } catch (error) {
    // A kept-alive connection the receiver closed just as it was reused (its idle timeout, often
    // 5 s): the request never reached it. Sent again at once on a new connection, as Node's
    // documentation advises (`request.reusedSocket`), instead of failing the attempt and waiting
    // out a backoff. Once: a second failure is the receiver's.
    if (error instanceof StaleConnectionError) return postOnce(urlText, headers, body, settings, agents);
    throw error;
  }
}

/** A reused keep-alive connection reset before any answer (see post). */
class StaleConnectionError extends Error {}

function postOnce(urlText: string, headers: Record<string, string>, body: string, settings: WebhookSettings, agents: WebhookAgents): Promise<Answer> {
  const url = new URL(urlText);
  const host = bareHost(url);
  if (!settings.allowPrivate && isIP(host) !== 0 && isRefusedAddress(host)) return Promise.reject(new RefusedAddressError(host, host));
  const secure = url.protocol === "https:";
  if (!secure && url.protocol !== "http:") return Promise.reject(new Error(`unsupported protocol ${url.protocol}`));
  return new Promise<Answer>((resolve, reject) => {
    const request = (secure ? https : http).request(
      url,
      {
        method: "POST",
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
        agent: secure ? agents.https : agents.http,
        lookup: guardedLookup(settings.allowPrivate) as never,
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          if (text.length < ERROR_BODY_CHARS) text += chunk;
        });
        response.on("error", reject);
        response.on("end", () => {
          clearTimeout(timer);
          const status = response.statusCode ?? 0;
          resolve({
            status,
            body: status >= 200 && status < 300 ? "" : text.slice(0, ERROR_BODY_CHARS).replace(/\s+/g, " ").trim(),
            location: typeof response.headers.location === "string" ? response.headers.location : null,
            retryAfterMs: retryAfterMs(response.headers["retry-after"], Date.now()),
          });
        });
      },
    );
    // The address connected to is checked too, whatever the family and however it was found: a
    // socket to a refused address is closed before the request is written.
    if (!settings.allowPrivate) {
      request.on("socket", (socket) => {
        const check = () => {
          const address = socket.remoteAddress;
          if (address === undefined || isRefusedAddress(address)) request.destroy(new RefusedAddressError(host, address ?? "an unknown address"));
        };
        if (socket.connecting) socket.prependOnceListener("connect", check);
      });
    }
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${settings.timeoutMs} ms`)), settings.timeoutMs);
    let answered = false;
    request.on("response", () => (answered = true));
    request.on("error", (error) => {
      clearTimeout(timer);
      const code = (error as NodeJS.ErrnoException).code;
      if (request.reusedSocket && !answered && (code === "ECONNRESET" || code === "EPIPE")) reject(new StaleConnectionError(error.message));
      else reject(error);
    });
    request.end(body);
  });
}
