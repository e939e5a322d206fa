import type { Queue as QueueRow } from "../generated/sqlite/client.js";
import type { Observed } from "../domain/engine/capacity.js";
import { DIRECT_MERGE_MODES, FLAKE_HANDLING_MODES, MERGE_METHODS, OPTIMIZATION_MODES, TUNING_MODES, type QueueSettings, type QueueSettingsUpdate } from "../domain/queue-settings.js";
import { QUEUE_MODES, QUEUE_STATES, type PrState, type QueueMode, type QueueState } from "../domain/states.js";
import { jsonNumbers, jsonStrings, oneOf, oneOfOrNull, prismaShaped } from "./columns.js";
import { sqlOf, type Database, type Tx } from "./database.js";
import { noteQueueField, noteQueueLocked } from "./queue-writes.js";
import { forgetSnapshot } from "./queue-snapshots.js";
import { WEEKDAYS, type Freeze, type FrozenState } from "../domain/freezes.js";

/** A merge queue as stored: its settings, its state, and what the engine keeps between events. */
export type Queue = QueueSettings & {
  id: string;
  repositoryId: string;
  branch: string;
  state: QueueState;
  /** The mode a switching_modes queue switches to once its work in flight clears. */
  pendingMode: QueueMode | null;
  baseSha: string | null;
  /** The target branch head as the queue last saw it (its own merges included). */
  targetHead: string | null;
  /** Merges decided and not yet confirmed by the code host, in order. */
  mergedPrs: number[];
  nextRunNumber: number;
  /** What the engine observed of the queue's main-line runs (domain/engine/capacity.ts). */
  observed: Observed;
  timerAt: Date | null;
  /** The blockedReason code last published as queue.blocked; null when unblocked (docs/webhooks.md). */
  publishedBlockedReason: string | null;
  /** Its merge freezes, current and scheduled (domain/freezes.ts). */
  freezes: Freeze[];
  /** The freeze its last decision saw holding; null: none. */
  frozen: FrozenState | null;
  /** Bumped by every write (lockQueueRow): the ReadCache's key. */
  version: number;
  /**
   * Whether the queue's organization had an enabled outbound-webhook endpoint when the row was
   * locked (lockQueueRow reads it in the same statement); undefined when the row was read
   * otherwise. A decision publishes nothing, and reads no endpoint, when it is false.
   */
  webhookEndpointsEnabled?: boolean;
};

/** A queue with the repository it belongs to. */
export type QueueInRepository = Queue & { repository: { host: string; owner: string; name: string } };

export function toQueue(row: QueueRow): Queue {
  return {
    id: row.id,
    repositoryId: row.repositoryId,
    branch: row.branch,
    state: oneOf(QUEUE_STATES, row.state, "Queue.state"),
    mode: oneOf(QUEUE_MODES, row.mode, "Queue.mode"),
    pendingMode: oneOfOrNull(QUEUE_MODES, row.pendingMode, "Queue.pendingMode"),
    concurrency: Number(row.concurrency),
    bisectionConcurrency: Number(row.bisectionConcurrency),
    testingTimeoutMinutes: Number(row.testingTimeoutMinutes),
    checksStartTimeoutMinutes: Number(row.checksStartTimeoutMinutes),
    pendingFailureDepth: Number(row.pendingFailureDepth),
    canOptimisticallyMerge: row.canOptimisticallyMerge,
    batch: row.batch,
    batchingMaxWaitTimeMinutes: Number(row.batchingMaxWaitTimeMinutes),
    batchingMinSize: Number(row.batchingMinSize),
    commentsEnabled: row.commentsEnabled,
    commandsEnabled: row.commandsEnabled,
    createPrsForTestingBranches: row.createPrsForTestingBranches,
    statusCheckEnabled: row.statusCheckEnabled,
    requiredStatuses: row.requiredStatuses === null ? null : jsonStrings(row.requiredStatuses, "Queue.requiredStatuses"),
    directMergeMode: oneOf(DIRECT_MERGE_MODES, row.directMergeMode, "Queue.directMergeMode"),
    optimizationMode: oneOf(OPTIMIZATION_MODES, row.optimizationMode, "Queue.optimizationMode"),
    mergeMethod: oneOf(MERGE_METHODS, row.mergeMethod, "Queue.mergeMethod"),
    flakeHandling: oneOf(FLAKE_HANDLING_MODES, row.flakeHandling, "Queue.flakeHandling"),
    flakyRetries: Number(row.flakyRetries),
    ciBudget: Number(row.ciBudget),
    tuning: oneOf(TUNING_MODES, row.tuning, "Queue.tuning"),
    pullRequestChecks: row.pullRequestChecks === undefined || row.pullRequestChecks === "[]" ? [] : jsonStrings(row.pullRequestChecks, "Queue.pullRequestChecks"),
    baseSha: row.baseSha,
    targetHead: row.targetHead,
    mergedPrs: jsonNumbers(row.mergedPrs, "Queue.mergedPrs"),
    nextRunNumber: row.nextRunNumber,
    observed: { failures: Number(row.observedFailures), exposures: Number(row.observedExposures) },
    timerAt: row.timerAt,
    publishedBlockedReason: row.blockedReason,
    freezes: freezesOf(row.freezes),
    frozen: row.frozenState === null || row.frozenState === undefined ? null : frozenStateOf(row.frozenState),
    version: row.version,
  };
}

