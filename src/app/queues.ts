import type { Principal } from "../auth/tokens.js";
import { LIVE_PR_STATES } from "../domain/states.js";
import type { RepoRef } from "../ports/code-host.js";
import type { Queue } from "../generated/sqlite/client.js";
import { DEFAULT_QUEUE_SETTINGS, planQueueStateChange, type QueueSettingsUpdate } from "../domain/queue-settings.js";
import { isTerminal, type PrState, type QueueMode, type QueueState } from "../domain/states.js";
import type { Tx } from "../store/database.js";
import { applyEvent } from "./queue-events.js";
import { lockQueueRow } from "./queue-state.js";
import { conflict, failedPrecondition, invalidArgument, isUniqueViolation, notFound } from "./errors.js";
import { toMergeItemRecord, toQueueRecord, type MergeItemRecord, type QueueRecord } from "./records.js";
import { claimRepository, repositoryKey } from "./repositories.js";
import type { Services } from "./services.js";

export type QueueAddress = { repo: RepoRef; targetBranch: string };

function queueNotFound(address: QueueAddress) {
  const { repo, targetBranch } = address;
  return notFound(`no merge queue for branch "${targetBranch}" in ${repo.host}/${repo.owner}/${repo.name}`);
}

/** The principal's queue at `address`, or a not_found error. */
export async function findQueue(tx: Tx, principal: Principal, address: QueueAddress): Promise<Queue> {
  const queue = await tx.queue.findFirst({
    where: { branch: address.targetBranch, repository: { key: repositoryKey(address.repo), organizationId: principal.organizationId } },
  });
  if (!queue) throw queueNotFound(address);
  return queue;
}

/**
 * The id and version of the principal's queue at `address`, in one cheap query: enough to
 * answer a read from the ReadCache.
 */
export async function findQueueVersion(services: Services, principal: Principal, address: QueueAddress): Promise<{ id: string; version: number }> {
  const row = await services.db.lookups.queueVersion(repositoryKey(address.repo), principal.organizationId, address.targetBranch);
  if (!row) throw queueNotFound(address);
  return row;
}

/**
 * Like findQueue, and locks the queue (lockQueueRow). Every write to a queue or its entries goes
 * through here or lockQueueRow: the version it bumps is what keeps the ReadCache right, and the
 * lock serializes writes to one queue. A queue deleted while this waited is not_found.
 */
export async function lockQueue(tx: Tx, principal: Principal, address: QueueAddress): Promise<Queue> {
  const { id } = await findQueue(tx, principal, address);
  const queue = await lockQueueRow(tx, id);
  if (!queue) throw queueNotFound(address);
  return queue;
}

const IN_FLIGHT_STATES: PrState[] = ["testing", "tests_passed", "pending_failure"];

function settingsData(update: QueueSettingsUpdate) {
  const { state: _state, mode: _mode, requiredStatuses, deleteRequiredStatuses, ...rest } = update;
  const data: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rest)) {
    if (value !== undefined) data[key] = typeof value === "number" ? BigInt(value) : value;
  }
  // As in Trunk's v1 API, an empty list is ignored; deleteRequiredStatuses removes the override.
  if (requiredStatuses !== undefined && requiredStatuses.length > 0) data.requiredStatuses = JSON.stringify(requiredStatuses);
  if (deleteRequiredStatuses) data.requiredStatuses = null;
  return data;
}

function checkUpdate(update: QueueSettingsUpdate) {
  if (update.deleteRequiredStatuses && update.requiredStatuses && update.requiredStatuses.length > 0) {
    throw invalidArgument("deleteRequiredStatuses", "cannot be true while requiredStatuses is also given");
  }
}

const queueExists = (branch: string) => conflict(`A merge queue already exists for branch "${branch}" in this repository`);

