import type { ImpactedTargets, Queue, QueueEntry, TestRun } from "../generated/sqlite/client.js";
import type { Decision, EngineEntry, EngineQueue, EngineRun, NotifyEffect, OutboxEffect, Targets, Transition } from "../domain/engine/types.js";
import { isInLine } from "../domain/engine/order.js";
import { LIVE_PR_STATES, type PrState, type QueueMode, type QueueState } from "../domain/states.js";
import { settingsOf } from "./records.js";
import type { Tx } from "../store/database.js";

/** Loaded rows, kept to write back only what the engine changed. */
export type Loaded = { queue: Queue; entries: Map<number, QueueEntry>; runs: Map<string, TestRun>; engine: EngineQueue };

const runNumber = (runId: string) => Number(runId.slice(runId.lastIndexOf("-") + 1));

/** The targets uploaded for the PR's current head; null when none are. */
function targetsOf(row: QueueEntry, uploaded: ImpactedTargets | undefined): Targets | null {
  if (!uploaded || uploaded.sha !== row.prSha) return null;
  return uploaded.kind === "all" ? "ALL" : (JSON.parse(uploaded.targets) as string[]);
}

function toEngineEntry(row: QueueEntry, uploaded: ImpactedTargets | undefined): EngineEntry {
  return {
    prNumber: row.prNumber,
    state: row.state as PrState,
    stateChangedAt: row.stateChangedAt.getTime(),
    priority: row.priorityValue,
    submittedAt: row.submittedAt.getTime(),
    noBatch: row.noBatch,
    ready: row.ready,
    bisectionGroupLimit: row.bisectionGroupLimit,
    reason: row.stateReason,
    position: row.linePosition === null ? null : Number(row.linePosition),
    targets: targetsOf(row, uploaded),
    directMergeBase: row.directMergeBase,
  };
}

function toEngineRun(row: TestRun): EngineRun {
  return {
    id: row.runId,
    kind: row.kind as EngineRun["kind"],
    baseSha: row.baseSha,
    stack: JSON.parse(row.stack) as number[],
    tested: JSON.parse(row.tested) as number[],
    status: row.status as EngineRun["status"],
    startedAt: row.startedAt.getTime(),
    finishedAt: row.finishedAt?.getTime() ?? null,
    failure: row.failure as EngineRun["failure"],
  };
}

/**
 * The engine's view of a queue: its settings, the PRs that are not done (and any others the
 * event names), and the runs not yet archived.
 */
export async function loadQueueState(tx: Tx, queue: Queue, alsoPrs: number[] = []): Promise<Loaded> {
  // Merged PRs not yet confirmed by the code host matter too (parallel lanes, voided merges),
  // and so does every PR a loaded run holds (a bisection run is judged by what became of them).
  const merged = JSON.parse(queue.mergedPrs) as number[];
  const runs = (await tx.testRun.findMany({ where: { queueId: queue.id, archived: false } })).sort((a, b) => runNumber(a.runId) - runNumber(b.runId));
  const inRuns = runs.filter((r) => r.kind === "bisection").flatMap((r) => JSON.parse(r.stack) as number[]);
  const entries = await tx.queueEntry.findMany({
    where: { queueId: queue.id, OR: [{ state: { in: LIVE_PR_STATES } }, { prNumber: { in: [...new Set([...alsoPrs, ...merged, ...inRuns])] } }] },
  });
  const uploaded =
    queue.mode === "parallel" || queue.pendingMode === "parallel"
      ? new Map((await tx.impactedTargets.findMany({ where: { queueId: queue.id, prNumber: { in: entries.map((e) => e.prNumber) } } })).map((t) => [t.prNumber, t]))
      : new Map<number, ImpactedTargets>();
  const settings = settingsOf(queue);
  return {
    queue,
    entries: new Map(entries.map((e) => [e.prNumber, e])),
    runs: new Map(runs.map((r) => [r.runId, r])),
    engine: {
      state: queue.state as QueueState,
      mode: queue.mode as QueueMode,
      pendingMode: queue.pendingMode as QueueMode | null,
      settings: {
        mode: settings.mode,
        concurrency: settings.concurrency,
        bisectionConcurrency: settings.bisectionConcurrency,
        testingTimeoutMinutes: settings.testingTimeoutMinutes,
        pendingFailureDepth: settings.pendingFailureDepth,
        canOptimisticallyMerge: settings.canOptimisticallyMerge,
        batch: settings.batch,
        batchingMaxWaitTimeMinutes: settings.batchingMaxWaitTimeMinutes,
        batchingMinSize: settings.batchingMinSize,
        optimizationMode: settings.optimizationMode,
        directMergeMode: settings.directMergeMode,
      },
      baseSha: queue.baseSha ?? "",
      merged,
      entries: entries.map((row) => toEngineEntry(row, uploaded.get(row.prNumber))),
      runs: runs.map(toEngineRun),
      nextRunNumber: queue.nextRunNumber,
    },
  };
}