const WINDOW_KINDS = new Set(["now", "once", "weekly"]);

/** Queue.freezes read back: a JSON list of freezes (each checked for what the domain relies on). */
export function freezesOf(text: string | undefined): Freeze[] {
  if (text === undefined || text === "[]") return [];
  const value: unknown = JSON.parse(text);
  const ok = (f: unknown): f is Freeze => {
    const freeze = f as Freeze;
    if (typeof freeze?.id !== "string" || typeof freeze.reason !== "string" || typeof freeze.testing !== "boolean" || !WINDOW_KINDS.has(freeze.window?.kind)) return false;
    return freeze.window.kind !== "weekly" || freeze.window.days.every((d) => (WEEKDAYS as readonly string[]).includes(d));
  };
  if (Array.isArray(value) && value.every(ok)) return value;
  throw new Error("store: Queue.freezes is not a JSON list of freezes");
}

function frozenStateOf(text: string): FrozenState {
  const value = JSON.parse(text) as FrozenState;
  if (typeof value?.since === "string" && Array.isArray(value.ids) && typeof value.testing === "boolean") return value;
  throw new Error("store: Queue.frozenState is not a freeze state");
}

/** Replaces the queue's freezes (the caller holds its lock). */
export async function writeQueueFreezes(tx: Tx, id: string, freezes: readonly Freeze[]): Promise<void> {
  await sqlOf(tx).run(`UPDATE "Queue" SET "freezes" = ?, "updatedAt" = ? WHERE "id" = ?`, [JSON.stringify(freezes), new Date(), id]);
  noteQueueField(tx, id, { freezes: [...freezes] });
}

const QUEUE_BOOLEANS = ["canOptimisticallyMerge", "batch", "commentsEnabled", "commandsEnabled", "createPrsForTestingBranches", "statusCheckEnabled"] as const;
const QUEUE_DATES = ["timerAt", "createdAt", "updatedAt"] as const;

/** A Queue row read through plain SQL (sqlOf), as a Queue. */
export function queueOfSql(row: Record<string, unknown>): Queue {
  return toQueue(prismaShaped<QueueRow>(row, QUEUE_BOOLEANS, QUEUE_DATES));
}

/** The organization's queue for `branch` of the repository `repositoryKey`, or null. */
export async function findQueue(tx: Tx, organizationId: string, repositoryKey: string, branch: string): Promise<Queue | null> {
  // Plain SQL (sqlOf): every write through the API starts here.
  const [row] = await sqlOf(tx).all<Record<string, unknown>>(`SELECT q.* FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE r."key" = ? AND r."organizationId" = ? AND q."branch" = ?`, [
    repositoryKey,
    organizationId,
    branch,
  ]);
  return row ? queueOfSql(row) : null;
}

/** The queue of `branch` in the repository, whoever owns it, or null. */
export async function findQueueOfRepository(tx: Tx, repositoryId: string, branch: string): Promise<Queue | null> {
  const row = await tx.queue.findUnique({ where: { repositoryId_branch: { repositoryId, branch } } });
  return row && toQueue(row);
}

/** The queue `id`, which the caller knows exists (it holds its lock, or has just read its version). */
export async function getQueue(tx: Tx, id: string): Promise<Queue> {
  // Plain SQL (sqlOf): a read of a queue's line after each of its versions starts here.
  const [row] = await sqlOf(tx).all<Record<string, unknown>>(`SELECT * FROM "Queue" WHERE "id" = ?`, [id]);
  if (!row) throw new QueueGoneError(id);
  return queueOfSql(row);
}

