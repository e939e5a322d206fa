import { readFileSync } from "node:fs";
import { join } from "node:path";
import { testCaseId } from "../../src/domain/flaky/identity.js";
import { projectRoot } from "../../src/paths.js";
import { SANDBOX_CI_CONTEXT } from "../../src/adapters/sandbox/code-host.js";
import { FLAKE_RULE_SENTENCES } from "../../src/domain/reasons.js";
import { BACKENDS } from "../support/backends.js";
import { DashboardClient, queuePath } from "../support/dashboard.js";
import { prOf, queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * Flake-aware verdicts (issue 16, docs/flaky-queue.md), end to end on the sandbox: a queue run
 * whose CI failed is judged on the test results uploaded for its testing commit. Real server,
 * real database, the real worker delivering the sandbox's CI results; the sandbox's flakes are
 * decided by the test (its random source).
 */

type Case = { name: string; fail?: string };
type Timeline = { state: string; previousState: string | null; reason: string; evidence: { flaky?: { rule: string; decision: string; tests: { name: string; judgement: string }[]; attempt?: number } } }[];

function report(at: Date, cases: Case[]): string {
  const body = cases
    .map((c) => (c.fail === undefined ? `<testcase classname="pkg.Tests" name="${c.name}"/>` : `<testcase classname="pkg.Tests" name="${c.name}"><failure message="${c.fail}">trace</failure></testcase>`))
    .join("\n");
  return `<?xml version="1.0"?>\n<testsuites><testsuite name="suite" timestamp="${at.toISOString()}">\n${body}\n</testsuite></testsuites>`;
}

const passing = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `t${i}` }));
const CI_MS = 60_000;

