import { createToken } from "../../src/auth/tokens.js";
import { BACKENDS } from "../support/backends.js";
import { DashboardClient } from "../support/dashboard.js";
import { repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const DAY = 24 * 3600_000;
const web = { repo: repo("web"), org_url_slug: "acme" };
const testsPath = "/tests/github.com/acme/web";
const CODEOWNERS = "/src/payments/ @acme/payments\n";

/** A JUnit report: `failing` fail with `message`, the rest pass (file under src/payments, owned in CODEOWNERS). */
function report(passing: string[], failing: string[], message = "expected 200, got 503"): string {
  const cases = [
    ...passing.map((name) => `<testcase classname="payments.Refunds" name="${name}" file="src/payments/refunds.test.ts"/>`),
    ...failing.map((name) => `<testcase classname="payments.Refunds" name="${name}" file="src/payments/refunds.test.ts"><failure message="${message}">trace</failure></testcase>`),
  ];
  return `<?xml version="1.0"?><testsuites><testsuite name="refunds">${cases.join("")}</testsuite></testsuites>`;
}

/** The flaky-test pages over plain HTTP: what they show, who may see them, and the quarantine override's rules. */
describe.each(BACKENDS)("flaky-test pages on $name", (backend) => {
  let server: TestServer;
  let acme: DashboardClient;
  const clock = new TestClock(Date.parse("2026-11-22T12:00:00Z"));
  let sha = 0;
  let flakyId: string;

  const upload = (junit: string, extra: Record<string, unknown> = {}) =>
    server.api.ok("flaky-tests/upload", { ...web, commit_sha: (++sha).toString(16).padStart(40, "b"), branch: "main", junit_xml: [junit], codeowners: CODEOWNERS, ...extra });
  const details = (test_id: string) => server.api.ok("flaky-tests/get-test-details", { ...web, test_id });
  const testPath = (id: string) => `${testsPath}/${id}`;
  const form = (id: string, fields: Record<string, string>) => ({ host: "github.com", owner: "acme", repo: "web", test_id: id, ...fields });

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
    // Two days ago: both pass. Yesterday: refund_partial fails on PR 12. Today: it fails on PR 14, passes on a rerun of the same commit (flaky).
    await upload(report(["refund_partial", "refund_full"], []));
    clock.advance(DAY);
    await upload(report(["refund_full"], ["refund_partial"]), { pr_number: 12 });
    clock.advance(DAY);
    await upload(report(["refund_full"], ["refund_partial"], "timeout after 5000 ms"), { pr_number: 14, commit_sha: "c".repeat(40), job_url: "https://ci.example/jobs/14" });
    await upload(report(["refund_full", "refund_partial"], []), { pr_number: 14, commit_sha: "c".repeat(40) });
    const ids = await server.api.ok("flaky-tests/check-quarantine", {
      ...web,
      tests: [
        { name: "refund_partial", classname: "payments.Refunds", parent: "refunds", file: "src/payments/refunds.test.ts" },
        { name: "refund_full", classname: "payments.Refunds", parent: "refunds", file: "src/payments/refunds.test.ts" },
      ],
    });
    expect(ids.quarantined_test_ids).toHaveLength(1);
    flakyId = ids.quarantined_test_ids[0];
    const failing = await server.api.ok("flaky-tests/list-failing-tests", {
      ...web,
      start_time: new Date(clock.ms + 1 - 7 * DAY).toISOString(),
      end_time: new Date(clock.ms + 1).toISOString(),
      page_query: { page_size: 10 },
    });
    expect(failing.tests.map((t: { id: string }) => t.id)).toEqual([flakyId]);
    acme = await DashboardClient.signIn(server.url, server.api.token);
  });
  afterAll(() => server?.close());

  test("get-test-details carries the test's history: runs and failures per day, and the PRs it failed on", async () => {
    const { history } = await details(flakyId);
    expect(history.days).toHaveLength(30);
    expect(history.days.slice(-3)).toEqual([
      { date: "2026-11-22", runs: 1, failures: 0 },
      { date: "2026-11-23", runs: 1, failures: 1 },
      { date: "2026-11-24", runs: 2, failures: 1 },
    ]);
    expect(history.pull_requests_impacted.map((p: { number: number; failures: number }) => [p.number, p.failures])).toEqual([
      [14, 1],
      [12, 1],
    ]);
    expect(history.pull_requests_impacted[0].html_url).toBe("https://github.com/acme/web/pull/14");
  });

  test("set-quarantine-setting keeps an optional reason; a too long one is refused naming the field", async () => {
    const set = await server.api.ok("flaky-tests/set-quarantine-setting", { ...web, test_id: flakyId, setting: "always", reason: "  flakes on the shared runner  " });
    expect(set.test).toMatchObject({ quarantine_setting: "always", quarantine_reason: "flakes on the shared runner", quarantined: true });
    const bad = await server.api.call("flaky-tests/set-quarantine-setting", { ...web, test_id: flakyId, setting: "auto", reason: "x".repeat(1001) });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].path).toBe("reason");
    const cleared = await server.api.ok("flaky-tests/set-quarantine-setting", { ...web, test_id: flakyId, setting: "auto" });
    expect(cleared.test).toMatchObject({ quarantine_setting: "auto", quarantine_reason: null });
  });

  test("/tests lists the organization's repositories; a repository's page its failing tests in a range and its quarantined tests", async () => {
    const index = await acme.get("/tests");
    expect(index.status).toBe(200);
    expect(index.text).toContain(`href="${testsPath}"`);
    const page = await acme.get(testsPath);
    expect(page.status).toBe(200);
    // Failing in the last 24 hours (the default range): refund_partial, linked to its page.
    expect(page.text).toMatch(new RegExp(`<table class="tests" id="failing-tests">[\\s\\S]*href="${testPath(flakyId)}">refund_partial</a>`));
    expect(page.text).toMatch(/<option value="24h" selected>/);
    expect(page.text).toMatch(new RegExp(`<ul class="quarantined" id="quarantined-tests"><li data-test="${flakyId}">`));
    // Who quarantined it and why: detection, with the rule that made it flaky.
    expect(page.text).toMatch(/quarantined automatically while flaky since <time datetime="[^"]+">[^<]+<\/time> · failed and passed on the same commit/);
    expect(page.text).toContain("@acme/payments");
    // Two hours on, nothing failed in the last hour.
    clock.advance(2 * 3600_000);
    expect((await acme.get(`${testsPath}?range=1h`)).text).toContain("No test failed in this range.");
    expect((await acme.get(`${testsPath}?range=7d`)).text).toMatch(/<option value="7d" selected>/);
    const bad = await acme.get(`${testsPath}?range=forever`);
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("range: must be one of 1h, 24h, 3d, 7d");
    clock.advance(-2 * 3600_000);
  });

  test("a test's page shows its chart data, failure signatures, owners, PRs impacted and the quarantine form", async () => {
    const { status, text } = await acme.get(testPath(flakyId));
    expect(status).toBe(200);
    expect(text).toContain("<h1>refund_partial</h1>");
    const chart = /<script type="application\/json" id="history">([^<]*)<\/script>/.exec(text);
    const data = JSON.parse(chart![1]!);
    expect(data.series.map((s: { label: string; values: number[] }) => [s.label, s.values.slice(-3)])).toEqual([
      ["runs", [1, 1, 2]],
      ["failed", [0, 1, 1]],
    ]);
    expect(text).toContain('data-chart="history"');
    expect(text).toMatch(/<ul class="signatures"><li><code>[^<]*(503|timeout)[^<]*<\/code>/);
    // Each failure mode's latest occurrence as reported, with the CI job it came from (issue 25).
    expect(text).toContain('<a class="job" href="https://ci.example/jobs/14">CI job</a>');
    expect(text).toContain("<pre>timeout after 5000 ms\ntrace</pre>");
    expect(text).toContain("<pre>expected 200, got 503\ntrace</pre>");
    expect(text).toContain("<li>@acme/payments</li>");
    expect(text).toContain('<a href="https://github.com/acme/web/pull/14">#14</a>');
    expect(text).toContain('<a href="https://github.com/acme/web/pull/12">#12</a>');
    expect(text).toMatch(/<input type="radio" name="setting" value="auto" checked>/);
    expect(text).toContain('<label for="reason">');
    // No inline script, no event attribute, no inline style: the page's CSP would refuse them.
    const scripts = [...text.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1]!);
    expect(scripts.filter((attrs) => !/\bsrc="\/assets\//.test(attrs) && !/type="application\/json"/.test(attrs))).toEqual([]);
    expect(text).not.toMatch(/\son[a-z]+=|hx-on|style="/);
  });

  test("the layout links to the flaky-test pages", async () => {
    expect((await acme.get("/")).text).toContain('<a href="/tests">Flaky tests</a>');
    expect((await acme.get("/tests")).text).toContain('<a href="/tests" aria-current="page">Flaky tests</a>');
  });

  test("the quarantine override needs the session's CSRF token and the dashboard's origin; then it goes through set-quarantine-setting", async () => {
    const csrf = await acme.csrf();
    const always = form(flakyId, { setting: "always", reason: "blocks the payments team" });
    expect((await acme.post("/actions/test", always)).status).toBe(403);
    expect((await acme.post("/actions/test", { ...always, csrf: `${csrf.slice(0, -2)}xx` })).status).toBe(403);
    expect((await acme.post("/actions/test", { ...always, csrf }, { origin: "https://evil.example" })).status).toBe(403);
    expect((await details(flakyId)).test.quarantine_setting).toBe("auto");
    const done = await acme.post("/actions/test", { ...always, csrf });
    // Saved: the browser is sent to the test's own address (POST, redirect, GET), which says so.
    expect(done.status).toBe(303);
    const landed = done.headers.get("location")!;
    expect(landed).toMatch(/^\/tests\/github\.com\/acme\/[^/]+\/[^/?]+\?saved=always$/);
    const shown = await acme.get(landed);
    expect(shown.text).toContain("Quarantine setting saved: always.");
    expect(shown.text).toContain("reason: blocks the payments team");
    expect((await details(flakyId)).test).toMatchObject({ quarantine_setting: "always", quarantine_reason: "blocks the payments team", quarantined: true });
    const refused = await acme.post("/actions/test", { ...form(flakyId, { setting: "sometimes" }), csrf });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain("setting:");
    expect((await acme.post("/actions/test", { ...form(flakyId, { setting: "auto", reason: "" }), csrf })).status).toBe(303);
    expect((await details(flakyId)).test).toMatchObject({ quarantine_setting: "auto", quarantine_reason: null });
  });

  test("a read token sees the test without the form, and its forged POST is refused (403)", async () => {
    const { token } = await createToken(server.greenline.services.db, "acme", "viewer", "read");
    const viewer = await DashboardClient.signIn(server.url, token);
    const page = await viewer.get(testPath(flakyId));
    expect(page.status).toBe(200);
    expect(page.text).toContain("refund_partial");
    expect(page.text).not.toContain('name="setting"');
    expect(page.text).not.toContain('action="/actions/test"');
    expect(page.text).toContain("read-only access: actions need a token with write");
    const forged = await viewer.post("/actions/test", { ...form(flakyId, { setting: "never" }), csrf: await viewer.csrf() });
    expect(forged.status).toBe(403);
    expect(forged.text).toContain("read-only");
    expect((await details(flakyId)).test.quarantine_setting).toBe("auto");
  });

  test("another organization's repository and test are 404, exactly like ones that do not exist, and its override changes nothing", async () => {
    const { token } = await createToken(server.greenline.services.db, "globex", "test");
    const globex = await DashboardClient.signIn(server.url, token);
    expect((await globex.get("/tests")).text).not.toContain("acme/web");
    const theirs = await globex.get(testPath(flakyId));
    const missing = await globex.get(testPath("6ba7b810-9dad-51d1-80b4-00c04fd430c8"));
    expect([theirs.status, missing.status]).toEqual([404, 404]);
    expect(theirs.text).toBe(missing.text);
    const theirRepo = await globex.get(testsPath);
    const noRepo = await globex.get("/tests/github.com/acme/nope");
    expect([theirRepo.status, noRepo.status]).toEqual([404, 404]);
    expect(theirRepo.text).toBe(noRepo.text);
    expect(theirRepo.text).toBe(theirs.text);
    const override = await globex.post("/actions/test", { ...form(flakyId, { setting: "never" }), csrf: await globex.csrf() });
    expect(override.status).toBe(404);
    expect((await details(flakyId)).test.quarantine_setting).toBe("auto");
    // Signed out, the pages send a visitor to sign in.
    const visitor = await fetch(`${server.url}${testPath(flakyId)}`, { redirect: "manual" });
    expect([visitor.status, visitor.headers.get("location")]).toEqual([303, `/sign-in?next=${encodeURIComponent(testPath(flakyId))}`]);
  });
});
