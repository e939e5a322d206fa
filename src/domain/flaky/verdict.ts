import type { FlakeHandling } from "../queue-settings.js";
import type { CheckState } from "../status-checks.js";
import type { QuarantineSetting, TestStatus } from "./detection.js";

/**
 * Flake-aware verdicts (docs/flaky-queue.md): when a required check of a queue run fails, the
 * test results uploaded for the run's testing commit decide whether the failure counts. Pure:
 * the application reads the evidence (store/flaky/runs.ts runEvidence) and applies the verdict.
 *
 * The failures of a check are read from the uploads attributed to it: those naming its check
 * run id or its name, or, when the host's CI result is a single check (a polled host), the
 * uploads that name none (they can only come from it). A check with no upload attributed is a
 * real failure: nothing says the failing step was a test (a build, a lint step…). Only the
 * uploads of the check's current attempt (those no earlier verdict read) say what failed; the
 * earlier attempts' only tell which tests passed before (flaky evidence).
 *
 * A failure is excused only when the job provably stopped at nothing but its tests: the host
 * says the job failed at a single step and ran every step after it (the steps a failed test
 * step skips — a build, an e2e suite — were not skipped), or the host's CI result is one step.
 */

/**
 * A check of the testing commit, as the run recorded it. `excusable`: its job failed at one step
 * and ran every step after it (the host's job record says so), or the host's CI result is one
 * step: its failure can be its tests' alone.
 */
export type VerdictCheck = { context: string; state: CheckState; kind: "status" | "check_run"; id: number | null; excusable: boolean };

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
  /** Keys of the tests failing somewhere in the run that passed in it. */
  passed: number[];
};

/** A test that failed in the run, with what is known of it. */
export type VerdictTest = {
  key: number;
  id: string;
  name: string;
  file: string;
  status: TestStatus;
  quarantined: boolean;
  /** Who quarantined it: "always" a person (every failure excused), "auto" detection (the ways it failed then). */
  quarantineSetting: QuarantineSetting;
  /** It passed in an earlier attempt of the same check (set by the verdict: the job's re-run). */
  passedInRun?: boolean;
  /** It passed in another queue run that tested the same tree. */
  passedOnSameTree: boolean;
  /**
   * Its failures in the run, by signature: whether the test failed that way before this run, and
   * whether it first failed that way after it was quarantined (a failure mode its quarantine never saw).
   */
  signatures: { signature: string; summary: string | null; seenBefore: boolean; newSinceQuarantine: boolean }[];
};

/** What was decided of a run so far, kept on the run (TestRun.flakeVerdict). */
export type FlakeRecord = {
  /** Re-runs of failed jobs spent on flaky failures, in all. */
  retries: number;
  /** …and per check: each check has `flakyRetries` of its own (two jobs flaking at once are two flakes). */
  retriesOf?: Record<string, number>;
  /** Whether the job was re-run for an infrastructure failure (once at most). */
  infrastructureRetried: boolean;
  /** Checks whose failure does not count, at the report (check id) judged. */
  excused: Record<string, number | null>;
  /** Failed checks already judged (at that report): they are not judged again until they report anew. */
  judged: Record<string, number | null>;
  /** Uploads an earlier verdict read: the attempts before the current one. */
  judgedUploads?: string[];
  /** The latest verdict, for the timeline and the API. */
  last: FlakeVerdict | null;
};

export const NEW_FLAKE_RECORD: FlakeRecord = { retries: 0, infrastructureRetried: false, excused: {}, judged: {}, last: null };

/**
 * Why a failing test counts or not:
 * - quarantined: quarantined by a person, or automatically and failing as it failed when it was
 *   quarantined (its failures do not count, where the job stopped at its tests);
 * - quarantined_new_signature: quarantined automatically, but failing in a way first seen after
 *   its quarantine (a flaky test that broke): counts, unless it passed in the run or on the same tree;
 * - passed_in_run: it passed in an earlier attempt of the same check (flaky evidence);
 * - passed_on_same_tree: it passed in another queue run of the same tree (flaky evidence);
 * - known_flaky: its status is flaky and it failed as it failed before;
 * - new_signature: a flaky test failing in a way never seen: counts;
 * - new_failure: it never failed before: counts;
 * - not_flaky: it failed that way before, yet nothing says it is flaky (a broken test): counts.
 */
export const TEST_JUDGEMENTS = ["quarantined", "passed_in_run", "passed_on_same_tree", "known_flaky", "quarantined_new_signature", "new_signature", "new_failure", "not_flaky"] as const;
export type TestJudgement = (typeof TEST_JUDGEMENTS)[number];

