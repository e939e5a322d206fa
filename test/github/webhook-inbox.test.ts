import { randomUUID } from "node:crypto";
import { type Backend, BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { processDueDeliveries, recordDelivery } from "../../src/webhooks/services/inbox.js";
import { CodeHostRefusal } from "../../src/ports/code-host.js";
import { blockedRecheckDelayMs } from "../../src/domain/readiness.js";
import { ApiClient, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * Webhooks are recorded (once per delivery id) and answered at once; the worker processes them,
 * so a slow or failing GitHub loses no delivery. Readiness is re-read from GitHub until known.
 * Installation changes keep the App's view of its installations true.
 */
describe.each(BACKENDS)("webhook inbox and readiness re-reads on $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let database: { url: string; drop(): Promise<void> };
  const clock = new TestClock();

  /** The same database for every server this suite starts (a restart keeps it). */
  const sameDatabase = (): Backend => ({ name: backend.name, createDatabase: async () => ({ url: database.url, drop: async () => {} }) });
  const startServer = () =>
    startTestServer(sameDatabase(), {
      now: clock.now,
      githubApp: githubAppOf(gh),
    });

  const sender = { login: "admin", id: 1, type: "User" };
  const installationEvent = (action: string, id: number, login: string) => ({ action, installation: { id, account: { login, id: id * 10, type: "Organization" } }, repositories: [], sender });
  const comment = (org: GitHubDriver, n: number, user: string, body: string) => ({
    action: "created",
    issue: { number: n, pull_request: { url: `https://api.github.com/repos/${org.owner}/app/pulls/${n}` } },
    comment: { id: n * 100, body, user: { login: user, id: 7, type: "User" } },
    repository: org.repository("app"),
    installation: { id: 1 },
    sender: { login: user, id: 7, type: "User" },
  });
  const replies = (owner: string, n: number) => gh.comments.filter((c) => c.repo === `${owner}/app` && c.number === n).map((c) => c.body);
  /** The queue's statuses on PR n's head: an accepted `/greenline merge` is answered by them, not by a reply. */
  const queueStatuses = (owner: string, n: number) =>
    gh.statuses.filter((s) => s.repo === `${owner}/app` && s.sha === gh.pr(`${owner}/app`, n)!.headSha && s.context === "greenline/merge-queue").map((s) => s.description);
  const deliveryRow = (deliveryId: string) => server.greenline.services.db.read((tx) => tx.webhookDelivery.findUnique({ where: { deliveryId } }));

  /** Installs the App on an account (with its webhook), with a queue on its repository "app". */
  async function installWithQueue(id: number, login: string, settings: object = {}): Promise<GitHubDriver> {
    const org = await GitHubDriver.install(server, gh, { owner: login, installation: id, drain: true });
    await org.api.ok("createQueue", { ...org.queue("app"), ...settings });
    gh.grant(`${login}/app`, "maintainer", "write");
    return org;
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator().start();
    database = await backend.createDatabase();
    server = await startServer();
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
    await gh?.stop();
  });

  test("a delivery that needs GitHub while GitHub answers 502 is answered at once and processed once GitHub is back", async () => {
    const org = await installWithQueue(101, "outage-org");
    gh.openPr("outage-org/app", { number: 1 });
    const deliveryId = randomUUID();
    gh.outage = 502;
    try {
      const calls = gh.requests.length;
      const answer = await org.post("issue_comment", comment(org, 1, "maintainer", "/greenline merge"), deliveryId);
      expect(answer.status).toBe(200);
      // Answering needed nothing from GitHub.
      expect(gh.requests.length).toBe(calls);
      await server.greenline.worker.drain();
      expect(await deliveryRow(deliveryId)).toMatchObject({ attempts: 1, processedAt: null, failedAt: null });
      expect((await org.api.call("getSubmittedPullRequest", org.pr("app", 1))).status).toBe(404);
    } finally {
      gh.outage = null;
    }
    // Not before its backoff; then it is processed, once.
    await server.greenline.worker.drain();
    expect(queueStatuses("outage-org", 1)).toEqual([]);
    clock.advance(2000);
    await server.greenline.worker.drain();
    expect(await org.stateOf("app", 1)).not.toBe("not_ready");
    // Queued: the queue's status says so (an accepted command gets no reply where statuses are shown).
    expect(queueStatuses("outage-org", 1)).toEqual([expect.stringMatching(/^(Submitted to the merge queue|Testing)/)]);
    expect(replies("outage-org", 1)).toEqual([]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ processedAt: expect.any(Date) });
  }, 90_000);

  test("a delivery that keeps failing holds back its repository's later ones, then is kept as failed with its error and logged", async () => {
    const org = await installWithQueue(111, "stuck-org");
    gh.openPr("stuck-org/app", { number: 1 });
    const stuck = randomUUID();
    const later = randomUUID();
    // GitHub down (500: transient; Octokit's retry asks once more, then the attempt fails).
    gh.outage = 500;
    try {
      expect((await org.post("issue_comment", comment(org, 1, "maintainer", "/greenline merge"), stuck)).status).toBe(200);
      expect((await org.post("issue_comment", comment(org, 1, "maintainer", "/greenline help"), later)).status).toBe(200);
      for (let attempt = 1; attempt < 10; attempt++) {
        await server.greenline.worker.drain();
        expect(await deliveryRow(stuck)).toMatchObject({ attempts: attempt, failedAt: null });
        expect(await deliveryRow(later)).toMatchObject({ attempts: 0, processedAt: null });
        clock.advance(5 * 60_000);
      }
      await server.greenline.worker.drain();
    } finally {
      gh.outage = null;
    }
    expect(await deliveryRow(stuck)).toMatchObject({ attempts: 10, failedAt: expect.any(Date), processedAt: null, lastError: expect.stringContaining("Server Error") });
    expect(server.logs.join("")).toContain("webhook delivery given up on after repeated failures");
    // The repository's next delivery goes on (tried once during the outage too, then after its backoff).
    clock.advance(2000);
    await server.greenline.worker.drain();
    expect(await deliveryRow(later)).toMatchObject({ processedAt: expect.any(Date) });
    expect(replies("stuck-org", 1)).toEqual([expect.stringContaining("/greenline merge")]);
  });

  test("a permanent refusal of the code host fails a delivery at once; a rate limit's retry time is honoured", async () => {
    const { services } = server.greenline;
    const [refused, limited] = [randomUUID(), randomUUID()];
    await recordDelivery(services, { id: refused, name: "ping", payload: {}, action: null, repositoryKey: "github.com/refused/app" });
    await recordDelivery(services, { id: limited, name: "ping", payload: {}, action: null, repositoryKey: "github.com/limited/app" });
    const retryAt = clock.ms + 120_000;
    const handled: string[] = [];
    const handle = async (delivery: { id: string }) => {
      handled.push(delivery.id);
      if (delivery.id === refused) throw new CodeHostRefusal("permission_missing", "Resource not accessible by integration");
      throw new CodeHostRefusal("rate_limited", "API rate limit exceeded", retryAt);
    };
    await processDueDeliveries(services, handle);
    expect(await deliveryRow(refused)).toMatchObject({ attempts: 1, failedAt: expect.any(Date), lastError: "CodeHostRefusal: Resource not accessible by integration" });
    expect(await deliveryRow(limited)).toMatchObject({ attempts: 1, failedAt: null, nextAttemptAt: new Date(retryAt) });
    clock.advance(60_000);
    await processDueDeliveries(services, handle);
    expect(handled).toEqual([refused, limited]);
    clock.advance(60_000);
    await processDueDeliveries(services, async () => {});
    expect(await deliveryRow(limited)).toMatchObject({ processedAt: expect.any(Date) });
  });

  test("a busy repository's inbox drains as fast as it fills: a tick processes every delivery due, in order, not one per repository", async () => {
    const { services } = server.greenline;
    const ids: string[] = [];
    // 20 deliveries of one repository arrive between ticks, ten times over (one a tick used to be processed: 190 left).
    for (let tick = 0; tick < 10; tick++) {
      for (let i = 0; i < 20; i++) {
        const id = randomUUID();
        ids.push(id);
        await recordDelivery(services, { id, name: "ping", payload: { zen: "Keep it logically awesome.", hook_id: 1 }, action: null, repositoryKey: "github.com/busy-org/app" });
      }
      await server.greenline.worker.tick();
    }
    const rows = await services.db.read((tx) => tx.webhookDelivery.findMany({ where: { deliveryId: { in: ids } }, orderBy: { id: "asc" }, select: { deliveryId: true, processedAt: true } }));
    expect(rows.filter((row) => row.processedAt === null)).toEqual([]);
    expect(rows.map((row) => row.deliveryId)).toEqual(ids);
  });

  test("a delivery id delivered twice (or redelivered after processing) is processed once", async () => {
    const org = await installWithQueue(102, "dup-org");
    gh.openPr("dup-org/app", { number: 1 });
    const deliveryId = randomUUID();
    const payload = comment(org, 1, "maintainer", "/greenline help");
    expect((await org.post("issue_comment", payload, deliveryId)).status).toBe(200);
    expect((await org.post("issue_comment", payload, deliveryId)).status).toBe(200);
    await server.greenline.worker.drain();
    expect((await org.post("issue_comment", payload, deliveryId)).status).toBe(200);
    await server.greenline.worker.drain();
    expect(replies("dup-org", 1)).toHaveLength(1);
  });

  test("a crash between recording a delivery and processing it loses nothing: the restarted server processes it", async () => {
    const org = await installWithQueue(103, "crash-org");
    gh.openPr("crash-org/app", { number: 1 });
    expect((await org.post("issue_comment", comment(org, 1, "maintainer", "/greenline merge"))).status).toBe(200);
    // The process goes away before its worker ran (the database stays).
    await server.greenline.close();
    server = await startServer();
    await server.greenline.worker.drain();
    expect(queueStatuses("crash-org", 1)).toEqual([expect.stringMatching(/^(Submitted to the merge queue|Testing)/)]);
    const restarted = new GitHubDriver(server, gh, new ApiClient(server.url, org.api.token), org.owner, org.installation);
    expect(await restarted.stateOf("app", 1)).not.toBe("not_ready");
  });

  test("a PR whose mergeability GitHub is still computing is asked again with backoff until known, without any event", async () => {
    const org = await installWithQueue(104, "lazy-org");
    gh.openPr("lazy-org/app", { number: 1, mergeableState: "unknown" });
    await org.api.ok("submitPullRequest", org.pr("app", 1));
    expect(await org.submitted("app", 1)).toMatchObject({ state: "not_ready", readiness: { gitHubMergeability: "in_progress" } });
    const reads = () => gh.requests.filter((r) => r.method === "GET" && r.path === "/repos/lazy-org/app/pulls/1").length;
    const submitted = reads();
    // Still computing at the first re-read (2 s); the next waits 4 s more.
    clock.advance(2000);
    await server.greenline.worker.drain();
    expect(reads()).toBe(submitted + 1);
    gh.pr("lazy-org/app", 1)!.mergeableState = "clean";
    clock.advance(2000);
    await server.greenline.worker.drain();
    expect(reads()).toBe(submitted + 1);
    expect(await org.stateOf("app", 1)).toBe("not_ready");
    clock.advance(2000);
    await server.greenline.worker.drain();
    // Read again (and then read by the testing run, once ready).
    expect(reads()).toBeGreaterThanOrEqual(submitted + 2);
    expect(await org.submitted("app", 1)).toMatchObject({ readiness: { gitHubMergeability: "mergeable" } });
    expect(await org.stateOf("app", 1)).not.toBe("not_ready");
  });

  test("a re-read that finds new commits on the PR (its synchronize delivery lost) cancels it as pr_updated", async () => {
    const org = await installWithQueue(113, "moved-org");
    gh.openPr("moved-org/app", { number: 1, mergeableState: "unknown" });
    await org.api.ok("submitPullRequest", org.pr("app", 1));
    gh.pr("moved-org/app", 1)!.headSha = "f".repeat(40);
    clock.advance(2000);
    await server.greenline.worker.drain();
    expect(await org.submitted("app", 1)).toMatchObject({ state: "cancelled", stateReason: "pr_updated" });
  });

  test("a blocked PR is re-read when a review arrives (before its slow timer)", async () => {
    const org = await installWithQueue(105, "review-org");
    gh.openPr("review-org/app", { number: 1, mergeableState: "blocked" });
    await org.api.ok("submitPullRequest", org.pr("app", 1));
    expect(await org.stateOf("app", 1)).toBe("not_ready");
    // GitHub's first answer is "unknown" (lazy): the re-read after its backoff learns "blocked".
    clock.advance(5_000);
    await server.greenline.worker.drain();
    expect(await org.stateOf("app", 1)).toBe("not_ready");
    gh.pr("review-org/app", 1)!.mergeableState = "clean";
    // Its next re-read on the timer is not due yet (a blocked PR is re-read rarely).
    clock.advance(blockedRecheckDelayMs(1) - 5_000);
    await server.greenline.worker.drain();
    expect(await org.stateOf("app", 1)).toBe("not_ready");
    await org.deliverThenDrain("pull_request_review", {
      action: "submitted",
      review: { id: 1, state: "approved", user: { login: "reviewer", id: 9, type: "User" } },
      pull_request: { number: 1, head: { sha: gh.pr("review-org/app", 1)!.headSha, ref: "feature-1" }, base: { ref: "main" }, state: "open" },
      repository: org.repository("app"),
      installation: { id: 105 },
      sender,
    });
    expect(await org.stateOf("app", 1)).not.toBe("not_ready");
  });

  test("a PR blocked by its checks is re-read when a check suite on its head completes", async () => {
    const org = await installWithQueue(112, "suite-org");
    gh.openPr("suite-org/app", { number: 1, mergeableState: "blocked" });
    await org.api.ok("submitPullRequest", org.pr("app", 1));
    expect(await org.stateOf("app", 1)).toBe("not_ready");
    gh.pr("suite-org/app", 1)!.mergeableState = "unstable";
    // A suite on another commit changes nothing.
    const suite = (headSha: string) => ({
      action: "completed",
      check_suite: { id: 3, head_sha: headSha, head_branch: "feature-1", status: "completed", conclusion: "success" },
      repository: org.repository("app"),
      installation: { id: 112 },
      sender,
    });
    await org.deliverThenDrain("check_suite", suite("0".repeat(40)));
    expect(await org.stateOf("app", 1)).toBe("not_ready");
    await org.deliverThenDrain("check_suite", suite(gh.pr("suite-org/app", 1)!.headSha));
    expect(await org.stateOf("app", 1)).not.toBe("not_ready");
  });

  test("a queue with commandsEnabled: false ignores comment commands; the API still works", async () => {
    const org = await installWithQueue(106, "quiet-org", { commandsEnabled: false });
    gh.openPr("quiet-org/app", { number: 1 });
    await org.deliverThenDrain("issue_comment", comment(org, 1, "maintainer", "/greenline merge"));
    expect((await org.api.call("getSubmittedPullRequest", org.pr("app", 1))).status).toBe(404);
    expect(replies("quiet-org", 1)).toEqual([]);
    expect(queueStatuses("quiet-org", 1)).toEqual([]);
    await org.api.ok("updateQueue", { ...org.queue("app"), commandsEnabled: true });
    await org.deliverThenDrain("issue_comment", comment(org, 1, "maintainer", "/greenline merge"));
    expect(queueStatuses("quiet-org", 1)).toEqual([expect.stringMatching(/^(Submitted to the merge queue|Testing)/)]);
  });

  test("a reinstall (new installation id) works without a restart, with or without its webhooks", async () => {
    const org = await installWithQueue(107, "re-org");
    for (const n of [1, 2, 3]) gh.openPr("re-org/app", { number: n });
    await org.api.ok("submitPullRequest", org.pr("app", 1));
    // Reinstalled while its webhooks are lost: the old installation's token is refused (401).
    gh.uninstallApp(107);
    gh.installApp(108, "re-org");
    await org.api.ok("submitPullRequest", org.pr("app", 2));
    // Reinstalled with its webhooks.
    gh.uninstallApp(108);
    gh.installApp(109, "re-org");
    await org.deliverThenDrain("installation", installationEvent("deleted", 108, "re-org"));
    await org.deliverThenDrain("installation", installationEvent("created", 109, "re-org"));
    await org.api.ok("submitPullRequest", org.pr("app", 3));
    const reads = gh.requests.filter((r) => r.path === "/repos/re-org/app/pulls/3");
    expect(reads.every((r) => r.authorization === "token ghs_installation_109")).toBe(true);
  });

  test("repositories added to an installation register its account (installation_repositories is handled)", async () => {
    gh.installApp(110, "added-org");
    const org = new GitHubDriver(server, gh, undefined, "added-org", 110);
    await org.deliverThenDrain("installation_repositories", {
      ...installationEvent("added", 110, "added-org"),
      repository_selection: "selected",
      repositories_added: [{ id: 1, name: "app", full_name: "added-org/app", private: false }],
      repositories_removed: [],
    });
    const api = await org.signIn();
    expect((await api.call("createQueue", org.queue("app"))).status).toBe(200);
  });
});