/** The queue was deleted between a reader's lookup of it and its reading (a race with deleteQueue). */
export class QueueGoneError extends Error {
  constructor(readonly queueId: string) {
    super(`queue ${queueId} was deleted while it was read`);
    this.name = "QueueGoneError";
  }
}

const QUEUE_VERSION = {
  name: "greenline_queue_version",
  text: `SELECT q."id", q."version" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId"
  WHERE r."key" = $1 AND r."organizationId" = $2 AND q."branch" = $3`,
};

/**
 * The id and version of the organization's queue for `branch`, in one prepared query on the
 * last committed state (every read of a queue asks it first: see Database.lookup).
 */
export async function queueVersion(db: Database, repositoryKey: string, organizationId: string, branch: string): Promise<{ id: string; version: number } | null> {
  const row = await db.lookup<{ id: string; version: number | string }>(QUEUE_VERSION, [repositoryKey, organizationId, branch]);
  return row ? { id: row.id, version: Number(row.version) } : null;
}

/**
 * Locks the queue `id` for the caller's transaction, or answers null when it no longer exists.
 * The lock is an update (the version bump the ReadCache relies on): on PostgreSQL it holds the
 * row until the transaction ends, and a writer that waited on a transaction that deleted the
 * queue finds no row, which is not an error but an answer. The row comes back from the update
 * itself (RETURNING), after the lock, so it is the latest committed one. (SQLite runs one
 * transaction at a time.)
 */
export async function lockQueueRow(tx: Tx, id: string): Promise<Queue | null> {
  // Plain SQL: every applied event starts here (sqlOf).
  return lockQueueWhere(tx, `"id" = ?`, [id]);
}

/**
 * lockQueueRow of the organization's queue for `branch` of the repository `repositoryKey`: the
 * lookup in the same statement as the lock (an API write's first two round trips in one).
 */
export async function lockQueueAt(tx: Tx, repositoryKey: string, organizationId: string, branch: string): Promise<Queue | null> {
  return lockQueueWhere(tx, `"id" = (SELECT q."id" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE r."key" = ? AND r."organizationId" = ? AND q."branch" = ?)`, [
    repositoryKey,
    organizationId,
    branch,
  ]);
}

async function lockQueueWhere(tx: Tx, where: string, params: readonly unknown[]): Promise<Queue | null> {
  // The organization's enabled webhook endpoints are looked for in the same statement: most
  // organizations have none, and then no decision of the transaction asks again. It is read
  // under the queue's lock in the decision's own transaction, as the separate lookup was: an
  // endpoint created or enabled before the lock sees this decision's events, one created
  // after it the next decision's (never fewer than before).
  const [locked] = await sqlOf(tx).all<Record<string, unknown>>(
    `UPDATE "Queue" SET "version" = "version" + 1, "updatedAt" = ? WHERE ${where} RETURNING *, EXISTS (SELECT 1 FROM "WebhookEndpoint" e JOIN "Repository" r ON r."organizationId" = e."organizationId" WHERE r."id" = "Queue"."repositoryId" AND e."enabled" = ?) AS "webhookEndpointsEnabled"`,
    [new Date(), ...params, true],
  );
  if (!locked) return null;
  const queue = { ...queueOfSql(locked), webhookEndpointsEnabled: locked.webhookEndpointsEnabled === true || Number(locked.webhookEndpointsEnabled) === 1 };
  noteQueueLocked(tx, queue.id, queue.version);
  return queue;
}

/** The columns a settings update writes; fields it leaves undefined are left as they are. */
function settingsColumns(update: QueueSettingsUpdate): Record<string, unknown> {
  const { state: _state, mode: _mode, requiredStatuses, deleteRequiredStatuses, pullRequestChecks, ...rest } = update;
  const data: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rest)) {
    if (value !== undefined) data[key] = typeof value === "number" ? BigInt(value) : value;
  }
  // As in Trunk's v1 API, an empty list is ignored; deleteRequiredStatuses removes the override.
  if (requiredStatuses !== undefined && requiredStatuses.length > 0) data.requiredStatuses = JSON.stringify(requiredStatuses);
  if (deleteRequiredStatuses) data.requiredStatuses = null;
  if (pullRequestChecks !== undefined) data.pullRequestChecks = JSON.stringify([...new Set(pullRequestChecks)]);
  return data;
}

