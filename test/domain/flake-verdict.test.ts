import {
  isNewSinceQuarantine,
  judgeFailedChecks,
  judgeTest,
  NEW_FLAKE_RECORD,
  recordVerdict,
  uploadsOfCheck,
  VERDICT_TESTS_MAX,
  type VerdictInput,
  type VerdictTest,
  type VerdictUpload,
} from "../../src/domain/flaky/verdict.js";

/** The pure verdict on a failed run's test results (domain/flaky/verdict.ts, docs/flaky-queue.md). */

const test = (key: number, over: Partial<VerdictTest> = {}): VerdictTest => ({
  key,
  id: `id-${key}`,
  name: `test ${key}`,
  file: "a.test.ts",
  status: "healthy",
  quarantined: false,
  quarantineSetting: "auto",
  passedOnSameTree: false,
  signatures: [{ signature: "s", summary: "boom", seenBefore: false, newSinceQuarantine: false }],
  ...over,
});
const upload = (failed: number[], over: Partial<VerdictUpload> = {}): VerdictUpload => ({ id: "u", checkName: "tests", checkRunId: 11, testCases: 100, infrastructureFailure: null, failed, passed: [], ...over });
const testsCheck = { context: "tests", state: "failure" as const, kind: "check_run" as const, id: 11, excusable: true };
const input = (over: Partial<VerdictInput>): VerdictInput => ({ mode: "retry_flaky", maxRetries: 1, record: NEW_FLAKE_RECORD, failed: [testsCheck], soleCheck: false, uploads: [], tests: [], ...over });

