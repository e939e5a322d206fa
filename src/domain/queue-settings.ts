import type { QueueMode, QueueState } from "./states.js";

export const DIRECT_MERGE_MODES = ["off", "always"] as const;
export const OPTIMIZATION_MODES = ["off", "bisection_skip_redundant_tests"] as const;
export const MERGE_METHODS = ["merge_commit", "squash", "rebase"] as const;
/**
 * How a queue picks its runs in flight and batch sizes (docs/engine.md, "CI budget and adaptive
 * tuning"): fixed — as its settings say; adaptive — the engine picks them within concurrency,
 * bisectionConcurrency and ciBudget from the failure rate it observes.
 */
export const TUNING_MODES = ["fixed", "adaptive"] as const;
export type Tuning = (typeof TUNING_MODES)[number];
/**
 * What a failed required check's test results decide (docs/flaky-queue.md): off — every
 * failure counts; quarantined — failures of quarantined tests (and of tests that passed on a
 * retry in the run) do not count; retry_flaky — as quarantined, and failures of known-flaky
 * tests re-run the failed jobs, up to flakyRetries times.
 */
export const FLAKE_HANDLING_MODES = ["off", "quarantined", "retry_flaky"] as const;
export type FlakeHandling = (typeof FLAKE_HANDLING_MODES)[number];
/** The most re-runs of a run's failed jobs a queue may allow for flaky failures. */
export const MAX_FLAKY_RETRIES = 5;
/**
 * Where a queue's required statuses come from (the API's requiredStatusesSource): its own list
 * (merge_instance), or the code host's rules for the target branch: classic branch protection
 * (repo_provider_branch_protection), rulesets, both; none (the branch requires no check: every
 * reported check counts, and a run passes once CI finished); unknown (they could not be read:
 * runs wait).
 */
export const REQUIRED_STATUSES_SOURCES = ["merge_instance", "repo_provider_branch_protection", "rulesets", "rulesets_and_branch_protection", "none", "unknown"] as const;
export type RequiredStatusesSource = (typeof REQUIRED_STATUSES_SOURCES)[number];

/** The configurable part of a queue: every field updateQueue can set. */
export type QueueSettings = {
  mode: QueueMode;
  concurrency: number;
  bisectionConcurrency: number;
  testingTimeoutMinutes: number;
  /**
   * Minutes after a run starts by which every required check must have appeared on its
   * testing branch; after that the run is diagnosed (docs/diagnoses.md). Less than
   * testingTimeoutMinutes when set.
   */
  checksStartTimeoutMinutes: number;
  /** 0 = a failing PR waits only for the PRs ahead of it. */
  pendingFailureDepth: number;
  canOptimisticallyMerge: boolean;
  batch: boolean;
  batchingMaxWaitTimeMinutes: number;
  batchingMinSize: number;
  commentsEnabled: boolean;
  commandsEnabled: boolean;
  createPrsForTestingBranches: boolean;
  statusCheckEnabled: boolean;
  /** Set through the API; null = take them from branch protection or the repo's config file. */
  requiredStatuses: string[] | null;
  directMergeMode: (typeof DIRECT_MERGE_MODES)[number];
  optimizationMode: (typeof OPTIMIZATION_MODES)[number];
  mergeMethod: (typeof MERGE_METHODS)[number];
  flakeHandling: FlakeHandling;
  /** Re-runs of a run's failed jobs for known-flaky failures (retry_flaky), 0 to MAX_FLAKY_RETRIES. */
  flakyRetries: number;
  /** The most testing runs in flight at once, main line and bisection together; 0 = no cap beyond concurrency + bisectionConcurrency. */
  ciBudget: number;
  tuning: Tuning;
  /**
   * Required checks satisfied by each pull request's own head (apps that look only at pull
   * requests: CLA, DCO, title linters): testing branches do not wait for them, and GitHub's branch
   * rules check them on each pull request's head when it merges (docs/preflight.md). Opt-in.
   */
  pullRequestChecks: string[];
};

/** Defaults for a new queue; docs/decisions.md explains each choice. */
export const DEFAULT_QUEUE_SETTINGS: QueueSettings = {
  mode: "single",
  concurrency: 1,
  bisectionConcurrency: 1,
  testingTimeoutMinutes: 300,
  checksStartTimeoutMinutes: 10,
  pendingFailureDepth: 0,
  canOptimisticallyMerge: false,
  batch: false,
  batchingMaxWaitTimeMinutes: 5,
  batchingMinSize: 4,
  commentsEnabled: true,
  commandsEnabled: true,
  createPrsForTestingBranches: false,
  statusCheckEnabled: true,
  requiredStatuses: null,
  directMergeMode: "off",
  optimizationMode: "off",
  mergeMethod: "squash",
  flakeHandling: "quarantined",
  flakyRetries: 1,
  ciBudget: 0,
  tuning: "fixed",
  pullRequestChecks: [],
};

export type QueueSettingsUpdate = Partial<Omit<QueueSettings, "requiredStatuses">> & {
  state?: Exclude<QueueState, "switching_modes">;
  requiredStatuses?: string[];
  deleteRequiredStatuses?: boolean;
};

export type QueueStateChange = { state: QueueState; pendingMode: QueueMode | null };

/**
 * The queue state after a settings update. A mode change while work is in flight is not
 * applied at once: the queue enters switching_modes (behaving as draining) and the new mode
 * applies when the in-flight work clears.
 */
export function planQueueStateChange(
  current: { state: QueueState; mode: QueueMode; pendingMode: QueueMode | null },
  update: { state?: QueueState; mode?: QueueMode },
  hasWorkInFlight: boolean,
): QueueStateChange & { mode: QueueMode } {
  const targetMode = update.mode ?? current.pendingMode ?? current.mode;
  if (targetMode !== current.mode && hasWorkInFlight) {
    return { state: "switching_modes", mode: current.mode, pendingMode: targetMode };
  }
  const requested = update.state ?? (current.state === "switching_modes" ? "running" : current.state);
  return { state: requested, mode: targetMode, pendingMode: null };
}
