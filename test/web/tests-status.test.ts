import { BACKENDS } from "../support/backends.js";
import { DashboardClient } from "../support/dashboard.js";
import { repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const web = { repo: repo("web"), org_url_slug: "acme" };
const testsPath = "/tests/github.com/acme/web";

function report(cases: { name: string; fails: boolean }[]): string {
  const body = cases.map((c) => `<testcase classname="pay.Refunds" name="${c.name}" file="src/pay/refunds.test.ts">${c.fails ? `<failure message="expected 200, got 503">trace</failure>` : ""}</testcase>`).join("");
  return `<?xml version="1.0"?><testsuites><testsuite name="refunds">${body}</testsuite></testsuites>`;
}

/** Every status badge of a page: test id → the word shown. */
function badgesOf(page: string): [string, string][] {
  const rows = [...page.matchAll(/<(?:tr|li) data-test="([^"]+)">([\s\S]*?)<\/(?:tr|li)>/g)];
  return rows.map((row) => {
    const badge = /<span class="state test-(\w+)" data-status="(\w+)">(\w+)<\/span>/.exec(row[2]!);
    return [row[1]!, badge ? `${badge[1]}/${badge[2]}/${badge[3]}` : "none"];
  });
}

/**
 * Issue 22, item 9: a test failing 100% of its runs showed a green "healthy" badge. The status
 * the API answers and the word every flaky-test page shows are one verdict (classify).
 */
describe.each(BACKENDS)("status words on the flaky-test pages on $name", (backend) => {
  let server: TestServer;
  let acme: DashboardClient;
  const clock = new TestClock(Date.parse("2026-11-22T12:00:00Z"));
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
    // always_fails fails all 3 of its runs (too few for the rate rules); sometimes fails 1 of 3; steady passes.
    for (let i = 0; i < 3; i++) {
      const cases = [
        { name: "always_fails", fails: true },
        { name: "sometimes", fails: i === 1 },
        { name: "steady", fails: false },
      ];
      await server.api.ok("flaky-tests/upload", { ...web, commit_sha: String(i + 1).repeat(40), branch: "main", junit_xml: [report(cases)] });
      clock.advance(60_000);
    }
    const check = await server.api.ok("flaky-tests/check-quarantine", {
      ...web,
      tests: ["always_fails", "sometimes", "steady"].map((name) => ({ name, classname: "pay.Refunds", parent: "refunds", file: "src/pay/refunds.test.ts" })),
    });
    expect(check.quarantined_test_ids).toEqual([]);
    const failing = await server.api.ok("flaky-tests/list-failing-tests", {
      ...web,
      start_time: new Date(clock.ms - 3600_000).toISOString(),
      end_time: new Date(clock.ms + 1).toISOString(),
      page_query: { page_size: 10 },
    });
    for (const t of failing.tests) ids[t.name] = t.id;
    // Quarantined by hand, so the quarantined list shows it too.
    await server.api.ok("flaky-tests/set-quarantine-setting", { ...web, test_id: ids.always_fails, setting: "always" });
    acme = await DashboardClient.signIn(server.url, server.api.token);
  });
  afterAll(() => server?.close());

  const apiStatus = async (id: string) => (await server.api.ok("flaky-tests/get-test-details", { ...web, test_id: id })).test.status.value as string;

  test("a test failing every one of its runs is broken in the API, with the rule in its reason", async () => {
    const details = (await server.api.ok("flaky-tests/get-test-details", { ...web, test_id: ids.always_fails })).test;
    expect(details.status).toMatchObject({ value: "broken", reason: expect.stringContaining("every run failed") });
    expect(details.failure_rate_last_24h).toBe(1);
    expect(await apiStatus(ids.sometimes!)).toBe("healthy");
    const unhealthy = await server.api.ok("flaky-tests/list-unhealthy-tests", { ...web, page_query: { page_size: 10 } });
    expect(unhealthy.unhealthy_tests.map((t: { name: string; status: string }) => [t.name, t.status])).toEqual([["always_fails", "BROKEN"]]);
  });

  test("the repository's page (failing and quarantined lists) shows each test's status as the API answers it: broken, never healthy, for the test that always fails", async () => {
    const page = await acme.get(testsPath);
    const badges = badgesOf(page.text);
    // In the failing table and in the quarantined list.
    expect(badges.filter(([id]) => id === ids.always_fails)).toEqual([
      [ids.always_fails, "broken/broken/broken"],
      [ids.always_fails, "broken/broken/broken"],
    ]);
    for (const [id, badge] of badges) {
      const status = await apiStatus(id);
      expect([id, badge]).toEqual([id, `${status}/${status}/${status}`]);
    }
  });

  test("the test's own page shows the API's status and its reason", async () => {
    for (const [name, id] of Object.entries(ids)) {
      const page = await acme.get(`${testsPath}/${id}`);
      const status = await apiStatus(id);
      expect([name, /<p><span class="state test-(\w+)" data-status="(\w+)">(\w+)<\/span>/.exec(page.text)?.slice(1)]).toEqual([name, [status, status, status]]);
    }
    const page = await acme.get(`${testsPath}/${ids.always_fails}`);
    // The reason is the one recorded when the status changed (its first run).
    expect(page.text).toMatch(/data-status="broken">broken<\/span> <span class="muted">failed 1 of 1 runs in the last 7 days: every run failed/);
    expect(page.text).not.toContain("test-healthy");
  });
});
