import { createToken, revokeToken } from "../../src/auth/tokens.js";
import { BACKENDS } from "../support/backends.js";
import { ApiClient, ciFinishes, prOf, queueOf, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/** The bootstrap token's name (the test server's own token). */
const BOOT = "bootstrap (GREENLINE_API_TOKEN)";

type Entry = { id: string; at: string; actor: { kind: string; name: string }; channel: string; action: string; repository: string | null; branch: string | null; reason: string | null; details: Record<string, unknown> };

/** The organization's audit log through the API (docs/audit.md), on the sandbox code host. */
describe.each(BACKENDS)("the audit log on $name", (backend) => {
  let server: TestServer;
  let admin: ApiClient;
  const clock = new TestClock();
  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: 60_000 } });
    admin = new ApiClient(server.url, (await createToken(server.greenline.services.db, "acme", "release-manager", "admin")).token);
  });
  afterAll(() => server?.close());

  const log = async (body: object = {}, client: ApiClient = server.api) =>
    (await client.ok("getAuditLog", { page_query: { page_size: 50, page_token: "" }, ...body })) as {
      entries: Entry[];
      page: { next_page_token: string; prev_page_token: string; last_page_token: string; total_rows: number };
    };

  test("every operator action is recorded with who, when, what, why and the way in, newest first", async () => {
    const repo = queueOf("audited").repo;
    await server.api.ok("createQueue", queueOf("audited"));
    await server.api.ok("updateQueue", { ...queueOf("audited"), concurrency: 3, state: "paused" });
    await server.api.ok("updateQueue", { ...queueOf("audited"), state: "running" });
    await server.api.ok("freezeQueue", { ...queueOf("audited"), reason: "release 4.2" });
    await admin.ok("submitPullRequest", { ...prOf(1, "audited"), priority: "emergency", emergencyReason: "payments are down" });
    await server.api.ok("submitPullRequest", prOf(2, "audited"));
    await admin.ok("cancelPullRequest", prOf(2, "audited"));
    await server.api.ok("unfreezeQueue", queueOf("audited"));
    await ciFinishes(server, clock);

    const { entries } = await log({ repo });
    expect(entries.map((e) => [e.action, e.actor.name, e.channel, e.reason])).toEqual([
      ["queue.freeze_removed", BOOT, "api", "release 4.2"],
      ["pull_request.cancelled_by_other", "release-manager", "api", null],
      ["pull_request.emergency", "release-manager", "api", "payments are down"],
      ["queue.freeze_added", BOOT, "api", "release 4.2"],
      ["queue.resumed", BOOT, "api", null],
      ["queue.settings_changed", BOOT, "api", null],
      ["queue.paused", BOOT, "api", null],
      ["queue.created", BOOT, "api", null],
    ]);
    for (const e of entries) expect(e).toMatchObject({ repository: "github.com/acme/audited", branch: "main", actor: { kind: "token" } });
    expect(entries.find((e) => e.action === "queue.settings_changed")!.details).toMatchObject({ changes: { concurrency: { from: 1, to: 3 } }, command: "updateQueue" });
    expect(entries.find((e) => e.action === "pull_request.emergency")!.details).toMatchObject({ prNumber: 1 });
    // Newest first by when they were recorded.
    expect([...entries].map((e) => e.at)).toEqual(
      [...entries]
        .map((e) => e.at)
        .sort()
        .reverse(),
    );
  });

  test("webhook endpoints, flaky settings and tokens are recorded; a secret never is", async () => {
    // A path may hold a secret (Slack's, Teams'): only the endpoint's origin is recorded.
    const created = await server.api.ok("webhooks/create-endpoint", { url: "https://hooks.example/services/T000/B000/XXXXsecretpath", events: ["audit.entry"], secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" });
    const rotated = await server.api.ok("webhooks/update-endpoint", { id: created.endpoint.id, rotateSecret: true, description: "rotated" });
    await server.api.ok("webhooks/delete-endpoint", { id: created.endpoint.id });
    await server.api.ok("flaky-tests/upload", { repo: queueOf("flaky").repo, org_url_slug: "acme", commit_sha: "abcdef0", branch: "main", junit_xml: ["<testsuite><testcase name='t' classname='c'/></testsuite>"] });
    await server.api.ok("flaky-tests/update-settings", { repo: queueOf("flaky").repo, org_url_slug: "acme", settings: { minSamples: 7 } });
    const made = await createToken(server.greenline.services.db, "acme", "ci", "write", "token create");
    await revokeToken(server.greenline.services.db, made.id, new Date(), "token revoke");
    // Revoking it again changes nothing, and records nothing.
    await revokeToken(server.greenline.services.db, made.id, new Date(), "token revoke");

    const { entries } = await log();
    const recent = entries.slice(0, 6).map((e) => [e.action, e.channel, e.actor.kind]);
    expect(recent).toEqual([
      ["token.revoked", "cli", "operator"],
      ["token.created", "cli", "operator"],
      ["flaky.settings_updated", "api", "token"],
      ["webhook_endpoint.deleted", "api", "token"],
      ["webhook_endpoint.updated", "api", "token"],
      ["webhook_endpoint.created", "api", "token"],
    ]);
    expect(entries[0]!.actor.name).toBe("greenline token revoke");
    expect(entries[4]!.details).toMatchObject({ endpointId: created.endpoint.id, secretRotated: true });
    expect(entries[2]!.details).toMatchObject({ changes: { minSamples: 7 } });
    const text = JSON.stringify(entries);
    expect(text).not.toContain("whsec_");
    expect(text).not.toContain("secretpath");
    expect(entries[5]!.details).toMatchObject({ origin: "https://hooks.example" });
    expect(text).not.toContain(rotated.secret);
    expect(text).not.toContain(made.token);
  });

  test("paged like the flaky-test lists: every entry once, newest first, filters kept in the token", async () => {
    await server.api.ok("createQueue", queueOf("paged"));
    for (const concurrency of [2, 3, 4, 5, 6]) await server.api.ok("updateQueue", { ...queueOf("paged"), concurrency });
    const filter = { repo: queueOf("paged").repo, action: "queue.settings_changed" };
    const seen: string[] = [];
    let token = "";
    for (let i = 0; i < 5; i++) {
      const page = await log({ ...filter, page_query: { page_size: 2, page_token: token } });
      expect(page.page.total_rows).toBe(5);
      seen.push(...page.entries.map((e) => JSON.stringify(e.details.changes)));
      token = page.page.next_page_token;
      if (!token) break;
    }
    expect(seen).toEqual([6, 5, 4, 3, 2].map((to) => JSON.stringify({ concurrency: { from: to - 1, to } })));
    // The last page (the oldest entry, 5 = 2 + 2 + 1), and back from it to newer ones.
    const first = await log({ ...filter, page_query: { page_size: 2, page_token: "" } });
    const last = await log({ ...filter, page_query: { page_size: 2, page_token: first.page.last_page_token } });
    expect(last.entries.map((e) => JSON.stringify(e.details.changes))).toEqual([JSON.stringify({ concurrency: { from: 1, to: 2 } })]);
    const back = await log({ ...filter, page_query: { page_size: 2, page_token: last.page.prev_page_token } });
    expect(back.entries.map((e) => JSON.stringify(e.details.changes))).toEqual([4, 3].map((to) => JSON.stringify({ concurrency: { from: to - 1, to } })));
    // A token of one filter is refused for another (400 naming it), and a made-up one too.
    const other = await server.api.call("getAuditLog", { page_query: { page_size: 2, page_token: first.page.next_page_token } });
    expect([other.status, other.body.error.details[0].path]).toEqual([400, "page_query.page_token"]);
    expect((await server.api.call("getAuditLog", { page_query: { page_size: 2, page_token: "nonsense" } })).status).toBe(400);
    expect((await server.api.call("getAuditLog", { page_query: { page_size: 2, page_token: "" }, action: "queue.exploded" })).status).toBe(400);
  });

  test("priority changes and restarts are recorded; only an admin may end an emergency, and that is recorded", async () => {
    const repo = queueOf("changes").repo;
    await server.api.ok("createQueue", queueOf("changes"));
    await server.api.ok("submitPullRequest", { ...prOf(1, "changes"), priority: "high" });
    await server.api.ok("submitPullRequest", { ...prOf(1, "changes"), priority: "low" });
    await server.greenline.worker.drain();
    await server.api.ok("restartTestsOnPullRequest", prOf(1, "changes"));
    await admin.ok("submitPullRequest", { ...prOf(2, "changes"), emergencyReason: "outage" });
    // A write token resubmitting it would end the emergency: refused, nothing changes.
    const refused = await server.api.call("submitPullRequest", prOf(2, "changes"));
    expect([refused.status, refused.body.error.message]).toEqual([403, expect.stringContaining("is an emergency merge (outage)")]);
    expect(await server.api.ok("getSubmittedPullRequest", prOf(2, "changes"))).toMatchObject({ priorityName: "emergency" });
    await admin.ok("submitPullRequest", { ...prOf(2, "changes"), priority: "medium" });
    const { entries } = await log({ repo });
    expect(entries.map((e) => [e.action, e.details.prNumber, e.details.from ?? e.details.was ?? null, e.details.to ?? null])).toEqual([
      ["pull_request.priority_changed", 2, "emergency", "medium"],
      ["pull_request.emergency_ended", 2, "outage", null],
      ["pull_request.emergency", 2, null, null],
      ["pull_request.restarted", 1, "testing", null],
      ["pull_request.priority_changed", 1, "high", "low"],
      ["queue.created", undefined, null, null],
    ]);
  });

  test("another organization sees none of it, and a read token may read its own", async () => {
    const stranger = await server.clientFor("other-org");
    expect((await log({}, stranger)).entries).toEqual([]);
    expect((await log({ repo: queueOf("audited").repo }, stranger)).entries).toEqual([]);
    const { token } = await createToken(server.greenline.services.db, "acme", "viewer", "read");
    expect((await log({}, new ApiClient(server.url, token))).entries.length).toBeGreaterThan(0);
  });

  test("actions raced against each other are each recorded once", async () => {
    await server.api.ok("createQueue", queueOf("raced"));
    const answers = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => server.api.call("freezeQueue", { ...queueOf("raced"), reason: `freeze ${i}` })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const { entries } = await log({ repo: queueOf("raced").repo, action: "queue.freeze_added" });
    expect(entries.map((e) => e.reason).sort()).toEqual([1, 2, 3, 4, 5, 6].map((i) => `freeze ${i}`));
    expect(new Set(entries.map((e) => e.id)).size).toBe(6);
  });
});
