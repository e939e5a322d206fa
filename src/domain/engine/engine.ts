import { runIdOf } from "./run-ids.js";
import { capacityOf, NOTHING_OBSERVED, observe } from "./capacity.js";
import { settledRuns } from "./archive.js";
import type { PrState } from "../states.js";
import { skipsTheLine } from "../priority.js";
import { Line, overlaps } from "./line.js";
import { isInFlight, urgencyOf } from "./order.js";
import type { Decision, Effect, EngineEntry, EngineEvent, EngineQueue, EngineRun, Transition, TransitionEvidence } from "./types.js";

/**
 * The merge queue engine: (queue, event, now) → (queue, effects, transitions).
 *
 * It applies the event's facts, then reconciles: from the stored facts alone (the line, the
 * runs and their results) it decides which runs are still valid, what merges, what fails and
 * what starts. Deciding from facts rather than from the event makes a replay after a crash
 * decide the same thing, and makes every effect safe to repeat.
 *
 * The guarantee: a merge only ever happens for a run that passed and whose stack is exactly
 * the queue's merged PRs plus the PRs being merged, on the current base. After the merge the
 * target branch holds the very tree that run tested. In parallel mode the same holds for the
 * PRs of the run's lane (the PRs whose impacted targets overlap): other lanes' PRs, declared
 * independent, may merge in between.
 */
export function decide(input: EngineQueue, event: EngineEvent, now: number): Decision {
  const ctx: Context = { q: copyOf(input), now, effects: [], transitions: [] };
  applyEvent(ctx, event);
  reconcile(ctx);
  const { archived, cleanups } = settledRuns(ctx.q, ctx.effects);
  return { queue: ctx.q, effects: ctx.effects, transitions: ctx.transitions, archived, cleanups };
}

/**
 * A copy of the queue the engine may change freely (the caller keeps the input to compare
 * with): as deep as structuredClone for these plain records, at a fraction of its cost on a
 * line of 1,000 PRs (issue 23).
 */
function copyOf(q: EngineQueue): EngineQueue {
  return {
    ...q,
    settings: { ...q.settings },
    merged: [...q.merged],
    entries: q.entries.map((e) => ({ ...e, targets: e.targets === null || e.targets === "ALL" ? e.targets : [...e.targets] })),
    runs: q.runs.map((r) => ({ ...r, stack: [...r.stack], tested: [...r.tested] })),
  };
}

type Context = {
  q: EngineQueue;
  now: number;
  effects: Effect[];
  transitions: Transition[];
  /** When the batch waiting to fill must start anyway (set by startRuns). */
  batchDeadline?: number;
};

const MINUTE = 60_000;
/**
 * The latest moment a timer is set for. Settings in minutes reach past it (4294967295 minutes
 * is some 8,000 years), and no database stores a later date; a deadline past it is never.
 */
export const LATEST_TIMER = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

function entryOf(q: EngineQueue, prNumber: number): EngineEntry | undefined {
  return q.entries.find((e) => e.prNumber === prNumber);
}

function move(ctx: Context, entry: EngineEntry, to: PrState, reason: string, message?: string, evidence?: TransitionEvidence): void {
  if (entry.state === to && entry.reason === reason) return;
  if (entry.state !== to) {
    ctx.transitions.push({ prNumber: entry.prNumber, from: entry.state, to, reason, ...(message !== undefined ? { message } : {}), ...(evidence !== undefined ? { evidence } : {}) });
  }
  if (!isInFlight(to)) entry.position = null;
  entry.state = to;
  entry.reason = reason;
  entry.stateChangedAt = ctx.now;
}

function cancelRun(ctx: Context, run: EngineRun): void {
  if (run.status === "running") ctx.effects.push({ kind: "cancel_run", runId: run.id });
  run.status = "cancelled";
  run.finishedAt ??= ctx.now;
}

/** Whether the queue decided to merge the PR and the code host has not confirmed it yet. */
function isMerging(q: EngineQueue, prNumber: number): boolean {
  return q.merged.includes(prNumber);
}

/** Merged, or decided and awaiting the code host: either way under every PR still in line. */
function isMergedOrMerging(q: EngineQueue, entry: EngineEntry): boolean {
  return entry.state === "merged" || isMerging(q, entry.prNumber);
}

/** The reason a PR awaiting its merge has, and the one it is `merged` with once it lands. */
const MERGING_REASON = { run: "merging", laterRun: "merging_by_later_run", direct: "direct_merge" } as const;
const MERGED_REASON: Record<string, string> = { merging: "merged", merging_by_later_run: "merged_by_later_run", direct_merge: "direct_merge" };

