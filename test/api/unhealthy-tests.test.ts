import { BACKENDS } from "../support/backends.js";
import { repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const HOUR = 3600_000;

function report(at: Date, cases: { name: string; fails: boolean }[]): string {
  const body = cases.map((c) => (c.fails ? `<testcase classname="pkg.Tests" name="${c.name}"><failure message="boom">trace</failure></testcase>` : `<testcase classname="pkg.Tests" name="${c.name}"/>`)).join("\n");
  return `<?xml version="1.0"?>\n<testsuites><testsuite name="suite" timestamp="${at.toISOString()}">\n${body}\n</testsuite></testsuites>`;
}

/** Trunk's flaky-tests/list-unhealthy-tests: the tests flaky or broken now. */
describe.each(BACKENDS)("list-unhealthy-tests on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock(Date.parse("2026-11-22T12:00:00Z"));
  const web = { repo: repo("web"), org_url_slug: "acme" };
  const unhealthy = (extra: object = {}) => server.api.ok("flaky-tests/list-unhealthy-tests", { ...web, page_query: { page_size: 100 }, ...extra });
  const names = (answer: { unhealthy_tests: { name: string }[] }) => answer.unhealthy_tests.map((t) => t.name).sort();

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
    // test_race fails and passes on one commit (flaky); test_schema passes once then fails 9 runs (broken); test_steady always passes.
    for (let i = 0; i < 10; i++) {
      const commit_sha = (i < 2 ? "1" : (i + 1).toString(16)).repeat(40);
      const cases = [
        { name: "test_race", fails: i === 0 },
        { name: "test_schema", fails: i !== 0 },
        { name: "test_steady", fails: false },
      ];
      await server.api.ok("flaky-tests/upload", { ...web, commit_sha, branch: "main", junit_xml: [report(new Date(clock.ms - (10 - i) * HOUR), cases)] });
    }
  });
  afterAll(() => server?.close());

  test("lists the flaky and the broken tests, never the healthy ones", async () => {
    const answer = await unhealthy();
    expect(names(answer)).toEqual(["test_race", "test_schema"]);
    expect(answer.unhealthy_tests.find((t: any) => t.name === "test_race")).toMatchObject({ status: "FLAKY", quarantined: true, classname: "pkg.Tests", parent: "suite" });
    expect(answer.unhealthy_tests.find((t: any) => t.name === "test_schema")).toMatchObject({ status: "BROKEN", quarantined: false });
    expect(answer.page).toMatchObject({ total_rows: 2, total_pages: 1, next_page_token: "" });
  });

  test("status narrows to FLAKY or BROKEN (either case); pages hold page_size tests", async () => {
    expect(names(await unhealthy({ status: "FLAKY" }))).toEqual(["test_race"]);
    expect(names(await unhealthy({ status: "broken" }))).toEqual(["test_schema"]);
    const first = await unhealthy({ page_query: { page_size: 1 } });
    const second = await unhealthy({ page_query: { page_size: 1, page_token: first.page.next_page_token } });
    expect([...names(first), ...names(second)].sort()).toEqual(["test_race", "test_schema"]);
    expect(second.page.next_page_token).toBe("");
  });

  test("bad input is 400 naming the field", async () => {
    const cases: [object, string][] = [
      [{ status: "HEALTHY" }, "status"],
      [{ page_query: { page_size: 0 } }, "page_query.page_size"],
      [{ page_query: { page_size: 10, page_token: "not-ours" } }, "page_query.page_token"],
    ];
    for (const [extra, field] of cases) {
      const response = await server.api.call("flaky-tests/list-unhealthy-tests", { ...web, page_query: { page_size: 100 }, ...extra });
      expect([JSON.stringify(extra), response.status, response.body.error.details[0].path]).toEqual([JSON.stringify(extra), 400, field]);
    }
  });

  test("another organization sees none of our tests", async () => {
    const other = await server.clientFor("globex");
    const theirs = await other.call("flaky-tests/list-unhealthy-tests", { ...web, org_url_slug: "globex", page_query: { page_size: 100 } });
    expect([theirs.status, theirs.body.unhealthy_tests]).toEqual([200, []]);
    expect(theirs.text).not.toContain("test_race");
    expect((await other.call("flaky-tests/list-unhealthy-tests", { ...web, page_query: { page_size: 100 } })).status).toBe(404);
  });
});
