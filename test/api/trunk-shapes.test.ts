import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";
import { TRUNK_TEST_CASE, TRUNK_TESTING_DETAILS, TRUNK_TESTING_DETAILS_UNBUILT, trunkErrors } from "../support/trunk-schemas.js";

const CI_MS = 60_000;

/** Fields of an answer (at any depth) that are null: Trunk documents none of these as nullable. */
function nullsOf(value: unknown, path = "$"): string[] {
  if (value === null) return [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => nullsOf(v, `${path}[${i}]`));
  if (typeof value === "object") return Object.entries(value as object).flatMap(([k, v]) => nullsOf(v, `${path}.${k}`));
  return [];
}

/**
 * Greenline's answers in the shapes Trunk documents (docs/decisions.md, "Trunk's documented
 * shapes"): getMergeQueueTestingDetails with testBranch, testBranchSha and urls as strings or
 * left out (never null) and check states in Trunk's UPPERCASE enums; a test's ticket an object
 * or left out; link-ticket-to-test-case taking Trunk's own request.
 */
describe.each(BACKENDS)("Trunk's documented shapes on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock(Date.parse("2026-11-22T12:00:00Z"));
  const web = { repo: repo("web"), org_url_slug: "acme" };
  let testId: string;

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: CI_MS } });
    await server.api.ok("createQueue", { ...queueOf(), concurrency: 4 });
    const xml = `<?xml version="1.0"?><testsuites><testsuite name="unit"><testcase classname="pay.Refunds" name="refunds" file="src/pay/refunds.test.ts"><failure message="boom">trace</failure></testcase><testcase classname="pay.Refunds" name="charges"/></testsuite></testsuites>`;
    await server.api.ok("flaky-tests/upload", { ...web, commit_sha: "a".repeat(40), branch: "main", junit_xml: [xml] });
    const failing = await server.api.ok("flaky-tests/list-failing-tests", {
      ...web,
      start_time: new Date(clock.ms - 3600_000).toISOString(),
      end_time: new Date(clock.ms + 1).toISOString(),
      page_query: { page_size: 10 },
    });
    testId = failing.tests.find((t: { name: string }) => t.name === "refunds").id;
  });
  afterAll(() => server?.close());

  describe("getMergeQueueTestingDetails", () => {
    test("a running and a finished run fit Trunk's document: strings never null, check states in Trunk's UPPERCASE enum", async () => {
      await server.api.ok("submitPullRequest", prOf(1));
      await server.greenline.worker.drain();
      const running = await server.api.ok("getMergeQueueTestingDetails", prOf(1));
      expect(trunkErrors(TRUNK_TESTING_DETAILS, running)).toEqual([]);
      expect(running.statusChecks).toEqual([{ context: "greenline/sandbox-ci", state: "PENDING" }]);
      expect(running.testedPullRequests).toEqual([{ prNumber: 1, prUrl: "https://github.com/acme/web/pull/1", title: "Sandbox pull request #1" }]);
      // Greenline's own fields that may be null (failureReason, finishedAt, diagnosis) are not Trunk's.
      expect(nullsOf(running).filter((p) => !/^\$\.(failureReason|finishedAt|diagnosis)$/.test(p))).toEqual([]);
      clock.advance(CI_MS);
      await server.greenline.worker.drain();
      const finished = await server.api.ok("getMergeQueueTestingDetails", { ...queueOf(), testRunId: running.testRunId });
      expect(finished.status).toBe("succeeded");
      expect(trunkErrors(TRUNK_TESTING_DETAILS, finished)).toEqual([]);
      expect(finished.statusChecks).toEqual([{ context: "greenline/sandbox-ci", state: "SUCCESS" }]);
    });

    test("a run whose testing branch is not built yet leaves testBranch and testBranchSha out (never null)", async () => {
      await server.api.ok("submitPullRequest", prOf(2));
      await server.greenline.worker.drain();
      const { testRunId } = await server.api.ok("getMergeQueueTestingDetails", prOf(2));
      // As the run is between being started and its branch being pushed.
      await server.greenline.services.db.transaction((tx) => tx.testRun.update({ where: { id: testRunId }, data: { testBranch: null, testBranchSha: null } }));
      const unbuilt = await server.api.ok("getMergeQueueTestingDetails", { ...queueOf(), testRunId });
      expect(unbuilt).not.toHaveProperty("testBranch");
      expect(unbuilt).not.toHaveProperty("testBranchSha");
      expect(trunkErrors(TRUNK_TESTING_DETAILS_UNBUILT, unbuilt)).toEqual([]);
    });
  });

  describe("a test's ticket and link-ticket-to-test-case", () => {
    const details = async () => (await server.api.ok("flaky-tests/get-test-details", { ...web, test_id: testId })).test;
    const link = (body: object) => server.api.call("flaky-tests/link-ticket-to-test-case", body);
    /** Trunk's own request: no org_url_slug, the ticket named by external_ticket_id (docs.trunk.io). */
    const trunkBody = (external_ticket_id: string) => ({ test_case_id: testId, external_ticket_id, repo: repo("web") });

    test("without a ticket, a test fits Trunk's document and has no ticket field (not null)", async () => {
      const test = await details();
      expect(test).not.toHaveProperty("ticket");
      expect(trunkErrors(TRUNK_TEST_CASE, test)).toEqual([]);
    });

    test("Trunk's request with the ticket's link links it; the test then fits Trunk's document with ticket.html_url", async () => {
      const linked = await link(trunkBody("https://linear.app/acme/issue/PAY-7"));
      expect(linked.status).toBe(200);
      expect(linked.body.test.ticket).toEqual({ html_url: "https://linear.app/acme/issue/PAY-7" });
      const test = await details();
      expect(test.ticket).toEqual({ html_url: "https://linear.app/acme/issue/PAY-7" });
      expect(trunkErrors(TRUNK_TEST_CASE, test)).toEqual([]);
    });

    test("Trunk's request with a ticket key: refused naming external_ticket_id until the repository has a ticketUrlTemplate, then linked by it", async () => {
      const before = await details();
      const refused = await link(trunkBody("KAN-123"));
      expect(refused.status).toBe(400);
      expect(refused.body.error.details).toEqual([{ path: "external_ticket_id", message: expect.stringContaining("ticketUrlTemplate") }]);
      expect(await details()).toEqual(before);

      const bad = await server.api.call("flaky-tests/update-settings", { ...web, settings: { ticketUrlTemplate: "https://acme.atlassian.net/browse/" } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.details[0].path).toBe("settings.ticketUrlTemplate");
      const set = await server.api.ok("flaky-tests/update-settings", { ...web, settings: { ticketUrlTemplate: "https://acme.atlassian.net/browse/{id}" } });
      expect(set.settings.ticketUrlTemplate).toBe("https://acme.atlassian.net/browse/{id}");
      expect((await server.api.ok("flaky-tests/get-settings", web)).settings.ticketUrlTemplate).toBe("https://acme.atlassian.net/browse/{id}");

      const linked = await link(trunkBody("KAN-123"));
      expect(linked.status).toBe(200);
      expect(linked.body.test.ticket).toEqual({ html_url: "https://acme.atlassian.net/browse/KAN-123" });
      expect(trunkErrors(TRUNK_TEST_CASE, await details())).toEqual([]);

      // null removes the template: keys are refused again, links still work.
      const cleared = await server.api.ok("flaky-tests/update-settings", { ...web, settings: { ticketUrlTemplate: null } });
      expect(cleared.settings).not.toHaveProperty("ticketUrlTemplate");
      expect((await link(trunkBody("KAN-124"))).status).toBe(400);
    });

    test("Greenline's own request still works: ticket_url links, null unlinks (the field then left out)", async () => {
      const linked = await link({ ...web, test_case_id: testId, ticket_url: "https://acme.atlassian.net/browse/PAY-42" });
      expect(linked.body.test.ticket).toEqual({ html_url: "https://acme.atlassian.net/browse/PAY-42" });
      const unlinked = await link({ ...web, test_case_id: testId, ticket_url: null });
      expect(unlinked.status).toBe(200);
      expect(unlinked.body.test).not.toHaveProperty("ticket");
      expect(trunkErrors(TRUNK_TEST_CASE, unlinked.body.test)).toEqual([]);
    });

    test("bad input is a 400 naming the field, and writes nothing", async () => {
      const before = await details();
      const cases: [object, string][] = [
        [{ test_case_id: testId, repo: repo("web") }, "external_ticket_id"],
        [{ ...trunkBody("https://x.example/T-1"), ticket_url: "https://x.example/T-1" }, "ticket_url"],
        [trunkBody("   "), "external_ticket_id"],
        [trunkBody("a\u0000b"), "external_ticket_id"],
        [trunkBody("https://"), "external_ticket_id"],
        [{ ...trunkBody("KAN-1"), test_case_id: "not-a-uuid" }, "test_case_id"],
        [{ ...trunkBody("KAN-1"), repo: { host: "github.com", owner: "acme" } }, "repo.name"],
        [{ ...trunkBody("KAN-1"), external_ticket_id: 123 }, "external_ticket_id"],
      ];
      for (const [body, field] of cases) {
        const response = await link(body);
        expect([JSON.stringify(body), response.status, response.body.error?.details?.[0]?.path]).toEqual([JSON.stringify(body), 400, field]);
      }
      expect(await details()).toEqual(before);
    });

    test("another organization's slug, or its token, does not find the test", async () => {
      expect((await link({ ...trunkBody("https://x.example/T-1"), org_url_slug: "globex" })).status).toBe(404);
      const other = await server.clientFor("globex");
      expect((await other.call("flaky-tests/link-ticket-to-test-case", trunkBody("https://x.example/T-1"))).status).toBe(404);
    });
  });
});
