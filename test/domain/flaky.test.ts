import { readFileSync } from "node:fs";
import { join } from "node:path";
import { rng } from "../../bench/random.js";
import { addTestCase, FAILED, PASSED, RESULT } from "../../src/domain/flaky/attempts.js";
import { CodeOwners } from "../../src/domain/flaky/codeowners.js";
import { classify, DEFAULT_FLAKY_SETTINGS, isQuarantined } from "../../src/domain/flaky/detection.js";
import { failureSignature, normalizeFailure } from "../../src/domain/flaky/failures.js";
import { testCaseId } from "../../src/domain/flaky/identity.js";
import { JUnitError, parseJUnit, type JUnitCase } from "../../src/formats/junit.js";
import { projectRoot } from "../../src/paths.js";

const fixture = (name: string) => readFileSync(join(projectRoot, "test/fixtures/junit", name), "utf8");

function parse(xml: string): JUnitCase[] {
  const cases: JUnitCase[] = [];
  parseJUnit(xml, (c) => cases.push(c));
  return cases;
}

const brief = (c: JUnitCase) => [c.name, c.failed ? "F" : "", c.passed ? "P" : "", c.skipped ? "S" : ""].join("");

describe("JUnit dialects", () => {
  test("jest-junit: describe path in classname, file attribute, zone-less timestamp read as UTC, skipped", () => {
    const cases = parse(fixture("jest-junit.xml"));
    expect(cases.map(brief)).toEqual(["Cart adds an itemP", "Cart totals with taxF", "Cart removes an itemS", "Cart checkoutP"]);
    expect(cases[1]).toMatchObject({ classname: "Cart totals with tax", file: "src/cart.test.ts", parent: "src/cart.test.ts", message: "Error: expect(received).toBe(expected) // Object.is equality" });
    expect(cases[0]!.at).toBe(Date.parse("2026-11-20T09:15:02Z"));
  });

  test("pytest: failure message attribute, <error> on setup counts as a failure, xfail is skipped, parametrized names", () => {
    const cases = parse(fixture("pytest.xml"));
    expect(cases.map(brief)).toEqual(["test_loginP", "test_search[unicode-ß]F", "test_migrateF", "test_legacyS", "test_rollbackP"]);
    expect(cases[1]!.message).toBe("AssertionError: assert 3 == 4");
    expect(cases[2]!.message).toBe('failed on setup with "psycopg.OperationalError: connection refused"');
    expect(cases[0]).toMatchObject({ parent: "pytest", classname: "tests.test_api", file: "", at: Date.parse("2026-11-20T10:00:00.123Z") });
  });

  test("Surefire: flakyFailure/flakyError passed on a rerun (failed and passed), rerunFailure failed throughout", () => {
    const cases = parse(fixture("surefire.xml"));
    expect(cases.map(brief)).toEqual(["createsOrderP", "retriesPaymentFP", "cancelsOrderF", "refundsFP"]);
    expect(cases[1]!.message).toBe("expected: <PAID> but was: <PENDING>");
    expect(cases[2]!.message).toBe("Order 4711 not cancelled");
    expect(cases[0]!.parent).toBe("com.acme.OrderServiceTest");
  });

  test("go-junit-report: one suite per package, message from the text when the attribute says only 'Failed'", () => {
    const cases = parse(fixture("go-junit-report.xml"));
    expect(cases.map(brief)).toEqual(["TestPutP", "TestGet/missing_keyF", "TestServeP"]);
    expect(cases[1]).toMatchObject({ parent: "github.com/acme/api/store", message: "Failed" });
    expect(cases[2]!.at).toBe(Date.parse("2026-11-20T12:00:01Z"));
  });

  test("gotestsum --rerun-fails: the failed and the passing attempt are both in the report", () => {
    const cases = parse(fixture("gotestsum-rerun.xml"));
    expect(cases.map(brief)).toEqual(["TestEnqueueP", "TestDrainTimeoutF", "TestDrainTimeoutP", "TestDequeueP"]);
  });

  test("gotestsum --rerun-fails in later suites: a Go report (go.version property) writes reruns as repeats", () => {
    const cases = parse(fixture("gotestsum-rerun-suites.xml"));
    expect(cases.map(brief)).toEqual(["TestEvictP", "TestExpiryF", "TestWarmupF", "TestDialF", "TestExpiryP", "TestWarmupF", "TestDialF", "TestWarmupF", "TestDialP"]);
    expect(cases.every((c) => c.repeatIsRetry)).toBe(true);
    expect(parse(fixture("go-junit-report.xml")).every((c) => c.repeatIsRetry)).toBe(true);
  });

  test.each(["jest-test-each.xml", "testng-data-provider.xml", "xunit-theory.xml", "pytest-rerunfailures.xml", "surefire.xml", "jest-junit.xml", "pytest.xml", "nested.xml"])(
    "%s: repeats are variants, not reruns",
    (file) => {
      expect(parse(fixture(file)).some((c) => c.repeatIsRetry)).toBe(false);
    },
  );

  test("a go.version property of a testcase (pytest's record_property, jest-junit) says nothing of the report", () => {
    const cases = parse(`<testsuite name="s"><testcase name="t"><properties><property name="go.version" value="x"/></properties></testcase><testcase name="u"/></testsuite>`);
    expect(cases.map((c) => c.repeatIsRetry)).toEqual([false, false]);
  });

  test('a testcase whose status is "disabled", "skipped" or "notrun" (any case) is skipped without <skipped/>; a failure still counts', () => {
    const cases = parse(
      `<testsuite name="ctest"><testcase name="a" status="disabled"/><testcase name="b" status="NotRun"/><testcase name="c" status="skipped"></testcase>` +
        `<testcase name="d" status="run"/><testcase name="e" status="fail"><failure message="x"/></testcase><testcase name="f" status="disabled"><error/></testcase></testsuite>`,
    );
    expect(cases.map(brief)).toEqual(["aS", "bS", "cS", "dP", "eF", "fF"]);
  });

  test("nested suites: the outermost suite is the parent, the nearest timestamp and file apply", () => {
    const cases = parse(fixture("nested.xml"));
    expect(cases.map(brief)).toEqual(["applies a 10% couponP", "rejects an expired couponF", "respondsP"]);
    expect(cases[1]).toMatchObject({ parent: "integration", file: "spec/integration.rb", at: Date.parse("2026-11-20T14:05:00Z") });
    expect(cases[1]!.message).toBe("RuntimeError: coupon service unavailable (request 5f0c2a9e-1b2c-4d5e-8f90-0123456789ab)");
    expect(cases[2]).toMatchObject({ file: "spec/health_spec.rb", at: Date.parse("2026-11-20T14:00:00Z") });
  });

  test.each([
    ["<testsuite><testcase name='a'></testsuite>", 1],
    ["<testsuites>\n  <testsuite>\n    <testcase name='a' name='b'/>\n  </testsuite>\n</testsuites>", 3],
    ["<html><body/></html>", 1],
    ["<testsuite>", 1],
    ["", 1],
  ])("malformed XML %j throws with its line", (xml, line) => {
    let error: unknown;
    try {
      parse(xml);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(JUnitError);
    expect((error as JUnitError).line).toBe(line);
    expect((error as JUnitError).column).toBeGreaterThan(0);
  });

  test("a large report streams: 50,000 test cases", () => {
    const body = Array.from({ length: 50_000 }, (_, i) => `<testcase classname="c${i % 100}" name="t${i}"${i % 97 === 0 ? "><failure message='x'/></testcase>" : "/>"}`).join("");
    let count = 0;
    let failed = 0;
    const { testCases } = parseJUnit(`<testsuite name="big">${body}</testsuite>`, (c) => {
      count++;
      if (c.failed) failed++;
    });
    expect([testCases, count, failed]).toEqual([50_000, 50_000, Math.ceil(50_000 / 97)]);
  });
});

describe("test identity (Trunk's derivation, checked against its published vectors)", () => {
  const test_ = { file: "src/lib.rs", classname: "ExampleClass", parent: "parent/fact/path", name: "example_name" };
  test.each([
    ["no variant", "", "", "06cb6db5-f807-5198-b072-af67a0636f8a"],
    ["a variant re-hashes", "unix", "", "1bf61475-b542-5faf-aa85-e66a691257a3"],
    ["an explicit v5 id is kept", "", "a6e84936-3ee9-57d5-b041-ae124896f654", "a6e84936-3ee9-57d5-b041-ae124896f654"],
  ])("%s", (_what, variant, explicit, expected) => {
    expect(testCaseId("example_org", "example_repo", test_, variant, explicit)).toBe(expected);
  });

  test("a real test's id", () => {
    const file = "modules/settings/repoName/__tests__/ticketing-integration.vitest.tsx";
    const id = testCaseId("trunk-staging-org", "github.com/trunk-io/trunk", { file: "", classname: file, parent: file, name: "Ticketing Integration > should allow you to select a ticketing system" });
    expect(id).toBe("3f507aef-e834-523b-a8ad-edaba6b137be");
  });

  test("a v4 id attribute is not an identity: the id is derived", () => {
    expect(testCaseId("o", "r", test_, "", "08e1c642-3a55-45cf-8bf9-b9d0b21785dd")).toBe(testCaseId("o", "r", test_));
  });
});

test("CODEOWNERS: last matching rule wins, anchored and ** patterns, rules without owners un-own", () => {
  const owners = new CodeOwners("# owners\n*       @acme/all\n/src/api/ @acme/api   # the API\n*.md @acme/docs\nsrc/**/db/*.ts @db @ops\n/src/vendored\n");
  expect(owners.ownersOf("README.md")).toEqual(["@acme/docs"]);
  expect(owners.ownersOf("src/api/routes.ts")).toEqual(["@acme/api"]);
  expect(owners.ownersOf("./src/store/db/pool.ts")).toEqual(["@db", "@ops"]);
  expect(owners.ownersOf("lib/util.js")).toEqual(["@acme/all"]);
  expect(owners.ownersOf("src/vendored/x.ts")).toEqual([]);
  expect(owners.ownersOf("")).toEqual([]);
  expect(owners.ownersOf("nested/src/api/x.ts")).toEqual(["@acme/all"]);
});

test("failure messages are normalized so the same failure groups across runs", () => {
  const a = normalizeFailure("\x1b[31mTimeout of 5000ms exceeded\x1b[0m at 2026-11-20T10:00:01.123Z in /home/ci/work/src/a.test.ts:12:5");
  const b = normalizeFailure("Timeout of 2000ms exceeded at 2026-11-21T08:59:00Z in /tmp/build-77/src/a.test.ts:13:9");
  expect(a).toBe("Timeout of <n>ms exceeded at <time> in <path>");
  expect(failureSignature(a)).toBe(failureSignature(b));
  expect(normalizeFailure("record 0b3f1c2d-1111-4222-8333-123456789abc not found at deadbeef12")).toBe("record <uuid> not found at <hex>");
  expect(normalizeFailure("expected 3 to be 4")).not.toBe(normalizeFailure("expected true to be false"));
});

describe("classification", () => {
  const now = new Date("2026-11-22T00:00:00Z");
  const settings = DEFAULT_FLAKY_SETTINGS;
  const daysAgo = (d: number) => new Date(now.getTime() - d * 86_400_000);

  test.each([
    // Issue 22, item 9: it said "healthy" for a test failing all of its runs while they were too few for the rates.
    ["broken with too few runs for the rates when every one failed", { runs: 5, failures: 5, flakeAt: null, flakeReason: null }, "broken"],
    ["broken after a single run that failed", { runs: 1, failures: 1, flakeAt: null, flakeReason: null }, "broken"],
    ["healthy with too few runs when one of them passed", { runs: 5, failures: 4, flakeAt: null, flakeReason: null }, "healthy"],
    ["healthy with no run in the window", { runs: 0, failures: 0, flakeAt: null, flakeReason: null }, "healthy"],
    ["broken at ≥ 80% of ≥ 10 runs, even with pass-on-retry evidence", { runs: 10, failures: 8, flakeAt: daysAgo(1), flakeReason: "x" }, "broken"],
    ["flaky on recent pass-on-retry evidence", { runs: 2, failures: 1, flakeAt: daysAgo(6.9), flakeReason: "failed and passed on the same commit abc" }, "flaky"],
    ["healthy again once the evidence is older than recoveryDays", { runs: 20, failures: 1, flakeAt: daysAgo(7), flakeReason: "x" }, "healthy"],
    ["flaky on a failure rate ≥ 30%", { runs: 10, failures: 3, flakeAt: null, flakeReason: null }, "flaky"],
    ["healthy below the rate", { runs: 10, failures: 2, flakeAt: null, flakeReason: null }, "healthy"],
    // Issue 25: a test that broke, with passes from before in its window, is broken, not flaky (and so never quarantined).
    ["broken after eight failed runs in a row on more than one commit, below brokenRate", { runs: 24, failures: 9, streak: 8, streakCommits: 2, flakeAt: null, flakeReason: null }, "broken"],
    ["broken on the streak even with pass-on-retry evidence from before", { runs: 24, failures: 9, streak: 9, streakCommits: 3, flakeAt: daysAgo(2), flakeReason: "x" }, "broken"],
    ["not broken on a streak of one commit's retries", { runs: 24, failures: 9, streak: 8, streakCommits: 1, flakeAt: null, flakeReason: null }, "flaky"],
    ["not broken on seven in a row", { runs: 30, failures: 7, streak: 7, streakCommits: 7, flakeAt: null, flakeReason: null }, "healthy"],
    // Defect 3: broken, then fixed — the figures since the fix decide (the store counts them from there).
    ["healthy once fixed: the runs since the pass that ended a broken streak", { runs: 12, failures: 1, fixed: { at: daysAgo(1), after: 9 }, flakeAt: null, flakeReason: null }, "healthy"],
    ["healthy once fixed, though it flaked before the fix", { runs: 12, failures: 1, fixed: { at: daysAgo(1), after: 9 }, flakeAt: daysAgo(3), flakeReason: "x" }, "healthy"],
    ["flaky when it flaked after the fix", { runs: 12, failures: 1, fixed: { at: daysAgo(1), after: 9 }, flakeAt: daysAgo(0.5), flakeReason: "x" }, "flaky"],
    ["flaky after a fix when it fails ≥ 30% of its runs since", { runs: 12, failures: 4, fixed: { at: daysAgo(1), after: 9 }, flakeAt: null, flakeReason: null }, "flaky"],
  ])("%s", (_what, evidence, status) => {
    const verdict = classify(evidence, settings, now);
    expect(verdict.status).toBe(status);
    expect(verdict.reason).not.toBe("");
  });

  test("reasons name the rule and its figures", () => {
    expect(classify({ runs: 10, failures: 9, flakeAt: null, flakeReason: null }, settings, now).reason).toBe("failed 9 of 10 runs in the last 7 days (90%, broken at ≥ 80%)");
    expect(classify({ runs: 1, failures: 1, flakeAt: daysAgo(1), flakeReason: "failed and passed on the same commit abc1234" }, settings, now).reason).toBe("failed and passed on the same commit abc1234");
    expect(classify({ runs: 3, failures: 3, flakeAt: null, flakeReason: null }, settings, now).reason).toBe("failed 3 of 3 runs in the last 7 days: every run failed (the rate rules wait for 10 runs)");
    expect(classify({ runs: 24, failures: 9, streak: 8, streakCommits: 2, flakeAt: null, flakeReason: null }, settings, now).reason).toBe(
      "failed its last 8 runs, on 2 commits, none passing since (broken at ≥ 8 failed runs in a row on more than one commit)",
    );
    expect(classify({ runs: 12, failures: 4, fixed: { at: daysAgo(1), after: 9 }, flakeAt: null, flakeReason: null }, settings, now).reason).toBe(
      "failed 4 of 12 runs since it passed again at 2026-11-21T00:00:00.000Z after 9 failed runs in a row (33.3%, flaky at ≥ 30%)",
    );
  });

  test("quarantine: overrides first, then flaky tests when auto-quarantine is on; broken never automatically", () => {
    expect(isQuarantined("flaky", "auto", settings)).toBe(true);
    expect(isQuarantined("broken", "auto", settings)).toBe(false);
    expect(isQuarantined("flaky", "auto", { ...settings, autoQuarantine: false })).toBe(false);
    expect(isQuarantined("healthy", "always", settings)).toBe(true);
    expect(isQuarantined("flaky", "never", settings)).toBe(false);
  });
});

describe("a test's testcases in one upload: retries and variants", () => {
  // F failed, P passed, R failed then passed on a rerun it marks (Surefire's flakyFailure), S skipped.
  const testcase = (kind: string, go: boolean) => ({ failed: kind === "F" || kind === "R", passed: kind === "P" || kind === "R", repeatIsRetry: go });
  const merge = (kinds: string[], go: boolean) => kinds.reduce((flags, kind) => addTestCase(flags, testcase(kind, go)), 0) & RESULT;
  const result = (flags: number) => (flags === 0 ? "no result" : flags === RESULT ? "failed, then passed" : flags === FAILED ? "failed" : "passed");

  test.each([
    ["F P", true, "failed, then passed"],
    ["F F P", true, "failed, then passed"],
    ["F S P", true, "failed, then passed"],
    ["F F F", true, "failed"],
    ["P F", true, "failed"],
    ["F P P", true, "failed"],
    ["F P F P", true, "failed"],
    ["F P", false, "failed"],
    ["P F P", false, "failed"],
    ["F F F", false, "failed"],
    ["P P", false, "passed"],
    ["R", false, "failed, then passed"],
    ["R P", false, "failed, then passed"],
    ["P R F", false, "failed"],
    ["S S", false, "no result"],
    ["S F", false, "failed"],
  ])("%s (Go report: %s): %s", (sequence, go, expected) => {
    expect(result(merge(sequence.split(" "), go))).toBe(expected);
  });

  test("on 20,000 random sequences: a failing variant always fails the run; a Go report passes it only in the retry shape", () => {
    const next = rng(7);
    const kinds = ["F", "P", "R", "S"];
    for (let i = 0; i < 20_000; i++) {
      const go = next() < 0.5;
      const sequence = Array.from({ length: 1 + Math.floor(next() * 6) }, () => kinds[Math.floor(next() * 4)]!);
      const ran = sequence.filter((k) => k !== "S");
      const failed = ran.some((k) => k === "F" || k === "R");
      const retryShape = ran.length > 0 && ran.slice(0, -1).every((k) => k === "F") && ran.at(-1) !== "F";
      const passed = ran.length > 0 && (!ran.includes("F") || (go && retryShape));
      const flags = merge(sequence, go);
      expect([sequence.join(" "), go, flags]).toEqual([sequence.join(" "), go, (failed ? FAILED : 0) | (passed ? PASSED : 0)]);
      // The invariant: a failing variant, wherever it is, leaves no pass-on-retry evidence.
      if (!go && ran.includes("F")) expect(flags).toBe(FAILED);
    }
  });
});
