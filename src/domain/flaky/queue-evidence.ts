import { createHash } from "node:crypto";
import { FAILED, PASSED } from "./attempts.js";
import type { TestCase } from "./test-case.js";

/**
 * The tree a queue run tests, as a key: its base commit and the head of each PR it stacks, in
 * order, determine the testing branch's tree (the code host's port answers the testing commit,
 * not its tree). Two runs with the same key tested the same code: a restart, or a run started
 * again after the PRs ahead left the line and came back.
 */
export function treeKeyOf(baseSha: string, stack: readonly number[], heads: Readonly<Record<number, string>>): string {
  const parts = [baseSha, ...stack.map((pr) => `${pr}:${heads[pr] ?? ""}`)];
  return createHash("sha256").update(parts.join("\n")).digest("base64url").slice(0, 32);
}

/**
 * Pass-on-retry evidence against other results of the same code (the same commit, or the same
 * tree in other queue runs): the tests of this upload that only failed and passed in some other,
 * and those that only passed and failed in some other. `resultOf` answers a test's result bits
 * in this upload (attempts.ts; 0 when it has none).
 */
export function flakesAgainst(resultOf: (key: number) => number, failedOnly: readonly number[], passedElsewhere: Iterable<number>, failedElsewhere: Iterable<number>): Set<number> {
  const flaky = new Set<number>();
  const failedHere = new Set(failedOnly);
  for (const key of passedElsewhere) if (failedHere.has(key)) flaky.add(key);
  for (const key of failedElsewhere) if (resultOf(key) === PASSED) flaky.add(key);
  return flaky;
}

/** Whether a test's result bits in one upload are a failure without a pass. */
export const failedOnlyIn = (flags: number) => (flags & (FAILED | PASSED)) === FAILED;

/** The test results linked to a queue run (store/flaky/runs.ts testResultsOfRun). */
export type RunTestResults = {
  uploads: { id: string; testCases: number; failures: number; infrastructureFailure: string | null }[];
  /** The tests that failed in some upload of the run, by key. */
  failed: {
    test: TestCase;
    /** It also passed in the run (a retry within the job). */
    passedOnRetry: boolean;
    /** The signatures of its failures in the run, with their summary (null when not kept: an infrastructure failure's). */
    signatures: { signature: string; summary: string | null }[];
  }[];
};