function sameList(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

// ---------------------------------------------------------------- events

function applyEvent(ctx: Context, event: EngineEvent): void {
  const { q } = ctx;
  switch (event.kind) {
    case "submitted":
    case "timer_fired":
    case "config_changed":
    case "targets_changed":
      return;
    case "readiness_changed": {
      const entry = entryOf(q, event.prNumber);
      if (entry) entry.ready = event.ready;
      return;
    }
    case "cancelled": {
      // A PR being merged is past cancelling: the code host's answer decides (a moved head
      // refuses the merge, a closed PR or a new base is seen before it: merge_pr_left cancels it then).
      const entry = entryOf(q, event.prNumber);
      if (entry && entry.state !== "merged" && entry.state !== "failed" && !isMerging(q, entry.prNumber)) move(ctx, entry, "cancelled", event.reason);
      return;
    }
    case "restart_requested": {
      const entry = entryOf(q, event.prNumber);
      if (!entry || !isInFlight(entry.state) || isMerging(q, entry.prNumber)) return;
      // Re-run the PR and everything stacked on it.
      for (const run of q.runs) {
        if (run.status !== "cancelled" && run.stack.includes(entry.prNumber)) cancelRun(ctx, run);
      }
      entry.bisectionGroupLimit = null;
      move(ctx, entry, "pending", "restart_requested");
      return;
    }
    case "run_finished": {
      const run = q.runs.find((r) => r.id === event.runId);
      // A late or repeated result of a run already decided is ignored.
      if (!run || run.status !== "running") return;
      run.status = event.outcome;
      run.failure = event.outcome === "failed" ? (event.failure ?? "tests_failed") : null;
      run.finishedAt = ctx.now;
      // What adaptive tuning learns from (kept whatever the tuning, so switching to it starts
      // informed): a main run that passed, here; one that failed once the failure is judged its
      // own (evictFailed) — a run failing on a broken PR under it says nothing of its own PRs.
      if (run.status === "passed") q.observed = observe(q.observed ?? NOTHING_OBSERVED, run);
      return;
    }
    case "run_rerun": {
      const run = q.runs.find((r) => r.id === event.runId);
      if (!run || run.status !== "running") return;
      // The same tree, in a new run: its PRs stay in flight where they are, so the runs stacked
      // on them stay exact and go on.
      cancelRun(ctx, run);
      const again: EngineRun = { ...run, id: runIdOf(q.nextRunNumber++), stack: [...run.stack], tested: [...run.tested], status: "running", startedAt: ctx.now, finishedAt: null, failure: null };
      delete again.failureConfirmed;
      q.runs.push(again);
      ctx.effects.push({ kind: "start_run", runId: again.id, baseSha: again.baseSha, stack: again.stack, tested: again.tested });
      return;
    }
    case "jobs_rerun_requested": {
      const run = q.runs.find((r) => r.id === event.runId);
      // A run decided meanwhile has nothing to re-run.
      if (!run || run.status !== "running") return;
      ctx.effects.push({ kind: "rerun_failed_jobs", runId: run.id, ...(event.checkRunIds.length > 0 ? { checkRunIds: event.checkRunIds } : {}) });
      return;
    }
    case "merge_failed": {
      // The PRs did not land, nor did any merge decided after them (they were to go on top):
      // all go back in line, and the target is where the code host says.
      voidUnlandedMerges(ctx, event.headSha);
      return;
    }
    case "merge_held": {
      // Only the next merges can be held: anything else is a late answer to a void merge.
      if (event.prNumbers.length === 0 || !sameList(q.merged.slice(0, event.prNumbers.length), event.prNumbers)) return;
      const held = q.merged.flatMap((prNumber) => entryOf(q, prNumber) ?? []);
      q.merged = [];
      for (const entry of held) if (entry.state === "tests_passed") move(ctx, entry, "tests_passed", "tests_passed");
      return;
    }
    case "merge_refused": {
      // Only the next merges can be refused: anything else is a late answer to a void merge.
      const n = event.prNumbers.length;
      if (n === 0 || !sameList(q.merged.slice(0, n), event.prNumbers)) return;
      for (const prNumber of event.prNumbers) {
        const entry = entryOf(q, prNumber);
        if (!entry) continue;
        entry.bisectionGroupLimit = null;
        move(ctx, entry, "failed", "merge_refused", event.message);
      }
      voidUnlandedMerges(ctx, event.headSha ?? q.baseSha, "pr_ahead_not_merged");
      return;
    }
    case "merge_pr_left": {
      // Only the next merge can be answered: anything else is a late answer to a void merge.
      if (q.merged[0] !== event.prNumber) return;
      const entry = entryOf(q, event.prNumber);
      if (entry) move(ctx, entry, "cancelled", event.reason, event.message);
      voidUnlandedMerges(ctx, event.headSha, "pr_ahead_not_merged");
      return;
    }
    case "base_moved": {
      if (event.sha === q.baseSha) return;
      // Someone pushed to the target outside the queue: every run was built on a stale base.
      voidUnlandedMerges(ctx, event.sha);
      return;
    }
    case "merge_landed": {
      // Fold the landed PRs into the base, so stacks stay short however many PRs merge. Only
      // runs exact now are carried over (their tree is the same, described from the new base);
      // the others keep the old base, so they can never count as exact again.
      const n = event.prNumbers.length;
      if (n === 0 || !sameList(q.merged.slice(0, n), event.prNumbers)) return;
      const line = new Line(q);
      const landed = new Set(event.prNumbers);
      for (const run of q.runs) {
        // On a target that moved under the merge no run is exact any more.
        if (event.targetMoved || run.status === "cancelled" || !isExact(q, line, run)) continue;
        run.baseSha = event.headSha;
        run.stack = run.stack.filter((pr) => !landed.has(pr));
      }
      q.baseSha = event.headSha;
      q.merged = q.merged.slice(n);
      // Only now, confirmed by the code host, are the PRs merged.
      for (const prNumber of event.prNumbers) {
        const entry = entryOf(q, prNumber);
        if (entry && entry.state !== "merged") move(ctx, entry, "merged", event.targetMoved ? "merged_after_target_moved" : (MERGED_REASON[entry.reason] ?? "merged"));
      }
      if (event.targetMoved) voidUnlandedMerges(ctx, event.headSha, "target_moved_during_merge");
      return;
    }
  }
}

/** The target is at `headSha` without the merges not yet confirmed: their PRs go back in line. */
function voidUnlandedMerges(ctx: Context, headSha: string, reason = "merge_failed_target_moved"): void {
  const { q } = ctx;
  const voided = q.merged.flatMap((prNumber) => entryOf(q, prNumber) ?? []);
  q.merged = [];
  for (const entry of voided) {
    if (entry.state === "tests_passed") move(ctx, entry, "pending", reason);
  }
  q.baseSha = headSha;
}

// ---------------------------------------------------------------- reconcile

function reconcile(ctx: Context): void {
  // Each pass may enable another (a merge lets a failed PR be evicted, which frees capacity…);
  // repeat until nothing changes. The bound turns a bug that would loop forever into an error.
  // New runs start only once everything else has settled, so none is built on a line that is
  // about to change.
  const changes = () => ctx.transitions.length + ctx.effects.length;
  for (let round = 0; ; round++) {
    if (round === 200) throw new Error("the queue engine did not settle (a bug): it kept changing its own decisions");
    const before = changes();
    applyReadiness(ctx);
    expireRuns(ctx);
    requeueStale(ctx);
    applyResults(ctx);
    mergePassed(ctx);
    evictFailed(ctx);
    finishModeSwitch(ctx);
    if (changes() !== before) continue;
    startRuns(ctx);
    if (changes() === before) break;
  }
  scheduleTimer(ctx);
}

function applyReadiness(ctx: Context): void {
  const { q } = ctx;
  for (const entry of q.entries) {
    const under = entry.stackBelow !== undefined ? entryOf(q, entry.stackBelow) : undefined;
    // A PR under it merged outside the queue is merged all the same: nothing to wait for.
    const left = under !== undefined && (under.state === "failed" || (under.state === "cancelled" && under.reason !== "merged_outside_queue"));
    if (under && left && !TERMINAL.has(entry.state) && !isMerging(q, entry.prNumber)) {
      // Stacked on a PR that left unmerged: it cannot merge without it (docs/stacks.md).
      entry.bisectionGroupLimit = null;
      move(ctx, entry, "cancelled", "stack_below_left", undefined, { blamedPr: under.prNumber });
      continue;
    }
    // Stacked on a PR that is not ready: never tested without it, so not ready either.
    const underWaits = under !== undefined && under.state === "not_ready";
    // Stacked on a PR being bisected: it joins the bisection pool, tested on the PRs under it
    // there, rather than hold the main line up until they are back in it.
    if (entry.state === "pending" && entry.bisectionGroupLimit === null && under !== undefined) {
      const bisected = bisectedUnder(q, entry);
      if (bisected !== null) entry.bisectionGroupLimit = bisected;
    }
    if (entry.state === "not_ready" && entry.ready && !underWaits) move(ctx, entry, "pending", "readiness_met");
    else if (entry.state === "pending" && !entry.ready) move(ctx, entry, "not_ready", "readiness_lost");
    else if (entry.state === "pending" && underWaits) move(ctx, entry, "not_ready", "stack_below_not_ready");
  }
}

const TERMINAL: ReadonlySet<PrState> = new Set(["merged", "failed", "cancelled"]);

/** The group size of the nearest PR under a stacked PR that is being bisected in line, or null. */
function bisectedUnder(q: EngineQueue, entry: EngineEntry): number | null {
  const seen = new Set<number>([entry.prNumber]);
  for (let below = entry.stackBelow; below !== undefined && !seen.has(below); ) {
    seen.add(below);
    const under = entryOf(q, below);
    if (!under || TERMINAL.has(under.state) || isMerging(q, under.prNumber)) return null;
    if (under.bisectionGroupLimit !== null) return under.bisectionGroupLimit;
    below = under.stackBelow;
  }
  return null;
}

/** The PRs the PRs `prs` are stacked on, all the way down (docs/stacks.md). */
function stackedUnder(q: EngineQueue, prs: readonly number[]): Set<number> {
  const under = new Set<number>();
  for (const pr of prs) {
    for (let below = entryOf(q, pr)?.stackBelow; below !== undefined && !under.has(below); below = entryOf(q, below)?.stackBelow) under.add(below);
  }
  return under;
}

function expireRuns(ctx: Context): void {
  const limit = ctx.q.settings.testingTimeoutMinutes * MINUTE;
  for (const run of ctx.q.runs) {
    if (run.status === "running" && ctx.now - run.startedAt >= limit) {
      ctx.effects.push({ kind: "cancel_run", runId: run.id });
      run.status = "failed";
      run.failure = "timeout";
      run.finishedAt = ctx.now;
    }
  }
}

/**
 * Whether a run tested exactly the tree its PRs would land as now: built on the current base,
 * and holding exactly the PRs the line now puts under them. In single mode that is the merged
 * PRs plus the PRs ahead of it. In parallel mode it is their lane; PRs merged from other lanes
 * may be missing from the run, but only if independent of every PR of the lane. Only such a
 * run can merge.
 */
function isExact(q: EngineQueue, line: Line, run: EngineRun): boolean {
  if (run.status === "cancelled" || run.baseSha !== q.baseSha) return false;
  const lane = line.lane(run.tested);
  if (lane === null) return false;
  if (q.mode !== "parallel") return sameList(run.stack, [...q.merged, ...lane]);
  if (
    !sameList(
      run.stack.filter((pr) => line.has(pr)),
      lane,
    )
  )
    return false;
  const merged = new Set(q.merged);
  if (!run.stack.every((pr) => line.has(pr) || merged.has(pr))) return false;
  const inStack = new Set(run.stack);
  return q.merged.every((pr) => {
    if (inStack.has(pr)) return true;
    const other = entryOf(q, pr);
    return other !== undefined && lane.every((member) => !overlaps(other.targets, entryOf(q, member)!.targets));
  });
}

/**
 * Whether a run still decides for its PRs. A main run must be exact. A bisection run only
 * tells which PRs of a failed batch are broken: it stays meaningful while its PRs are still
 * being bisected and nothing under them has failed or left the queue, whatever merged since.
 */
function isCurrent(q: EngineQueue, line: Line, run: EngineRun): boolean {
  if (run.kind === "main") return isExact(q, line, run);
  if (run.status === "cancelled") return false;
  const tested = new Set(run.tested);
  // The PRs its PRs are stacked on are under them in every run, being bisected or not.
  const under = stackedUnder(q, run.tested);
  return run.stack.every((pr) => {
    const entry = entryOf(q, pr);
    if (!entry) return false;
    if (tested.has(pr)) return line.has(pr) && entry.bisectionGroupLimit !== null;
    return isMergedOrMerging(q, entry) || (line.has(pr) && (entry.bisectionGroupLimit === null || under.has(pr)));
  });
}

/** The run that currently decides for a PR: the latest valid run that tests it. */
function currentRunOf(q: EngineQueue, line: Line, prNumber: number): EngineRun | undefined {
  for (let i = q.runs.length - 1; i >= 0; i--) {
    const run = q.runs[i]!;
    if (run.tested.includes(prNumber) && isCurrent(q, line, run)) return run;
  }
  return undefined;
}

/**
 * Sends PRs whose run no longer matches the line back to pending, and cancels such runs.
 * One PR going back to pending reorders the line (in-flight PRs go first), which can make
 * the runs behind it stale in turn: repeat until no PR moves.
 */
function requeueStale(ctx: Context): void {
  const { q } = ctx;
  for (;;) {
    const line = new Line(q);
    const stale = line.entries.find((entry) => isInFlight(entry.state) && !currentRunOf(q, line, entry.prNumber));
    if (!stale) {
      for (const run of q.runs) if (run.status === "running" && !isCurrent(q, line, run)) cancelRun(ctx, run);
      return;
    }
    move(ctx, stale, "pending", "restarted_prs_ahead_changed", undefined, staleEvidence(q, line, stale.prNumber));
  }
}

/**
 * Why a PR's run went stale: its latest run, and the first PR under it that is no longer in
 * line as it was (failed, cancelled, waiting on a failure, or gone back to pending).
 */
function staleEvidence(q: EngineQueue, line: Line, prNumber: number): TransitionEvidence {
  let run: EngineRun | undefined;
  for (let i = q.runs.length - 1; i >= 0 && !run; i--) if (q.runs[i]!.tested.includes(prNumber)) run = q.runs[i];
  if (!run) return {};
  const blamed = run.stack.find((pr) => {
    if (run.tested.includes(pr)) return false;
    const other = entryOf(q, pr);
    return other === undefined || (!isMergedOrMerging(q, other) && (!line.has(pr) || !isInFlight(other.state) || other.state === "pending_failure"));
  });
  return { runId: run.id, ...(blamed !== undefined ? { blamedPr: blamed } : {}) };
}

/** Moves in-flight PRs to the state their current run's result calls for. */
function applyResults(ctx: Context): void {
  const { q } = ctx;
  const line = new Line(q);
  for (const entry of line.entries) {
    const run = isInFlight(entry.state) ? currentRunOf(q, line, entry.prNumber) : undefined;
    if (!run) continue;
    if (run.status === "passed" && run.kind === "bisection" && (!isExact(q, line, run) || mainLineInFlight(line))) {
      // Proven innocent, but not on the line as it is (it moved, or PRs of the main line are in
      // flight, which merging it now would send back): back to the main line, where they go
      // first among the PRs waiting (they are older). The whole group at once.
      for (const pr of run.tested) {
        const member = entryOf(q, pr)!;
        member.bisectionGroupLimit = null;
        move(ctx, member, "pending", "bisection_passed", undefined, { runId: run.id });
      }
    } else if (run.status === "passed") move(ctx, entry, "tests_passed", "tests_passed", undefined, { runId: run.id });
    else if (run.status === "failed" && run.tested.length > 1 && run.kind === "bisection") bisect(ctx, run);
    else if (run.status === "failed") move(ctx, entry, "pending_failure", run.failure ?? "tests_failed", undefined, { runId: run.id });
  }
}

/** Whether PRs of the main line (not being bisected) are in flight. */
function mainLineInFlight(line: Line): boolean {
  return line.entries.some((e) => isInFlight(e.state) && e.bisectionGroupLimit === null);
}

/**
 * A failed batch: its PRs leave the main line (the PRs behind go on without them) and are
 * tested again in smaller groups in the bisection pool: as many groups as the pool runs at
 * once (at least halves), so the culprit is found in as few rounds as the pool allows.
 */
function bisect(ctx: Context, run: EngineRun): void {
  const { q } = ctx;
  const limit = Math.ceil(run.tested.length / Math.max(2, capacityOf(q).bisectionConcurrency));
  if (run.kind === "main") {
    // Results of an earlier bisection of these PRs say nothing about this one.
    for (const old of q.runs) if (old.kind === "bisection" && old.status !== "running" && old.tested.some((pr) => run.tested.includes(pr))) old.status = "cancelled";
  }
  for (const pr of run.tested) {
    const member = entryOf(q, pr)!;
    member.bisectionGroupLimit = limit;
    move(ctx, member, "pending", "bisecting_failed_batch", undefined, { runId: run.id, bisection: { batch: run.tested, groupSize: limit } });
  }
}

/** While the queue is frozen only hotfixes merge: a lane holding any other PR waits for the thaw. */
function mayMergeNow(q: EngineQueue, prs: readonly number[]): boolean {
  return !q.freeze?.frozen || prs.every((pr) => countsAsEmergency(q, pr));
}

/** While a freeze holds testing too, only hotfixes start. */
function mayStartNow(q: EngineQueue, entry: EngineEntry): boolean {
  return !q.freeze?.frozen || q.freeze.testing || countsAsEmergency(q, entry.prNumber);
}

/**
 * A hotfix, or a PR under one in its stack (docs/stacks.md): the hotfix cannot be tested or
 * merged without it, so a freeze lets it through with the hotfix.
 */
function countsAsEmergency(q: EngineQueue, pr: number): boolean {
  if (entryOf(q, pr)?.emergency === true) return true;
  return q.entries.some((e) => e.emergency === true && e.stackBelow !== undefined && !TERMINAL.has(e.state) && stackedUnder(q, [e.prNumber]).has(pr));
}

function mergePassed(ctx: Context): void {
  const { q } = ctx;
  if (q.state === "paused") return;
  for (;;) {
    const line = new Line(q);
    // Without optimistic merging a run merges only the PRs it decides for, once every PR
    // under them has merged. With it, a passing run also merges the PRs under it: its tree
    // holds them, so it proves them green together. The run merging the most goes first.
    let best: EngineRun | undefined;
    let bestPrs: number[] = [];
    for (const run of q.runs) {
      if (run.status !== "passed" || !isExact(q, line, run)) continue;
      const lane = line.lane(run.tested)!;
      if (!q.settings.canOptimisticallyMerge && lane.length !== run.tested.length) continue;
      if (!lane.every((pr) => isInFlight(entryOf(q, pr)!.state))) continue;
      if (!mayMergeNow(q, lane)) continue;
      if (lane.length > bestPrs.length) [best, bestPrs] = [run, lane];
    }
    if (!best) return;
    ctx.effects.push({ kind: "merge", prNumbers: bestPrs, runId: best.id, exactTree: q.mode !== "parallel" });
    for (const pr of bestPrs) {
      const entry = entryOf(q, pr)!;
      entry.bisectionGroupLimit = null;
      // Out of the line, `tests_passed` (reason merging) until the code host confirms (merge_landed).
      move(ctx, entry, "tests_passed", best.tested.includes(pr) ? MERGING_REASON.run : MERGING_REASON.laterRun, undefined, { runId: best.id });
    }
    q.merged.push(...bestPrs);
  }
}

/**
 * A PR whose own run failed fails once every PR ahead of it has merged (the failure is then
 * its own) and no successor within pendingFailureDepth is still testing a tree that holds it
 * (a passing successor, with optimistic merging, would clear it). A batch in that position is
 * bisected instead. A PR whose bisection run failed alone fails once what it was tested on
 * has merged.
 */
function evictFailed(ctx: Context): void {
  const { q } = ctx;
  const line = new Line(q);
  for (const entry of line.entries) {
    if (entry.state !== "pending_failure") continue;
    const run = currentRunOf(q, line, entry.prNumber);
    // Without a current run the PR is about to be retested (requeueStale, next round).
    if (!run || run.status !== "failed") continue;
    if (run.kind === "bisection") {
      // The culprit of a failed batch, once everything it was tested on has merged.
      if (
        !run.stack.every((pr) => {
          const other = entryOf(q, pr);
          return pr === entry.prNumber || (other !== undefined && isMergedOrMerging(q, other));
        })
      )
        continue;
    } else {
      if (line.depsOf(entry.prNumber).length > 0) continue;
      const successors = line.entries.filter((e) => line.dependsOn(e.prNumber, entry.prNumber)).slice(0, q.settings.pendingFailureDepth);
      const waitingOnSuccessor = successors.some((e) => {
        const next = currentRunOf(q, line, e.prNumber);
        return next?.status === "running" && next.stack.includes(entry.prNumber);
      });
      if (waitingOnSuccessor) continue;
    }
    // The failure is the run's own (everything under it merged): what adaptive tuning observes.
    // Judged once: a failed batch judged again later (its PRs were tested since, in bisection or
    // a retry, and the line made it exact again) is not counted twice.
    if (run.kind === "main" && !testedSince(q, run)) q.observed = observe(q.observed ?? NOTHING_OBSERVED, run);
    // A batch that failed on its own is bisected; a single PR fails.
    if (run.kind === "main" && run.tested.length > 1) {
      bisect(ctx, run);
      continue;
    }
    if (shouldRetry(q, line, entry.prNumber, run)) {
      // A PR of a bisection stays in the bisection pool for its second run.
      move(ctx, entry, "pending", "retrying_failed_run", undefined, { runId: run.id });
      continue;
    }
    // The culprit of a bisected batch is named as such, with the batch it came from.
    const batch = run.kind === "bisection" ? q.runs.findLast((r) => r.kind === "main" && r.status === "failed" && r.tested.length > 1 && r.tested.includes(entry.prNumber)) : undefined;
    const bisection = run.kind === "bisection" ? { bisection: { batch: batch?.tested ?? run.tested, culprit: entry.prNumber }, blamedPr: entry.prNumber } : {};
    entry.bisectionGroupLimit = null;
    move(ctx, entry, "failed", run.failure ?? "tests_failed", undefined, { runId: run.id, ...bisection });
  }
}

/** Whether a run started after this one tested any of its PRs. */
function testedSince(q: EngineQueue, run: EngineRun): boolean {
  const later = q.runs.slice(q.runs.indexOf(run) + 1);
  return later.some((r) => r.tested.some((pr) => run.tested.includes(pr)));
}

/**
 * Anti-flake for a PR with nothing behind it to clear it: a PR whose own test run failed, with
 * no PR in flight on top of it (no successor whose passing run would prove it green), gets one
 * more run before it fails — in the main line, or, for the culprit a bisection found, in the
 * bisection pool. A real failure fails twice; a flaky one rarely does. Timeouts and conflicts
 * are not retried.
 */
function shouldRetry(q: EngineQueue, line: Line, prNumber: number, run: EngineRun): boolean {
  if (run.failure !== "tests_failed" || run.failureConfirmed || run.tested.length !== 1) return false;
  if (line.entries.some((e) => isInFlight(e.state) && line.dependsOn(e.prNumber, prNumber))) return false;
  const failures = q.runs.filter((r) => r.kind === run.kind && r.status === "failed" && r.failure === "tests_failed" && r.tested.length === 1 && r.tested[0] === prNumber);
  return failures.length < 2;
}

function finishModeSwitch(ctx: Context): void {
  const { q } = ctx;
  if (q.state !== "switching_modes" || q.entries.some((e) => isInFlight(e.state))) return;
  q.mode = q.pendingMode ?? q.mode;
  q.pendingMode = null;
  q.state = "running";
}

function startRuns(ctx: Context): void {
  const { q } = ctx;
  ctx.batchDeadline = undefined;
  if (q.state === "paused" || q.state === "switching_modes") return;
  const line = new Line(q);
  const capacity = capacityOf(q);
  const running = (kind: EngineRun["kind"]) => q.runs.filter((r) => r.status === "running" && r.kind === kind).length;
  let mainSlots = capacity.concurrency - running("main");
  let bisectionSlots = capacity.bisectionConcurrency - running("bisection");
  // The CI budget caps both kinds together (the passes below give the PRs being bisected their share first).
  let budgetLeft = capacity.budget - running("main") - running("bisection");
  // Adaptive tuning: how many main-line PRs wait (batches spread them over the free slots).
  let waitingMain = 0;
  if (capacity.adaptive) for (const e of line.entries) if (e.bisectionGroupLimit === null && e.state === "pending") waitingMain++;

  // Every PR is considered in line order; one that cannot start yet holds back only the PRs
  // that depend on it (they would need it in flight under them). Under a CI budget the PRs being
  // bisected take it first (a pass of their own): PRs of higher priority, ahead of them in line,
  // must not starve a bisection of the budget.
  const passes = Number.isFinite(capacity.budget) ? (["bisection", "main"] as const) : ([null] as const);
  for (const pass of passes)
    for (let i = 0; i < line.entries.length; ) {
      const entry = line.entries[i]!;
      // A PR starts on top of the PRs it depends on, once they are in flight.
      const kind = entry.bisectionGroupLimit !== null ? "bisection" : "main";
      if (entry.state !== "pending" || !line.depsInFlight(entry.prNumber) || (pass !== null && pass !== kind) || !mayStartNow(q, entry)) {
        i++;
        continue;
      }
      // A direct merge takes the PR out of the line: decide the rest on the line without it.
      if (mergeDirectly(ctx, line, entry)) return;
      const spread = capacity.adaptive && kind === "main" ? Math.ceil(waitingMain / Math.max(1, Math.min(mainSlots, budgetLeft))) : undefined;
      const group = groupFrom(q, line, i, capacity.largestBatch, spread);
      if (kind === "main" && capacity.smallestBatch > 1 && !entry.noBatch && !skipsTheLine(entry.priority) && group.length < capacity.smallestBatch) {
        const deadline = Math.min(...group.map((e) => e.stateChangedAt)) + capacity.batchWaitMinutes * MINUTE;
        // Wait to fill the batch; the main PRs behind would only join it.
        if (ctx.now < deadline) {
          ctx.batchDeadline = Math.min(ctx.batchDeadline ?? Infinity, deadline);
          i += group.length;
          continue;
        }
      }
      if ((kind === "main" ? mainSlots <= 0 : bisectionSlots <= 0) || budgetLeft <= 0) {
        i += group.length;
        continue;
      }
      const tested = group.map((e) => e.prNumber);
      const stack = [...q.merged, ...line.lane(tested)!];
      const runNumber = q.nextRunNumber++;
      const run: EngineRun = { id: runIdOf(runNumber), kind, baseSha: q.baseSha, stack, tested, status: "running", startedAt: ctx.now, finishedAt: null, failure: null };
      // Only during a bisection: a retry of a main run is meant to run again (it may have flaked).
      const known = kind === "bisection" && q.settings.optimizationMode === "bisection_skip_redundant_tests" ? knownFailure(q, stack) : undefined;
      if (known) {
        // This exact tree already failed during this bisection: reuse the result, run nothing.
        Object.assign(run, { status: "failed", failure: known.failure, finishedAt: ctx.now });
      } else {
        ctx.effects.push({ kind: "start_run", runId: run.id, baseSha: run.baseSha, stack, tested });
        if (kind === "main") mainSlots--;
        else bisectionSlots--;
        budgetLeft--;
      }
      if (kind === "main") waitingMain -= group.length;
      q.runs.push(run);
      group.forEach((member, index) => {
        move(ctx, member, "testing", kind === "main" ? "testing" : "testing_bisection", undefined, { runId: run.id });
        member.position = runNumber * 1_000_000 + index;
      });
      i += group.length;
    }
}

/**
 * directMergeMode "always": a PR whose head is up to date with the target and green on its
 * own checks, with nothing ahead of it in its line or lane and every queue merge landed,
 * merges as it is, without a queue run: the tree it was checked on is the tree that lands.
 */
function mergeDirectly(ctx: Context, line: Line, entry: EngineEntry): boolean {
  const { q } = ctx;
  // A stacked PR's head is checked against the PR it is stacked on, not the target.
  if (q.settings.directMergeMode !== "always" || entry.bisectionGroupLimit !== null || entry.stackBelow !== undefined) return false;
  if (entry.directMergeBase === null || entry.directMergeBase !== q.baseSha || q.merged.length > 0) return false;
  if (line.depsOf(entry.prNumber).length > 0) return false;
  if (q.mode !== "parallel" && q.runs.some((r) => r.status === "running")) return false;
  if (!mayMergeNow(q, [entry.prNumber])) return false;
  ctx.effects.push({ kind: "merge", prNumbers: [entry.prNumber], runId: null, exactTree: false });
  move(ctx, entry, "tests_passed", MERGING_REASON.direct);
  q.merged.push(entry.prNumber);
  return true;
}

/**
 * The PRs that start testing together from line[i]: one PR, a batch (of at most `largestBatch`,
 * and `spread` when adaptive tuning spreads the waiting PRs over its free slots), or a bisection group. An
 * urgent PR is tested alone and at once (no batch to fill): a batch would make its landing wait
 * on the others' luck, and a failed batch on its bisection.
 */
function groupFrom(q: EngineQueue, line: Line, i: number, largestBatch: number, spread?: number): EngineEntry[] {
  const first = line.entries[i]!;
  const alone = first.noBatch || skipsTheLine(first.priority);
  const limit = first.bisectionGroupLimit ?? (alone ? 1 : Math.max(1, Math.min(largestBatch, spread ?? largestBatch)));
  const group = [first];
  const members = new Set([first.prNumber]);
  for (let j = i + 1; j < line.entries.length && group.length < limit; j++) {
    const next = line.entries[j]!;
    // An emergency is tested only with emergencies (a group merges whole, and only emergencies
    // merge through a freeze), and nothing joins a group that a freeze holds back from testing.
    const fits =
      next.state === "pending" &&
      !next.noBatch &&
      !skipsTheLine(next.priority) &&
      (next.bisectionGroupLimit === null) === (first.bisectionGroupLimit === null) &&
      (next.emergency === true) === (first.emergency === true) &&
      mayStartNow(q, next) &&
      line.depsInFlight(next.prNumber, members);
    if (!fits) break;
    group.push(next);
    members.add(next.prNumber);
  }
  // A stack waiting in line is tested as one unit: the PRs stacked on the group's PRs join it,
  // whatever the batch's size (in a bisection the groups may split a stack: each group's run
  // then holds the PRs under it, so a stack is bisected by its prefixes).
  if (first.bisectionGroupLimit === null) {
    for (let j = i + group.length; j < line.entries.length; j++) {
      const next = line.entries[j]!;
      const joins =
        next.state === "pending" &&
        next.stackBelow !== undefined &&
        members.has(next.stackBelow) &&
        next.bisectionGroupLimit === null &&
        urgencyOf(next) === urgencyOf(first) &&
        mayStartNow(q, next) &&
        line.depsInFlight(next.prNumber, members);
      if (!joins) break;
      group.push(next);
      members.add(next.prNumber);
    }
  }
  return group;
}

/**
 * A failed run of this exact tree during the bisection, whose result a group may reuse. A run of
 * one PR is never reused: a PR that failed alone is tested once more before it fails (it may
 * have flaked: shouldRetry).
 */
function knownFailure(q: EngineQueue, stack: number[]): EngineRun | undefined {
  return q.runs.find((r) => r.status === "failed" && r.failure === "tests_failed" && r.tested.length > 1 && r.baseSha === q.baseSha && sameList(r.stack, stack));
}

function scheduleTimer(ctx: Context): void {
  const { q } = ctx;
  const deadlines: number[] = [];
  for (const run of q.runs) {
    if (run.status === "running") deadlines.push(run.startedAt + q.settings.testingTimeoutMinutes * MINUTE);
  }
  if (ctx.batchDeadline !== undefined) deadlines.push(ctx.batchDeadline);
  // A scheduled freeze starts, or the one holding ends: the queue decides again then.
  if (q.freeze?.nextChangeAt != null) deadlines.push(q.freeze.nextChangeAt);
  const next = Math.min(...deadlines.filter((d) => d > ctx.now && d <= LATEST_TIMER));
  if (Number.isFinite(next)) ctx.effects.push({ kind: "schedule_timer", at: next });
}
