import type { Failure } from "./failures.js";

/**
 * Whether an upload's failures read as an infrastructure failure (a runner out of disk, a
 * database that never started, a registry down) rather than as failures of the tests: such an
 * upload is no evidence about any test, so detection ignores it and the queue run it belongs to
 * is marked for a retry of its job instead of an ejection.
 *
 * An assertion failure (domain/flaky/failures.ts: an `expect`, an `assert`, a comparison) is
 * the tests' own and never counts towards any rule, however many share its first line. Three
 * rules on the other failures, any suffices:
 * - one failure across unrelated tests: at least `sharedTests` (5) failed tests, in at least
 *   `sharedFiles` (3) different files (their classname when a report names no file), failed with
 *   one failure (its type and normalized message, wherever in each test it happened). Failures
 *   without a message share nothing and never count, nor do the tests' own timeouts (failures.ts
 *   TEST_TIMEOUT: tests timing out together ran on a slow runner, which is their timing);
 * - a known infrastructure failure: at least `patternShare` (half) of the upload's failed tests
 *   failed with one of INFRASTRUCTURE_PATTERNS (connection refused, no space left, out of
 *   memory, DNS, network and registry timeouts, a lost runner) and did not pass on a retry
 *   within the upload;
 * - most tests failed: at least `failedShare` (50%) of an upload of at least `minTests` (10)
 *   tests failed, other than by an assertion.
 */
export const INFRASTRUCTURE_RULES = { minTests: 10, failedShare: 0.5, sharedTests: 5, sharedFiles: 3, patternShare: 0.5 };

/**
 * One failed test of the upload: where it lives and what failed (its failure's type and
 * normalized message: `Failure.what`); whether it is an assertion failure, the known
 * infrastructure pattern it matched, and whether it passed on a retry within the upload (all
 * unsaid: none).
 */
export type UploadFailure = { file: string; summary: string; assertion?: boolean; testTimeout?: boolean; infrastructure?: string | null; passedOnRetry?: boolean };

/** The summary written for a failure that had no message (ingest): shared by unrelated failures, yet no signature. */
export const NO_FAILURE_MESSAGE = "(no failure message)";

/**
 * A failed test as the rules read it. Unrelated tests are told apart by their file; without
 * one, by their classname — except where the classname is the test's name (jest-junit's default
 * templates, "{classname} {title}" for both), where the outermost suite (jest-junit writes one
 * per test file) stands for the file.
 */
export function uploadFailure(test: { file: string; classname: string; name: string; parent: string }, failure: Failure): UploadFailure {
  const file = test.file || (test.classname === test.name && test.parent !== "" ? test.parent : test.classname);
  return { file, summary: failure.what || NO_FAILURE_MESSAGE, assertion: failure.kind === "assertion", testTimeout: failure.testTimeout, infrastructure: failure.pattern };
}

const percent = (x: number) => `${Math.round(x * 1000) / 10}%`;
/** A failure as a reason quotes it: at most 200 characters. */
const quote = (summary: string) => `"${summary.length > 200 ? `${summary.slice(0, 199)}…` : summary}"`;

/** The reason the upload is an infrastructure failure, or null when its failures are the tests' own. */
export function infrastructureFailure(tests: number, failures: readonly UploadFailure[], rules = INFRASTRUCTURE_RULES): string | null {
  const errors = failures.filter((f) => !f.assertion);
  const assertions = failures.length - errors.length;
  const failed = errors.length;
  if (tests >= rules.minTests && failed / tests >= rules.failedShare) {
    return `${failed} of ${tests} tests failed${assertions > 0 ? " other than by an assertion" : ""} (${percent(failed / tests)}; an infrastructure failure at ≥ ${percent(rules.failedShare)} of at least ${rules.minTests} tests)`;
  }
  const bySummary = new Map<string, { tests: number; files: Set<string> }>();
  for (const f of errors) {
    // Tests timing out together on one job ran on a slow runner: their timing, as a timing-dependent test's (issue 25).
    if (f.summary === NO_FAILURE_MESSAGE || f.summary === "" || f.testTimeout) continue;
    let group = bySummary.get(f.summary);
    if (!group) bySummary.set(f.summary, (group = { tests: 0, files: new Set() }));
    group.tests++;
    group.files.add(f.file);
  }
  for (const [summary, group] of bySummary) {
    if (group.tests >= rules.sharedTests && group.files.size >= rules.sharedFiles) {
      return `${group.tests} tests in ${group.files.size} files failed with one failure: ${quote(summary)} (an infrastructure failure at ≥ ${rules.sharedTests} tests in ≥ ${rules.sharedFiles} files)`;
    }
  }
  // A test that passed on a retry within the job is flaky evidence (a network test that timed out once), not an outage.
  const known = errors.filter((f) => f.infrastructure && !f.passedOnRetry);
  if (known.length > 0 && known.length >= rules.patternShare * failures.length) {
    const first = known[0]!;
    const rest = known.length > 1 ? ` and ${known.length - 1} more` : "";
    return `${known.length} of ${failures.length} failed tests failed with a known infrastructure failure (${first.infrastructure}): ${quote(first.summary)}${rest} (an infrastructure failure at ≥ ${percent(rules.patternShare)} of the failed tests)`;
  }
  return null;
}
