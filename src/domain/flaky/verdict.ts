import type { FlakeHandling } from "../queue-settings.js";
import type { CheckState } from "../status-checks.js";
import type { TestStatus } from "./detection.js";

/**
 * Flake-aware verdicts (docs/flaky-queue.md): when a required check of a queue run fails, the
 * test results uploaded for the run's testing commit decide whether the failure counts. Pure:
 * the application reads the evidence (store/flaky/runs.ts runEvidence) and applies the verdict.
 *
 * The failures of a check are read from the uploads attributed to it: those naming its check
 * run id or its name, or, when the commit has a single check, the uploads that name none (they
 * can only come from it). A check with no upload attributed is a real failure: nothing says
 * the failing step was a test (a build, a lint step…).
 */

/** A check of the testing commit, as the run recorded it. */
export type VerdictCheck = { context: string; state: CheckState; kind: "status" | "check_run"; id: number | null };

/** An upload linked to the run, with the tests that failed in it (without passing in it). */
export type VerdictUpload = {
  id: string;
  checkName: string | null;
  checkRunId: number | null;
  testCases: number;
  /** Why it reads as an infrastructure failure (domain/flaky/infrastructure.ts); null: it does not. */
  infrastructureFailure: string | null;
  /** Keys of the tests that failed in it and did not pass in it. */
  failed: number[];
};

/** A test that failed in the run, with what is known of it. */
export type VerdictTest = {
  key: number;
  id: string;
  name: string;
  file: string;
  status: TestStatus;
  quarantined: boolean;
  /** It passed in some upload of the run: a retry within the job, or a re-run of the job. */
  passedInRun: boolean;
  /** It passed in another queue run that tested the same tree. */
  passedOnSameTree: boolean;
  /** Its failures in the run, by signature: whether the test failed that way before this run. */
  signatures: { signature: string; summary: string | null; seenBefore: boolean }[];
};

/** What was decided of a run so far, kept on the run (TestRun.flakeVerdict). */
export type FlakeRecord = {
  /** Re-runs of failed jobs spent on flaky failures. */
  retries: number;
  /** Whether the job was re-run for an infrastructure failure (once at most). */
  infrastructureRetried: boolean;
  /** Checks whose failure does not count, at the report (check id) judged. */
  excused: Record<string, number | null>;
  /** Failed checks already judged (at that report): they are not judged again until they report anew. */
  judged: Record<string, number | null>;
  /** The latest verdict, for the timeline and the API. */
  last: FlakeVerdict | null;
};

export const NEW_FLAKE_RECORD: FlakeRecord = { retries: 0, infrastructureRetried: false, excused: {}, judged: {}, last: null };

/**
 * Why a failing test counts or not:
 * - quarantined: quarantined (its failures never count);
 * - passed_in_run: it also passed in the run (a retry within the job, or the re-run job);
 * - passed_on_same_tree: it passed in another queue run of the same tree (flaky evidence);
 * - known_flaky: its status is flaky and it failed as it failed before;
 * - new_signature: a flaky test failing in a way never seen: counts;
 * - new_failure: it never failed before: counts;
 * - not_flaky: it failed that way before, yet nothing says it is flaky (a broken test): counts.
 */
export const TEST_JUDGEMENTS = ["quarantined", "passed_in_run", "passed_on_same_tree", "known_flaky", "new_signature", "new_failure", "not_flaky"] as const;
export type TestJudgement = (typeof TEST_JUDGEMENTS)[number];

const EXCUSED: ReadonlySet<TestJudgement> = new Set(["quarantined", "passed_in_run"]);
const FLAKY: ReadonlySet<TestJudgement> = new Set(["passed_on_same_tree", "known_flaky"]);

/**
 * The rule a verdict applied (stable codes, docs/reasons.md):
 * - fail: no_test_results, no_failing_tests, real_failure, known_flaky_not_quarantined,
 *   flaky_retries_exhausted, infrastructure_failure_again;
 * - excuse: failures_excused (the checks count as passed; the run is judged on the rest);
 * - retry: flaky_retry, infrastructure_retry (the failed jobs run again).
 */
