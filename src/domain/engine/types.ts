import type { QueueSettings } from "../queue-settings.js";
import type { PrState, QueueMode, QueueState } from "../states.js";
import type { Observed } from "./capacity.js";
import type { FreezeStatus } from "../freezes.js";

/** The queue's merge freeze as the engine sees it (domain/freezes.ts; the caller reads it at `now`). */
export type EngineFreeze = Pick<FreezeStatus, "frozen" | "testing" | "until" | "nextChangeAt">;

/**
 * The queue engine's view of a queue: plain data, loaded from and saved to the store by the
 * runner. The engine reads no clock and does no I/O; `now` is an argument.
 */
export type EngineSettings = Pick<
  QueueSettings,
  | "mode"
  | "concurrency"
  | "bisectionConcurrency"
  | "testingTimeoutMinutes"
  | "pendingFailureDepth"
  | "canOptimisticallyMerge"
  | "batch"
  | "batchingMaxWaitTimeMinutes"
  | "batchingMinSize"
  | "optimizationMode"
  | "directMergeMode"
  | "ciBudget"
  | "tuning"
>;

/** A PR's impacted targets: "ALL", or a list (empty = impacts nothing). */
export type Targets = "ALL" | readonly string[];

export type EngineEntry = {
  prNumber: number;
  state: PrState;
  /** Epoch ms of the last state change. */
  stateChangedAt: number;
  priority: number;
  /** Epoch ms; FIFO among equal priorities. */
  submittedAt: number;
  noBatch: boolean;
  /** The caller's readiness verdict (base branch, mergeability, impacted targets). */
  ready: boolean;
  /**
   * After a batch failed, its PRs are tested in groups of at most this many (bisection);
   * null when the PR is not being bisected.
   */
  bisectionGroupLimit: number | null;
  /** Why the PR is in its state (the last transition's reason). */
  reason: string;
  /**
   * While in flight: its place in the line, fixed when it started testing, so that PRs in flight
   * keep their order whatever their priorities (only urgent PRs go ahead of them).
   */
  position: number | null;
  /** Impacted targets for the PR's current head (parallel mode builds lanes from them). */
  targets: Targets | null;
  /**
   * For direct merges: the target commit the PR's head is up to date with while its own checks
   * are green; null when it is behind the target or its checks are not green.
   */
  directMergeBase: string | null;
  /** Submitted as a hotfix: merges while the queue is frozen (and goes first among urgent PRs). Absent: not. */
  emergency?: boolean;
  /**
   * Stacked: the PR's base is this PR's head branch (docs/stacks.md). It is never tested without
   * that PR under it (until that PR merges), merges after it, and leaves the queue when that PR
   * leaves it unmerged. Absent: based on the target.
   */
  stackBelow?: number;
};

/** start_refused: the code host refused to build or start the testing branch, for good (its reason is in the effect's error). */
export type RunFailure = "tests_failed" | "timeout" | "merge_conflict" | "start_refused";

export type RunStatus = "running" | "passed" | "failed" | "cancelled";

export type EngineRun = {
  id: string;
  kind: "main" | "bisection";
  /** The target branch head the run was built on (not counting the queue's own merges). */
  baseSha: string;
  /** Every PR the testing branch holds on top of baseSha, in merge order. */
  stack: number[];
  /** The PRs this run decides for: a suffix of stack (one PR, or a batch). */
  tested: number[];
  status: RunStatus;
  startedAt: number;
  finishedAt: number | null;
  failure: RunFailure | null;
  /**
   * The failure is proven real by test results (domain/flaky/verdict.ts): the PR fails without
   * the engine's blind retry (shouldRetry). Absent: nothing says.
   */
  failureConfirmed?: boolean;
  /** A testing branch was made for the run (what its archiving must clean up). Absent: none. */
  hasTestBranch?: boolean;
};

export type EngineQueue = {
  state: QueueState;
  mode: QueueMode;
  pendingMode: QueueMode | null;
  settings: EngineSettings;
  /** Head of the target branch as last seen, not counting the queue's own merges since. */
  baseSha: string;
  /**
   * PRs the queue decided to merge on top of baseSha, in order, until the code host confirms
   * them (merge_landed), which folds them into baseSha and only then makes them `merged`.
   * Until then they stay `tests_passed` (reason `merging`) and are out of the line.
   */
  merged: number[];
  entries: EngineEntry[];
  runs: EngineRun[];
  /** Source of run ids; bumped for every run started. */
  nextRunNumber: number;
  /** What the queue observed of its main-line runs (adaptive tuning reads it); absent: nothing yet. */
  observed?: Observed;
  /** The queue's merge freeze now; absent: not frozen, none scheduled. */
  freeze?: EngineFreeze;
};

/** merged_outside_queue: GitHub says the PR was merged into the queue's branch by someone else (the PRs stacked on it stay). */
export type CancelReason = "cancelled_by_user" | "pr_closed" | "pr_updated" | "base_branch_changed" | "merged_outside_queue";

/** Why a PR the queue was merging left it instead (merge_pr_left). */
export type MergeLeaveReason = "pr_updated" | "pr_closed" | "base_branch_changed" | "merged_into_other_branch";

