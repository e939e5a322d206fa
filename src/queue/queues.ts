import type { Principal } from "../auth/tokens.js";
import type { RepoRef } from "../ports/code-host.js";
import { DEFAULT_QUEUE_SETTINGS, planQueueStateChange, type QueueSettings, type QueueSettingsUpdate } from "../domain/queue-settings.js";
import { isTerminal, type PrState } from "../domain/states.js";
import type { Tx } from "../store/database.js";
import { countEntriesIn, someLiveEntries, type QueueEntry } from "../store/entries.js";
import * as queueStore from "../store/queues.js";
import type { Queue } from "../store/queues.js";
import { applyEvent } from "./queue-events.js";
import type { QueueState } from "../domain/states.js";
import { ENGINE_ACTOR, OPERATOR_EVENT_KINDS, type OperatorEventKind } from "../domain/timeline.js";
import { queueEventsPage } from "../store/timeline.js";
import { causeOf, recordOperatorEvent } from "./causes.js";
import { recordAudit } from "../app/audit.js";
import { lineWithPlaces, type PlaceRecord } from "./estimates.js";
import { conflict, failedPrecondition, invalidArgument, notFound } from "../app/errors.js";
import { toMergeItemRecord, toQueueRecord, type MergeItemRecord, type QueueRecord } from "./records.js";
import { checkRepositoryClaimable, claimRepository, repositoryKey } from "../app/repositories.js";
import type { Services } from "../app/services.js";
import { hostRequiredChecks } from "./status-checks.js";
import { setupWarnings } from "./preflight.js";
import type { RequiredChecks } from "../domain/status-checks.js";
import { publishBlockedReasonChange, queueDiagnoses, requiredNamesOf, type QueueDiagnoses } from "./diagnoses.js";
import { publishQueueEvents } from "../store/webhook-outbox.js";
import { queueStateChanged } from "../domain/webhook-events.js";
import { freezeStatusAt } from "../domain/freezes.js";
import { toFreezeStatusRecord, type FreezeStatusRecord } from "./freezes.js";

export type QueueAddress = { repo: RepoRef; targetBranch: string };

function queueNotFound(address: QueueAddress) {
  const { repo, targetBranch } = address;
  return notFound(`no merge queue for branch "${targetBranch}" in ${repo.host}/${repo.owner}/${repo.name}`);
}

/** The principal's queue at `address`, or a not_found error. */
export async function findQueue(tx: Tx, principal: Principal, address: QueueAddress): Promise<Queue> {
  const queue = await queueStore.findQueue(tx, principal.organizationId, repositoryKey(address.repo), address.targetBranch);
  if (!queue) throw queueNotFound(address);
  return queue;
}

/**
 * The id and version of the principal's queue at `address`, in one cheap query: enough to
 * answer a read from the ReadCache.
 */
export async function findQueueVersion(services: Services, principal: Principal, address: QueueAddress): Promise<{ id: string; version: number }> {
  const row = await queueStore.queueVersion(services.db, repositoryKey(address.repo), principal.organizationId, address.targetBranch);
  if (!row) throw queueNotFound(address);
  return row;
}

/**
 * Like findQueue, and locks the queue (lockQueueRow). Every write to a queue or its entries goes
 * through here or lockQueueRow: the version it bumps is what keeps the ReadCache right, and the
 * lock serializes writes to one queue. A queue deleted while this waited is not_found.
 */
export async function lockQueue(_services: Services, tx: Tx, principal: Principal, address: QueueAddress): Promise<Queue> {
  // Which queue (its organization's, or not found) and its lock in one statement: the row as it
  // is under the lock, or none when it is not there (deleted while this waited, or never).
  const queue = await queueStore.lockQueueAt(tx, repositoryKey(address.repo), principal.organizationId, address.targetBranch);
  if (!queue) throw queueNotFound(address);
  return queue;
}

const IN_FLIGHT_STATES: PrState[] = ["testing", "tests_passed", "pending_failure"];

