import { readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { projectRoot } from "../../src/paths.js";
import { BACKENDS } from "../support/backends.js";
import { snapshotState } from "../support/snapshot.js";
import { repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const fixture = (name: string) => readFileSync(join(projectRoot, "test/fixtures/junit", name), "utf8");
const DIALECTS = ["jest-junit.xml", "pytest.xml", "surefire.xml", "go-junit-report.xml", "gotestsum-rerun.xml", "nested.xml"];
const HOUR = 3600_000;
const DAY = 24 * HOUR;

type Case = { name: string; outcome: "pass" | "fail" | "skip"; message?: string; classname?: string; file?: string };

const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

/** A JUnit report of one suite run at `at`; `go` makes it a Go report (whose repeated testcases are reruns). */
function report(at: Date, cases: Case[], suite = "suite", go = false): string {
  const body = cases
    .map((c) => {
      const attrs = `classname="${c.classname ?? "pkg.Tests"}" name="${c.name}"${c.file ? ` file="${c.file}"` : ""}`;
      if (c.outcome === "pass") return `<testcase ${attrs}/>`;
      if (c.outcome === "skip") return `<testcase ${attrs}><skipped/></testcase>`;
      return `<testcase ${attrs}><failure message="${escape(c.message ?? "boom")}">trace</failure></testcase>`;
    })
    .join("\n");
  const properties = go ? `<properties><property name="go.version" value="go1.23.2 linux/amd64"/></properties>\n` : "";
  return `<?xml version="1.0"?>\n<testsuites><testsuite name="${suite}" timestamp="${at.toISOString()}">\n${properties}${body}\n</testsuite></testsuites>`;
}

describe.each(BACKENDS)("flaky tests on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock(Date.parse("2026-11-22T12:00:00Z"));
  const web = { repo: repo("web"), org_url_slug: "acme" };
  let sha = 0;
  const nextSha = () => (++sha).toString(16).padStart(40, "a");
  const upload = (junit_xml: string[], extra: Record<string, unknown> = {}) =>
    server.api.ok<{ upload_id: string; test_cases: number; failures: number }>("flaky-tests/upload", { ...web, commit_sha: nextSha(), branch: "main", junit_xml, ...extra });
  const failing = (hoursBack = 24 * 7, page_size = 100, page_token = "") =>
    server.api.ok("flaky-tests/list-failing-tests", {
      ...web,
      start_time: new Date(clock.ms + 1 - hoursBack * HOUR).toISOString(),
      end_time: new Date(clock.ms + 1).toISOString(),
      page_query: { page_size, page_token },
    });
  const quarantined = () => server.api.ok("flaky-tests/list-quarantined-tests", { ...web, page_query: { page_size: 100 } });
  const details = (test_id: string) => server.api.ok("flaky-tests/get-test-details", { ...web, test_id }).then((b) => b.test);
  const idOf = (name: string) => server.api.ok("flaky-tests/check-quarantine", { ...web, tests: [{ name, classname: "pkg.Tests", parent: "suite" }] });

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
  });
  afterAll(() => server?.close());

  test("an upload of every dialect: distinct tests, failures, and in-run retries found flaky and quarantined", async () => {
    const answer = await upload(DIALECTS.map(fixture), { commit_sha: "1".repeat(40) });
    // 23 testcases; gotestsum's rerun repeats one test. Failures: jest 1, pytest 2, Surefire 3, go 1, gotestsum 1, nested 1.
    expect(answer).toMatchObject({ test_cases: 22, failures: 9 });
    expect(answer.upload_id).toMatch(/^[0-9a-f-]{36}$/);
    const list = await quarantined();
    expect(list.quarantined_tests.map((t: any) => t.name).sort()).toEqual(["TestDrainTimeout", "refunds", "retriesPayment"]);
    expect(list.quarantined_tests[0]).toMatchObject({ status: "FLAKY", quarantine_setting: "AUTO_QUARANTINE" });
    const drain = await details(list.quarantined_tests.find((t: any) => t.name === "TestDrainTimeout").test_case_id);
    expect(drain).toMatchObject({
      status: { value: "flaky", reason: `failed, then passed on a retry within one run on commit ${"1".repeat(12)}` },
      quarantined: true,
      parent: "github.com/acme/api/queue",
      classname: "github.com/acme/api/queue",
      failure_rate_last_7d: 1,
    });
    // Test cases failing in the window: suites ran on 2026-11-20, so a 7-day window holds all 9.
    expect((await failing()).page.total_rows).toBe(9);
  });

  test("a large upload sent without a Content-Length (chunked) reads as one sent with it", async () => {
    const cases = Array.from({ length: 3000 }, (_, i) => ({ name: `chunked_${i} ünïcode`, outcome: (i % 100 === 0 ? "fail" : "pass") as "fail" | "pass" }));
    const body = JSON.stringify({ ...web, commit_sha: nextSha(), branch: "main", junit_xml: [report(clock.now(), cases, "chunked")] });
    expect(body.length).toBeGreaterThan(200_000);
    const answer = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = request(`${server.url}/v1/flaky-tests/upload`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-token": server.api.token, "transfer-encoding": "chunked" },
      });
      req.on("response", (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      });
      req.on("error", reject);
      for (let at = 0; at < body.length; at += 10_000) req.write(body.slice(at, at + 10_000));
      req.end();
    });
    expect(answer).toMatchObject({ status: 200, body: { test_cases: 3000, failures: 30 } });
    const names = (await failing()).tests.map((t: any) => t.name);
    expect(names).toContain("chunked_0 ünïcode");
  });

  test("a report over 64 KiB holding a NUL or a lone surrogate is refused naming it, line and column; other control characters and look-alike text are stored as sent", async () => {
    const filler = Array.from({ length: 1500 }, (_, i) => ({ name: `filler_${i}`, outcome: "pass" as const }));
    const before = await snapshotState(server.greenline.services.db);
    for (const bad of ["\u0000", "\ud800", "\udfff"]) {
      const xml = report(clock.now(), [...filler, { name: `odd${bad}name`, outcome: "fail" }]);
      expect(xml.length).toBeGreaterThan(64 * 1024);
      const refused = await server.api.call("flaky-tests/upload", { ...web, commit_sha: nextSha(), branch: "main", junit_xml: [report(clock.now(), filler.slice(0, 1)), xml] });
      expect(refused.status).toBe(400);
      expect(refused.body.error.details).toEqual([
        { path: "junit_xml[1]", message: expect.stringMatching(/^is not a JUnit report: line 1503, column 42: (NUL characters are not allowed in XML|a lone surrogate \(U\+D[8F]\w\w\) is not a character)$/) },
      ]);
    }
    expect(await snapshotState(server.greenline.services.db)).toBe(before);
    // What looks like an escape in the report's text (a backslash, u, four digits) is text.
    const odd = "ctrl\u0001 é 😀 \\u0000 \\ud800";
    await upload([report(clock.now(), [...filler, { name: `${odd}&#1;`, outcome: "fail" }])]);
    expect((await failing()).tests.map((t: any) => t.name)).toContain(`${odd}\u0001`);
  });

  test("an upload is atomic: a malformed report (400 naming file, line, column), a wrong org or an oversize body store nothing", async () => {
    const other = await server.clientFor("intruder");
    const before = await failing();
    const stored = await snapshotState(server.greenline.services.db);
    const bad = await server.api.call("flaky-tests/upload", {
      ...web,
      commit_sha: nextSha(),
      branch: "main",
      junit_xml: [report(clock.now(), [{ name: "fresh_failure", outcome: "fail" }]), "<testsuites>\n  <testsuite>\n    <testcase name='a'>\n  </testsuite>"],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].path).toBe("junit_xml[1]");
    const unseen = await server.api.call("flaky-tests/upload", { repo: repo("never-seen"), org_url_slug: "acme", commit_sha: nextSha(), branch: "main", junit_xml: ["<testsuite><testcase name='x'>"] });
    expect(unseen.status).toBe(400); // and the repository is not registered (the snapshot below)
    expect(bad.body.error.message).toMatch(/line 4, column \d+/);
    const elsewhere = await server.api.call("flaky-tests/upload", { ...web, org_url_slug: "other", commit_sha: nextSha(), branch: "main", junit_xml: [report(clock.now(), [{ name: "fresh_failure", outcome: "fail" }])] });
    expect(elsewhere.status).toBe(404);
    const foreign = await other.call("flaky-tests/upload", { ...web, org_url_slug: "intruder", commit_sha: nextSha(), branch: "main", junit_xml: [report(clock.now(), [{ name: "fresh_failure", outcome: "fail" }])] });
    expect(foreign.status).toBe(404);
    const huge = await server.api.call("flaky-tests/upload", { ...web, commit_sha: nextSha(), branch: "main", junit_xml: ["x".repeat(21 * 1024 * 1024)] });
    expect(huge.status).toBe(413);
    const invalid = await server.api.call("flaky-tests/upload", { ...web, commit_sha: "not a sha", branch: "main", junit_xml: [] });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.details.map((d: any) => d.path).sort()).toEqual(["commit_sha", "junit_xml"]);
    expect(await snapshotState(server.greenline.services.db)).toBe(stored);
    expect(await failing()).toEqual(before);
    // Another organization sees none of it.
    const theirs = await other.call("flaky-tests/get-test-details", { ...web, org_url_slug: "intruder", test_id: before.tests[0].id });
    expect(theirs.status).toBe(404);
  });

  test("a test that fails and passes on the same commit is flaky and quarantined; overrides and check-quarantine", async () => {
    const commit = nextSha();
    await upload(
      [
        report(clock.now(), [
          { name: "test_race", outcome: "fail", message: "race lost after 31ms" },
          { name: "test_steady", outcome: "pass" },
        ]),
      ],
      { commit_sha: commit },
    );
    expect((await idOf("test_race")).quarantined_test_ids).toEqual([]); // one failure is not yet evidence
    await upload(
      [
        report(clock.now(), [
          { name: "test_race", outcome: "pass" },
          { name: "test_steady", outcome: "pass" },
        ]),
      ],
      { commit_sha: commit },
    );
    const check = await server.api.ok("flaky-tests/check-quarantine", {
      ...web,
      tests: [
        { name: "test_race", classname: "pkg.Tests", parent: "suite" },
        { name: "test_steady", classname: "pkg.Tests", parent: "suite" },
      ],
    });
    expect(check.quarantining_enabled).toBe(true);
    expect(check.quarantined_test_ids).toHaveLength(1);
    const race = check.quarantined_test_ids[0];
    expect(await details(race)).toMatchObject({ status: { value: "flaky", reason: `failed and passed on the same commit ${commit.slice(0, 12)}` }, quarantined: true, quarantine_setting: "auto" });

    // Never quarantine: it stays flaky but leaves quarantine; auto puts it back; always holds a healthy test.
    const never = await server.api.ok("flaky-tests/set-quarantine-setting", { ...web, test_id: race, setting: "NEVER_QUARANTINE" });
    expect(never.test).toMatchObject({ quarantined: false, quarantine_setting: "never", status: { value: "flaky" } });
    expect((await server.api.ok("flaky-tests/check-quarantine", { ...web, test_ids: [race] })).quarantined_test_ids).toEqual([]);
    expect((await server.api.ok("flaky-tests/set-quarantine-setting", { ...web, test_id: race, setting: "auto" })).test.quarantined).toBe(true);
    expect((await idOf("test_steady")).quarantined_test_ids).toEqual([]);
    const bad = await server.api.call("flaky-tests/set-quarantine-setting", { ...web, test_id: race, setting: "sometimes" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].path).toBe("setting");
    const unknown = await server.api.call("flaky-tests/set-quarantine-setting", { ...web, test_id: "6ba7b810-9dad-51d1-80b4-00c04fd430c8", setting: "always" });
    expect(unknown.status).toBe(404);

    // A person's quarantine handed back to detection, which keeps it: detection's quarantine starts then (it covers the ways the test failed until then).
    const quarantinedAt = async () =>
      (await server.api.ok("flaky-tests/list-quarantined-tests", { ...web, page_query: { page_size: 50 } })).quarantined_tests.find((t: { test_case_id: string }) => t.test_case_id === race).quarantined_at;
    const since = await quarantinedAt();
    await server.api.ok("flaky-tests/set-quarantine-setting", { ...web, test_id: race, setting: "always" });
    expect(await quarantinedAt()).toBe(since);
    clock.advance(60_000);
    await server.api.ok("flaky-tests/set-quarantine-setting", { ...web, test_id: race, setting: "auto" });
    expect(await quarantinedAt()).toBe(new Date(clock.ms).toISOString());
    clock.advance(-60_000);
  });

  test("a rerun thousands of testcases after the failed attempt (another batch) still makes one flaky result", async () => {
    const filler = Array.from({ length: 15_000 }, (_, i) => ({ name: `filler_${i}_${"x".repeat(60)}`, outcome: "pass" as const }));
    const xml = report(clock.now(), [{ name: "test_far_rerun", outcome: "fail", message: "flaked" }, ...filler, { name: "test_far_rerun", outcome: "pass" }], "suite", true);
    expect(xml.length).toBeGreaterThan(1.2 * 1024 * 1024);
    expect(await upload([xml])).toMatchObject({ test_cases: 15_001, failures: 1 });
    const id = (await idOf("test_far_rerun")).quarantined_test_ids[0];
    expect(await details(id)).toMatchObject({ status: { value: "flaky" }, failure_rate_last_24h: 1, most_common_failures: [{ summary: "flaked", occurrence_count: 1 }] });
    // One result row for the test in this upload, holding both attempts.
    const rows = await server.greenline.services.db.read((tx) => tx.testResult.findMany({ where: { testCase: { id } } }));
    expect(rows.map((r) => [r.failed, r.passed])).toEqual([[true, true]]);

    // Outside a Go report a repeat is a variant: one failing thousands of testcases after a passing one fails the run.
    const variants = report(clock.now(), [{ name: "test_far_variant", outcome: "pass" }, ...filler, { name: "test_far_variant", outcome: "fail" }]);
    expect(await upload([variants])).toMatchObject({ test_cases: 15_001, failures: 1 });
    const variantRows = await server.greenline.services.db.read((tx) => tx.testResult.findMany({ where: { testCase: { name: "test_far_variant" } } }));
    expect(variantRows.map((r) => [r.failed, r.passed])).toEqual([[true, false]]);
    expect((await idOf("test_far_variant")).quarantined_test_ids).toEqual([]);

    // Skipped first, run (and failed) thousands of testcases later: one result, one failure.
    const later = report(clock.now(), [{ name: "test_skipped_then_run", outcome: "skip" }, ...filler, { name: "test_skipped_then_run", outcome: "fail", message: "late" }]);
    expect(await upload([later])).toMatchObject({ test_cases: 15_001, failures: 1 });
    const skippedThenRun = await server.greenline.services.db.read((tx) => tx.testResult.findMany({ where: { testCase: { name: "test_skipped_then_run" } } }));
    expect(skippedThenRun.map((r) => [r.failed, r.passed])).toEqual([[true, false]]);
  });

  test("a test failing almost every run is broken, with its figures, and never quarantined automatically", async () => {
    for (let i = 0; i < 10; i++) {
      await upload([report(new Date(clock.ms - i * HOUR), [{ name: "test_db_schema", outcome: i === 0 ? "pass" : "fail", message: `relation "users_${i}" does not exist` }])]);
    }
    const tests = (await failing()).tests.filter((t: any) => t.name === "test_db_schema");
    expect(tests).toHaveLength(1);
    expect(tests[0]).toMatchObject({
      status: { value: "broken", reason: "failed 9 of 10 runs in the last 7 days (90%, broken at ≥ 80%)" },
      quarantined: false,
      failure_rate_last_7d: 0.9,
      failure_rate_last_24h: 0.9,
      most_common_failures: [{ summary: 'relation "users_<n>" does not exist', occurrence_count: 9 }],
    });
    expect(tests[0].most_common_failures[0].last_occurrence).toBe(new Date(clock.ms - HOUR).toISOString());
    // The latest occurrence as reported (message, then its text), whichever order the uploads came in; no job link given.
    expect(tests[0].most_common_failures[0]).toMatchObject({ last_failure_text: 'relation "users_1" does not exist\ntrace', last_job_url: null });
  });

  test("rates over 7 days and 24 hours, PRs impacted, failure kinds, owners from the upload's CODEOWNERS, tickets", async () => {
    const owners = "* @acme/everyone\n/src/payments/ @acme/payments\n";
    const cases = (outcome: Case["outcome"], message?: string): Case[] => [{ name: "charges card", classname: "Payments", file: "src/payments/charge.test.ts", outcome, message }];
    await upload([report(new Date(clock.ms - 3 * DAY), cases("fail", "Timeout of 5000ms exceeded"))], { pr_number: 11, codeowners: owners });
    await upload([report(new Date(clock.ms - 3 * DAY), cases("fail", "Timeout of 7000ms exceeded"))], { pr_number: 12, codeowners: owners });
    await upload([report(new Date(clock.ms - 2 * HOUR), cases("fail", "ECONNRESET"))], { pr_number: 12, codeowners: owners });
    await upload([report(new Date(clock.ms - HOUR), cases("pass"))], { codeowners: owners });
    const test = (await failing(24 * 7)).tests.find((t: any) => t.name === "charges card");
    expect(test).toMatchObject({
      failure_rate_last_7d: 0.75,
      failure_rate_last_24h: 0.5,
      pull_requests_impacted_last_7d: 2,
      codeowners: ["@acme/payments"],
      file_path: "src/payments/charge.test.ts",
      html_url: "https://github.com/acme/web/blob/HEAD/src/payments/charge.test.ts",
      repository: { html_url: "https://github.com/acme/web" },
    });
    // Trunk documents ticket as an object: left out, never null, while none is linked.
    expect(test).not.toHaveProperty("ticket");
    expect(test.most_common_failures.map((f: any) => [f.summary, f.occurrence_count])).toEqual([
      ["Timeout of <n>ms exceeded", 2],
      ["ECONNRESET", 1],
    ]);
    // A 24-hour window lists it (it failed 2 hours ago); a window that ends before its failures does not.
    expect((await failing(24)).tests.map((t: any) => t.name)).toContain("charges card");
    const early = await server.api.ok("flaky-tests/list-failing-tests", {
      ...web,
      start_time: new Date(clock.ms - 7 * DAY).toISOString(),
      end_time: new Date(clock.ms - 3 * DAY).toISOString(),
      page_query: { page_size: 100 },
    });
    expect(early.tests.map((t: any) => t.name)).not.toContain("charges card");

    const linked = await server.api.ok("flaky-tests/link-ticket-to-test-case", { ...web, test_case_id: test.id, ticket_url: "https://acme.atlassian.net/browse/PAY-42" });
    expect(linked.test.ticket).toEqual({ html_url: "https://acme.atlassian.net/browse/PAY-42" });
    const badUrl = await server.api.call("flaky-tests/link-ticket-to-test-case", { ...web, test_case_id: test.id, ticket_url: "javascript:alert(1)" });
    expect(badUrl.status).toBe(400);
    expect(badUrl.body.error.details[0].path).toBe("ticket_url");
    expect((await server.api.ok("flaky-tests/link-ticket-to-test-case", { ...web, test_case_id: test.id, ticket_url: null })).test).not.toHaveProperty("ticket");
  });

  test("owners come from the repository's CODEOWNERS through the code host when the upload has none", async () => {
    const sandbox = server.greenline.sandbox!;
    const commit = await sandbox.pushToBranch(repo("web"), "main", { ".github/CODEOWNERS": "*.py @acme/python\n" });
    await upload([report(clock.now(), [{ name: "test_owned", classname: "tests.owned", file: "tests/test_owned.py", outcome: "fail" }])], { commit_sha: commit });
    const test = (await failing(1)).tests.find((t: any) => t.name === "test_owned");
    expect(test.codeowners).toEqual(["@acme/python"]);
    // CODEOWNERS changes: the known test's owners follow at its next upload.
    const next = await sandbox.pushToBranch(repo("web"), "main", { ".github/CODEOWNERS": "*.py @acme/python\ntests/ @acme/qa\n" });
    await upload([report(clock.now(), [{ name: "test_owned", classname: "tests.owned", file: "tests/test_owned.py", outcome: "pass" }])], { commit_sha: next });
    expect((await details(test.id)).codeowners).toEqual(["@acme/qa"]);
  });

  test("pages are stable while new failures arrive; prev and last tokens; tokens are checked", async () => {
    const first = await failing(24 * 7, 3);
    const total = first.page.total_rows;
    expect(first.page).toMatchObject({ page_index: 0, total_pages: Math.ceil(total / 3), prev_page_token: "" });
    expect(first.tests).toHaveLength(3);
    // New failing tests arrive between pages.
    await upload([
      report(clock.now(), [
        { name: "late_1", outcome: "fail" },
        { name: "late_2", outcome: "fail" },
      ]),
    ]);
    const seen = first.tests.map((t: any) => t.id);
    let page = first.page;
    while (page.next_page_token) {
      const next = await failing(24 * 7, 3, page.next_page_token);
      seen.push(...next.tests.map((t: any) => t.id));
      expect(next.page.page_index).toBe(page.page_index + 1);
      page = next.page;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toHaveLength(total + 2);
    const previous = await failing(24 * 7, 3, page.prev_page_token);
    expect(previous.page.page_index).toBe(page.page_index - 1);
    expect(previous.tests.map((t: any) => t.id)).toEqual(seen.slice(seen.length - previous.tests.length - (seen.length % 3 || 3), seen.length - (seen.length % 3 || 3)));
    const last = await failing(24 * 7, 3, page.last_page_token);
    expect(last.tests.map((t: any) => t.id)).toEqual(seen.slice((last.page.total_pages - 1) * 3));
    const forged = await server.api.call("flaky-tests/list-failing-tests", {
      ...web,
      start_time: new Date(clock.ms - DAY).toISOString(),
      end_time: clock.now().toISOString(),
      page_query: { page_size: 3, page_token: Buffer.from('{"p":1,"after":-4}').toString("base64url") },
    });
    expect(forged.status).toBe(400);
  });

  test("settings: defaults, validation naming the field, and re-judging under new thresholds", async () => {
    expect((await server.api.ok("flaky-tests/get-settings", web)).settings).toEqual({ autoQuarantine: true, windowDays: 7, minSamples: 10, flakyRate: 0.3, brokenRate: 0.8, recoveryDays: 7 });
    const bad = await server.api.call("flaky-tests/update-settings", { ...web, settings: { flakyRate: 1.5 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].path).toBe("settings.flakyRate");
    const unknown = await server.api.call("flaky-tests/update-settings", { ...web, settings: { quarantineEverything: true } });
    expect(unknown.status).toBe(400);
    const inverted = await server.api.call("flaky-tests/update-settings", { ...web, settings: { flakyRate: 0.9 } });
    expect(inverted.status).toBe(400);
    const before = (await quarantined()).page.total_rows;
    expect(before).toBeGreaterThan(0);
    const off = await server.api.ok("flaky-tests/update-settings", { ...web, settings: { autoQuarantine: false } });
    expect(off.settings).toMatchObject({ autoQuarantine: false, minSamples: 10 });
    expect((await quarantined()).page.total_rows).toBe(0);
    await server.api.ok("flaky-tests/update-settings", { ...web, settings: { autoQuarantine: true } });
    expect((await quarantined()).page.total_rows).toBe(before);
  });

  test("flaky tests recover after the quiet period: the worker re-judges them and lifts automatic quarantine", async () => {
    const before = await quarantined();
    expect(before.page.total_rows).toBeGreaterThan(0);
    clock.advance(8 * DAY);
    await server.greenline.worker.tick();
    const after = await quarantined();
    expect(after.page.total_rows).toBe(0);
    const test = await details(before.quarantined_tests[0].test_case_id);
    expect(test.status.value).toBe("healthy");
    expect(test.status.reason).toMatch(/^no pass-on-retry for 7 days; failed \d+ of \d+ runs in the last 7 days$/);
    expect(test.status.timestamp).toBe(clock.now().toISOString());
  });
});
