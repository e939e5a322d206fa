import { engineFreezeOf, type FrozenState } from "../domain/freezes.js";
import { runNumberOf } from "../domain/engine/run-ids.js";
import { isConfirmedFailure } from "../domain/flaky/verdict.js";
import type { Decision, EngineEntry, EngineQueue, EngineRun, OutboxEffect, Targets } from "../domain/engine/types.js";
import type { Cause, TimelineEvent } from "../domain/timeline.js";
import { transitionDurations, type TransitionDurations } from "../domain/durations.js";
import { sqlOf, type Tx } from "./database.js";
import { appendEffects, appendedRows, EFFECT_INSERT_POSTGRES, effectInsertParams, effectRowsToAppend } from "./effects.js";
import { KEEP_EARLIER_MARK, markQueueDue } from "./due-queues.js";
import { entriesInPlayOr, entriesInPlayWithTargets, entriesOfPrs, type QueueEntry } from "./entries.js";
import { hasSnapshot, keepSnapshot, peekRowChanges, snapshotOf, takeRowChanges, takeRowChangesWithRuns, type QueueSnapshot, type RowChanges } from "./queue-snapshots.js";
import { TERMINAL_PR_STATES } from "../domain/states.js";
import type { ImpactedTargets } from "./impacted-targets.js";
import type { Queue } from "./queues.js";
import { noteOutboxWrites, noteQueueDecided } from "./queue-writes.js";
import { activeRunsOf, insertRuns, runsOfIds, testRunOfSql, rebaseRuns, updateRun, type TestRun } from "./runs.js";
import { insertQueueEvent, insertTransitions, pruneTimeline, QUEUE_EVENT_INSERT, queueEventParams, transitionRows } from "./timeline.js";

/** Loaded rows, kept to write back only what the engine changed. */
export type Loaded = { queue: Queue; entries: Map<number, QueueEntry>; runs: Map<string, TestRun>; engine: EngineQueue };

/** The targets uploaded for the PR's current head; null when none are. */
function targetsOf(entry: QueueEntry, uploaded: ImpactedTargets | undefined): Targets | null {
  if (!uploaded || uploaded.sha !== entry.prSha) return null;
  return uploaded.targets;
}

function toEngineEntry(entry: QueueEntry, uploaded: ImpactedTargets | undefined): EngineEntry {
  return {
    prNumber: entry.prNumber,
    state: entry.state,
    stateChangedAt: entry.stateChangedAt.getTime(),
    priority: entry.priorityValue,
    submittedAt: entry.submittedAt.getTime(),
    noBatch: entry.noBatch,
    ready: entry.ready,
    bisectionGroupLimit: entry.bisectionGroupLimit,
    reason: entry.stateReason,
    position: entry.linePosition,
    targets: targetsOf(entry, uploaded),
    directMergeBase: entry.directMergeBase,
    ...(entry.emergencyReason !== null ? { emergency: true } : {}),
    ...(entry.stackBelowPr !== null ? { stackBelow: entry.stackBelowPr } : {}),
  };
}

function toEngineRun(run: TestRun): EngineRun {
  return {
    id: run.runId,
    kind: run.kind,
    baseSha: run.baseSha,
    stack: run.stack,
    tested: run.tested,
    status: run.status,
    startedAt: run.startedAt.getTime(),
    finishedAt: run.finishedAt?.getTime() ?? null,
    failure: run.failure,
    ...(run.flakeVerdict?.last && isConfirmedFailure(run.flakeVerdict.last) ? { failureConfirmed: true } : {}),
    ...(run.testBranch ? { hasTestBranch: true } : {}),
  };
}

type Rows = { entries: Map<number, QueueEntry>; runs: Map<string, TestRun>; targets: Map<number, ImpactedTargets> };

/** The PRs a decision needs besides those in play: merged ones not yet confirmed, those a bisection run holds, those named. */
function alsoOf(queue: Queue, runs: Iterable<TestRun>, alsoPrs: readonly number[]): number[] {
  // Merged PRs not yet confirmed by the code host matter too (parallel lanes, voided merges),
  // and so does every PR a loaded run holds (a bisection run is judged by what became of them).
  const inRuns: number[] = [];
  for (const r of runs) if (!r.archived && r.kind === "bisection") inRuns.push(...r.stack);
  return [...new Set([...alsoPrs, ...queue.mergedPrs, ...inRuns])];
}