const FLAKY: ReadonlySet<TestJudgement> = new Set(["passed_in_run", "passed_on_same_tree", "known_flaky"]);

/**
 * The rule a verdict applied (stable codes, docs/reasons.md):
 * - fail: no_test_results, no_failing_tests, real_failure, known_flaky_not_quarantined,
 *   flaky_retries_exhausted, infrastructure_failure_again;
 * - excuse: failures_excused (the checks count as passed; the run is judged on the rest);
 * - retry: flaky_retry, infrastructure_retry (the failed jobs run again),
 *   quarantined_job_incomplete (only quarantined tests failed, but the job skipped steps after
 *   them, or the host cannot say: it runs again, the quarantine applied by `greenline test run`).
 */
export const FLAKE_RULES = [
  "quarantined_job_incomplete",
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
  /** The host's CI result is a single check (a polled host): uploads naming no check are its. */
  soleCheck: boolean;
  uploads: VerdictUpload[];
  tests: VerdictTest[];
};

/** The uploads whose results come from `check`, in any attempt. */
export function uploadsOfCheck(check: Pick<VerdictCheck, "context" | "kind" | "id">, uploads: readonly VerdictUpload[], soleCheck: boolean): VerdictUpload[] {
  return uploads.filter((u) => (check.kind === "check_run" && check.id !== null && u.checkRunId === check.id) || u.checkName === check.context || (soleCheck && u.checkName === null && u.checkRunId === null));
}

/** One way a test failed, as stored: its signature, its shape and when it first failed so (null: before these were kept). */
export type KnownFailure = { signature: string; shape: string | null; firstAt: number | null };

/**
 * Whether failing with `shape` is a way the test first failed after it was quarantined at
 * `quarantinedAt`: no failure of that shape was seen by then. A test with a failure mode whose
 * shape is unknown (stored before shapes were kept, and not failed since) gets the benefit of the
 * doubt, as does one whose quarantine has no time; a mode with a shape but no first time was
 * stored before first times were kept, so before the quarantine.
 */
export function isNewSinceQuarantine(shape: string | null, known: readonly KnownFailure[], quarantinedAt: Date | null): boolean {
  if (shape === null || quarantinedAt === null) return false;
  // A failure mode stored before shapes were kept could be any shape: the benefit of the doubt until it fails again (then its shape is kept).
  if (known.some((k) => k.shape === null)) return false;
  // One stored before first times were kept is older than any quarantine that reads it.
  return !known.some((k) => k.shape === shape && (k.firstAt === null || k.firstAt <= quarantinedAt.getTime()));
}

export function judgeTest(test: VerdictTest): TestJudgement {
  // Detection's quarantine covers the ways the test failed when it was quarantined: a regression
  // in a flaky test fails another way, and is not hidden by it (issue 25). A person's covers all.
  if (test.quarantined && (test.quarantineSetting === "always" || !test.signatures.some((s) => s.newSinceQuarantine))) return "quarantined";
  if (test.passedInRun) return "passed_in_run";
  if (test.passedOnSameTree) return "passed_on_same_tree";
  if (test.quarantined) return "quarantined_new_signature";
  const known = test.signatures.every((s) => s.seenBefore);
  if (test.status === "flaky") return known ? "known_flaky" : "new_signature";
  return known ? "not_flaky" : "new_failure";
}

/** The order tests are named in: what made the decision first. */
const RANK: Record<TestJudgement, number> = { new_failure: 0, quarantined_new_signature: 1, new_signature: 1, not_flaky: 2, known_flaky: 3, passed_on_same_tree: 4, quarantined: 5, passed_in_run: 6 };

function named(tests: readonly VerdictTest[], judgements: Map<number, TestJudgement>): Pick<FlakeVerdict, "tests" | "testsTotal"> {
  const sorted = [...tests].sort((a, b) => RANK[judgements.get(a.key)!] - RANK[judgements.get(b.key)!] || a.key - b.key);
  const list = sorted.slice(0, VERDICT_TESTS_MAX).map((t) => ({ id: t.id, name: t.name, file: t.file, judgement: judgements.get(t.key)!, failure: t.signatures[0]?.summary ?? null }));
  return sorted.length > VERDICT_TESTS_MAX ? { tests: list, testsTotal: sorted.length } : { tests: list };
}