/**
 * Locks the queue `id` for the caller's transaction, or answers null when it no longer exists.
 * The lock is an update (the version bump the ReadCache relies on): on PostgreSQL it holds the
 * row until the transaction ends, and a writer that waited on a transaction that deleted the
 * queue finds no row, which is not an error but an answer. The row is read after the lock, so
 * it is the latest committed one. (SQLite runs one transaction at a time.)
 */
export async function lockQueueRow(tx: Tx, id: string): Promise<Queue | null> {
  const locked = await tx.queue.updateMany({ where: { id }, data: { version: { increment: 1 } } });
  return locked.count === 0 ? null : tx.queue.findUniqueOrThrow({ where: { id } });
}

/** The commit status and description each PR state shows on the code host. */
const STATUS_OF: Record<PrState, "pending" | "success" | "failure" | "error"> = {
  not_ready: "pending",
  pending: "pending",
  testing: "pending",
  tests_passed: "pending",
  pending_failure: "pending",
  merged: "success",
  failed: "failure",
  cancelled: "error",
};
const DESCRIPTION_OF: Record<PrState, string> = {
  not_ready: "Not ready",
  pending: "Queued",
  testing: "Testing",
  tests_passed: "Passed, merging",
  pending_failure: "Failed, waiting for the PRs ahead",
  merged: "Merged",
  failed: "Failed",
  cancelled: "Cancelled",
};

/** The status and comment a transition shows on the PR, per the queue's settings. */
function notificationsOf(queue: Queue, row: QueueEntry, t: Transition): NotifyEffect[] {
  const out: NotifyEffect[] = [];
  if (queue.statusCheckEnabled) {
    const description = t.to === "merged" || t.to === "pending" || t.to === "testing" ? DESCRIPTION_OF[t.to] : `${DESCRIPTION_OF[t.to]}: ${t.reason.replaceAll("_", " ")}`;
    out.push({ kind: "pr_status", prNumber: t.prNumber, sha: row.prSha, state: STATUS_OF[t.to], description });
  }
  if (queue.commentsEnabled && (t.to === "failed" || (t.to === "cancelled" && t.reason !== "cancelled_by_user"))) {
    out.push({ kind: "pr_comment", prNumber: t.prNumber, body: `Greenline removed this pull request from the merge queue for \`${queue.branch}\`: **${t.to}** (${t.reason.replaceAll("_", " ")}).` });
  }
  return out;
}

/**
 * Writes the engine's decision back: changed entries with their transitions, new and changed
 * runs, the effects to execute (the outbox), the queue's own fields. All in the caller's
 * transaction, so the state, its reasons and its effects commit together or not at all.
 */
