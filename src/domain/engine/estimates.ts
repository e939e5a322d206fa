import { Line } from "./line.js";
import { isInFlight } from "./order.js";
import type { EngineQueue } from "./types.js";

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
 * estimated time to merge"):
 *
 *   seconds = max(0, ⌈index / width⌉ × D − elapsed) / (1 − f)
 *
 * with D the mean duration of the queue's recent finished main runs, f their failure rate
 * (at most 0.9), width = concurrency × (batchingMinSize when batching, else 1) — how many
 * PRs the queue tests at once — and elapsed the time the PR's current run has been running
 * (0 while pending). Null without history (no finished run), and while the queue is paused
 * (nothing is tested or merged until someone resumes it: no time can be told). PRs whose merge is
 * decided answer 0 (they wait only for the code host); PRs not in line answer no position.
 */
export function estimatesOf(q: EngineQueue, stats: RunStats | null, now: number): Map<number, Estimate> {
  const out = new Map<number, Estimate>();
  const line = new Line(q);
  const width = Math.max(1, q.settings.concurrency * (q.settings.batch ? Math.max(1, q.settings.batchingMinSize) : 1));
  const f = stats ? Math.min(stats.failureRate, ESTIMATE_FAILURE_RATE_CAP) : 0;
  line.entries.forEach((entry, i) => {
    const ahead = q.mode === "parallel" ? line.depsOf(entry.prNumber).length : i;
    const position = { index: ahead + 1, ahead };
    let seconds: number | null = null;
    if (stats && q.state !== "paused") {
      let elapsed = 0;
      if (isInFlight(entry.state)) {
        const run = q.runs.findLast((r) => r.status === "running" && r.tested.includes(entry.prNumber));
        if (run) elapsed = Math.max(0, (now - run.startedAt) / 1000);
      }
      seconds = Math.round(Math.max(0, Math.ceil(position.index / width) * stats.meanSeconds - elapsed) / (1 - f));
    }
    out.set(entry.prNumber, { position, estimatedSecondsToMerge: seconds });
  });
  for (const pr of q.merged) out.set(pr, { position: null, estimatedSecondsToMerge: 0 });
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