export type NewQueue = {
  id: string;
  repositoryId: string;
  branch: string;
  /** Every setting: the defaults with the request's own on top. */
  settings: QueueSettings;
  state: QueueState;
  /** The target branch head when the queue was created. */
  head: string | null;
};

/** Creates a queue; null when the repository has one for that branch already (a concurrent create won). */
export async function createQueue(tx: Tx, queue: NewQueue): Promise<Queue | null> {
  const { requiredStatuses, ...settings } = queue.settings;
  try {
    const row = await tx.queue.create({
      data: {
        ...settingsColumns(settings),
        id: queue.id,
        repositoryId: queue.repositoryId,
        branch: queue.branch,
        state: queue.state,
        mode: settings.mode,
        requiredStatuses: requiredStatuses?.length ? JSON.stringify(requiredStatuses) : null,
        baseSha: queue.head,
        targetHead: queue.head,
      } as Parameters<Tx["queue"]["create"]>[0]["data"],
    });
    return toQueue(row);
  } catch (error) {
    // PostgreSQL: a concurrent create inserted the branch after the caller looked.
    if ((error as { code?: unknown } | null)?.code === "P2002") return null;
    throw error;
  }
}

/** Writes a settings update and the queue state it leads to; answers the queue as written. */
export async function updateQueueSettings(tx: Tx, id: string, update: QueueSettingsUpdate, next: { state: QueueState; mode: QueueMode; pendingMode: QueueMode | null }): Promise<Queue> {
  const row = await tx.queue.update({ where: { id }, data: { ...settingsColumns(update), state: next.state, mode: next.mode, pendingMode: next.pendingMode } });
  return toQueue(row);
}

/** Deletes the queue with everything it holds (entries, runs, effects: the foreign keys cascade). */
export async function deleteQueue(tx: Tx, id: string): Promise<void> {
  await tx.queue.delete({ where: { id } });
  // The cascade's deletions were noted by the triggers (QueueRowChange has no foreign key): no load will take them.
  await sqlOf(tx).run(`DELETE FROM "QueueRowChange" WHERE "queueId" = ?`, [id]);
  forgetSnapshot(tx, id);
}

/** Records where the code host says the target branch is. */
export async function recordTargetHead(tx: Tx, id: string, head: string): Promise<void> {
  // Plain SQL (sqlOf): every landed merge records it.
  await sqlOf(tx).run(`UPDATE "Queue" SET "targetHead" = ?, "updatedAt" = ? WHERE "id" = ?`, [head, new Date(), id]);
  noteQueueField(tx, id, { targetHead: head });
}

/** The ids of the repository's queues (of one branch, when given). */
export async function queueIdsOfRepository(tx: Tx, repositoryKey: string, branch?: string): Promise<string[]> {
  const rows = await tx.queue.findMany({ where: { ...(branch !== undefined ? { branch } : {}), repository: { key: repositoryKey } }, select: { id: true } });
  return rows.map((row) => row.id);
}

/** The ids of the queues whose timer is due at `now`. */
export async function queuesWithDueTimers(tx: Tx, now: Date): Promise<string[]> {
  const rows = await tx.queue.findMany({ where: { timerAt: { lte: now } }, select: { id: true } });
  return rows.map((row) => row.id);
}

/**
 * The queues whose blocked reason is worth judging: those with PRs in `waiting` states, and
 * those with a blocked reason published (it may have cleared). With their repositories.
 */
export async function queuesToJudgeBlocked(tx: Tx, waiting: readonly PrState[]): Promise<QueueInRepository[]> {
  // Plain SQL: every worker tick of every replica asks (a Prisma query cost ~1–2 ms of CPU, issue 23 goal 3).
  const sql = sqlOf(tx);
  const [inWaiting, states] = sql.anyOf(`e."state"`, waiting);
  return queuesInRepositoryWhere(tx, `q."blockedReason" IS NOT NULL OR EXISTS (SELECT 1 FROM "QueueEntry" e WHERE e."queueId" = q."id" AND ${inWaiting})`, [states]);
}

/** Records the blocked reason code published for the queue (null: unblocked). */
export async function recordPublishedBlockedReason(tx: Tx, id: string, code: string | null): Promise<void> {
  await tx.queue.update({ where: { id }, data: { blockedReason: code } });
}

