import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, repo, startTestServer, type TestServer } from "../support/harness.js";

/** The rest of Trunk's v1 surface its clients call: GET /v1/status, and a test run read by its testRunId. */
describe.each(BACKENDS)("Trunk's v1 clients on $name", (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
    // Every PR submitted here starts testing at once.
    await server.api.ok("createQueue", { ...queueOf(), concurrency: 20 });
    await server.api.ok("createQueue", queueOf("web", "release"));
  });
  afterAll(() => server?.close());

  describe("GET /v1/status", () => {
    test("answers ok to a valid token", async () => {
      const response = await server.api.call("status", undefined, { method: "GET" });
      expect([response.status, response.body]).toEqual([200, { status: "ok" }]);
    });

    test("is 401 without a token or with an unknown one, and 405 to POST", async () => {
      const missing = await fetch(`${server.url}/v1/status`);
      expect(missing.status).toBe(401);
      expect(((await missing.json()) as { error: { message: string } }).error.message).toContain("x-api-token");
      expect((await server.api.call("status", undefined, { method: "GET", headers: { "x-api-token": "no-such-token" } })).status).toBe(401);
      expect((await server.api.call("status", {})).status).toBe(405);
    });
  });

  describe("getMergeQueueTestingDetails by testRunId", () => {
    test("reads the run a PR's details named, with Trunk's fields (prUrl, statusChecks, checkSuites)", async () => {
      await server.api.ok("submitPullRequest", prOf(7));
      const byPr = await server.api.ok("getMergeQueueTestingDetails", prOf(7));
      const byId = await server.api.ok("getMergeQueueTestingDetails", { ...queueOf(), testRunId: byPr.testRunId });
      expect(byId).toEqual(byPr);
      expect(byId).toMatchObject({
        status: "in_progress",
        testedPullRequests: [{ prNumber: 7, prUrl: "https://github.com/acme/web/pull/7", title: "Sandbox pull request #7" }],
        // Trunk's enum (UPPERCASE), and no url rather than null (docs/decisions.md).
        statusChecks: [{ context: "greenline/sandbox-ci", state: "PENDING" }],
        checkSuites: [],
      });
    });

    test("a run stays readable by its id after the PR's next run replaced it", async () => {
      await server.api.ok("submitPullRequest", prOf(8));
      const first = await server.api.ok("getMergeQueueTestingDetails", prOf(8));
      await server.api.ok("restartTestsOnPullRequest", prOf(8));
      await server.greenline.worker.drain();
      const second = await server.api.ok("getMergeQueueTestingDetails", prOf(8));
      expect(second.testRunId).not.toBe(first.testRunId);
      const again = await server.api.ok("getMergeQueueTestingDetails", { ...queueOf(), testRunId: first.testRunId });
      expect(again).toMatchObject({ testRunId: first.testRunId, status: "cancelled", testedPullRequests: [{ prNumber: 8 }] });
    });

    test("neither pr nor testRunId is 400 naming testRunId; a bad testRunId is 400 naming it", async () => {
      const cases: unknown[] = [queueOf(), { ...queueOf(), testRunId: "" }, { ...queueOf(), testRunId: 12 }, { ...queueOf(), testRunId: "x".repeat(65) }];
      for (const body of cases) {
        const response = await server.api.call("getMergeQueueTestingDetails", body);
        expect([JSON.stringify(body), response.status]).toEqual([JSON.stringify(body), 400]);
        expect(response.body.error.message).toContain("testRunId");
      }
    });

    test("an unknown id, or another queue's run, is 404", async () => {
      const unknown = await server.api.call("getMergeQueueTestingDetails", { ...queueOf(), testRunId: "no-such-run" });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.message).toContain("no-such-run");
      await server.api.ok("submitPullRequest", prOf(9));
      const { testRunId } = await server.api.ok("getMergeQueueTestingDetails", prOf(9));
      const otherQueue = await server.api.call("getMergeQueueTestingDetails", { ...queueOf("web", "release"), testRunId });
      expect(otherQueue.status).toBe(404);
    });

    test("another organization never sees the run, through its own queue or ours", async () => {
      await server.api.ok("submitPullRequest", prOf(10));
      const { testRunId } = await server.api.ok("getMergeQueueTestingDetails", prOf(10));
      const other = await server.clientFor("globex");
      await other.ok("createQueue", { repo: repo("site", "globex"), targetBranch: "main" });
      const throughTheirs = await other.call("getMergeQueueTestingDetails", { repo: repo("site", "globex"), targetBranch: "main", testRunId });
      const throughOurs = await other.call("getMergeQueueTestingDetails", { ...queueOf(), testRunId });
      expect([throughTheirs.status, throughOurs.status]).toEqual([404, 404]);
      expect(throughTheirs.text + throughOurs.text).not.toContain("acme/web/pull");
    });
  });
});
