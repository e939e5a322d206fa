import { createHash } from "node:crypto";
import { hashToken } from "../../src/auth/tokens.js";
import { BACKENDS } from "../support/backends.js";
import { type ApiClient, prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

describe.each(BACKENDS)("authentication and organizations on $name", (backend) => {
  let server: TestServer;
  let globex: ApiClient;
  beforeAll(async () => {
    server = await startTestServer(backend);
    globex = await server.clientFor("globex");
    await server.api.ok("createQueue", queueOf());
    await server.api.ok("submitPullRequest", prOf(1));
  });
  afterAll(() => server?.close());

  test.each([
    ["getQueue", "post"],
    ["submitPullRequest", "post"],
    ["flaky-tests/list-quarantined-tests", "post"],
    ["getMergeQueueMetrics", "get"],
  ])("%s without a token or with an unknown one is 401", async (operation, method) => {
    for (const headers of [{}, { "x-api-token": "not-a-token" }, { "x-api-token": "" }] as Record<string, string>[]) {
      const response = await fetch(`${server.url}/v1/${operation}`, {
        method: method.toUpperCase(),
        headers: { "content-type": "application/json", ...headers },
        body: method === "post" ? JSON.stringify(queueOf()) : undefined,
      });
      expect(response.status).toBe(401);
      expect(((await response.json()) as any).error.code).toBe("unauthenticated");
    }
  });

  test("only a SHA-256 of each token is stored", async () => {
    const rows = await server.greenline.services.db.read((tx) => tx.apiToken.findMany());
    expect(rows.length).toBeGreaterThanOrEqual(2);
    const stored = JSON.stringify(rows, (_k, v) => (typeof v === "bigint" ? String(v) : v));
    expect(stored).not.toContain(server.api.token);
    expect(stored).not.toContain(globex.token);
    expect(rows.map((r) => r.tokenHash)).toContain(createHash("sha256").update(server.api.token).digest("hex"));
    expect(hashToken(globex.token)).toMatch(/^[0-9a-f]{64}$/);
  });

  test("the bootstrap token is registered idempotently", async () => {
    const { registerToken } = await import("../support/harness.js");
    const again = await registerToken(server.greenline.services.db, "acme", server.api.token, "bootstrap");
    expect(again.created).toBe(false);
    expect(await server.greenline.services.db.read((tx) => tx.apiToken.count({ where: { tokenHash: hashToken(server.api.token) } }))).toBe(1);
  });

  test("another organization's queues and PRs answer 404, exactly like missing ones", async () => {
    for (const [op, body] of [
      ["getQueue", queueOf()],
      ["updateQueue", { ...queueOf(), state: "paused" }],
      ["deleteQueue", queueOf()],
      ["submitPullRequest", prOf(2)],
      ["cancelPullRequest", prOf(1)],
      ["restartTestsOnPullRequest", prOf(1)],
      ["getSubmittedPullRequest", prOf(1)],
      ["setImpactedTargets", { ...prOf(1), impactedTargets: ["x"] }],
      ["getMergeQueueTestingDetails", prOf(1)],
      ["createQueue", queueOf("web", "release")],
    ] as const) {
      const theirs = await globex.call(op, body);
      expect([op, theirs.status]).toEqual([op, 404]);
      expect(theirs.body.error.code).toBe("not_found");
      // The same answer as for a repository nobody has: it echoes the request, nothing more.
      expect(theirs.body.error.message).toMatch(/^(no merge queue for branch "\w+" in|repository) github\.com\/acme\/web( not found)?$/);
    }
    // Nothing changed for acme.
    const queue = await server.api.ok("getQueue", queueOf());
    expect(queue.state).toBe("running");
    expect(queue.enqueuedPullRequests.map((p: { prNumber: number; state: string }) => [p.prNumber, p.state])).toEqual([[1, "testing"]]);
    expect((await server.api.call("getQueue", queueOf("web", "release"))).status).toBe(404);
  });

  test("metrics never show another organization's repositories", async () => {
    await globex.ok("createQueue", { repo: { host: "github.com", owner: "globex", name: "api" }, targetBranch: "main" });
    const mine = await server.api.get("getMergeQueueMetrics");
    const theirs = await globex.get("getMergeQueueMetrics");
    expect(mine.text).toContain('repo="acme/web"');
    expect(mine.text).not.toContain("globex");
    expect(theirs.text).toContain('repo="globex/api"');
    expect(theirs.text).not.toContain("acme");
    const filtered = await globex.get("getMergeQueueMetrics?repo=acme/web&repoHost=github.com");
    expect(filtered.status).toBe(200);
    expect(filtered.text).not.toContain("acme");
  });

  test("flaky-test operations need the token's own organization slug", async () => {
    const body = { repo: queueOf().repo, org_url_slug: "acme", page_query: { page_size: 10 } };
    expect((await server.api.call("flaky-tests/list-quarantined-tests", body)).status).toBe(200);
    expect((await globex.call("flaky-tests/list-quarantined-tests", body)).status).toBe(404);
    // With its own slug, another organization reads acme's repository as one nobody has: empty.
    const theirs = await globex.call("flaky-tests/list-quarantined-tests", { ...body, org_url_slug: "globex" });
    const unknown = await globex.call("flaky-tests/list-quarantined-tests", { ...body, repo: { ...body.repo, name: "never-seen" }, org_url_slug: "globex" });
    expect([theirs.status, theirs.body]).toEqual([200, unknown.body]);
    expect(theirs.body.quarantined_tests).toEqual([]);
  });

  test("a revoked token is refused at once", async () => {
    const temp = await server.clientFor("acme");
    expect((await temp.call("getQueue", queueOf())).status).toBe(200);
    const { revokeToken } = await import("../../src/auth/tokens.js");
    const row = await server.greenline.services.db.read((tx) => tx.apiToken.findUniqueOrThrow({ where: { tokenHash: hashToken(temp.token) } }));
    expect(await revokeToken(server.greenline.services.db, row.id, new Date())).toBe(true);
    expect((await temp.call("getQueue", queueOf())).status).toBe(401);
  });

  test("tokens never reach the logs", async () => {
    const all = server.logs.join("");
    expect(all).toContain("[redacted]");
    expect(all).not.toContain(server.api.token);
    expect(all).not.toContain(globex.token);
  });
  test("a read token reads but every write operation refuses it (403, naming the role)", async () => {
    const { createToken } = await import("../../src/auth/tokens.js");
    const { token } = await createToken(server.greenline.services.db, "acme", "viewer", "read");
    const { ApiClient } = await import("../support/harness.js");
    const viewer = new ApiClient(server.url, token);
    expect((await viewer.ok("getQueue", queueOf())).enqueuedPullRequests).toHaveLength(1);
    expect((await viewer.ok("getSubmittedPullRequest", prOf(1))).state).toBeDefined();
    for (const [op, body] of [
      ["updateQueue", { ...queueOf(), state: "paused" }],
      ["submitPullRequest", prOf(2)],
      ["cancelPullRequest", prOf(1)],
      ["createQueue", queueOf("other")],
    ] as const) {
      const response = await viewer.call(op, body);
      expect([op, response.status, response.body.error.code]).toEqual([op, 403, "permission_denied"]);
      expect(response.body.error.message).toContain('read-only (role "read")');
    }
    expect((await server.api.ok("getQueue", queueOf())).state).toBe("running");
  });
});