export const FLAKE_RULES = [
  "no_test_results",
  "no_failing_tests",
  "real_failure",
  "known_flaky_not_quarantined",
  "flaky_retries_exhausted",
  "infrastructure_failure_again",
  "failures_excused",
  "flaky_retry",
  "infrastructure_retry",
] as const;
export type FlakeRule = (typeof FLAKE_RULES)[number];

/** Lists in a verdict keep at most this many tests; `testsTotal` then says how many there were. */
export const VERDICT_TESTS_MAX = 20;

export type JudgedTest = { id: string; name: string; file: string; judgement: TestJudgement; failure: string | null };

export type FlakeVerdict = {
  decision: "fail" | "excuse" | "retry";
  rule: FlakeRule;
  /** The failed checks judged. */
  checks: string[];
  /** The failing tests and how each was judged: those that decided first. */
  tests: JudgedTest[];
  testsTotal?: number;
  /** For a retry: which re-run this is (1 = the first). */
  attempt?: number;
  /** For an infrastructure failure: why the upload reads as one. */
  infrastructure?: string;
};

export type VerdictInput = {
  mode: Exclude<FlakeHandling, "off">;
  maxRetries: number;
  record: FlakeRecord;
  /** The failed checks to judge (required ones, or every reported one when none is required). */
  failed: VerdictCheck[];
  /** How many checks were reported on the commit. */
  checksReported: number;
  uploads: VerdictUpload[];
  tests: VerdictTest[];
};

/** The uploads whose results come from `check`. */
export function uploadsOfCheck(check: VerdictCheck, uploads: readonly VerdictUpload[], checksReported: number): VerdictUpload[] {
  const named = uploads.filter((u) => (check.kind === "check_run" && check.id !== null && u.checkRunId === check.id) || u.checkName === check.context);
  if (named.length > 0 || checksReported !== 1) return named;
  return uploads.filter((u) => u.checkName === null && u.checkRunId === null);
}

export function judgeTest(test: VerdictTest): TestJudgement {
  if (test.quarantined) return "quarantined";
  if (test.passedInRun) return "passed_in_run";
  if (test.passedOnSameTree) return "passed_on_same_tree";
  const known = test.signatures.every((s) => s.seenBefore);
  if (test.status === "flaky") return known ? "known_flaky" : "new_signature";
  return known ? "not_flaky" : "new_failure";
}

/** The order tests are named in: what made the decision first. */
const RANK: Record<TestJudgement, number> = { new_failure: 0, new_signature: 1, not_flaky: 2, known_flaky: 3, passed_on_same_tree: 4, quarantined: 5, passed_in_run: 6 };

function named(tests: readonly VerdictTest[], judgements: Map<number, TestJudgement>): Pick<FlakeVerdict, "tests" | "testsTotal"> {
  const sorted = [...tests].sort((a, b) => RANK[judgements.get(a.key)!] - RANK[judgements.get(b.key)!] || a.key - b.key);
  const list = sorted.slice(0, VERDICT_TESTS_MAX).map((t) => ({ id: t.id, name: t.name, file: t.file, judgement: judgements.get(t.key)!, failure: t.signatures[0]?.summary ?? null }));
  return sorted.length > VERDICT_TESTS_MAX ? { tests: list, testsTotal: sorted.length } : { tests: list };
}

/** What the test results say of the failed checks. */
export function judgeFailedChecks(input: VerdictInput): FlakeVerdict {
  const checks = input.failed.map((c) => c.context);
  const fail = (rule: FlakeRule, extra: Partial<FlakeVerdict> = {}): FlakeVerdict => ({ decision: "fail", rule, checks, tests: [], ...extra });
  const attributed = new Map(input.failed.map((check) => [check.context, uploadsOfCheck(check, input.uploads, input.checksReported)]));
  if ([...attributed.values()].some((uploads) => uploads.length === 0)) return fail("no_test_results");
  const uploads = [...new Set([...attributed.values()].flat())];
  const infrastructure = uploads.find((u) => u.infrastructureFailure !== null);
  if (infrastructure) {
    if (input.record.infrastructureRetried) return fail("infrastructure_failure_again", { infrastructure: infrastructure.infrastructureFailure! });
    return { decision: "retry", rule: "infrastructure_retry", checks, tests: [], infrastructure: infrastructure.infrastructureFailure! };
  }
  // Every failed check must have a failing test of its own: a check whose tests all passed failed elsewhere.
  if ([...attributed.values()].some((list) => list.every((u) => u.failed.length === 0))) return fail("no_failing_tests");
  const byKey = new Map(input.tests.map((t) => [t.key, t]));
  const failing = [...new Set(uploads.flatMap((u) => u.failed))].map((key) => byKey.get(key)).filter((t): t is VerdictTest => t !== undefined);
  const judgements = new Map(failing.map((t) => [t.key, judgeTest(t)]));
  const all = [...judgements.values()];
  if (all.some((j) => !EXCUSED.has(j) && !FLAKY.has(j))) return fail("real_failure", named(failing, judgements));
  if (all.every((j) => EXCUSED.has(j))) return { decision: "excuse", rule: "failures_excused", checks, ...named(failing, judgements) };
  if (input.mode === "quarantined") return fail("known_flaky_not_quarantined", named(failing, judgements));
  if (input.record.retries >= input.maxRetries) return fail("flaky_retries_exhausted", named(failing, judgements));
  return { decision: "retry", rule: "flaky_retry", checks, attempt: input.record.retries + 1, ...named(failing, judgements) };
}