export type EngineEvent =
  | { kind: "submitted"; prNumber: number }
  | { kind: "cancelled"; prNumber: number; reason: CancelReason }
  | { kind: "restart_requested"; prNumber: number }
  | { kind: "readiness_changed"; prNumber: number; ready: boolean }
  | { kind: "run_finished"; runId: string; outcome: "passed" | "failed"; failure?: RunFailure }
  /**
   * Run the tree of a running run again on its own, in a new run (its flaky failures are retried
   * and the code host cannot re-run the failed jobs): the runs stacked on it go on.
   */
  | { kind: "run_rerun"; runId: string }
  /**
   * The run's test results call for its failed jobs to run again (domain/flaky/verdict.ts):
   * the run stays running, on the same commit, while the code host re-runs them (`checkRunIds`:
   * the failed check runs, when the host names them).
   */
  | { kind: "jobs_rerun_requested"; runId: string; checkRunIds: number[] }
  /** The code host refused a merge the engine decided (the target moved meanwhile). */
  | { kind: "merge_failed"; prNumbers: number[]; headSha: string }
  /**
   * A merge decided before a merge freeze began is not carried out (its PRs are no emergencies):
   * it and the merges decided after it are void, and their PRs wait, tests passed, for the
   * freeze to end (the passing runs merge them then, untested again).
   */
  | { kind: "merge_held"; prNumbers: number[] }
  /**
   * The code host will not merge these PRs (the first ones of `merged` not landed), for a
   * reason of its own (branch protection, rulesets, reviews, merge method…): they fail with
   * reason merge_refused and the host's `message`; the merges decided after them are void
   * (their PRs go back in line). The target head is now headSha (when known).
   */
  | { kind: "merge_refused"; prNumbers: number[]; message: string; headSha?: string }
  /**
   * The code host says, as the queue merges, that the PR left it: its head is no longer the
   * commit that was tested (pr_updated), it is closed (pr_closed), its base is no longer the
   * target (base_branch_changed), or the host merged it into the branch it was moved to
   * (merged_into_other_branch) — notices that were late or lost. The PR is cancelled with that
   * reason (and the host's `message`, when it says more), and the merges decided after it are
   * void. The target head is now headSha.
   */
  | { kind: "merge_pr_left"; prNumber: number; reason: MergeLeaveReason; headSha: string; message?: string }
  | { kind: "base_moved"; sha: string }
  /**
   * The code host merged these PRs (the first ones of `merged`); the target head is now headSha.
   * `targetMoved`: someone else's commit slipped in under them while merging PR by PR, so the
   * target is not the tree that was tested: they are merged all the same (the host did it), and
   * the merges decided after them go back in line to be tested on the new head.
   */
  | { kind: "merge_landed"; prNumbers: number[]; headSha: string; targetMoved?: boolean }
  /** New impacted targets were stored for a PR (parallel mode lanes may change). */
  | { kind: "targets_changed"; prNumber: number }
  | { kind: "timer_fired" }
  | { kind: "config_changed" };

export type Effect =
  /** Build a testing branch of baseSha plus the stack's PRs, in order, and run CI on it. */
  | { kind: "start_run"; runId: string; baseSha: string; stack: number[]; tested: number[] }
  | { kind: "cancel_run"; runId: string }
  /**
   * Merge these PRs, in order; together they make the tree that run `runId` tested green.
   * A direct merge (runId null) lands one PR whose head is up to date with the target and
   * green on its own checks. `exactTree`: the target must end with the very tree that was
   * tested (single mode); in parallel mode other lanes may have merged in between, and only
   * the files of the lane must match.
   */
  | { kind: "merge"; prNumbers: number[]; runId: string | null; exactTree: boolean }
  /**
   * Run a running run's failed jobs again, on the same commit (`checkRunIds`: the check runs to
   * re-run; absent or empty: what the host reported failed). A host that cannot re-runs the
   * run's tree in a new run instead (run_rerun).
   */
  | { kind: "rerun_failed_jobs"; runId: string; checkRunIds?: number[] }
  | { kind: "schedule_timer"; at: number };

/**
 * What the engine knows of why a PR moved: the run that decided it, the PR a stale run is
 * blamed on (it failed or left the line under this one), and for a failed batch its bisection.
 * The application adds the run's branch, head and checks, and who caused the event.
 */
export type TransitionEvidence = {
  runId?: string;
  /** The PR whose failure or departure made this PR's run stale, or the culprit of its batch. */
  blamedPr?: number;
  /** `batch`: the PRs of the failed run being bisected; `groupSize`: the largest group they are tested in; `culprit`: the PR found failing alone. */
  bisection?: { batch: number[]; groupSize?: number; culprit?: number };
};

/** `message`: the code host's own words, when it refused something (shown to people verbatim). */
export type Transition = { prNumber: number; from: PrState; to: PrState; reason: string; message?: string; evidence?: TransitionEvidence };

/**
 * What the runner adds to the engine's effects in the outbox: telling the code host about a
 * PR's state (a status on its head commit) and commenting when it leaves the queue unmerged.
 */
export type NotifyEffect = { kind: "pr_status"; prNumber: number; sha: string; state: "pending" | "success" | "failure" | "error"; description: string } | { kind: "pr_comment"; prNumber: number; body: string };

export type OutboxEffect = Effect | NotifyEffect;

/**
 * What the engine decided: the queue after the event, the effects to carry out, the PRs'
 * transitions, and the runs it is done with (`archived`, see archive.ts) with the clean-ups of
 * their testing branches (`cleanups`, carried out after `effects`).
 */
export type Decision = { queue: EngineQueue; effects: Effect[]; transitions: Transition[]; archived: string[]; cleanups: Effect[] };