function checkUpdate(update: QueueSettingsUpdate) {
  if (update.deleteRequiredStatuses && update.requiredStatuses && update.requiredStatuses.length > 0) {
    throw invalidArgument("deleteRequiredStatuses", "cannot be true while requiredStatuses is also given");
  }
}

/**
 * A checks-start timeout given in a request must end before the testing timeout (the one the
 * request sets, else the queue's): a diagnosis after the run timed out would say nothing.
 */
function checkChecksStartTimeout(update: QueueSettingsUpdate, current: Pick<QueueSettings, "testingTimeoutMinutes">) {
  if (update.checksStartTimeoutMinutes === undefined) return;
  const testing = update.testingTimeoutMinutes ?? current.testingTimeoutMinutes;
  if (update.checksStartTimeoutMinutes >= testing) {
    throw invalidArgument("checksStartTimeoutMinutes", `must be less than testingTimeoutMinutes (${testing})`);
  }
}

/**
 * The checks a queue takes from each PR's own head must be ones GitHub's branch rules require:
 * GitHub checks those on a PR's head when it merges, and nothing else would (the queue no longer
 * waits for them on testing branches).
 */
function checkPullRequestChecks(update: QueueSettingsUpdate, host: RequiredChecks) {
  const names = update.pullRequestChecks ?? [];
  if (names.length === 0) return;
  if (host.source === "unknown") throw invalidArgument("pullRequestChecks", "the branch's required checks could not be read from the code host: a check taken from each pull request's head must be one its rules require");
  const notRequired = [...new Set(names.filter((name) => !host.contexts.includes(name)))];
  if (notRequired.length > 0) {
    const named =
      notRequired
        .slice(0, 5)
        .map((n) => `"${n}"`)
        .join(", ") + (notRequired.length > 5 ? ` and ${notRequired.length - 5} more` : "");
    throw invalidArgument(
      "pullRequestChecks",
      `${named} ${notRequired.length === 1 ? "is" : "are"} not required by the branch's rulesets or protection (they require: ${host.contexts.map((c) => `"${c}"`).join(", ") || "nothing"}): GitHub checks only those on a pull request's head when it merges`,
    );
  }
}

/** A new queue's settings: the defaults, and the request's own where it gives them. */
function newQueueSettings(update: QueueSettingsUpdate): QueueSettings {
  const { state: _state, deleteRequiredStatuses: _delete, requiredStatuses, ...given } = update;
  const settings: Record<string, unknown> = { ...DEFAULT_QUEUE_SETTINGS };
  for (const [key, value] of Object.entries(given)) if (value !== undefined) settings[key] = value;
  // As in Trunk's v1 API, an empty list is no list.
  return { ...(settings as QueueSettings), requiredStatuses: requiredStatuses?.length ? requiredStatuses : null };
}

const queueExists = (branch: string) => conflict(`A merge queue already exists for branch "${branch}" in this repository`);

export async function createQueue(services: Services, principal: Principal, input: QueueAddress & QueueSettingsUpdate): Promise<QueueRecord> {
  checkUpdate(input);
  checkChecksStartTimeout(input, DEFAULT_QUEUE_SETTINGS);
  const { repo, targetBranch, ...update } = input;
  // Nothing is asked of the code host (which may write: the sandbox creates a branch it is asked
  // about) for a repository the organization may not have: another's answers 404 first.
  await services.db.read((tx) => checkRepositoryClaimable(services, tx, principal, repo));
  // Outside the transaction: no transaction waits on the network.
  const head = await services.codeHost.getBranchHead(repo, targetBranch);
  const host = await hostRequiredChecks(services, { repo, targetBranch });
  checkPullRequestChecks(update, host);
  // A branch the code host will never let Greenline merge into is refused now, with what to
  // change, rather than wedging the first merge.
  const target = (await services.codeHost.checkTarget?.(repo, targetBranch)) ?? { ok: true };
  const record = await services.db.transaction(async (tx) => {
    const repository = await claimRepository(services, tx, principal, repo);
    // Told only to the repository's owner (after the claim, which the refusal rolls back).
    if (!target.ok) throw failedPrecondition(target.reason);
    if (await queueStore.findQueueOfRepository(tx, repository.id, targetBranch)) throw queueExists(targetBranch);
    const queue = await queueStore.createQueue(tx, {
      id: services.newId(),
      repositoryId: repository.id,
      branch: targetBranch,
      settings: newQueueSettings(update),
      state: update.state ?? "running",
      head,
    });
    // PostgreSQL: a concurrent createQueue inserted the branch after the check above.
    if (!queue) throw queueExists(targetBranch);
    await recordAudit(services, tx, principal, { action: "queue.created", repository: repositoryKey(repo), branch: targetBranch, details: { settings: update } });
    return toQueueRecord(queue, host);
  });
  // "Will this queue ever merge anything?", answered with the creation (after it: no transaction waits on the network).
  return { ...record, setupWarnings: await setupWarnings(services, setupOfRecord(repo, record)) };
}

