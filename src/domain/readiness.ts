import type { Mergeability, QueueMode } from "./states.js";

export type Readiness = {
  requiresImpactedTargets: boolean;
  doesBaseBranchMatch: boolean;
  hasImpactedTargets: boolean;
  gitHubMergeability: Mergeability;
};

/** The readiness signals of a submitted PR, from stored facts. */
export function computeReadiness(input: { queueMode: QueueMode; queueBranch: string; prBaseBranch: string; prSha: string; mergeability: Mergeability; impactedTargetsSha: string | null }): Readiness {
  return {
    requiresImpactedTargets: input.queueMode === "parallel",
    doesBaseBranchMatch: input.prBaseBranch === input.queueBranch,
    hasImpactedTargets: input.impactedTargetsSha !== null && input.impactedTargetsSha === input.prSha,
    gitHubMergeability: input.mergeability,
  };
}

/** SPEC.md's rule: base branch matches, mergeable, and targets present when required. */
export function isReady(readiness: Readiness): boolean {
  return readiness.doesBaseBranchMatch && readiness.gitHubMergeability === "mergeable" && (!readiness.requiresImpactedTargets || readiness.hasImpactedTargets);
}

/**
 * Wait before re-reading a PR whose mergeability the code host is still computing (GitHub's
 * `mergeable: null`), after `rechecks` such answers in a row: 2 s, 4 s, … up to a minute,
 * then every 5 minutes once it has stayed unknown for ten answers.
 */
export function readinessRecheckDelayMs(rechecks: number): number {
  if (rechecks > 10) return 5 * 60_000;
  return Math.min(2000 * 2 ** Math.max(0, rechecks - 1), 60_000);
}

/**
 * When to re-read a PR the code host just described (epoch ms), and the count of "still
 * computing" answers to keep: no re-read unless it is still computing; "blocked" and
 * conflicts are re-read when an event may have changed them.
 */
export function nextReadinessRecheck(mergeability: Mergeability, rechecks: number, nowMs: number): { atMs: number | null; rechecks: number } {
  if (mergeability !== "in_progress") return { atMs: null, rechecks: 0 };
  return { atMs: nowMs + readinessRecheckDelayMs(rechecks + 1), rechecks: rechecks + 1 };
}