describe("flake verdicts", () => {
  it("judges each failing test by its evidence", () => {
    expect(judgeTest(test(1, { quarantined: true }))).toBe("quarantined");
    // Issue 25: detection's quarantine excuses the ways the test failed when quarantined, not a new one (a flaky test that broke).
    const newWay = [{ signature: "s", summary: "expected 1", seenBefore: true, newSinceQuarantine: true }];
    expect(judgeTest(test(1, { quarantined: true, status: "flaky", signatures: newWay }))).toBe("quarantined_new_signature");
    expect(judgeTest(test(1, { quarantined: true, status: "flaky", signatures: newWay, passedInRun: true }))).toBe("passed_in_run");
    expect(judgeTest(test(1, { quarantined: true, quarantineSetting: "always", signatures: newWay }))).toBe("quarantined");
    expect(judgeTest(test(1, { passedInRun: true }))).toBe("passed_in_run");
    expect(judgeTest(test(1, { passedOnSameTree: true }))).toBe("passed_on_same_tree");
    expect(judgeTest(test(1, { status: "flaky", signatures: [{ signature: "s", summary: null, seenBefore: true, newSinceQuarantine: false }] }))).toBe("known_flaky");
    expect(judgeTest(test(1, { status: "flaky" }))).toBe("new_signature");
    expect(judgeTest(test(1))).toBe("new_failure");
    expect(judgeTest(test(1, { status: "broken", signatures: [{ signature: "s", summary: null, seenBefore: true, newSinceQuarantine: false }] }))).toBe("not_flaky");
  });

  it("attributes uploads to a check by check run id or name; unnamed uploads only to a polled host's single check", () => {
    const byId = upload([], { checkName: null });
    const byName = upload([], { checkRunId: null });
    const unnamed = upload([], { checkName: null, checkRunId: null });
    const other = upload([], { checkName: "lint", checkRunId: 12 });
    expect(uploadsOfCheck(testsCheck, [byId, byName, unnamed, other], false)).toEqual([byId, byName]);
    expect(uploadsOfCheck(testsCheck, [unnamed, other], false)).toEqual([]);
    expect(uploadsOfCheck(testsCheck, [unnamed], true)).toEqual([unnamed]);
    // A commit status has no check run id: only its name attributes.
    expect(uploadsOfCheck({ ...testsCheck, kind: "status", id: null }, [byId], false)).toEqual([]);
  });

  it("a failed check without an upload, or whose uploaded tests all passed, is a real failure", () => {
    expect(judgeFailedChecks(input({ uploads: [upload([], { checkName: "lint", checkRunId: 12 })] }))).toMatchObject({ decision: "fail", rule: "no_test_results", checks: ["tests"] });
    expect(judgeFailedChecks(input({ uploads: [upload([])] }))).toMatchObject({ decision: "fail", rule: "no_failing_tests" });
  });

  it("excuses quarantined failures where the job stopped at its tests; any new failure makes it real, named first", () => {
    const excused = judgeFailedChecks(input({ uploads: [upload([1, 2])], tests: [test(1, { quarantined: true }), test(2, { quarantined: true })] }));
    expect(excused).toMatchObject({ decision: "excuse", rule: "failures_excused" });
    const real = judgeFailedChecks(input({ uploads: [upload([1, 2])], tests: [test(1, { quarantined: true }), test(2)] }));
    expect(real).toMatchObject({
      decision: "fail",
      rule: "real_failure",
      tests: [
        { name: "test 2", judgement: "new_failure" },
        { name: "test 1", judgement: "quarantined" },
      ],
    });
  });

  it("never excuses a job that skipped steps after its quarantined tests (or whose steps are unknown): it runs again, then fails", () => {
    const stopped = { ...testsCheck, excusable: false };
    const first = judgeFailedChecks(input({ mode: "quarantined", failed: [stopped], uploads: [upload([1])], tests: [test(1, { quarantined: true })] }));
    expect(first).toMatchObject({ decision: "retry", rule: "quarantined_job_incomplete", attempt: 1 });
    const record = recordVerdict(NEW_FLAKE_RECORD, first, [stopped], ["u"]);
    const again = upload([1], { id: "u2", checkRunId: 13 });
    expect(judgeFailedChecks(input({ mode: "quarantined", record, failed: [{ ...stopped, id: 13 }], uploads: [upload([1]), again], tests: [test(1, { quarantined: true })] }))).toMatchObject({
      decision: "fail",
      rule: "flaky_retries_exhausted",
    });
  });

  it("reads what failed from the current attempt only; an earlier attempt's failures cannot make a re-run that failed elsewhere pass", () => {
    const flaky = test(1, { passedOnSameTree: true });
    const first = judgeFailedChecks(input({ uploads: [upload([1])], tests: [flaky] }));
    const record = recordVerdict(NEW_FLAKE_RECORD, first, [testsCheck], ["u"]);
    // Attempt 2: the flaky test passed, another step failed (no failing test): a real failure.
    const second = upload([], { id: "u2", checkRunId: 13, passed: [1] });
    expect(judgeFailedChecks(input({ record, failed: [{ ...testsCheck, id: 13 }], uploads: [upload([1]), second], tests: [flaky] }))).toMatchObject({ decision: "fail", rule: "no_failing_tests" });
    // Attempt 2 uploaded nothing: no test results for it.
    expect(judgeFailedChecks(input({ record, failed: [{ ...testsCheck, id: 13 }], uploads: [upload([1])], tests: [flaky] }))).toMatchObject({ rule: "no_test_results" });
  });

  it("a pass in another check's upload (a matrix leg) is no evidence; a pass in an earlier attempt of the same check is", () => {
    const node18 = upload([], { id: "n18", checkName: "test (18)", checkRunId: 21, passed: [1] });
    const node20 = upload([1], { id: "n20", checkName: "test (20)", checkRunId: 22 });
    const leg = { context: "test (20)", state: "failure" as const, kind: "check_run" as const, id: 22, excusable: true };
    expect(judgeFailedChecks(input({ mode: "quarantined", failed: [leg], uploads: [node18, node20], tests: [test(1)] }))).toMatchObject({ decision: "fail", rule: "real_failure", tests: [{ judgement: "new_failure" }] });
    const before = upload([], { id: "old", checkName: "test (20)", checkRunId: 20, passed: [1] });
    const record = { ...NEW_FLAKE_RECORD, judgedUploads: ["old"] };
    expect(judgeFailedChecks(input({ record, failed: [leg], uploads: [before, node20], tests: [test(1)] }))).toMatchObject({ decision: "retry", tests: [{ judgement: "passed_in_run" }] });
  });

  it("retries known-flaky failures up to the limit under retry_flaky; quarantined mode does not retry", () => {
    const flaky = test(1, { passedOnSameTree: true });
    const retry = judgeFailedChecks(input({ uploads: [upload([1])], tests: [flaky] }));
    expect(retry).toMatchObject({ decision: "retry", rule: "flaky_retry", attempt: 1 });
    const after = recordVerdict(NEW_FLAKE_RECORD, retry, [testsCheck], ["u"]);
    expect(after).toMatchObject({ retries: 1, judged: { tests: 11 }, judgedUploads: ["u"] });
    expect(judgeFailedChecks(input({ record: after, uploads: [upload([1]), upload([1], { id: "u2" })], tests: [flaky] }))).toMatchObject({ decision: "fail", rule: "flaky_retries_exhausted" });
    expect(judgeFailedChecks(input({ mode: "quarantined", uploads: [upload([1])], tests: [flaky] }))).toMatchObject({ decision: "fail", rule: "known_flaky_not_quarantined" });
  });

  it("each check has its own retries: a second check flaking after the first was retried is retried too", () => {
    const flaky = test(1, { passedOnSameTree: true });
    const first = judgeFailedChecks(input({ uploads: [upload([1])], tests: [flaky] }));
    const record = recordVerdict(NEW_FLAKE_RECORD, first, [testsCheck], ["u"]);
    expect(record.retriesOf).toEqual({ tests: 1 });
    const e2e = { context: "e2e", state: "failure" as const, kind: "check_run" as const, id: 31, excusable: true };
    const theirs = upload([1], { id: "e", checkName: "e2e", checkRunId: 31 });
    expect(judgeFailedChecks(input({ record, failed: [e2e], uploads: [upload([1]), theirs], tests: [flaky] }))).toMatchObject({ decision: "retry", rule: "flaky_retry", checks: ["e2e"], attempt: 1 });
  });

  it("an infrastructure failure is re-run once, then counts", () => {
    const storm = upload([1], { infrastructureFailure: "9 of 10 tests failed" });
    const first = judgeFailedChecks(input({ uploads: [storm], tests: [test(1)] }));
    expect(first).toMatchObject({ decision: "retry", rule: "infrastructure_retry", infrastructure: "9 of 10 tests failed" });
    const record = recordVerdict(NEW_FLAKE_RECORD, first, [testsCheck], ["u"]);
    expect(record).toMatchObject({ retries: 0, infrastructureRetried: true });
    expect(judgeFailedChecks(input({ record, uploads: [storm, { ...storm, id: "u2" }], tests: [test(1)] }))).toMatchObject({ decision: "fail", rule: "infrastructure_failure_again" });
  });

  it("names at most VERDICT_TESTS_MAX tests and says how many there were", () => {
    const tests = Array.from({ length: 30 }, (_, i) => test(i + 1, { quarantined: true }));
    const verdict = judgeFailedChecks(input({ uploads: [upload(tests.map((t) => t.key))], tests }));
    expect(verdict.tests).toHaveLength(VERDICT_TESTS_MAX);
    expect(verdict.testsTotal).toBe(30);
  });
});