describe.each(BACKENDS)("flake-aware verdicts on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock(Date.parse("2026-11-24T12:00:00Z"));
  /** Whether the sandbox's next CI run flakes (fails with nothing broken). */
  let flakes = true;

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: CI_MS, flakeRate: 0.5 }, random: () => (flakes ? 0 : 0.99) });
  });
  afterAll(() => server?.close());
  beforeEach(() => {
    flakes = true;
  });

  const worker = () => server.greenline.worker;
  const upload = (name: string, commit_sha: string, branch: string, cases: Case[]) =>
    server.api.ok("flaky-tests/upload", { repo: repo(name), org_url_slug: "acme", commit_sha, branch, junit_xml: [report(clock.now(), cases)] });
  const details = (name: string, pr = 1) => server.api.ok<{ testRunId: string; testBranch: string; testBranchSha: string }>("getMergeQueueTestingDetails", prOf(pr, name));
  const pr = (name: string, n = 1) => server.api.ok<{ state: string; stateReason: string; timeline: Timeline }>("getSubmittedPullRequest", { ...prOf(n, name), includeTimeline: true });
  const testId = (name: string, test: string) => testCaseId("acme", `github.com/acme/${name}`, { file: "", classname: "pkg.Tests", parent: "suite", name: test });
  /** The sandbox's CI reports: past its duration, the worker delivers the results. */
  const ciReports = async () => {
    clock.advance(CI_MS + 1_000);
    await worker().drain();
  };
  /** A queue with PR 1 testing in run-1 (its CI will fail: the sandbox flakes). */
  async function testing(name: string, settings: Record<string, unknown> = {}) {
    await server.api.ok("createQueue", { ...queueOf(name), ...settings });
    await server.api.ok("submitPullRequest", prOf(1, name));
    await worker().drain();
    return details(name);
  }
  /** Makes `test` flaky: it fails and passes on one commit of a feature branch. */
  async function makeFlaky(name: string, test: string, message: string) {
    const commit = "f".repeat(40);
    await upload(name, commit, "feature", [...passing(5), { name: test, fail: message }]);
    await upload(name, commit, "feature", [...passing(5), { name: test }]);
  }

  test("a quarantined test's failure does not count: the run passes on the rest and the PR merges; the timeline names the test and the rule", async () => {
    await upload("excused", "e".repeat(40), "feature", [...passing(3), { name: "racy", fail: "timed out after 5000 ms" }]);
    await server.api.ok("flaky-tests/set-quarantine-setting", { repo: repo("excused"), org_url_slug: "acme", test_id: testId("excused", "racy"), setting: "always" });
    const run = await testing("excused");
    await upload("excused", run.testBranchSha, run.testBranch, [...passing(3), { name: "racy", fail: "timed out after 5000 ms" }]);
    await ciReports();
    const after = await pr("excused");
    expect(after.state).toBe("merged");
    const excused = after.timeline.find((e) => e.reason === "flaky_failures_excused")!;
    expect(excused).toMatchObject({ previousState: "testing", state: "testing" });
    expect(excused.evidence.flaky).toMatchObject({ decision: "excuse", rule: "failures_excused", tests: [{ name: "racy", judgement: "quarantined" }] });
    // The overview counts it as an ejection flake handling avoided.
    const dashboard = await DashboardClient.signIn(server.url, server.api.token);
    const card = /<article class="card queue-card"[^>]*data-queue="[^"]*excused:main"[\s\S]*?<\/article>/.exec((await dashboard.get("/")).text)![0];
    expect(card).toContain('<dd data-figure="flaky-ejections-avoided">1</dd>');
  });

  test("a test quarantined by detection is excused for the way it flaked, not for a failure first seen after its quarantine (a flaky test that broke)", async () => {
    await makeFlaky("broke", "racy", "timed out after 5000 ms");
    const quarantined = await server.api.ok<{ quarantined_tests: { name: string }[] }>("flaky-tests/list-quarantined-tests", { repo: repo("broke"), org_url_slug: "acme", page_query: { page_size: 10 } });
    expect(quarantined.quarantined_tests.map((t) => t.name)).toEqual(["racy"]);
    const run = await testing("broke");
    clock.advance(1_000);
    await upload("broke", run.testBranchSha, run.testBranch, [...passing(5), { name: "racy", fail: "AssertionError: expected 3 to equal 4" }]);
    await ciReports();
    const after = await pr("broke");
    expect(after.state).not.toBe("merged");
    const failed = after.timeline.find((e) => e.evidence.flaky)!;
    expect(failed.evidence.flaky).toMatchObject({ decision: "fail", rule: "real_failure", tests: [{ name: "racy", judgement: "quarantined_new_signature" }] });
  });

  test("… and the way it flaked is still excused", async () => {
    await makeFlaky("flaked", "racy", "timed out after 5000 ms");
    const run = await testing("flaked");
    clock.advance(1_000);
    await upload("flaked", run.testBranchSha, run.testBranch, [...passing(5), { name: "racy", fail: "timed out after 5210 ms" }]);
    await ciReports();
    const after = await pr("flaked");
    expect(after.state).toBe("merged");
    expect(after.timeline.find((e) => e.evidence.flaky)!.evidence.flaky).toMatchObject({ decision: "excuse", tests: [{ name: "racy", judgement: "quarantined" }] });
  });

  test("with flakeHandling off the same failure counts (the engine's blind retry, as before)", async () => {
    await upload("off", "e".repeat(40), "feature", [...passing(3), { name: "racy", fail: "timed out" }]);
    await server.api.ok("flaky-tests/set-quarantine-setting", { repo: repo("off"), org_url_slug: "acme", test_id: testId("off", "racy"), setting: "always" });
    const run = await testing("off", { flakeHandling: "off" });
    await upload("off", run.testBranchSha, run.testBranch, [...passing(3), { name: "racy", fail: "timed out" }]);
    await ciReports();
    const after = await pr("off");
    expect(after.state).not.toBe("merged");
    expect(after.timeline.map((e) => e.reason)).toContain("retrying_failed_run");
    expect(after.timeline.some((e) => e.evidence.flaky)).toBe(false);
  });

  test("a test that never failed before fails the PR at once: no blind retry, the failure names the test", async () => {
    const run = await testing("real");
    await upload("real", run.testBranchSha, run.testBranch, [...passing(3), { name: "checkout_total", fail: "expected 42 to be 41" }]);
    await ciReports();
    const after = await pr("real");
    expect(after.state).toBe("failed");
    expect(after.timeline.map((e) => e.reason)).not.toContain("retrying_failed_run");
    const failed = after.timeline.at(-1)!;
    expect(failed).toMatchObject({ state: "failed", reason: "tests_failed" });
    expect(failed.evidence.flaky).toMatchObject({ decision: "fail", rule: "real_failure", checks: [SANDBOX_CI_CONTEXT], tests: [{ name: "checkout_total", judgement: "new_failure" }] });
    // The dashboard's PR page says the same, linking the test to its page.
    const dashboard = await DashboardClient.signIn(server.url, server.api.token);
    const { text } = await dashboard.get(`${queuePath("real")}/pulls/1`);
    const verdict = /<li class="flaky-verdict" data-rule="real_failure">[\s\S]*?<\/li>/.exec(text)![0];
    expect(verdict).toContain(`<a href="/tests/github.com/acme/real/${testId("real", "checkout_total")}">checkout_total</a> (new failure)`);
  });

  test("a failed check with no test results is a failure as before (the engine's blind retry)", async () => {
    await testing("none");
    await ciReports();
    const after = await pr("none");
    expect(after.timeline.map((e) => e.reason)).toContain("retrying_failed_run");
    expect(after.timeline.find((e) => e.state === "pending_failure")!.evidence.flaky).toMatchObject({ rule: "no_test_results" });
    // The PR page says it in a sentence: the rule's code is in no text a reader sees (only its attribute and tooltip).
    const dashboard = await DashboardClient.signIn(server.url, server.api.token);
    const { text } = await dashboard.get(`${queuePath("none")}/pulls/1`);
    const verdict = /<li class="flaky-verdict" data-rule="no_test_results">[\s\S]*?<\/li>/.exec(text)![0];
    expect(verdict).toContain(FLAKE_RULE_SENTENCES.no_test_results);
    expect(verdict.replace(/<[^>]*>/g, "")).not.toContain("no_test_results");
  });

  test("a known-flaky test under flakyHandling quarantined still counts (it is not quarantined, and quarantined mode does not retry)", async () => {
    await makeFlaky("notq", "racy", "socket hang up");
    await server.api.ok("flaky-tests/set-quarantine-setting", { repo: repo("notq"), org_url_slug: "acme", test_id: testId("notq", "racy"), setting: "never" });
    const run = await testing("notq");
    await upload("notq", run.testBranchSha, run.testBranch, [...passing(3), { name: "racy", fail: "socket hang up" }]);
    await ciReports();
    const after = await pr("notq");
    expect(after.timeline.find((e) => e.state === "pending_failure")!.evidence.flaky).toMatchObject({ rule: "known_flaky_not_quarantined", tests: [{ name: "racy", judgement: "known_flaky" }] });
  });

  test("retry_flaky: a known-flaky failure re-runs the failed job of the same run, which passes and merges", async () => {
    await makeFlaky("retry", "racy", "socket hang up");
    await server.api.ok("flaky-tests/set-quarantine-setting", { repo: repo("retry"), org_url_slug: "acme", test_id: testId("retry", "racy"), setting: "never" });
    const run = await testing("retry", { flakeHandling: "retry_flaky" });
    await upload("retry", run.testBranchSha, run.testBranch, [...passing(3), { name: "racy", fail: "socket hang up" }]);
    flakes = false;
    await ciReports();
    const retried = await pr("retry");
    expect(retried.state).toBe("testing");
    expect(retried.timeline.map((e) => e.reason)).toEqual(["submitted", "testing", "flaky_retry"]);
    expect(retried.timeline.at(-1)!.evidence.flaky).toMatchObject({ decision: "retry", rule: "flaky_retry", attempt: 1, tests: [{ name: "racy", judgement: "known_flaky" }] });
    // The same run, its job run again: the testing branch and its commit stay.
    expect(await details("retry")).toEqual(run);
    await upload("retry", run.testBranchSha, run.testBranch, [...passing(3), { name: "racy" }]);
    await ciReports();
    expect((await pr("retry")).state).toBe("merged");
  });

  test("retry_flaky: a known-flaky test failing again after its retries fails the PR without a blind retry", async () => {
    await makeFlaky("again", "racy", "socket hang up");
    await server.api.ok("flaky-tests/set-quarantine-setting", { repo: repo("again"), org_url_slug: "acme", test_id: testId("again", "racy"), setting: "never" });
    const run = await testing("again", { flakeHandling: "retry_flaky", flakyRetries: 1 });
    await upload("again", run.testBranchSha, run.testBranch, [...passing(3), { name: "racy", fail: "socket hang up" }]);
    await ciReports();
    expect(await details("again")).toEqual(run);
    await upload("again", run.testBranchSha, run.testBranch, [...passing(3), { name: "racy", fail: "socket hang up" }]);
    await ciReports();
    const after = await pr("again");
    expect(after.state).toBe("failed");
    expect(after.timeline.map((e) => e.reason)).not.toContain("retrying_failed_run");
    expect(after.timeline.at(-1)!.evidence.flaky).toMatchObject({ rule: "flaky_retries_exhausted" });
  });

  test("an infrastructure failure re-runs the job once, and a second one fails the PR", async () => {
    const first = await testing("infra", { flakeHandling: "retry_flaky" });
    const storm = Array.from({ length: 10 }, (_, i) => ({ name: `t${i}`, fail: `case ${i} went wrong` }));
    await upload("infra", first.testBranchSha, first.testBranch, storm);
    await ciReports();
    const retried = await pr("infra");
    expect(retried.state).toBe("testing");
    expect(retried.timeline.find((e) => e.reason === "infrastructure_retry")!.evidence.flaky).toMatchObject({ rule: "infrastructure_retry" });
    expect(await details("infra")).toEqual(first);
    await upload("infra", first.testBranchSha, first.testBranch, storm);
    await ciReports();
    const after = await pr("infra");
    expect(after.timeline.find((e) => e.state === "pending_failure" || e.state === "failed")!.evidence.flaky).toMatchObject({ rule: "infrastructure_failure_again" });
  });

  test("a broken PR's report whose assertion failures share their first line (jest: expect(received).toBe(expected) in 3 files) fails the PR, not retried as infrastructure", async () => {
    const run = await testing("regression", { flakeHandling: "retry_flaky" });
    const jest = readFileSync(join(projectRoot, "test/fixtures/junit/failures/jest-junit.xml"), "utf8");
    // The regression alone: the report without its setup errors and outage.
    const regression = jest.replace(/<testsuite name="(?:orders|src\/pricing\/tax\.test\.ts|repository)"[\s\S]*?<\/testsuite>/g, "");
    const answer = await server.api.ok("flaky-tests/upload", { repo: repo("regression"), org_url_slug: "acme", commit_sha: run.testBranchSha, branch: run.testBranch, junit_xml: [regression] });
    expect(answer).toMatchObject({ test_cases: 9, failures: 6, infrastructure_failure: false });
    await ciReports();
    const after = await pr("regression");
    expect(after.state).toBe("failed");
    expect(after.timeline.map((e) => e.reason)).not.toContain("infrastructure_retry");
    expect(after.timeline.some((e) => e.evidence.flaky?.rule === "infrastructure_retry")).toBe(false);
    const verdict = after.timeline.at(-1)!.evidence.flaky!;
    expect(verdict).toMatchObject({ decision: "fail", rule: "real_failure" });
    expect(verdict.tests.map((t) => [t.name, t.judgement]).sort()).toEqual(
      ["Cart counts its items", "Cart totals with tax", "discounts applies a percentage", "discounts never goes below zero", "shipping charges express", "shipping is free above 50"].map((n) => [n, "new_failure"]),
    );
  });

  test("the settings are validated and answered", async () => {
    await server.api.ok("createQueue", { ...queueOf("settings"), flakeHandling: "retry_flaky", flakyRetries: 3 });
    expect(await server.api.ok("getQueue", queueOf("settings"))).toMatchObject({ flakeHandling: "retry_flaky", flakyRetries: 3 });
    const bad = await server.api.call("updateQueue", { ...queueOf("settings"), flakyRetries: 9 });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain("flakyRetries");
    const mode = await server.api.call("updateQueue", { ...queueOf("settings"), flakeHandling: "sometimes" });
    expect(mode.status).toBe(400);
    expect(JSON.stringify(mode.body)).toContain("flakeHandling");
    expect(await server.api.ok("getQueue", queueOf("settings"))).toMatchObject({ flakeHandling: "retry_flaky", flakyRetries: 3 });
  });
});
