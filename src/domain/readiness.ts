import { exponentialBackoffMs } from "./backoff.js";
import { MINUTE_MS, SECOND_MS } from "./time.js";
import type { Mergeability, QueueMode } from "./states.js";

export type Readiness = {
  requiresImpactedTargets: boolean;
  doesBaseBranchMatch: boolean;
  hasImpactedTargets: boolean;
  gitHubMergeability: Mergeability;
};

/**
 * The readiness signals of a submitted PR, from stored facts. A stacked PR (`stacked`: its base is
 * the head branch of another PR of the queue, docs/stacks.md) merges into the queue's branch too.
 */
export function computeReadiness(input: { queueMode: QueueMode; queueBranch: string; prBaseBranch: string; stacked?: boolean; prSha: string; mergeability: Mergeability; impactedTargetsSha: string | null }): Readiness {
  return {
    requiresImpactedTargets: input.queueMode === "parallel",
    doesBaseBranchMatch: input.prBaseBranch === input.queueBranch || input.stacked === true,
    hasImpactedTargets: input.impactedTargetsSha !== null && input.impactedTargetsSha === input.prSha,
    gitHubMergeability: input.mergeability,
  };
}

/**
 * A stacked PR moved to the queue's branch (by Greenline as the PR under it merges, by GitHub when
 * that PR's branch is deleted, or by its author) stays in the queue, stacked: any other change of
 * base makes a PR leave it (docs/stacks.md).
 */
export function staysOnBaseChange(entry: { stackBelowPr: number | null }, newBase: string, queueBranch: string): boolean {
  return entry.stackBelowPr !== null && newBase === queueBranch;
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
  return exponentialBackoffMs(rechecks, 2 * SECOND_MS, MINUTE_MS);
}

/**
 * Wait before re-reading a PR the code host says cannot merge now ("blocked" on a required
 * check or review, conflicts, a draft), after `rechecks` answers: the event that would change
 * it (a status on its head, a review, a push) may never be delivered, so it is re-read all the
 * same, rarely: 30 s, 1 min, 2 min, … up to every 15 minutes.
 */
export function blockedRecheckDelayMs(rechecks: number): number {
  return exponentialBackoffMs(rechecks, 30 * SECOND_MS, 15 * MINUTE_MS);
}

/**
 * When to re-read a PR the code host just described (epoch ms), and the count of answers to
 * keep: soon while it is still computing, rarely while it cannot merge (a lost delivery must
 * not leave it waiting forever), never once it can; events ask for re-reads sooner.
 */
export function nextReadinessRecheck(mergeability: Mergeability, rechecks: number, nowMs: number): { atMs: number | null; rechecks: number } {
  if (mergeability === "in_progress") return { atMs: nowMs + readinessRecheckDelayMs(rechecks + 1), rechecks: rechecks + 1 };
  if (mergeability === "not_mergeable") return { atMs: nowMs + blockedRecheckDelayMs(rechecks + 1), rechecks: rechecks + 1 };
  return { atMs: null, rechecks: 0 };
}

/**
 * Wait before re-reading a PR in flight (tested, or passed and awaiting its merge), after
 * `rechecks` re-reads of it: the delivery that says it was closed, pushed to or moved to another
 * base may be lost. Its merge reads it anyway; this finds out sooner, so its run and those stacked
 * on it stop: 1 min after it started testing, then 2 min, 4 min, … every 15 minutes at most.
 */
export function inFlightRecheckDelayMs(rechecks: number): number {
  return exponentialBackoffMs(rechecks, MINUTE_MS, 15 * MINUTE_MS);
}