/** What the preflight of a queue's record needs: its testing mode and its own required checks. */
function setupOfRecord(repo: RepoRef, record: QueueRecord) {
  return {
    repo,
    targetBranch: record.branch,
    createPrsForTestingBranches: record.createPrsForTestingBranches,
    requiredStatuses: record.requiredStatusesSource === "merge_instance" ? record.requiredStatuses : null,
    pullRequestChecks: record.pullRequestChecks,
  };
}

export type QueueWithEntries = QueueRecord & QueueDiagnoses & { freeze: FreezeStatusRecord; enqueuedPullRequests: (MergeItemRecord & PlaceRecord)[] };

/**
 * The queue's line at one version (at least): its row, its PRs still in play in getQueue's order,
 * and every PR's place. Built once per version however many readers ask (getQueue,
 * getSubmittedPullRequest for any of its PRs), and kept for the next readers of that version.
 */
export type Line = { queue: Queue; live: QueueEntry[]; entries: ReadonlyMap<number, QueueEntry>; placesAt: (now: Date) => (prNumber: number) => PlaceRecord };

/**
 * How long an answer that carries estimated merge times is served as built: an estimate is a time
 * counted from when it was made (a run's elapsed time), so an answer kept for as long as its
 * queue does not change would tell a time gone by once CI runs late (and a paused queue's
 * "1 min" forever). Built again past this age, however unchanged the queue.
 */
export const ESTIMATE_TTL_MS = 5_000;

/**
 * A value built once per version of queue `id` and reused for at most ESTIMATE_TTL_MS (it holds
 * estimates): readers asking at once share one build, a reader past the age builds it again.
 */
export async function withEstimates<T>(services: Services, key: string, version: number, build: (now: Date) => Promise<{ version: number; value: T }>): Promise<T> {
  const now = services.now();
  const cached = await services.readCache.shared(key, version, async () => {
    const built = await build(now);
    return { version: built.version, value: { at: now.getTime(), value: built.value } };
  });
  if (Math.abs(now.getTime() - cached.at) < ESTIMATE_TTL_MS) return cached.value;
  const rebuilt = await build(now);
  services.readCache.replace(key, rebuilt.version, { at: now.getTime(), value: rebuilt.value });
  return rebuilt.value;
}

export function lineOf(services: Services, id: string, version: number): Promise<Line> {
  return services.readCache.shared(`line:${id}`, version, () =>
    // One consistent state for the queue's row, its runs and its PRs: read statement by statement,
    // a decision committed in between would give a line half before it and half after.
    services.db.snapshot(async (tx) => {
      const queue = await queueStore.getQueue(tx, id);
      return { version: queue.version, value: { queue, ...(await lineWithPlaces(tx, queue)) } };
    }),
  );
}