export async function createQueue(services: Services, principal: Principal, input: QueueAddress & QueueSettingsUpdate): Promise<QueueRecord> {
  checkUpdate(input);
  const { repo, targetBranch, ...update } = input;
  // Outside the transaction: no transaction waits on the network.
  const head = await services.codeHost.getBranchHead(repo, targetBranch);
  return services.db.transaction(async (tx) => {
    const repository = await claimRepository(services, tx, principal, repo);
    const existing = await tx.queue.findUnique({ where: { repositoryId_branch: { repositoryId: repository.id, branch: targetBranch } } });
    if (existing) throw queueExists(targetBranch);
    const defaults = settingsData({ ...DEFAULT_QUEUE_SETTINGS, requiredStatuses: undefined });
    const row = await tx.queue.create({
      data: {
        ...(defaults as object),
        ...(settingsData(update) as object),
        id: services.newId(),
        repositoryId: repository.id,
        branch: targetBranch,
        state: update.state ?? "running",
        mode: update.mode ?? DEFAULT_QUEUE_SETTINGS.mode,
        requiredStatuses: update.requiredStatuses?.length ? JSON.stringify(update.requiredStatuses) : null,
        baseSha: head,
        targetHead: head,
      } as Parameters<Tx["queue"]["create"]>[0]["data"],
    }).catch((error: unknown) => {
      // PostgreSQL: a concurrent createQueue inserted the branch after the check above.
      throw isUniqueViolation(error) ? queueExists(targetBranch) : error;
    });
    return toQueueRecord(row);
  });
}

export type QueueWithEntries = QueueRecord & { enqueuedPullRequests: MergeItemRecord[] };

/** getQueue's answer, serialized: polled often, it is served from the ReadCache when unchanged. */
export async function getQueueJson(services: Services, principal: Principal, address: QueueAddress): Promise<string> {
  const { id, version } = await findQueueVersion(services, principal, address);
  const cached = services.readCache.get(`queue:${id}`, version);
  if (cached !== undefined) return cached;
  return services.db.read(async (tx) => {
    const queue = await tx.queue.findUniqueOrThrow({ where: { id } });
    const entries = await tx.queueEntry.findMany({
      where: { queueId: queue.id, state: { in: LIVE_PR_STATES } },
      orderBy: [{ priorityValue: "asc" }, { submittedAt: "asc" }, { prNumber: "asc" }],
    });
    const json = JSON.stringify({ ...toQueueRecord(queue), enqueuedPullRequests: entries.map(toMergeItemRecord) } satisfies QueueWithEntries);
    // Cached under the version of the row read: entries read after it are never older.
    services.readCache.set(`queue:${id}`, queue.version, json);
    return json;
  });
}

export async function updateQueue(services: Services, principal: Principal, input: QueueAddress & QueueSettingsUpdate): Promise<QueueRecord> {
  checkUpdate(input);
  const { repo, targetBranch, ...update } = input;
  return services.db.transaction(async (tx) => {
    const queue = await lockQueue(tx, principal, { repo, targetBranch });
    const inFlight = await tx.queueEntry.count({ where: { queueId: queue.id, state: { in: IN_FLIGHT_STATES } } });
    const next = planQueueStateChange(
      { state: queue.state as QueueState, mode: queue.mode as QueueMode, pendingMode: queue.pendingMode as QueueMode | null },
      update,
      inFlight > 0,
    );
    const updated = await tx.queue.update({
      where: { id: queue.id },
      data: { ...(settingsData(update) as object), state: next.state, mode: next.mode, pendingMode: next.pendingMode },
    });
    // Resuming, pausing or a new setting can start or stop work at once.
    await applyEvent(services, tx, updated, { kind: "config_changed" });
    return toQueueRecord(await tx.queue.findUniqueOrThrow({ where: { id: queue.id } }));
  });
}

export async function deleteQueue(services: Services, principal: Principal, address: QueueAddress): Promise<void> {
  await services.db.transaction(async (tx) => {
    const queue = await lockQueue(tx, principal, address);
    const active = await tx.queueEntry.findMany({
      where: { queueId: queue.id, state: { in: LIVE_PR_STATES } },
      select: { prNumber: true, state: true },
      take: 5,
    });
    if (active.some((e) => !isTerminal(e.state as PrState))) {
      const list = active.map((e) => `#${e.prNumber} (${e.state})`).join(", ");
      throw failedPrecondition(`the queue is not empty: cancel or merge its pull requests first (${list}${active.length === 5 ? ", …" : ""})`);
    }
    await tx.queue.delete({ where: { id: queue.id } });
  });
}