/** Every row a decision loads, read afresh (`runs`: the runs, already read). */
async function readRows(tx: Tx, queue: Queue, alsoPrs: readonly number[], parallel: boolean, readRuns?: TestRun[]): Promise<Rows> {
  // Plain SQL (sqlOf): every decision without a copy of its queue's rows loads these.
  const runs = readRuns ?? (await activeRunsOf(tx, queue.id));
  const also = alsoOf(queue, runs, alsoPrs);
  // A parallel queue's lanes need each PR's impacted targets: read with the entries, one statement.
  const read = parallel ? await entriesInPlayWithTargets(tx, queue.id, also) : { entries: await entriesInPlayOr(tx, queue.id, also), targets: new Map<number, ImpactedTargets>() };
  return { entries: new Map(read.entries.map((e) => [e.prNumber, e])), runs: new Map(runs.map((r) => [r.id, r])), targets: read.targets };
}

/** The copy's rows brought up to date: those that changed, and PRs now named that it lacks, read again. */
async function refreshRows(tx: Tx, queue: Queue, base: QueueSnapshot, changes: RowChanges, alsoPrs: readonly number[], parallel: boolean): Promise<Rows> {
  const runs = new Map(base.runs);
  for (const id of changes.runs) runs.delete(id);
  for (const run of await runsOfIds(tx, queue.id, [...changes.runs])) runs.set(run.id, run);
  const entries = new Map(base.entries);
  const targets = new Map(base.targets ?? []);
  const again = new Set(changes.entries);
  if (parallel) for (const pr of changes.targets) again.add(pr);
  for (const pr of alsoOf(queue, runs.values(), alsoPrs)) if (!entries.has(pr)) again.add(pr);
  for (const pr of again) {
    entries.delete(pr);
    targets.delete(pr);
  }
  const read = await entriesOfPrs(tx, queue.id, [...again], parallel);
  for (const entry of read.entries) entries.set(entry.prNumber, entry);
  for (const [pr, t] of read.targets) targets.set(pr, t);
  return { entries, runs, targets };
}

/** The rows the engine sees: PRs in play or named, runs not archived (what readRows reads). */
function inView(queue: Queue, rows: Rows, alsoPrs: readonly number[]): Rows {
  const runs = new Map([...rows.runs].filter(([, r]) => !r.archived));
  const also = new Set(alsoOf(queue, runs.values(), alsoPrs));
  const entries = new Map([...rows.entries].filter(([pr, e]) => !TERMINAL_PR_STATES.has(e.state) || also.has(pr)));
  const targets = new Map([...rows.targets].filter(([pr]) => entries.has(pr)));
  return { entries, runs, targets };
}

/** Set GREENLINE_CHECK_QUEUE_SNAPSHOTS=1 (the test suites do) to check every copy against a fresh read. */
const CHECK_SNAPSHOTS = process.env.GREENLINE_CHECK_QUEUE_SNAPSHOTS === "1";

/** The rows that differ between two loads, by kind and key ("entry 12", "run <id>", "targets 12"), with both sides. */
function differingRows(a: Rows, b: Rows): { key: string; kind: string; id: string; copy: unknown; fresh: unknown }[] {
  const out: { key: string; kind: string; id: string; copy: unknown; fresh: unknown }[] = [];
  const compare = <K>(kind: string, x: ReadonlyMap<K, unknown>, y: ReadonlyMap<K, unknown>) => {
    for (const k of new Set([...x.keys(), ...y.keys()])) {
      if (JSON.stringify(x.get(k)) !== JSON.stringify(y.get(k))) out.push({ key: `${kind} ${String(k)}`, kind, id: String(k), copy: x.get(k) ?? null, fresh: y.get(k) ?? null });
    }
  };
  compare("entry", a.entries, b.entries);
  compare("run", a.runs, b.runs);
  compare("targets", a.targets, b.targets);
  return out;
}

/**
 * GREENLINE_CHECK_QUEUE_SNAPSHOTS: the rows a copy gave, against a fresh read. A row may differ
 * only because it changed after the notes were read (a write that does not take the queue's lock,
 * committed between the statements: its note is then still there for the next load); any
 * other difference is a copy gone wrong, and fails the decision.
 */