/** getQueue's answer, serialized: polled often, it is served from the ReadCache when unchanged. */
export async function getQueueJson(services: Services, principal: Principal, address: QueueAddress): Promise<string> {
  const { id, version } = await findQueueVersion(services, principal, address);
  // The code host's requirements change without the queue changing: part of the cache key.
  const host = await hostRequiredChecks(services, address);
  const diagnoses = await cachedDiagnoses(services, id, version, address, host);
  const key = `queue:${id}:${host.source}:${host.contexts.join(",")}:${JSON.stringify(diagnoses)}`;
  return withEstimates(services, key, version, async (now) => {
    const { queue, live, placesAt } = await lineOf(services, id, version);
    const placeOf = placesAt(now);
    const enqueuedPullRequests = live.map((entry) => ({ ...toMergeItemRecord(entry), ...placeOf(entry.prNumber) }));
    const freeze = toFreezeStatusRecord(queue, freezeStatusAt(queue.freezes, now.getTime()));
    const json = JSON.stringify({ ...toQueueRecord(queue, host), ...diagnoses, freeze, enqueuedPullRequests } satisfies QueueWithEntries);
    return { version: queue.version, value: json };
  });
}

/** How long getQueue's diagnoses are reused for one version of a queue. */
const DIAGNOSES_TTL_MS = 5_000;

/**
 * The queue's diagnoses: they change with time and with what is not the queue's row (an effect's
 * failed attempt, the code host's rate limit), so they are part of getQueue's cache key, and are
 * themselves reused for one version of the queue for at most DIAGNOSES_TTL_MS (getQueue is
 * polled often). Readers asking at once share one reading.
 */
async function cachedDiagnoses(services: Services, id: string, version: number, address: QueueAddress, host: RequiredChecks): Promise<QueueDiagnoses> {
  const key = `diagnoses:${id}:${host.source}:${host.contexts.join(",")}`;
  const now = services.now().getTime();
  const cached = await services.readCache.shared(key, version, async () => {
    const diagnoses = await services.db.read(async (tx) => {
      const queue = await queueStore.getQueue(tx, id);
      return queueDiagnoses(services, tx, queue, address.repo, requiredNamesOf(queue, host));
    });
    return { version, value: { at: now, diagnoses } };
  });
  // (A reader that waited on another's reading may have asked a moment before it was made.)
  if (Math.abs(now - cached.at) < DIAGNOSES_TTL_MS) return cached.diagnoses;
  // Too old: read again (and kept for the readers after this one).
  const diagnoses = await services.db.read(async (tx) => {
    const queue = await queueStore.getQueue(tx, id);
    return queueDiagnoses(services, tx, queue, address.repo, requiredNamesOf(queue, host));
  });
  services.readCache.replace(key, version, { at: now, diagnoses });
  return diagnoses;
}

export async function updateQueue(services: Services, principal: Principal, input: QueueAddress & QueueSettingsUpdate): Promise<QueueRecord> {
  checkUpdate(input);
  const { repo, targetBranch, ...update } = input;
  const host = await hostRequiredChecks(services, { repo, targetBranch });
  const record = await services.db.transaction(async (tx) => {
    const queue = await lockQueue(services, tx, principal, { repo, targetBranch });
    // After the lock: another organization's queue answers not_found before any word of its branch's rules.
    checkPullRequestChecks(update, host);
    checkChecksStartTimeout(update, queue);
    const inFlight = await countEntriesIn(tx, queue.id, IN_FLIGHT_STATES);
    const next = planQueueStateChange(queue, update, inFlight > 0);
    const updated = await queueStore.updateQueueSettings(tx, queue.id, update, next);
    if (updated.state !== queue.state) {
      const at = services.now();
      await publishQueueEvents(tx, queue.id, (place) => [queueStateChanged(place, queue.state, updated.state, at.toISOString())], { now: at, newId: services.newId });
    }
    const cause = causeOf(principal);
    await recordOperatorActions(services, tx, principal, repo, queue, updated, update);
    // Resuming, pausing or a new setting can start or stop work at once.
    await applyEvent(services, tx, updated, { kind: "config_changed" }, cause);
    // Pausing with PRs waiting blocks the queue, resuming unblocks it: told with the change, not a worker tick later.
    const after = await queueStore.getQueue(tx, queue.id);
    if (after.state !== queue.state) await publishBlockedReasonChange(services, tx, after, repo);
    return toQueueRecord(after, host);
  });
  // A change of what is required or of how testing commits reach CI is checked as a creation is.
  const reaching = update.requiredStatuses !== undefined || update.deleteRequiredStatuses !== undefined || update.createPrsForTestingBranches !== undefined || update.pullRequestChecks !== undefined;
  return reaching ? { ...record, setupWarnings: await setupWarnings(services, setupOfRecord(repo, record)) } : record;
}

