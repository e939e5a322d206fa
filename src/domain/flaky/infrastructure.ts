/**
 * Whether an upload's failures read as an infrastructure failure (a runner out of disk, a
 * database that never started, a registry down) rather than as failures of the tests: such an
 * upload is no evidence about any test, so detection ignores it and the queue run it belongs to
 * is marked for a retry of its job instead of an ejection.
 *
 * Two rules, either suffices:
 * - most tests failed: at least `failedShare` (50%) of an upload of at least `minTests` (10)
 *   tests failed;
 * - one failure across unrelated tests: at least `sharedTests` (5) failed tests, in at least
 *   `sharedFiles` (3) different files (their classname when a report names no file), failed with
 *   one normalized failure message (domain/flaky/failures.ts). Failures without a message share
 *   nothing and never count.
 */
export const INFRASTRUCTURE_RULES = { minTests: 10, failedShare: 0.5, sharedTests: 5, sharedFiles: 3 };

/** One failed test of the upload: where it lives and its failure's normalized summary. */
export type UploadFailure = { file: string; summary: string };

/** The summary written for a failure that had no message (ingest): shared by unrelated failures, yet no signature. */
export const NO_FAILURE_MESSAGE = "(no failure message)";

const percent = (x: number) => `${Math.round(x * 1000) / 10}%`;

/** The reason the upload is an infrastructure failure, or null when its failures are the tests' own. */
export function infrastructureFailure(tests: number, failures: readonly UploadFailure[], rules = INFRASTRUCTURE_RULES): string | null {
  const failed = failures.length;
  if (tests >= rules.minTests && failed / tests >= rules.failedShare) {
    return `${failed} of ${tests} tests failed (${percent(failed / tests)}; an infrastructure failure at ≥ ${percent(rules.failedShare)} of at least ${rules.minTests} tests)`;
  }
  const bySummary = new Map<string, { tests: number; files: Set<string> }>();
  for (const f of failures) {
    if (f.summary === NO_FAILURE_MESSAGE || f.summary === "") continue;
    let group = bySummary.get(f.summary);
    if (!group) bySummary.set(f.summary, (group = { tests: 0, files: new Set() }));
    group.tests++;
    group.files.add(f.file);
  }
  for (const [summary, group] of bySummary) {
    if (group.tests >= rules.sharedTests && group.files.size >= rules.sharedFiles) {
      return `${group.tests} tests in ${group.files.size} files failed with one failure: "${summary}" (an infrastructure failure at ≥ ${rules.sharedTests} tests in ≥ ${rules.sharedFiles} files)`;
    }
  }
  return null;
}