export async function saveDecision(
  tx: Tx,
  loaded: Loaded,
  decision: Decision,
  context: { now: Date; newId: () => string; event: { kind: string }; notify: boolean },
): Promise<void> {
  const { queue } = loaded;
  const { now, newId } = context;
  const next = decision.queue;

  for (const entry of next.entries) {
    const row = loaded.entries.get(entry.prNumber);
    if (!row) continue;
    const position = entry.position === null ? null : BigInt(entry.position);
    const changed =
      row.state !== entry.state ||
      row.stateReason !== entry.reason ||
      row.bisectionGroupLimit !== entry.bisectionGroupLimit ||
      row.ready !== entry.ready ||
      row.linePosition !== position;
    if (!changed) continue;
    await tx.queueEntry.update({
      where: { id: row.id },
      data: {
        state: entry.state,
        stateReason: entry.reason,
        stateChangedAt: new Date(entry.stateChangedAt),
        bisectionGroupLimit: entry.bisectionGroupLimit,
        ready: entry.ready,
        linePosition: position,
        ...(entry.state === "merged" || entry.state === "failed" || entry.state === "cancelled" ? { isCurrentlySubmitted: false } : {}),
      },
    });
  }
  if (decision.transitions.length > 0) {
    await tx.transition.createMany({
      data: decision.transitions.map((t) => ({
        id: newId(),
        entryId: loaded.entries.get(t.prNumber)!.id,
        queueId: queue.id,
        fromState: t.from,
        toState: t.to,
        reason: t.reason,
        at: now,
      })),
    });
  }

  // A run is archived once no PR it tested is in line: the engine will never look at it again,
  // and its testing branch (if it had one) is deleted — cancel_run does that, idempotently.
  const inLine = new Set(next.entries.filter((e) => isInLine(e.state) || e.state === "not_ready").map((e) => e.prNumber));
  const cleanups: OutboxEffect[] = [];
  const cancelling = new Set(decision.effects.flatMap((e) => (e.kind === "cancel_run" ? [e.runId] : [])));
  for (const run of next.runs) {
    const archived = run.status !== "running" && (run.status === "cancelled" || !run.tested.some((pr) => inLine.has(pr)));
    const row = loaded.runs.get(run.id);
    const data = { status: run.status, failure: run.failure, finishedAt: run.finishedAt === null ? null : new Date(run.finishedAt), archived };
    if (!row) {
      await tx.testRun.create({
        data: { ...data, id: newId(), queueId: queue.id, runId: run.id, kind: run.kind, baseSha: run.baseSha, stack: JSON.stringify(run.stack), tested: JSON.stringify(run.tested), startedAt: new Date(run.startedAt) },
      });
    } else {
      if (archived && !row.archived && row.testBranch && !cancelling.has(run.id)) cleanups.push({ kind: "cancel_run", runId: run.id });
      // A landed merge re-describes valid runs from the new base (same tree, shorter stack).
      const stack = JSON.stringify(run.stack);
      const rebased = row.baseSha !== run.baseSha || row.stack !== stack;
      if (rebased || row.status !== run.status || row.failure !== run.failure || row.archived !== archived) {
        await tx.testRun.update({ where: { id: row.id }, data: { ...data, ...(rebased ? { baseSha: run.baseSha, stack } : {}) } });
      }
    }
  }

  const notifications = context.notify ? decision.transitions.flatMap((t) => notificationsOf(queue, loaded.entries.get(t.prNumber)!, t)) : [];
  const effects: OutboxEffect[] = [
    ...decision.effects.filter((e) => e.kind !== "schedule_timer"),
    ...cleanups,
    ...notifications,
  ];
  if (effects.length > 0) {
    const last = await tx.effect.findFirst({ where: { queueId: queue.id }, orderBy: { seq: "desc" }, select: { seq: true } });
    let seq = last?.seq ?? 0;
    await tx.effect.createMany({
      data: effects.map((effect) => ({ id: newId(), queueId: queue.id, seq: ++seq, kind: effect.kind, payload: JSON.stringify(effect), createdAt: now })),
    });
  }
  const timer = decision.effects.find((e) => e.kind === "schedule_timer");
  await tx.queue.update({
    where: { id: queue.id },
    data: {
      state: next.state,
      mode: next.mode,
      pendingMode: next.pendingMode,
      baseSha: next.baseSha || null,
      mergedPrs: JSON.stringify(next.merged),
      nextRunNumber: next.nextRunNumber,
      timerAt: timer ? new Date(timer.at) : null,
      version: { increment: 1 },
    },
  });
  await tx.queueEvent.create({ data: { id: newId(), queueId: queue.id, kind: context.event.kind, payload: JSON.stringify(context.event), at: now } });
}
