import { Line } from "./line.js";
import { LATEST_TIMER } from "./engine.js";
import { capacityOf, failureRateOf } from "./capacity.js";
import { isInFlight } from "./order.js";
import { skipsTheLine } from "../priority.js";
import type { EngineEntry, EngineQueue, EngineRun } from "./types.js";

/**
 * A PR's place: `index` (1-based) in the line (single mode) or in its lane (parallel mode: the
 * PRs it is tested on top of, and itself), and how many PRs are ahead of it there.
 */
export type Position = { index: number; ahead: number };

/** How the queue's recent main runs went: their mean duration and the share that failed. */
export type RunStats = { runs: number; meanSeconds: number; failureRate: number };

export type Estimate = { position: Position | null; estimatedSecondsToMerge: number | null };

/** The highest failure rate an estimate counts with (a queue failing every run would estimate forever). */
export const ESTIMATE_FAILURE_RATE_CAP = 0.9;

/**
 * Every PR in line's position and estimated time to merge (docs/engine.md, "Position and
 * estimated time to merge"). Null without history (no finished run), and while the queue is
 * paused (nothing is tested or merged until someone resumes it: no time can be told); while it
 * is frozen no earlier than the freeze's end (none when it has no end), hotfixes aside. PRs whose
 * merge is decided answer 0 (they wait only for the code host); PRs not in line answer no position.
 *
 * One line (single mode): the line is played forward as the engine would test it — the runs in
 * flight end D after they started; the PRs waiting start, in order and in groups (a batch of up
 * to the largest batch size while enough wait, a smaller one once the batching wait is over; one
 * PR without batching), as soon as one of the `concurrency` slots frees; a PR merges when its
 * run ends and every PR ahead has merged. A PR being bisected holds up nobody and takes no
 * main-line slot (as in the engine's Line): it is told its bisection run's end plus one run back
 * in the line. Its time is then stretched by 1 / (1 − f), f the
 * chance a main run fails on its own PRs (at most 0.9): each failure costs a run again. f is
 * 1 − (1 − p)^B from the per-PR rate p the engine observes (domain/engine/capacity.ts) and the
 * mean batch B; without observations, the share of recent main runs that failed — which counts
 * every run that failed on a broken PR under it, and made estimates 2–3× too long where many
 * runs are stacked (issue 24).
 *
 * Lanes (parallel mode): ⌈index / width⌉ × D − elapsed, stretched the same way, with index the
 * PR's place in its lane, width = concurrency × (batchingMinSize when batching, else 1) and
 * elapsed the time its run has been running (0 while it waits).
 */
export function estimatesOf(q: EngineQueue, stats: RunStats | null, now: number): Map<number, Estimate> {
  const out = new Map<number, Estimate>();
  const line = new Line(q);
  const f = stats ? Math.min(q.observed && q.observed.exposures > 0 ? ownFailureRate(q) : stats.failureRate, ESTIMATE_FAILURE_RATE_CAP) : 0;
  const running = runningRuns(q);
  const merges = stats && q.state !== "paused" ? (q.mode === "parallel" ? null : playForward(q, line, running, stats.meanSeconds * 1000, now)) : null;
  line.entries.forEach((entry, i) => {
    const ahead = q.mode === "parallel" ? line.depsOf(entry.prNumber).length : i;
    const position = { index: ahead + 1, ahead };
    let seconds: number | null = null;
    if (stats && q.state !== "paused") {
      if (merges) {
        // Never (a batch that waits past any date the engine sets a timer for): no time can be told.
        const at = merges.get(entry.prNumber)!;
        const stretched = Math.round(Math.max(0, (at - now) / 1000) / (1 - f));
        seconds = at <= LATEST_TIMER && now + stretched * 1000 <= LATEST_TIMER ? stretched : null;
      } else {
        const run = isInFlight(entry.state) ? running.get(entry.prNumber) : undefined;
        const elapsed = run ? Math.max(0, (now - run.startedAt) / 1000) : 0;
        const capacity = capacityOf(q);
        const width = Math.max(1, Math.min(capacity.concurrency, capacity.budget) * Math.max(1, capacity.adaptive ? capacity.largestBatch : capacity.smallestBatch));
        seconds = Math.round(Math.max(0, Math.ceil(position.index / width) * stats.meanSeconds - elapsed) / (1 - f));
      }
    }
    // A frozen queue merges nothing but hotfixes before the freeze ends (never, when it has no end).
    if (q.freeze?.frozen && !entry.emergency && seconds !== null) seconds = q.freeze.until === null ? null : Math.max(seconds, Math.ceil((q.freeze.until - now) / 1000));
    out.set(entry.prNumber, { position, estimatedSecondsToMerge: seconds });
  });
  for (const pr of q.merged) out.set(pr, { position: null, estimatedSecondsToMerge: 0 });
  return out;
}

/** The chance a main-line run fails on its own PRs: 1 − (1 − p)^B, p the observed per-PR rate, B the mean batch (half the largest with batching). */
function ownFailureRate(q: EngineQueue): number {
  const capacity = capacityOf(q);
  const batch = Math.max(1, (capacity.largestBatch + capacity.smallestBatch) / 2);
  return 1 - (1 - failureRateOf(q.observed!)) ** batch;
}

