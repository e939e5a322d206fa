import { BACKENDS } from "../support/backends.js";
import { queueOf, startTestServer, type TestServer } from "../support/harness.js";

const scope = { repo: queueOf().repo, org_url_slug: "acme" };
const EMPTY_PAGE = { total_rows: 0, total_pages: 0, next_page_token: "", prev_page_token: "", last_page_token: "", page_index: 0 };

describe.each(BACKENDS)("flaky-test operations on $name (shapes before any upload)", (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
  });
  afterAll(() => server?.close());

  test("list-failing-tests answers an empty page", async () => {
    const body = await server.api.ok("flaky-tests/list-failing-tests", {
      ...scope,
      start_time: "2026-11-01T00:00:00Z",
      end_time: "2026-11-08T00:00:00Z",
      page_query: { page_size: 25, page_token: "" },
    });
    expect(body).toEqual({ tests: [], page: EMPTY_PAGE });
  });

  test.each([
    ["more than 7 days apart", "2026-11-01T00:00:00Z", "2026-11-08T00:00:01Z", "end_time"],
    ["start after end", "2026-11-02T00:00:00Z", "2026-11-01T00:00:00Z", "start_time"],
    ["not a date-time", "yesterday", "2026-11-01T00:00:00Z", "start_time"],
  ])("list-failing-tests with a window %s is 400", async (_what, start_time, end_time, field) => {
    const response = await server.api.call("flaky-tests/list-failing-tests", { ...scope, start_time, end_time, page_query: { page_size: 10 } });
    expect(response.status).toBe(400);
    expect(response.body.error.details[0].path).toBe(field);
  });

  test.each([[0], [101], [2.5]])("page_size %p is 400", async (page_size) => {
    const response = await server.api.call("flaky-tests/list-quarantined-tests", { ...scope, page_query: { page_size } });
    expect(response.status).toBe(400);
    expect(response.body.error.details[0].path).toBe("page_query.page_size");
  });

  test("list-quarantined-tests answers an empty page; a forged page token is 400", async () => {
    expect(await server.api.ok("flaky-tests/list-quarantined-tests", { ...scope, page_query: { page_size: 100 } })).toEqual({ quarantined_tests: [], page: EMPTY_PAGE });
    const forged = await server.api.call("flaky-tests/list-quarantined-tests", { ...scope, page_query: { page_size: 10, page_token: "not-ours" } });
    expect(forged.status).toBe(400);
    expect(forged.body.error.details[0].path).toBe("page_query.page_token");
  });

  test("get-test-details: unknown id is 404, a non-uuid is 400", async () => {
    const unknown = await server.api.call("flaky-tests/get-test-details", { ...scope, test_id: "6ba7b810-9dad-51d1-80b4-00c04fd430c8" });
    expect(unknown.status).toBe(404);
    const bad = await server.api.call("flaky-tests/get-test-details", { ...scope, test_id: "not-a-uuid" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].path).toBe("test_id");
  });

  test("an org_url_slug other than the token's organization is 404", async () => {
    const response = await server.api.call("flaky-tests/list-quarantined-tests", { ...scope, org_url_slug: "someone-else", page_query: { page_size: 10 } });
    expect(response.status).toBe(404);
  });
});

describe.each(BACKENDS)("flaky-test reads of a repository the organization does not own, on $name", (backend) => {
  let server: TestServer;
  const theirs = { host: "github.com", owner: "rival", name: "secret-project" };
  const unknown = { host: "github.com", owner: "rival", name: "never-seen" };
  beforeAll(async () => {
    server = await startTestServer(backend);
    // In the sandbox the first organization to reference a repository owns it.
    const rival = await server.clientFor("rival");
    await rival.ok("flaky-tests/upload", {
      repo: theirs,
      org_url_slug: "rival",
      commit_sha: "a".repeat(40),
      branch: "main",
      junit_xml: ['<testsuite name="s"><testcase classname="c" name="t"><failure message="boom"/></testcase></testsuite>'],
    });
  });
  afterAll(() => server?.close());

  const READS: [string, Record<string, unknown>][] = [
    ["flaky-tests/list-failing-tests", { start_time: "2026-11-01T00:00:00Z", end_time: "2026-11-08T00:00:00Z", page_query: { page_size: 25, page_token: "" } }],
    ["flaky-tests/list-quarantined-tests", { page_query: { page_size: 25, page_token: "" } }],
    ["flaky-tests/get-test-details", { test_id: "6ba7b810-9dad-51d1-80b4-00c04fd430c8" }],
    ["flaky-tests/check-quarantine", { test_ids: ["6ba7b810-9dad-51d1-80b4-00c04fd430c8"] }],
    ["flaky-tests/get-settings", {}],
  ];

  // Answering one way for another organization's repository and another for an unknown one
  // would tell any token holder which repositories other organizations use.
  test.each(READS)("%s answers another organization's repository exactly as an unknown one", async (operation, input) => {
    const other = await server.api.call(operation, { ...input, repo: theirs, org_url_slug: "acme" });
    const none = await server.api.call(operation, { ...input, repo: unknown, org_url_slug: "acme" });
    expect(other.status).toBeLessThan(500);
    expect({ status: other.status, text: other.text.replaceAll(theirs.name, "(repo)") }).toEqual({ status: none.status, text: none.text.replaceAll(unknown.name, "(repo)") });
  });
});