const STATE_EVENTS: Partial<Record<QueueState, OperatorEventKind>> = { paused: "paused", running: "resumed", draining: "draining" };

/**
 * Records who paused, resumed or drained the queue, and which settings they changed (old →
 * new), as queue events (getQueueEvents). An update that changes nothing records nothing.
 */
async function recordOperatorActions(services: Services, tx: Tx, principal: Principal, repo: RepoRef, before: Queue, after: Queue, update: QueueSettingsUpdate): Promise<void> {
  const record = (kind: OperatorEventKind, payload: Record<string, unknown>) => recordOperatorEvent(services, tx, principal, { queueId: before.id, repo, branch: before.branch }, kind, payload);
  const stateEvent = update.state !== undefined && update.state !== before.state ? STATE_EVENTS[update.state] : undefined;
  if (stateEvent) await record(stateEvent, { from: before.state, to: after.state });
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  const { state: _state, deleteRequiredStatuses: _delete, ...fields } = update;
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    const from = (before as Record<string, unknown>)[key] ?? null;
    // A mode change waiting for the work in flight shows as the mode it switches to.
    const to = key === "mode" ? (after.pendingMode ?? after.mode) : ((after as Record<string, unknown>)[key] ?? null);
    if (JSON.stringify(from) !== JSON.stringify(to)) changes[key] = { from, to };
  }
  if (update.deleteRequiredStatuses && before.requiredStatuses !== null) changes.requiredStatuses = { from: before.requiredStatuses, to: null };
  if (Object.keys(changes).length > 0) await record("settings_changed", { changes });
}

export type QueueEventsInput = QueueAddress & { cursor?: string; limit: number };

/** getQueueEvents: the queue's operator actions, newest first, paged by cursor (the last event's id). */
export async function getQueueEvents(services: Services, principal: Principal, input: QueueEventsInput) {
  return services.db.read(async (tx) => {
    const queue = await findQueue(tx, principal, input);
    const page = await queueEventsPage(tx, queue.id, OPERATOR_EVENT_KINDS, input.cursor, input.limit);
    if (!page) throw invalidArgument("cursor", "is not a cursor of this queue (use an earlier answer's nextCursor)");
    const events = page.events.map((e) => ({ id: e.id, kind: e.kind, at: e.at.toISOString(), actor: e.actor ?? ENGINE_ACTOR, details: e.payload }));
    const last = page.events.at(-1);
    return { events, ...(page.more && last ? { nextCursor: last.id } : {}) };
  });
}

export async function deleteQueue(services: Services, principal: Principal, address: QueueAddress): Promise<void> {
  await services.db.transaction(async (tx) => {
    const queue = await lockQueue(services, tx, principal, address);
    const active = await someLiveEntries(tx, queue.id, 5);
    if (active.some((e) => !isTerminal(e.state))) {
      const list = active.map((e) => `#${e.prNumber} (${e.state})`).join(", ");
      throw failedPrecondition(`the queue is not empty: cancel or merge its pull requests first (${list}${active.length === 5 ? ", …" : ""})`);
    }
    await queueStore.deleteQueue(tx, queue.id);
    await recordAudit(services, tx, principal, { action: "queue.deleted", repository: repositoryKey(address.repo), branch: queue.branch });
  });
}