/** Each PR's latest running run, read once for the whole line (the runs in order: a later one wins). */
function runningRuns(q: EngineQueue): Map<number, EngineRun> {
  const out = new Map<number, EngineRun>();
  for (const run of q.runs) if (run.status === "running") for (const pr of run.tested) out.set(pr, run);
  return out;
}

/**
 * When each PR of a single line is expected to merge (ms), with runs lasting `duration` and
 * none failing (estimatesOf stretches the result for failures).
 */
function playForward(q: EngineQueue, line: Line, running: ReadonlyMap<number, EngineRun>, duration: number, now: number): Map<number, number> {
  const out = new Map<number, number>();
  const capacity = capacityOf(q);
  // The slots: each main run in flight holds one until it ends; the others are free now (as
  // many as the queue runs at once, within its CI budget).
  const slots: number[] = q.runs.filter((r) => r.status === "running" && r.kind === "main").map((r) => Math.max(now, r.startedAt + duration));
  while (slots.length < Math.max(1, Math.min(capacity.concurrency, capacity.budget))) slots.push(now);
  const takeSlot = (at: number) => {
    let best = 0;
    for (let i = 1; i < slots.length; i++) if (slots[i]! < slots[best]!) best = i;
    const start = Math.max(at, slots[best]!);
    slots[best] = start + duration;
    return start + duration;
  };
  const largest = capacity.largestBatch;
  const smallest = capacity.smallestBatch;
  let previous = now;
  let i = 0;
  const entries = line.entries;
  // Adaptive tuning spreads what waits over the slots free when it starts (as the engine does).
  const waitingFrom: number[] = new Array(entries.length + 1).fill(0);
  for (let k = entries.length - 1; k >= 0; k--) waitingFrom[k] = waitingFrom[k + 1]! + (isInFlight(entries[k]!.state) && running.has(entries[k]!.prNumber) ? 0 : 1);
  while (i < entries.length) {
    const entry = entries[i]!;
    const run = isInFlight(entry.state) ? running.get(entry.prNumber) : undefined;
    if (entry.bisectionGroupLimit !== null) {
      // Being bisected: nobody's dependency (the line goes on without it, as the engine's Line
      // says), tested in the bisection pool, not in the main line's slots; found innocent, it goes
      // back to the line for one more run.
      out.set(entry.prNumber, Math.max(previous, (run ? Math.max(now, run.startedAt + duration) : now + duration) + duration));
      i++;
      continue;
    }
    let done: number;
    let group = 1;
    if (run) {
      // Testing: its run ends D after it started.
      done = Math.max(now, run.startedAt + duration);
    } else if (entry.state === "tests_passed") {
      done = previous;
    } else {
      // Waiting (or its failure being judged, which a run decides again): the next group from here.
      // As the engine groups them: an urgent or noBatch PR alone, and without waiting for a batch.
      const alone = (e: EngineEntry) => e.noBatch || skipsTheLine(e.priority);
      const joins = (e: EngineEntry) => (!isInFlight(e.state) || !running.has(e.prNumber)) && !alone(e) && e.state !== "tests_passed" && e.bisectionGroupLimit === null;
      let limit = largest;
      if (capacity.adaptive) {
        let earliest = Infinity;
        for (const slot of slots) earliest = Math.min(earliest, slot);
        const at = Math.max(now, earliest);
        const free = slots.filter((slot) => slot <= at).length;
        limit = Math.max(1, Math.min(largest, Math.ceil(waitingFrom[i]! / Math.max(1, free))));
      }
      if (!alone(entry)) while (group < limit && i + group < entries.length && joins(entries[i + group]!)) group++;
      // A short batch starts once the batching wait is over (counted as the engine does, from when its PRs began to wait).
      let since = Infinity;
      for (let k = 0; k < group; k++) since = Math.min(since, entries[i + k]!.stateChangedAt);
      const ready = group < smallest && !alone(entry) ? since + capacity.batchWaitMinutes * 60_000 : now;
      done = ready > LATEST_TIMER ? Infinity : takeSlot(ready);
    }
    for (let k = 0; k < group; k++) {
      previous = Math.max(previous, done);
      out.set(entries[i + k]!.prNumber, previous);
    }
    i += group;
  }
  return out;
}

/**
 * The run statistics with runs that finished since they were read (a decision's own, not yet
 * stored), so that the estimates it shows count the run that just finished.
 */
export function withFinishedRuns(stats: RunStats | null, runs: readonly { startedAt: number; finishedAt: number | null; status: string }[]): RunStats | null {
  const finished = runs.filter((r) => r.finishedAt !== null && (r.status === "passed" || r.status === "failed"));
  if (finished.length === 0) return stats;
  const before = stats ?? { runs: 0, meanSeconds: 0, failureRate: 0 };
  const count = before.runs + finished.length;
  const seconds = before.meanSeconds * before.runs + finished.reduce((sum, r) => sum + Math.max(0, r.finishedAt! - r.startedAt) / 1000, 0);
  const failures = before.failureRate * before.runs + finished.filter((r) => r.status === "failed").length;
  return { runs: count, meanSeconds: seconds / count, failureRate: failures / count };
}