async function checkAgainstFresh(tx: Tx, queue: Queue, rows: Rows, alsoPrs: readonly number[], parallel: boolean, token: string | null): Promise<void> {
  const differing = differingRows(rows, await readRows(tx, queue, alsoPrs, parallel));
  if (differing.length === 0) return;
  const noted = await peekRowChanges(tx, queue.id);
  // A reader's copy: a decision took the notes since (it holds a new token), nothing can be judged.
  if (noted.previousToken !== token) return;
  const explained = (d: (typeof differing)[number]) =>
    d.kind === "run" ? noted.runs.has(d.id) : d.kind === "entry" ? noted.entries.has(Number(d.id)) : noted.targets.has(Number(d.id)) || noted.entries.has(Number(d.id));
  const unexplained = differing.filter((d) => !explained(d));
  if (unexplained.length > 0) throw new Error(`queue ${queue.id}: the copy of its rows differs from a fresh read: ${JSON.stringify(unexplained).slice(0, 4000)}`);
}

/**
 * The rows from `base` (a copy made under the token `changes` replaced, or null) brought up to
 * date by `changes`, when it was made for the queue's mode (with targets for a parallel queue,
 * without for a single one); else read afresh. `token`: the one the notes now stand under.
 */
async function fromCopyOrFresh(
  tx: Tx,
  queue: Queue,
  base: QueueSnapshot | null,
  changes: RowChanges,
  alsoPrs: readonly number[],
  parallel: boolean,
  token: string | null,
  counted: "fromCopy" | "readFromCopy",
): Promise<Rows> {
  // A copy is worth bringing up to date while fewer rows changed than it holds: past that, a
  // fresh read (the rows in play) costs less than reading every changed row again — after rows
  // were written outside decisions (a bulk import, the history pruned), a reader of an idle
  // queue re-read 100,000 of them on every getQueue (3–4 s on SQLite, docs/benchmarks.md).
  // (Counted in notes read, not rows: a reader reads at most one note more than its copy holds rows, so one past them means there may be more.)
  if (!base || (base.targets !== null) !== parallel || changes.notes > base.entries.size + base.runs.size) {
    if (counted === "fromCopy") snapshotLoads.fresh++;
    return readRows(tx, queue, alsoPrs, parallel);
  }
  const rows = inView(queue, await refreshRows(tx, queue, base, changes, alsoPrs, parallel), alsoPrs);
  snapshotLoads[counted]++;
  if (CHECK_SNAPSHOTS) await checkAgainstFresh(tx, queue, rows, alsoPrs, parallel, token);
  return rows;
}

/**
 * The PRs a decision loads past which its process keeps a copy of them (GREENLINE_QUEUE_COPY_MIN_ROWS,
 * the test suites use 0 to exercise copies everywhere): below it a fresh read costs about what
 * taking the notes and reading the changed rows again does.
 */
const COPY_MIN_ROWS = (() => {
  const given = process.env.GREENLINE_QUEUE_COPY_MIN_ROWS;
  if (given === undefined || given === "") return 32;
  const n = Number(given);
  if (!Number.isInteger(n) || n < 0) throw new Error(`GREENLINE_QUEUE_COPY_MIN_ROWS must be a whole number of PRs, 0 or more (got "${given}")`);
  return n;
})();

/** Counts of loads with and without a copy of the queue's rows (tests and benchmarks read them). */
export const snapshotLoads = { fresh: 0, fromCopy: 0, readFromCopy: 0 };

/**
 * The engine's view of a queue: its settings, the PRs that are not done (and any others the
 * event names), and the runs not yet archived. `take`: the caller holds the queue's lock and will
 * decide (applyEvent): the load takes the queue's noted row changes and, when this process holds
 * a copy of the queue's rows that those changes bring up to date, reads only those rows
 * (src/store/queue-snapshots.ts); the copy it makes is kept for the next decision. `peek`: a
 * reader (getQueue's line) uses this process's copy the same way, without taking the changes.
 */