/** What the test results say of the failed checks. */
export function judgeFailedChecks(input: VerdictInput): FlakeVerdict {
  const checks = input.failed.map((c) => c.context);
  const fail = (rule: FlakeRule, extra: Partial<FlakeVerdict> = {}): FlakeVerdict => ({ decision: "fail", rule, checks, tests: [], ...extra });
  const earlier = new Set(input.record.judgedUploads ?? []);
  const all = new Map(input.failed.map((check) => [check.context, uploadsOfCheck(check, input.uploads, input.soleCheck)]));
  // What failed is read from the current attempt alone; an earlier attempt's failures are history.
  const attributed = new Map([...all].map(([context, list]) => [context, list.filter((u) => !earlier.has(u.id))]));
  if ([...attributed.values()].some((uploads) => uploads.length === 0)) return fail("no_test_results");
  const uploads = [...new Set([...attributed.values()].flat())];
  const infrastructure = uploads.find((u) => u.infrastructureFailure !== null);
  if (infrastructure) {
    if (input.record.infrastructureRetried) return fail("infrastructure_failure_again", { infrastructure: infrastructure.infrastructureFailure! });
    return { decision: "retry", rule: "infrastructure_retry", checks, tests: [], infrastructure: infrastructure.infrastructureFailure! };
  }
  // Every failed check must have a failing test of its own: a check whose tests all passed failed elsewhere.
  if ([...attributed.values()].some((list) => list.every((u) => u.failed.length === 0))) return fail("no_failing_tests");
  // A pass in an earlier attempt of the same check is flaky evidence (never a pass of another check's: a matrix leg).
  const passedBefore = new Set(
    [...all.values()]
      .flat()
      .filter((u) => earlier.has(u.id))
      .flatMap((u) => u.passed),
  );
  const byKey = new Map(input.tests.map((t): [number, VerdictTest] => [t.key, { ...t, passedInRun: passedBefore.has(t.key) }]));
  const failing = [...new Set(uploads.flatMap((u) => u.failed))].map((key) => byKey.get(key)).filter((t): t is VerdictTest => t !== undefined);
  const judgements = new Map(failing.map((t) => [t.key, judgeTest(t)]));
  const found = [...judgements.values()];
  // The retries the judged checks spent: the most any of them did.
  const spent = Math.max(0, ...input.failed.map((check) => input.record.retriesOf?.[check.context] ?? 0));
  const retry = (rule: FlakeRule): FlakeVerdict => ({ decision: "retry", rule, checks, attempt: spent + 1, ...named(failing, judgements) });
  if (found.some((j) => j !== "quarantined" && !FLAKY.has(j))) return fail("real_failure", named(failing, judgements));
  if (found.every((j) => j === "quarantined")) {
    if (input.failed.every((check) => check.excusable)) return { decision: "excuse", rule: "failures_excused", checks, ...named(failing, judgements) };
    // The job stopped at its quarantined tests and skipped what came after (or the host cannot
    // say): excusing it would pass steps never run. Its re-run applies the quarantine instead.
    if (spent >= input.maxRetries) return fail("flaky_retries_exhausted", named(failing, judgements));
    return retry("quarantined_job_incomplete");
  }
  if (input.mode === "quarantined") return fail("known_flaky_not_quarantined", named(failing, judgements));
  if (spent >= input.maxRetries) return fail("flaky_retries_exhausted", named(failing, judgements));
  return retry("flaky_retry");
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
export function recordVerdict(record: FlakeRecord, verdict: FlakeVerdict, judged: readonly VerdictCheck[], read: readonly string[] = []): FlakeRecord {
  const at = Object.fromEntries(judged.map((c) => [c.context, c.id]));
  const retried = verdict.rule === "flaky_retry" || verdict.rule === "quarantined_job_incomplete";
  const retriesOf = { ...(record.retriesOf ?? {}) };
  if (retried) for (const c of judged) retriesOf[c.context] = (retriesOf[c.context] ?? 0) + 1;
  return {
    retries: record.retries + (retried ? 1 : 0),
    retriesOf,
    judgedUploads: [...new Set([...(record.judgedUploads ?? []), ...read])],
    infrastructureRetried: record.infrastructureRetried || verdict.rule === "infrastructure_retry",
    excused: verdict.decision === "excuse" ? { ...record.excused, ...at } : record.excused,
    judged: { ...record.judged, ...at },
    last: verdict,
  };
}

/** Whether the check's current report is the one already judged (or excused): it is not judged again. */
export function alreadyJudged(record: FlakeRecord, check: Pick<VerdictCheck, "context" | "id">): boolean {
  return check.context in record.judged && record.judged[check.context] === check.id;
}

/** Whether the check's current report was excused: it counts as passed. */
export function isExcused(record: FlakeRecord, check: Pick<VerdictCheck, "context" | "id">): boolean {
  return check.context in record.excused && record.excused[check.context] === check.id;
}
