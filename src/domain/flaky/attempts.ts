/**
 * How the testcases of one upload that share a test's identity add up to the test's result for
 * the run, one testcase at a time, in a few bits per test (the upload holds one byte per test).
 *
 * Retries and variants read differently. A rerun is evidence of flakiness only when a reporter
 * says so: Surefire's rerun children inside one testcase (`flakyFailure`/`flakyError`: failed,
 * then passed; the scanner reads such a testcase as failed and passed), or a Go report, where a
 * repeated testcase can only be the test run again (gotestsum `--rerun-fails`) and counts as a
 * retry when it has the retry shape: every earlier attempt failed, the last passed. Any other
 * repeat is a variant run once (a data-provider row, a theory, a `test.each` row, a rerun that
 * reporters write as an empty testcase): the run failed when any variant failed, and it is no
 * evidence of flakiness. So a test one of whose variants fails every time never passes a run,
 * and no single upload can make it flaky.
 */

/** Some testcase failed (stored as the result's `failed`). */
export const FAILED = 1;
/** The run passed: its retries ended in a pass, or every variant passed (stored as `passed`). */
export const PASSED = 2;
/** The two bits stored; both set is a pass on retry within the run. */
export const RESULT = FAILED | PASSED;

// The bits the merge needs besides the result.
/** A testcase with a result (not skipped) was seen. */
const RAN = 4;
/** A testcase ended in a pass (a clean pass, or Surefire's failed-then-passed). */
const ENDED_PASSING = 8;
/** A testcase ended in a failure. */
const ENDED_FAILING = 16;
/** The repeats are variants: not in a Go report, or a testcase came after a passing one. */
const VARIANTS = 32;

/** What the merge reads of a testcase (the JUnit scanner's testcases have these fields; see formats/junit.ts). */
export type Attempt = { failed: boolean; passed: boolean; repeatIsRetry: boolean };

/** The test's bits after one more of its testcases (0 before the first); a skipped testcase changes nothing. */
export function addTestCase(flags: number, c: Attempt): number {
  if (!c.failed && !c.passed) return flags;
  let f = flags;
  if (f & RAN && (!c.repeatIsRetry || f & ENDED_PASSING)) f |= VARIANTS;
  f |= RAN | (c.failed ? FAILED : 0) | (c.passed ? ENDED_PASSING : ENDED_FAILING);
  const passed = f & VARIANTS ? !(f & ENDED_FAILING) : (f & ENDED_PASSING) !== 0;
  return passed ? f | PASSED : f & ~PASSED;
}