export async function loadQueueState(tx: Tx, queue: Queue, alsoPrs: number[] = [], options: { take?: boolean; peek?: boolean } = {}): Promise<Loaded> {
  const parallel = queue.mode === "parallel" || queue.pendingMode === "parallel";
  let rows: Rows;
  if (options.take && !hasSnapshot(tx, queue.id)) {
    // No copy to bring up to date: the runs read with the notes dropped (no extra round trip).
    const taken = await takeRowChangesWithRuns(tx, queue.id);
    rows = await readRows(tx, queue, alsoPrs, parallel, taken.runs.map(testRunOfSql));
    snapshotLoads.fresh++;
    // A short line costs little to read again: a copy is kept only for a long one.
    if (rows.entries.size >= COPY_MIN_ROWS) keepSnapshot(tx, queue.id, { token: taken.token, entries: rows.entries, runs: rows.runs, targets: parallel ? rows.targets : null });
  } else if (options.take) {
    const { changes, token } = await takeRowChanges(tx, queue.id);
    rows = await fromCopyOrFresh(tx, queue, snapshotOf(tx, queue.id, changes.previousToken), changes, alsoPrs, parallel, token, "fromCopy");
    keepSnapshot(tx, queue.id, { token, entries: rows.entries, runs: rows.runs, targets: parallel ? rows.targets : null });
  } else if (options.peek) {
    const changes = await peekRowChanges(tx, queue.id);
    rows = await fromCopyOrFresh(tx, queue, snapshotOf(null, queue.id, changes.previousToken), changes, alsoPrs, parallel, changes.previousToken, "readFromCopy");
  } else {
    rows = await readRows(tx, queue, alsoPrs, parallel);
  }
  const entries = [...rows.entries.values()].sort((a, b) => a.prNumber - b.prNumber);
  const runs = [...rows.runs.values()].sort((a, b) => runNumberOf(a.runId) - runNumberOf(b.runId));
  const uploaded = rows.targets;
  return {
    queue,
    entries: new Map(entries.map((e) => [e.prNumber, e])),
    runs: new Map(runs.map((r) => [r.runId, r])),
    engine: {
      state: queue.state,
      mode: queue.mode,
      pendingMode: queue.pendingMode,
      settings: {
        mode: queue.mode,
        concurrency: queue.concurrency,
        bisectionConcurrency: queue.bisectionConcurrency,
        testingTimeoutMinutes: queue.testingTimeoutMinutes,
        pendingFailureDepth: queue.pendingFailureDepth,
        canOptimisticallyMerge: queue.canOptimisticallyMerge,
        batch: queue.batch,
        batchingMaxWaitTimeMinutes: queue.batchingMaxWaitTimeMinutes,
        batchingMinSize: queue.batchingMinSize,
        optimizationMode: queue.optimizationMode,
        directMergeMode: queue.directMergeMode,
        ciBudget: queue.ciBudget,
        tuning: queue.tuning,
      },
      baseSha: queue.baseSha ?? "",
      merged: queue.mergedPrs,
      entries: entries.map((entry) => toEngineEntry(entry, uploaded.get(entry.prNumber))),
      runs: runs.map(toEngineRun),
      nextRunNumber: queue.nextRunNumber,
      observed: queue.observed,
      ...(queue.frozen ? { freeze: engineFreezeOf(queue.frozen) } : {}),
    },
  };
}

const NO_DURATIONS: TransitionDurations = { stateMs: null, queuedMs: null };

/**
 * What each of a decision's timeline events records of time (domain/durations.ts), from each PR's
 * clock as loaded, and the PRs whose time not ready grew.
 */
function timelineDurations(timeline: readonly TimelineEvent[], entries: Map<number, QueueEntry>): { byIndex: TransitionDurations[]; notReadyMs: Map<number, number> } {
  const indicesOf = new Map<number, number[]>();
  timeline.forEach((event, i) => indicesOf.set(event.prNumber, [...(indicesOf.get(event.prNumber) ?? []), i]));
  const byIndex: TransitionDurations[] = [];
  const notReadyMs = new Map<number, number>();
  for (const [prNumber, indices] of indicesOf) {
    const row = entries.get(prNumber);
    if (!row) continue;
    const { durations, clock } = transitionDurations(
      indices.map((i) => timeline[i]!),
      { stateStartedAt: row.stateChangedAt.getTime(), submittedAt: row.submittedAt.getTime(), notReadyMs: row.notReadyMs },
    );
    indices.forEach((i, k) => {
      byIndex[i] = durations[k]!;
    });
    if (clock.notReadyMs !== row.notReadyMs) notReadyMs.set(prNumber, clock.notReadyMs);
  }
  return { byIndex, notReadyMs };
}