/** The queues with a run in flight, with their repositories. */
export async function queuesWithRunningRuns(tx: Tx): Promise<QueueInRepository[]> {
  return queuesInRepositoryWhere(tx, `EXISTS (SELECT 1 FROM "TestRun" t WHERE t."queueId" = q."id" AND t."status" = 'running')`, []);
}

/** The queues among `ids` with their repositories (absent: gone), by id. */
export async function queuesInRepositoryByIds(tx: Tx, ids: readonly string[]): Promise<Map<string, QueueInRepository>> {
  if (ids.length === 0) return new Map();
  const [inIds, param] = sqlOf(tx).anyOf(`q."id"`, ids);
  return new Map((await queuesInRepositoryWhere(tx, inIds, [param])).map((queue) => [queue.id, queue]));
}

/** The queues matching `where` (on `q`, the queue), each with its repository, in one statement. */
async function queuesInRepositoryWhere(tx: Tx, where: string, params: readonly unknown[]): Promise<QueueInRepository[]> {
  const rows = await sqlOf(tx).all<Record<string, unknown>>(
    `SELECT q.*, r."host" AS "repositoryHost", r."owner" AS "repositoryOwner", r."name" AS "repositoryName" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE ${where} ORDER BY q."id"`,
    params,
  );
  return rows.map((row) => ({ ...queueOfSql(row), repository: { host: String(row.repositoryHost), owner: String(row.repositoryOwner), name: String(row.repositoryName) } }));
}

/** The queue `id` with its repository, or null when it no longer exists. */
export async function findQueueInRepository(tx: Tx, id: string): Promise<QueueInRepository | null> {
  return (await queueForEffects(tx, id))?.queue ?? null;
}

/**
 * The queue with its repository, and whether the repository's account has an installation
 * outage recorded (installation-outages.ts): the effect runner's first read of a call, one
 * statement. (The account key is the lower-cased "host/owner": LOWER agrees with JavaScript's
 * toLowerCase on the ASCII that GitHub logins and hosts are made of.)
 */
export async function queueForEffects(tx: Tx, id: string): Promise<{ queue: QueueInRepository; installationOutage: boolean } | null> {
  // Plain SQL, one statement: the effect runner reads it at every call (sqlOf).
  const [row] = await sqlOf(tx).all<Record<string, unknown>>(
    `SELECT q.*, r."host" AS "repositoryHost", r."owner" AS "repositoryOwner", r."name" AS "repositoryName", EXISTS (SELECT 1 FROM "InstallationOutage" o WHERE o."accountKey" = LOWER(r."host" || '/' || r."owner")) AS "installationOutage" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId" WHERE q."id" = ?`,
    [id],
  );
  if (!row) return null;
  const repository = { host: String(row.repositoryHost), owner: String(row.repositoryOwner), name: String(row.repositoryName) };
  return { queue: { ...queueOfSql(row), repository }, installationOutage: row.installationOutage === true || Number(row.installationOutage) === 1 };
}

/** The current version of each of the queues that still exist (the dashboard's live updates watch them). */
export async function versionsOf(tx: Tx, ids: string[]): Promise<Map<string, number>> {
  const rows = await tx.queue.findMany({ where: { id: { in: ids } }, select: { id: true, version: true } });
  return new Map(rows.map((row) => [row.id, Number(row.version)]));
}

/** Each organization's queues with their versions, by organization (an organization without queues is absent). */
export async function versionsOfOrganizations(tx: Tx, organizationIds: string[]): Promise<Map<string, { id: string; version: number }[]>> {
  const rows = await tx.queue.findMany({
    where: { repository: { organizationId: { in: organizationIds } } },
    select: { id: true, version: true, repository: { select: { organizationId: true } } },
    orderBy: { id: "asc" },
  });
  const byOrganization = new Map<string, { id: string; version: number }[]>();
  for (const row of rows) {
    const queues = byOrganization.get(row.repository.organizationId) ?? [];
    queues.push({ id: row.id, version: Number(row.version) });
    byOrganization.set(row.repository.organizationId, queues);
  }
  return byOrganization;
}

/** When the queue's settings (its state among them) last changed, as its event log says; null: never. */
export async function lastSettingsChangeAt(tx: Tx, queueId: string): Promise<Date | null> {
  const row = await tx.queueEvent.findFirst({ where: { queueId, kind: "config_changed" }, orderBy: { at: "desc" }, select: { at: true } });
  return row?.at ?? null;
}
