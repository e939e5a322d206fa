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