describe("a failure new since quarantine", () => {
  const at = Date.parse("2026-11-20T00:00:00Z");
  const quarantinedAt = new Date(at);
  const known = [
    { signature: "t1", shape: "timeout", firstAt: at - 1000 },
    { signature: "a1", shape: "assertion", firstAt: at + 1000 },
  ];
  it.each([
    ["a shape seen before the quarantine", "timeout", known, quarantinedAt, false],
    ["a shape first seen after it", "assertion", known, quarantinedAt, true],
    ["a shape never stored", "other", known, quarantinedAt, true],
    ["no shape given", null, known, quarantinedAt, false],
    ["a quarantine without a time", "assertion", known, null, false],
    ["a test with a failure mode from before shapes were kept, not failed since", "assertion", [...known, { signature: "old", shape: null, firstAt: null }], quarantinedAt, false],
    ["a shape whose first time was not kept (failed again since the upgrade): known before", "assertion", [{ signature: "a0", shape: "assertion", firstAt: null }], quarantinedAt, false],
    ["another shape than that one", "timeout", [{ signature: "a0", shape: "assertion", firstAt: null }], quarantinedAt, true],
  ] as const)("%s", (_what, shape, failures, since, expected) => {
    expect(isNewSinceQuarantine(shape, failures, since)).toBe(expected);
  });
});
