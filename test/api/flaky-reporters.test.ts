import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { rng } from "../../bench/random.js";
import { projectRoot } from "../../src/paths.js";
import { BACKENDS } from "../support/backends.js";
import { repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

// Repeated testcases in one upload are variants (data-provider rows, theories, test.each rows)
// unless the reporter marks a rerun or writes reruns as repeats (Go); reports shaped like each
// reporter's, uploaded through the API, with the classification each test must get.

const fixture = (name: string) => readFileSync(join(projectRoot, "test/fixtures/junit", name), "utf8");
const HOUR = 3600_000;

/** A test after an upload: its run's result (attempts and variants merged), its status, whether quarantined. */
type Outcome = { run: "passed" | "failed" | "failed, then passed" | "no result"; status: string; quarantined: boolean };
const passed = (status = "healthy"): Outcome => ({ run: "passed", status, quarantined: false });
// A test none of whose runs passed is broken, however few its runs (issue 22, item 9; it read "healthy").
const failed = (): Outcome => ({ run: "failed", status: "broken", quarantined: false });
const flaky = (): Outcome => ({ run: "failed, then passed", status: "flaky", quarantined: true });

const testcase = (name: string, outcome: "pass" | "fail" | "skip", classname = "com.acme.Cases") =>
  outcome === "pass"
    ? `<testcase classname="${classname}" name="${name}"/>`
    : `<testcase classname="${classname}" name="${name}">${outcome === "skip" ? "<skipped/>" : `<failure message="${name} failed">trace</failure>`}</testcase>`;

describe.each(BACKENDS)("flaky detection on reports shaped like each reporter, on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock(Date.parse("2026-11-22T12:00:00Z"));
  let sha = 0;
  const nextSha = () => (++sha).toString(16).padStart(40, "b");
  const upload = (repoName: string, junit_xml: string[], commit_sha = nextSha()) =>
    server.api.ok<{ test_cases: number; failures: number; unnamed_test_cases: number }>("flaky-tests/upload", {
      repo: repo(repoName),
      org_url_slug: "acme",
      commit_sha,
      branch: "main",
      junit_xml,
    });

  /** Every test of the repository: its latest run, status and quarantine, by name. */
  async function outcomes(repoName: string): Promise<Record<string, Outcome>> {
    const tests = await server.greenline.services.db.read((tx) => tx.testCase.findMany({ where: { repository: { name: repoName } }, include: { results: { orderBy: { uploadKey: "desc" }, take: 1 } } }));
    const run = (r: { failed: boolean; passed: boolean } | undefined): Outcome["run"] => (!r ? "no result" : r.failed && r.passed ? "failed, then passed" : r.failed ? "failed" : "passed");
    return Object.fromEntries(tests.map((t) => [t.name, { run: run(t.results[0]), status: t.status, quarantined: t.quarantined }]));
  }

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
  });
  afterAll(() => server?.close());

  test.each<[string, string, Record<string, Outcome>]>([
    ["TestNG data provider through Surefire: rows share the method's name", "testng-data-provider.xml", { appliesDiscount: failed(), roundsTotals: failed() }],
    ["xUnit theory: cases share the method's name", "xunit-theory.xml", { "Acme.Tests.ParserTests.ParsesDate": failed(), "Acme.Tests.ParserTests.TrimsInput": passed() }],
    ["Jest test.each with a title that names no parameter", "jest-test-each.xml", { "price rounds to cents": failed(), "price formats a currency": failed(), "price parses %s": passed() }],
    ["gotestsum --rerun-fails, the rerun in the same suite", "gotestsum-rerun.xml", { TestEnqueue: passed(), TestDrainTimeout: flaky(), TestDequeue: passed() }],
    ["gotestsum --rerun-fails, reruns in later suites", "gotestsum-rerun-suites.xml", { TestEvict: passed(), TestExpiry: flaky(), TestWarmup: failed(), TestDial: flaky() }],
    [
      "pytest-rerunfailures: earlier attempts as empty testcases (16.6.1), a rerun as <flakyFailure> (as proposed upstream)",
      "pytest-rerunfailures.xml",
      { test_always_fails: failed(), test_eventually_passes: passed(), test_retried: flaky() },
    ],
    [
      "Surefire rerunFailingTestsCount: flakyFailure / flakyError passed on a rerun, rerunFailure failed again",
      "surefire.xml",
      { createsOrder: passed(), retriesPayment: flaky(), cancelsOrder: failed(), refunds: flaky() },
    ],
  ])("%s", async (_reporter, file, expected) => {
    const repoName = `reporter-${file.replace(/\.xml$/, "")}`;
    const answer = await upload(repoName, [fixture(file)]);
    expect(answer.test_cases).toBe(Object.keys(expected).length);
    expect(await outcomes(repoName)).toEqual(expected);
  });

  test.each([
    ["jest-junit.xml", 15, 11],
    ["vitest.xml", 14, 10],
    ["pytest.xml", 14, 9],
    ["gotestsum.xml", 14, 10],
    ["surefire", 14, 10],
    ["rspec.xml", 13, 10],
  ])("a regression's real report (%s: six assertion failures in three files, setup errors, an outage) is evidence, no infrastructure failure", async (name, tests, failures) => {
    const dir = join(projectRoot, "test/fixtures/junit/failures", name);
    const xml = name.endsWith(".xml") ? [readFileSync(dir, "utf8")] : readdirSync(dir).map((f) => readFileSync(join(dir, f), "utf8"));
    const repoName = `regression-${name.replace(/\.xml$/, "")}`;
    const answer = await upload(repoName, xml);
    expect(answer).toMatchObject({ test_cases: tests, failures, infrastructure_failure: false });
    // The failures were grouped as the tests' own: each failed test has its failure mode, the assertions one each.
    const signatures = await server.greenline.services.db.read((tx) => tx.failureSignature.findMany({ where: { testCase: { repository: { name: repoName } } } }));
    expect(signatures).toHaveLength(failures);
    expect(signatures.filter((s) => /\(at [\w.-]+:\d+\)$/.test(s.summary)).length).toBeGreaterThanOrEqual(6);
  });

  test("a network timeout that passed on gotestsum's rerun is flaky evidence; one that did not is an outage", async () => {
    const go = (rerun: "pass" | "fail") => `<testsuites><testsuite name="github.com/acme/net" timestamp="2026-11-22T11:00:00Z">
      <properties><property name="go.version" value="go1.23.3 linux/amd64"></property></properties>
      <testcase classname="github.com/acme/net" name="TestDial" time="0.500"><failure message="Failed" type="">=== RUN   TestDial&#xA;    net_test.go:90: dial tcp: lookup proxy.internal: i/o timeout&#xA;--- FAIL: TestDial (0.50s)&#xA;</failure></testcase>
      <testcase classname="github.com/acme/net" name="TestServe" time="0.010"></testcase>
      <testcase classname="github.com/acme/net" name="TestDial" time="0.010">${rerun === "fail" ? `<failure message="Failed" type="">=== RUN   TestDial&#xA;    net_test.go:90: dial tcp: lookup proxy.internal: i/o timeout&#xA;--- FAIL: TestDial (0.50s)&#xA;</failure>` : ""}</testcase>
    </testsuite></testsuites>`;
    expect(await upload("net-retried", [go("pass")])).toMatchObject({ test_cases: 2, failures: 1, infrastructure_failure: false });
    expect((await outcomes("net-retried")).TestDial).toEqual(flaky());
    expect(await upload("net-down", [go("fail")])).toMatchObject({
      test_cases: 2,
      failures: 1,
      infrastructure_failure: true,
      infrastructure_failure_reason: expect.stringContaining("known infrastructure failure (network or registry timeout)"),
    });
    // An outage is no evidence about the test: it failed, but it is not judged broken for it.
    expect((await outcomes("net-down")).TestDial).toEqual({ ...failed(), status: "healthy" });
  });

  test("a test one of whose variants fails every time is never flaky, in any upload, however the variants are ordered: broken from its first upload", async () => {
    const next = rng(42);
    const shuffle = <T>(xs: T[]) =>
      xs
        .map((x) => [next(), x] as const)
        .sort((a, b) => a[0] - b[0])
        .map(([, x]) => x);
    const reporters = [
      (name: string) => ({ name, classname: "com.acme.PricingTest" }), // TestNG data provider
      (name: string) => ({ name: `Acme.Tests.${name}`, classname: "Acme.Tests.ParserTests" }), // xUnit theory
      (name: string) => ({ name: `price ${name}`, classname: `price ${name}` }), // jest-junit test.each
    ];
    const tests = Array.from({ length: 9 }, (_, i) => reporters[i % 3]!(`variants_${i}`));
    const uploads = 12;
    let commit = nextSha();
    for (let u = 0; u < uploads; u++) {
      // Every third upload starts a commit: the others rerun it (the same-commit rule sees them together).
      if (u % 3 === 0) commit = nextSha();
      const cases = tests.flatMap((t) => {
        const others = Array.from({ length: 1 + Math.floor(next() * 4) }, () => (next() < 0.7 ? "pass" : next() < 0.5 ? "fail" : "skip") as "pass" | "fail" | "skip");
        return shuffle(["fail" as const, ...others]).map((outcome) => testcase(t.name, outcome, t.classname));
      });
      const at = new Date(clock.ms - (uploads - u) * HOUR).toISOString();
      const answer = await upload("variants", [`<testsuites><testsuite name="variants" timestamp="${at}">${cases.join("")}</testsuite></testsuites>`], commit);
      expect(answer).toMatchObject({ test_cases: tests.length, failures: tests.length });
      const now = await outcomes("variants");
      // Every upload fails it: broken from the first (every run failed), then by the rate once sampled; never flaky.
      for (const t of tests) expect([t.name, now[t.name]]).toEqual([t.name, { run: "failed", status: "broken", quarantined: false }]);
      const quarantined = await server.api.ok("flaky-tests/list-quarantined-tests", { repo: repo("variants"), org_url_slug: "acme", page_query: { page_size: 100 } });
      expect(quarantined.quarantined_tests).toEqual([]);
    }
  });

  test("testcases with neither name nor classname are not stored, and counted in the answer; a classname alone names a test", async () => {
    const xml = `<testsuite name="hooks" timestamp="2026-11-22T11:00:00Z">
      <testcase/>
      <testcase time="0.2"><failure message="beforeAll hook failed">trace</failure></testcase>
      <testcase name="" classname=""/>
      <testcase classname="setup.teardown"><error message="teardown failed"/></testcase>
      <testcase classname="pkg.Tests" name="named"/>
    </testsuite>`;
    expect(await upload("unnamed", [xml])).toMatchObject({ test_cases: 2, failures: 1, unnamed_test_cases: 3 });
    const stored = await outcomes("unnamed");
    expect(stored).toEqual({ "": failed(), named: passed() });
    const tests = await server.greenline.services.db.read((tx) => tx.testCase.findMany({ where: { repository: { name: "unnamed" } }, select: { name: true, classname: true } }));
    expect(tests.map((t) => [t.classname, t.name]).sort()).toEqual([
      ["pkg.Tests", "named"],
      ["setup.teardown", ""],
    ]);
    // An upload of nothing but unnamed testcases stores no test.
    expect(await upload("unnamed", ["<testsuite><testcase/></testsuite>"])).toMatchObject({ test_cases: 0, failures: 0, unnamed_test_cases: 1 });
  });

  test('status="disabled", "skipped" or "notrun" without <skipped/> is a skipped test (no result), not a pass', async () => {
    const xml = `<testsuite name="ctest" timestamp="2026-11-22T11:00:00Z">
      <testcase classname="ctest" name="disabled" status="disabled"/>
      <testcase classname="ctest" name="notrun" status="notrun" time="0"></testcase>
      <testcase classname="ctest" name="skipped" status="Skipped"/>
      <testcase classname="ctest" name="ran" status="run"/>
      <testcase classname="ctest" name="disabled but failed" status="disabled"><failure message="boom"/></testcase>
    </testsuite>`;
    expect(await upload("statuses", [xml])).toMatchObject({ test_cases: 5, failures: 1 });
    expect(await outcomes("statuses")).toEqual({
      disabled: { run: "no result", status: "healthy", quarantined: false },
      notrun: { run: "no result", status: "healthy", quarantined: false },
      skipped: { run: "no result", status: "healthy", quarantined: false },
      ran: passed(),
      "disabled but failed": failed(),
    });
  });
});
