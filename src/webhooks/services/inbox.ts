import { withRequestId } from "../../app/request-context.js";
import { exponentialBackoffMs } from "../../domain/backoff.js";
import { MINUTE_MS, SECOND_MS } from "../../domain/time.js";
import { claimDelivery, completeDelivery, deferDelivery, headDeliveries, insertDelivery, pruneProcessedDeliveries, recordDeliveryFailure, type RecordedDelivery } from "../../store/webhook-inbox.js";
import { CodeHostRefusal, rateReserveUntil } from "../../ports/code-host.js";
import { isUniqueViolation } from "../../app/errors.js";
import type { Services } from "../../app/services.js";

/** A verified webhook delivery: GitHub's delivery id, event name and parsed payload. */
export type InboundDelivery = { id: string; name: string; payload: unknown };

/** Processes one delivery (the webhook handlers); throws to have it retried. */
export type DeliveryHandler = (delivery: InboundDelivery) => Promise<void>;

/** Attempts at a delivery before it is given up on (kept, marked failed with its error). */
export const MAX_DELIVERY_ATTEMPTS = 10;
/** A delivery being processed is held this long by its worker (after a crash, another takes it). */
export const DELIVERY_LEASE_MS = 5 * 60_000;
/** Processed deliveries are kept this long (GitHub lets an operator redeliver for 3 days). */
export const PROCESSED_DELIVERY_RETENTION_MS = 7 * 24 * 3600_000;
/** How many waiting deliveries one round looks at to find each repository's oldest. */
const ROUND_SCAN_LIMIT = 10_000;
/** One round processes at most this many deliveries of a repository, one after another, in order of arrival. */
export const ROUND_PER_REPOSITORY = 100;
/** And at most this many in all (payloads read at once). */
const ROUND_TOTAL = 1_000;

/** Wait before attempt n+1 after n failures: 2 s, 4 s, 8 s, … at most 5 minutes. */
export function deliveryRetryDelayMs(failures: number): number {
  return exponentialBackoffMs(failures, 2 * SECOND_MS, 5 * MINUTE_MS);
}

/**
 * Records a verified delivery in the inbox, once per delivery id: a redelivery (GitHub's, or an
 * operator's from the App settings) of a delivery still kept is not recorded again. Answers
 * whether it was new. Nothing here calls GitHub: the webhook is answered as soon as this returns.
 */
export async function recordDelivery(services: Services, delivery: InboundDelivery & { action: string | null; repositoryKey: string }): Promise<boolean> {
  const row = { deliveryId: delivery.id, event: delivery.name, action: delivery.action, repositoryKey: delivery.repositoryKey, payload: JSON.stringify(delivery.payload), receivedAt: services.now() };
  try {
    await services.db.transaction((tx) => insertDelivery(tx, row, services.newId));
    return true;
  } catch (error) {
    // A concurrent or earlier recording of the same delivery id.
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

/**
 * One round of the inbox: for each repository, its oldest waiting deliveries (up to
 * ROUND_PER_REPOSITORY), one after another while each is due and goes through, are processed by
 * `handle`. A failure is retried with backoff (the repository's later deliveries wait, so they
 * are processed in order of arrival; a rate limit's retry time is honoured) until
 * MAX_DELIVERY_ATTEMPTS, then kept as failed with its error and logged; a permanent refusal of
 * the code host (CodeHostRefusal not transient) is kept as failed at once. Answers how many
 * deliveries it processed or gave up on.
 */
export async function processDueDeliveries(services: Services, handle: DeliveryHandler): Promise<number> {
  const groups = await services.db.read((tx) => headDeliveries(tx, ROUND_SCAN_LIMIT, ROUND_PER_REPOSITORY, ROUND_TOTAL));
  let work = 0;
  for (const deliveries of groups) {
    for (const delivery of deliveries) {
      if (delivery.nextAttemptAt > services.now()) break;
      if (await deferredForReserve(services, delivery)) break;
      // Not done (it failed and waits for its retry, or another worker took it): the repository's next ones wait.
      if (!(await processDelivery(services, delivery, handle))) break;
      work++;
      // A turn of the event loop between deliveries: on SQLite a run of them could otherwise stay
      // in microtasks and hold the server's requests for the whole round.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return work;
}

/**
 * A delivery being retried waits while its repository's installation has less than its
 * reserve of the rate limit left (first deliveries go): put off to the reset, not counted as
 * an attempt. Answers whether it was.
 */
async function deferredForReserve(services: Services, delivery: RecordedDelivery): Promise<boolean> {
  if (delivery.attempts === 0 || !services.codeHost.rateBudget) return false;
  // The key is host/owner/name (repositoryKey); deliveries of no repository have none.
  const [host, owner, name] = delivery.repositoryKey.split("/");
  if (!host || !owner || !name) return false;
  const until = rateReserveUntil(services.codeHost, { host, owner, name }, services.now().getTime());
  if (until === null) return false;
  await services.db.transaction((tx) => deferDelivery(tx, delivery.id, new Date(until)));
  return true;
}

async function processDelivery(services: Services, delivery: RecordedDelivery, handle: DeliveryHandler): Promise<boolean> {
  const now = services.now();
  const claimed = await services.db.transaction((tx) => claimDelivery(tx, delivery.id, now, new Date(now.getTime() + DELIVERY_LEASE_MS)));
  if (!claimed) return false;
  try {
    // The delivery's id follows the work it causes (the decisions' log lines name it).
    await withRequestId(`github-delivery:${delivery.deliveryId}`, () => handle({ id: delivery.deliveryId, name: delivery.event, payload: delivery.payload }));
  } catch (thrown) {
    const error = firstError(thrown);
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const failures = delivery.attempts + 1;
    const at = services.now();
    const context = { delivery: delivery.deliveryId, event: delivery.event, action: delivery.action, repository: delivery.repositoryKey, attempts: failures, error: message };
    // A refusal the code host will give again (a permission missing, say) is not worth retrying.
    const permanent = error instanceof CodeHostRefusal && !error.transient;
    if (permanent || failures >= MAX_DELIVERY_ATTEMPTS) {
      await services.db.transaction((tx) => recordDeliveryFailure(tx, delivery.id, message, { failedAt: at }));
      services.log?.error(
        context,
        permanent ? "webhook delivery given up on: the code host refused it for good (kept in the inbox as failed)" : "webhook delivery given up on after repeated failures (kept in the inbox as failed)",
      );
      return true;
    }
    // A rate limit says when asking again makes sense.
    const notBefore = error instanceof CodeHostRefusal && error.retryAt !== null ? error.retryAt : 0;
    const retryAt = new Date(Math.max(at.getTime() + deliveryRetryDelayMs(failures), notBefore));
    await services.db.transaction((tx) => recordDeliveryFailure(tx, delivery.id, message, { retryAt }));
    services.log?.warn({ ...context, retryAt: retryAt.toISOString() }, "webhook delivery failed; it will be retried");
    return false;
  }
  await services.db.transaction((tx) => completeDelivery(tx, delivery.id, services.now()));
  return true;
}

/** Forgets processed deliveries older than the retention. */
export async function pruneDeliveries(services: Services): Promise<number> {
  const before = new Date(services.now().getTime() - PROCESSED_DELIVERY_RETENTION_MS);
  return services.db.transaction((tx) => pruneProcessedDeliveries(tx, before));
}

/** The error a handler threw (Probot reports its handlers' errors together, in an AggregateError). */
function firstError(error: unknown): unknown {
  const errors = (error as { errors?: unknown[] } | null)?.errors;
  return Array.isArray(errors) && errors.length > 0 ? errors[0] : error;
}