/**
 * Writes the engine's decision back: changed entries with their transitions, new and changed
 * runs, the effects to execute (the outbox: the decision's, then the clean-ups of archived
 * runs, then `notifications`), the queue's own fields, and the event itself. All in the caller's
 * transaction, so the state, its reasons and its effects commit together or not at all.
 */
export async function saveDecision(
  tx: Tx,
  loaded: Loaded,
  decision: Decision,
  context: { now: Date; newId: () => string; event: { kind: string }; cause: Cause; timeline: readonly TimelineEvent[]; notifications: OutboxEffect[]; frozen: FrozenState | null },
): Promise<void> {
  const { queue } = loaded;
  const { now, newId } = context;
  const next = decision.queue;
  const pruning: [string, number][] = [];

  const sql = sqlOf(tx);
  const timed = timelineDurations(context.timeline, loaded.entries);
  for (const entry of next.entries) {
    const row = loaded.entries.get(entry.prNumber);
    if (!row) continue;
    const notReadyMs = timed.notReadyMs.get(entry.prNumber);
    const changed =
      row.state !== entry.state ||
      row.stateReason !== entry.reason ||
      row.bisectionGroupLimit !== entry.bisectionGroupLimit ||
      row.ready !== entry.ready ||
      row.linePosition !== entry.position ||
      notReadyMs !== undefined;
    if (!changed) continue;
    // The host's words come with the transition that reports them (kept until resubmission).
    const message = decision.transitions.findLast((t) => t.prNumber === entry.prNumber)?.message;
    const added = context.timeline.filter((e) => e.prNumber === entry.prNumber).length;
    const concluded = entry.state === "merged" || entry.state === "failed" || entry.state === "cancelled";
    // Plain SQL (sqlOf); the columns Prisma's update wrote, and those only.
    const [updated] = await sql.all<{ timelineCount: number }>(
      `UPDATE "QueueEntry" SET "state" = ?, "stateReason" = ?, "stateChangedAt" = ?, "bisectionGroupLimit" = ?, "ready" = ?, "linePosition" = ?, "timelineCount" = "timelineCount" + ?${
        message !== undefined ? `, "failureMessage" = ?` : ""
      }${concluded ? `, "isCurrentlySubmitted" = ?` : ""}${notReadyMs !== undefined ? `, "notReadyMs" = ?, "notReadySubmittedAt" = ?` : ""} WHERE "id" = ? RETURNING "timelineCount"`,
      [
        entry.state,
        entry.reason,
        new Date(entry.stateChangedAt),
        entry.bisectionGroupLimit,
        entry.ready,
        entry.position,
        added,
        ...(message !== undefined ? [message.slice(0, 2000)] : []),
        ...(concluded ? [false] : []),
        ...(notReadyMs !== undefined ? [notReadyMs, row.submittedAt] : []),
        row.id,
      ],
    );
    if (added > 0 && updated) pruning.push([row.id, Number(updated.timelineCount)]);
  }
  if (context.timeline.length > 0) {
    await insertTransitions(
      tx,
      transitionRows(context.timeline, { queueId: queue.id, entryIdOf: (pr) => loaded.entries.get(pr)!.id, newId }, (i) => timed.byIndex[i] ?? NO_DURATIONS),
    );
  }
  // Bounded timelines: only a PR past the limit pays for it.
  for (const [entryId, count] of pruning) await pruneTimeline(tx, entryId, count);

  const archivedRuns = new Set(decision.archived);
  // Runs only re-described from a new base, grouped by it: one statement per base.
  const rebasedOnly = new Map<string, { id: string; stack: number[] }[]>();
  const created: { id: string; queueId: string; run: (typeof next.runs)[number]; archived: boolean }[] = [];
  for (const run of next.runs) {
    const archived = archivedRuns.has(run.id);
    const row = loaded.runs.get(run.id);
    if (!row) {
      created.push({ id: newId(), queueId: queue.id, run, archived });
    } else {
      // A landed merge re-describes valid runs from the new base (same tree, shorter stack).
      const stack = JSON.stringify(run.stack);
      const rebased = row.baseSha !== run.baseSha || JSON.stringify(row.stack) !== stack;
      const changed = row.status !== run.status || row.failure !== run.failure || row.archived !== archived;
      if (changed || (rebased && (row.finishedAt?.getTime() ?? null) !== run.finishedAt)) {
        await updateRun(tx, row.id, run, archived, rebased);
      } else if (rebased) {
        rebasedOnly.set(run.baseSha, [...(rebasedOnly.get(run.baseSha) ?? []), { id: row.id, stack: run.stack }]);
      }
    }
  }
  await insertRuns(tx, created);
  for (const [baseSha, rows] of rebasedOnly) await rebaseRuns(tx, baseSha, rows);

  const effects: OutboxEffect[] = [...decision.effects.filter((e) => e.kind !== "schedule_timer"), ...decision.cleanups, ...context.notifications];
  const timer = decision.effects.find((e) => e.kind === "schedule_timer");
  // The worker claims the queue when its effects or its timer are due (src/store/due-queues.ts):
  // one mark, at the earlier (a claim's release finds the timer again: nextDueOfQueue).
  const dueAt = Math.min(effects.length > 0 ? now.getTime() : Number.POSITIVE_INFINITY, timer?.at ?? Number.POSITIVE_INFINITY);
  const queueUpdate = `UPDATE "Queue" SET "state" = ?, "mode" = ?, "pendingMode" = ?, "baseSha" = ?, "mergedPrs" = ?, "nextRunNumber" = ?, "observedFailures" = ?, "observedExposures" = ?, "timerAt" = ?, "frozenState" = ?, "version" = "version" + 1, "updatedAt" = ? WHERE "id" = ? RETURNING "version"`;
  const queueParams = [
    next.state,
    next.mode,
    next.pendingMode,
    next.baseSha || null,
    JSON.stringify(next.merged),
    next.nextRunNumber,
    next.observed?.failures ?? 0,
    next.observed?.exposures ?? 0,
    timer ? new Date(timer.at) : null,
    context.frozen === null ? null : JSON.stringify(context.frozen),
    now,
    queue.id,
  ];
  let version: number;
  if (sql.kind === "postgres") {
    // One round trip for the decision's last four writes (its effects, the due mark, the queue's
    // row, its event): data-modifying WITH clauses on four different tables, one snapshot.
    const { rows, dropped } = effects.length > 0 ? await effectRowsToAppend(tx, queue.id, effects, newId) : { rows: [], dropped: [] };
    const due = Number.isFinite(dueAt);
    const event = { id: newId(), queueId: queue.id, kind: context.event.kind, payload: context.event, at: now, actor: context.cause.actor };
    const written = await sql.all<{ version: number | string; id: string | null; seq: number | string | null }>(
      `WITH "effects" AS (${EFFECT_INSERT_POSTGRES}),${due ? ` "due" AS (INSERT INTO "QueueDue" ("queueId", "dueAt", "marks") VALUES (?, ?, 1) ${KEEP_EARLIER_MARK}),` : ""} "event" AS (${QUEUE_EVENT_INSERT}), "queue" AS (${queueUpdate})
      SELECT (SELECT "version" FROM "queue") AS "version", e."id", e."seq" FROM (SELECT 1) AS "one" LEFT JOIN "effects" e ON TRUE`,
      [...effectInsertParams(queue.id, rows, now), ...(due ? [queue.id, new Date(dueAt)] : []), ...queueEventParams(event), ...queueParams],
    );
    version = Number(written[0]?.version ?? Number.NaN);
    noteOutboxWrites(
      tx,
      queue.id,
      appendedRows(
        rows,
        written.filter((w) => w.id !== null),
      ),
      dropped,
    );
  } else {
    await appendEffects(tx, queue.id, effects, { now, newId, dueMarked: true });
    if (Number.isFinite(dueAt)) await markQueueDue(tx, queue.id, new Date(dueAt));
    const [written] = await sql.all<{ version: number | string }>(queueUpdate, queueParams);
    version = Number(written?.version ?? Number.NaN);
    await insertQueueEvent(tx, { id: newId(), queueId: queue.id, kind: context.event.kind, payload: context.event, at: now, actor: context.cause.actor });
  }
  // The row as written (the effect runner carries it instead of reading it back: queue-writes.ts).
  noteQueueDecided(tx, {
    ...queue,
    state: next.state,
    mode: next.mode,
    pendingMode: next.pendingMode,
    baseSha: next.baseSha || null,
    mergedPrs: [...next.merged],
    nextRunNumber: next.nextRunNumber,
    observed: next.observed ?? queue.observed,
    timerAt: timer ? new Date(timer.at) : null,
    frozen: context.frozen,
    // As the database answered it: the key the runner compares the next lock's with.
    version,
  });
}