/**
 * Whether a verdict proves the failure real (tests that are not flaky failed, or flaky ones
 * failed again after their re-runs): the engine then fails the PR without a blind retry of its
 * own. A failure without test results, or of flaky tests the queue does not retry, keeps it.
 */
export function isConfirmedFailure(v: FlakeVerdict): boolean {
  return v.decision === "fail" && (v.rule === "real_failure" || v.rule === "flaky_retries_exhausted" || v.rule === "infrastructure_failure_again");
}

/** The record after a verdict on the checks judged at their current reports. */
export function recordVerdict(record: FlakeRecord, verdict: FlakeVerdict, judged: readonly VerdictCheck[]): FlakeRecord {
  const at = Object.fromEntries(judged.map((c) => [c.context, c.id]));
  return {
    retries: record.retries + (verdict.rule === "flaky_retry" ? 1 : 0),
    infrastructureRetried: record.infrastructureRetried || verdict.rule === "infrastructure_retry",
    excused: verdict.decision === "excuse" ? { ...record.excused, ...at } : record.excused,
    judged: { ...record.judged, ...at },
    last: verdict,
  };
}

/** Whether the check's current report is the one already judged (or excused): it is not judged again. */
export function alreadyJudged(record: FlakeRecord, check: VerdictCheck): boolean {
  return check.context in record.judged && record.judged[check.context] === check.id;
}

/** Whether the check's current report was excused: it counts as passed. */
export function isExcused(record: FlakeRecord, check: VerdictCheck): boolean {
  return check.context in record.excused && record.excused[check.context] === check.id;
}

/** The sentence for a verdict (the timeline's message). */
export function verdictSentence(v: FlakeVerdict): string {
  const tests = v.tests.map((t) => t.name).slice(0, 3);
  const more = (v.testsTotal ?? v.tests.length) - tests.length;
  const list = tests.length === 0 ? "" : `${tests.join(", ")}${more > 0 ? ` and ${more} more` : ""}`;
  const checks = v.checks.join(", ");
  switch (v.rule) {
    case "no_test_results":
      return `${checks} failed and no test results were uploaded for it: a real failure.`;
    case "no_failing_tests":
      return `${checks} failed but none of its uploaded tests did: the failure is not a test's, a real failure.`;
    case "real_failure":
      return `${checks} failed on ${list}, which is not known to be flaky: a real failure.`;
    case "known_flaky_not_quarantined":
      return `${checks} failed on the known-flaky ${list}, not quarantined (flakeHandling quarantined does not retry): a real failure.`;
    case "flaky_retries_exhausted":
      return `${checks} failed again on the known-flaky ${list} after its re-runs: a real failure.`;
    case "infrastructure_failure_again":
      return `${checks} failed by infrastructure again after a re-run (${v.infrastructure}): a real failure.`;
    case "failures_excused":
      return `${checks} failed only on ${list}, quarantined or passed on a retry: the failure does not count.`;
    case "flaky_retry":
      return `${checks} failed on the known-flaky ${list}: re-running the failed jobs (retry ${v.attempt}).`;
    case "infrastructure_retry":
      return `${checks} failed by infrastructure (${v.infrastructure}): re-running the failed jobs once.`;
  }
}
