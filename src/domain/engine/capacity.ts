import type { EngineQueue, EngineRun, EngineSettings } from "./types.js";

/**
 * How many runs a queue may have in flight and how many PRs each tests (docs/engine.md, "CI
 * budget and adaptive tuning").
 *
 * `fixed` tuning: the settings say it — concurrency main-line runs, bisectionConcurrency
 * bisection runs, batches of batchingMinSize to twice that (waiting up to
 * batchingMaxWaitTimeMinutes to fill) — and ciBudget, when not 0, caps the runs of both kinds
 * together.
 *
 * `adaptive` tuning: the engine picks, within the same caps, from the failure rate it observed
 * on the queue's main-line runs (p, per PR):
 * - batches take what waits, spread over the free slots (⌈waiting / free slots⌉ PRs each), up to
 *   ⌊1 / (2p)⌋ PRs and at most MAX_ADAPTIVE_BATCH (a batch of B then passes with a chance of about
 *   e^(−1/2) ≈ 60% or more), with no batching wait: while slots are free a PR starts at once, and
 *   when they are scarce the line grows and the batches with it;
 * - main-line runs in flight: up to concurrency, within the budget;
 * - the bisection pool gets half the budget, rounded up (at least one run), within bisectionConcurrency.
 */
export type Capacity = {
  /** Main-line runs in flight at most. */
  concurrency: number;
  /** Bisection runs in flight at most. */
  bisectionConcurrency: number;
  /** Runs of both kinds in flight at most (ciBudget); Infinity without a budget. */
  budget: number;
  /** The largest batch a main-line run tests. */
  largestBatch: number;
  /** Batches smaller than this wait (up to batchWaitMinutes) for more PRs; 1 = no wait. */
  smallestBatch: number;
  batchWaitMinutes: number;
  /** Adaptive tuning: the per-PR failure rate it counts with; null when fixed. */
  adaptive: { failureRate: number } | null;
};

/** The largest batch adaptive tuning forms, whatever the failure rate. */
export const MAX_ADAPTIVE_BATCH = 16;

/**
 * What a queue observed of its main-line runs, as decayed counts (each new run weighs the old
 * ones down by DECAY, so the last twenty or so count most): `failures` of runs, `exposures` the
 * PRs they tested. A failed batch counts one failure for all its PRs: at the small rates a queue
 * lives with, failures / exposures is the per-PR failure rate.
 */
export type Observed = { failures: number; exposures: number };

export const NOTHING_OBSERVED: Observed = { failures: 0, exposures: 0 };
const DECAY = 0.95;
/** Until runs are observed the rate leans on this prior, worth PRIOR_WEIGHT PRs. */
const PRIOR_RATE = 0.05;
const PRIOR_WEIGHT = 10;

/**
 * The observation a main-line run adds: the engine observes a run that passed when it finishes,
 * and one that failed once its failure is judged its own (every PR under it merged), never a run
 * failing on a broken PR under it, which would count one broken PR once per run stacked on it.
 * Conflicts and refused starts say nothing of the tests.
 */
export function observe(observed: Observed, run: Pick<EngineRun, "kind" | "status" | "failure" | "tested">): Observed {
  if (run.kind !== "main" || (run.status !== "passed" && run.status !== "failed")) return observed;
  if (run.status === "failed" && run.failure !== "tests_failed" && run.failure !== "timeout") return observed;
  return { failures: observed.failures * DECAY + (run.status === "failed" ? 1 : 0), exposures: observed.exposures * DECAY + run.tested.length };
}

/** The per-PR failure rate the observations give (with the prior), in [0.001, 0.5]. */
export function failureRateOf(observed: Observed): number {
  const rate = (observed.failures + PRIOR_RATE * PRIOR_WEIGHT) / (observed.exposures + PRIOR_WEIGHT);
  return Math.min(0.5, Math.max(0.001, rate));
}

export function capacityOf(q: Pick<EngineQueue, "settings" | "observed">): Capacity {
  const s: EngineSettings = q.settings;
  const budget = s.ciBudget > 0 ? s.ciBudget : Number.POSITIVE_INFINITY;
  if (s.tuning !== "adaptive") {
    return {
      concurrency: s.concurrency,
      bisectionConcurrency: s.bisectionConcurrency,
      budget,
      largestBatch: s.batch ? Math.max(1, s.batchingMinSize * 2) : 1,
      smallestBatch: s.batch ? Math.max(1, s.batchingMinSize) : 1,
      batchWaitMinutes: s.batchingMaxWaitTimeMinutes,
      adaptive: null,
    };
  }
  const p = failureRateOf(q.observed ?? NOTHING_OBSERVED);
  return {
    concurrency: Math.max(1, Math.min(s.concurrency, budget)),
    bisectionConcurrency: Math.max(1, Math.min(s.bisectionConcurrency, Math.ceil(budget / 2))),
    budget,
    largestBatch: Math.max(1, Math.min(MAX_ADAPTIVE_BATCH, Math.floor(1 / (2 * p)))),
    smallestBatch: 1,
    batchWaitMinutes: 0,
    adaptive: { failureRate: p },
  };
}
