import { markQueueDue } from "../../src/store/due-queues.js";
import { EFFECT_BACKOFF } from "../../src/worker/effects.js";
import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * Effects against a GitHub that refuses: they back off (exponentially, with jitter, never
 * before a rate limit is over), are given up after a limit, never hold another queue, and no
 * refusal is retried by the HTTP layer. The clock is the test's; jitter is fixed at one half.
 */
describe.each(BACKENDS)("effects against a refusing GitHub, $name", (backend) => {
  const OWNER = "octo-r";
  const INSTALLATION = 88;
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const clock = new TestClock();

  const requestsTo = (method: string, path: RegExp) => gh.requests.filter((r) => r.method === method && path.test(r.path)).length;
  const pendingEffects = (name: string) => server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { doneAt: null, queue: { repository: { name } } }, orderBy: { seq: "asc" } }));

  /** Submits PR #1 of a new repository and tests it green; the merge is what is left. */
  async function greenPr(name: string, mergeMethod: "merge_commit" | "squash") {
    await api.ok("createQueue", { ...github.queue(name), requiredStatuses: ["ci/test"], mergeMethod });
    gh.openPr(`${OWNER}/${name}`, { number: 1, files: { [`src/${name}.ts`]: "1" } });
    await api.ok("submitPullRequest", github.pr(name, 1));
    await github.drain();
    expect(gh.branches(`${OWNER}/${name}`, "greenline/")).toHaveLength(1);
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    gh.useClock(() => clock.ms);
    server = await startTestServer(backend, {
      githubApp: githubAppOf(gh),
      now: clock.now,
      random: () => 0.5,
    });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: INSTALLATION, accountId: 880 });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("an API call that meets GitHub down answers 503 unavailable, and one GitHub refuses for good 409 with GitHub's words (never 500)", async () => {
    await api.ok("createQueue", { ...github.queue("apirefusal"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(`${OWNER}/apirefusal`, { number: 1 });
    gh.failNext("GET", /\/apirefusal\/pulls\/1$/, 502, "Server Error", 2);
    const down = await api.call("submitPullRequest", github.pr("apirefusal", 1));
    expect(down.status).toBe(503);
    expect(down.body.error).toMatchObject({ code: "unavailable", message: expect.stringContaining("Server Error") });
    gh.failNext("GET", /\/apirefusal\/pulls\/1$/, 403, "Resource not accessible by integration", 1);
    const refused = await api.call("submitPullRequest", github.pr("apirefusal", 1));
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: "failed_precondition", message: expect.stringContaining("Resource not accessible by integration") });
    // Nothing was written: the PR was never submitted.
    expect((await api.call("getSubmittedPullRequest", github.pr("apirefusal", 1))).status).toBe(404);
  });

  test("a 409 from pulls.merge reaches Greenline after one request (no HTTP-layer retry)", async () => {
    await greenPr("conflict409", "squash");
    // GitHub answers the pinned merge 409 (the head moved between Greenline's read and the merge).
    gh.failNext("PUT", /\/conflict409\/pulls\/1\/merge$/, 409, "Head branch was modified. Review and try the merge again.");
    await github.ciPassesOnEveryBranch("conflict409");
    await github.drain();
    // The refusal reached Greenline at once: it asked which branch was modified (the head was
    // not: the target moved) before any other merge; a second merge comes only after testing again.
    const calls = gh.requests.filter((r) => r.path.includes("/conflict409/")).map((r) => `${r.method} ${r.path}`);
    const first = calls.findIndex((c) => /^PUT .*\/pulls\/1\/merge$/.test(c));
    expect(first).toBeGreaterThanOrEqual(0);
    expect(calls.slice(first + 1, first + 3)).toEqual([expect.stringMatching(/^GET .*\/branches\/main$/), expect.stringMatching(/^GET .*\/pulls\/1$/)]);
    expect(await github.stateOf("conflict409", 1)).toBe("merged");
  });

  test("a push during testing whose webhook never came is found by the read before the merge: no merge is asked", async () => {
    await greenPr("pushed", "squash");
    gh.amendPr(`${OWNER}/pushed`, 1, { "late.txt": "pushed during testing" });
    await github.ciPassesOnEveryBranch("pushed");
    await github.drain();
    expect(requestsTo("PUT", /\/pushed\/pulls\/1\/merge$/)).toBe(0);
    expect(gh.pr(`${OWNER}/pushed`, 1)!.merged).toBe(false);
    expect(await github.stateOf("pushed", 1)).toBe("cancelled");
  });

  test("a failing effect is retried with growing gaps, then given up; the queue goes on", async () => {
    await api.ok("createQueue", { ...github.queue("statuses"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(`${OWNER}/statuses`, { number: 1 });
    gh.failNext("POST", /\/statuses\/statuses\//, 503, "Service Unavailable", 1_000);
    await api.ok("submitPullRequest", github.pr("statuses", 1));
    await github.drain();
    const gaps: number[] = [];
    for (let attempt = 1; attempt < EFFECT_BACKOFF.maxAttempts; attempt++) {
      const [head] = await pendingEffects("statuses");
      expect(head).toMatchObject({ kind: "pr_status", attempts: attempt });
      gaps.push(head!.nextAttemptAt!.getTime() - clock.ms);
      // Not due yet: nothing is tried, and draining is not held up.
      const before = requestsTo("POST", /\/statuses\/statuses\//);
      await github.drain();
      expect(requestsTo("POST", /\/statuses\/statuses\//)).toBe(before);
      clock.ms = head!.nextAttemptAt!.getTime();
      await github.drain();
    }
    // Exponential with full jitter (fixed at 1/2 here): base·2^(n-1)/2, capped.
    expect(gaps).toEqual(gaps.map((_, i) => Math.min(EFFECT_BACKOFF.capMs, EFFECT_BACKOFF.baseMs * 2 ** i) / 2));
    const given = await server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { gaveUp: true, queue: { repository: { name: "statuses" } } } }));
    expect(given.map((e) => [e.kind, e.attempts, e.lastError])).toEqual([["pr_status", EFFECT_BACKOFF.maxAttempts, expect.stringContaining("Service Unavailable")]]);
    // The status was dropped; the run started all the same.
    expect(gh.branches(`${OWNER}/statuses`, "greenline/")).toHaveLength(1);
    expect(await github.stateOf("statuses", 1)).toBe("testing");
  });

  test("a status GitHub refuses for good is dropped at its first refusal; the queue goes on", async () => {
    await api.ok("createQueue", { ...github.queue("nocommit"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(`${OWNER}/nocommit`, { number: 1 });
    gh.failNext("POST", /\/nocommit\/statuses\//, 422, "No commit found for SHA: 0123", 1);
    await api.ok("submitPullRequest", github.pr("nocommit", 1));
    await github.drain();
    expect(requestsTo("POST", /\/nocommit\/statuses\//)).toBe(1);
    const given = await server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { gaveUp: true, queue: { repository: { name: "nocommit" } } } }));
    expect(given.map((e) => [e.kind, e.attempts, e.lastError])).toEqual([["pr_status", 1, "No commit found for SHA: 0123"]]);
    expect(await github.stateOf("nocommit", 1)).toBe("testing");
  });

  test("a queue whose effect keeps failing does not delay another queue's merge, nor call GitHub while it waits", async () => {
    await api.ok("createQueue", { ...github.queue("stuck"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(`${OWNER}/stuck`, { number: 1 });
    gh.failNext("POST", /\/stuck\/statuses\//, 502, "Bad Gateway", 1_000);
    await api.ok("submitPullRequest", github.pr("stuck", 1));
    await greenPr("free", "squash");
    const stuckCalls = requestsTo("POST", /\/stuck\/statuses\//);
    await github.ciPassesOnEveryBranch("free");
    for (let i = 0; i < 20; i++) await server.greenline.worker.tick();
    expect(await github.stateOf("free", 1)).toBe("merged");
    expect(gh.pr(`${OWNER}/free`, 1)!.merged).toBe(true);
    // Twenty ticks later, the stuck queue has not asked GitHub again (its next attempt is not due).
    expect(requestsTo("POST", /\/stuck\/statuses\//)).toBe(stuckCalls);
    expect((await pendingEffects("stuck"))[0]).toMatchObject({ kind: "pr_status", attempts: 1 });
  });

  test("a queue whose outbox cannot even be read does not stop the worker for the others", async () => {
    await api.ok("createQueue", { ...github.queue("corrupt"), requiredStatuses: ["ci/test"] });
    const corrupt = await server.greenline.services.db.read((tx) => tx.queue.findFirstOrThrow({ where: { repository: { name: "corrupt" } } }));
    // Written as appendEffects would (it marks the queue due), but unreadable.
    await server.greenline.services.db.transaction(async (tx) => {
      await tx.effect.create({ data: { id: `corrupt-${Date.now()}`, queueId: corrupt.id, seq: 1, kind: "merge", payload: "{not json", createdAt: clock.now() } });
      await markQueueDue(tx, corrupt.id, clock.now());
    });
    await greenPr("healthy", "squash");
    await github.ciPassesOnEveryBranch("healthy");
    for (let i = 0; i < 10; i++) await server.greenline.worker.tick();
    expect(gh.pr(`${OWNER}/healthy`, 1)!.merged).toBe(true);
    expect(server.logs.join("")).toContain("running a queue's effects failed");
    await server.greenline.services.db.transaction((tx) => tx.effect.deleteMany({ where: { queueId: corrupt.id } }));
  });

  test("a merge failing with a 502 twice (and its HTTP retry) lands at the next attempts", async () => {
    await greenPr("flaky502", "squash");
    gh.failNext("PUT", /\/flaky502\/pulls\/1\/merge$/, 502, "Bad Gateway", 4);
    await github.ciPassesOnEveryBranch("flaky502");
    await github.drain();
    for (let i = 0; i < 5 && !gh.pr(`${OWNER}/flaky502`, 1)!.merged; i++) {
      const [head] = await pendingEffects("flaky502");
      expect(head?.kind).toBe("merge");
      clock.ms = Math.max(clock.ms, head!.nextAttemptAt!.getTime());
      await github.drain();
    }
    expect(gh.pr(`${OWNER}/flaky502`, 1)!.merged).toBe(true);
    expect(await github.stateOf("flaky502", 1)).toBe("merged");
    expect(requestsTo("PUT", /\/flaky502\/pulls\/1\/merge$/)).toBe(5);
  });

  test("an installation at its rate limit makes no call until the reset; the queue resumes after", async () => {
    await greenPr("limited", "squash");
    await github.ciPassesOnEveryBranch("limited");
    const installationCalls = () => gh.requests.filter((r) => r.authorization === `token ghs_installation_${INSTALLATION}`).length;
    gh.setRateLimit(INSTALLATION, gh.rateLimitOf(INSTALLATION).used);
    const resetAt = gh.rateLimitOf(INSTALLATION).resetAt;
    await github.drain();
    const refused = installationCalls();
    // An hour of ticks, a minute apart, before the reset: not one more request.
    while (clock.ms + 60_000 < resetAt) {
      clock.advance(60_000);
      await server.greenline.worker.tick();
    }
    expect(installationCalls()).toBe(refused);
    expect(gh.pr(`${OWNER}/limited`, 1)!.merged).toBe(false);
    const [head] = await pendingEffects("limited");
    expect(head!.nextAttemptAt!.getTime()).toBeGreaterThanOrEqual(resetAt);
    clock.ms = resetAt;
    await github.drain();
    expect(gh.pr(`${OWNER}/limited`, 1)!.merged).toBe(true);
    expect(await github.stateOf("limited", 1)).toBe("merged");
    gh.setRateLimit(INSTALLATION, 5000);
  });

  test("an API request that must ask GitHub while the installation's rate limit is spent answers 429 rate_limited, not 500", async () => {
    gh.setRateLimit(INSTALLATION, gh.rateLimitOf(INSTALLATION).used);
    const resetAt = gh.rateLimitOf(INSTALLATION).resetAt;
    const refused = await api.call("createQueue", { ...github.queue("limited-api"), requiredStatuses: ["ci/test"] });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: "rate_limited", message: expect.stringContaining(`rate limit is spent until ${new Date(Math.ceil(resetAt / 1000) * 1000).toISOString()}`) });
    clock.ms = Math.ceil(resetAt / 1000) * 1000;
    gh.setRateLimit(INSTALLATION, 5000);
    expect((await api.call("createQueue", { ...github.queue("limited-api"), requiredStatuses: ["ci/test"] })).status).toBe(200);
  });

  test("issue item 2: a refused fast-forward (422) does not wedge the queue: the PR is merged through the PR merge API, the push asked once", async () => {
    await greenPr("pushrefused", "merge_commit");
    gh.requirePullRequests(`${OWNER}/pushrefused`, "main");
    await github.ciPassesOnEveryBranch("pushrefused");
    for (let i = 0; i < 5; i++) {
      await github.drain();
      clock.advance(60_000);
    }
    expect(requestsTo("PATCH", /\/pushrefused\/git\/refs\/heads\/main$/)).toBe(1);
    expect(gh.pr(`${OWNER}/pushrefused`, 1)!.merged).toBe(true);
    expect(await github.stateOf("pushrefused", 1)).toBe("merged");
    expect(await pendingEffects("pushrefused")).toEqual([]);
  });

  test("a merge GitHub refuses both ways (push 422, PR merge 405) spends a bounded number of calls in an hour, then the PR fails with GitHub's words", async () => {
    await greenPr("mergerefused", "merge_commit");
    // The push refused as protection refuses it (whether asked by REST or GraphQL's updateRefs).
    gh.requirePullRequests(`${OWNER}/mergerefused`, "main");
    const refusal = 'Repository rule violations found\n\nRequired status check "build" is expected.';
    gh.failNext("PUT", /\/mergerefused\/pulls\/1\/merge$/, 405, refusal, 1_000_000);
    const calls = () => gh.requests.filter((r) => r.path.startsWith(`/repos/${OWNER}/mergerefused/`)).length;
    const before = calls();
    await github.ciPassesOnEveryBranch("mergerefused");
    const end = clock.ms + 3600_000;
    // A tick every 5 s of the hour: finer than the first retry gaps (2 s doubling), and 720
    // ticks rather than 3,600 keep the test well inside its time on a loaded machine.
    while (clock.ms < end) {
      await server.greenline.worker.tick();
      clock.advance(5_000);
    }
    const spent = calls() - before;
    // It was ~14,400 an hour (one attempt every tick, retried by the HTTP layer).
    expect(spent).toBeLessThan(60);
    expect(await github.stateOf("mergerefused", 1)).toBe("failed");
    const answer = await github.submitted("mergerefused", 1);
    expect(answer).toMatchObject({ stateReason: "merge_refused", failureMessage: expect.stringContaining('Required status check "build" is expected.') });
    // The PR is told why, in GitHub's own words.
    expect(gh.comments.filter((c) => c.repo === `${OWNER}/mergerefused`).map((c) => c.body)).toEqual([expect.stringContaining("> Repository rule violations found")]);
    expect(gh.pr(`${OWNER}/mergerefused`, 1)!.merged).toBe(false);
    expect(await pendingEffects("mergerefused")).toEqual([]);
  }, 180_000);

  test("a testing branch GitHub will not build (a missing permission: permanent) fails the PR with GitHub's message at the first refusal", async () => {
    await api.ok("createQueue", { ...github.queue("workflows"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(`${OWNER}/workflows`, { number: 1, files: { ".github/workflows/ci.yml": "on: push" } });
    const refusal = "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission";
    gh.failNext("POST", /\/workflows\/merges$/, 403, refusal, 1_000);
    await api.ok("submitPullRequest", github.pr("workflows", 1));
    await github.drain();
    for (let i = 0; i < EFFECT_BACKOFF.maxAttempts && (await pendingEffects("workflows")).length > 0; i++) {
      const [head] = await pendingEffects("workflows");
      expect(head!.kind).toBe("start_run");
      clock.ms = Math.max(clock.ms, head!.nextAttemptAt!.getTime());
      await github.drain();
    }
    // The adapter classifies the refusal as permanent (permission_missing): asked once, never again.
    expect(requestsTo("POST", /\/workflows\/merges$/)).toBe(1);
    const answer = await github.submitted("workflows", 1);
    expect(answer).toMatchObject({ state: "failed", stateReason: "start_refused", failureMessage: expect.stringContaining(refusal) });
    expect(gh.comments.filter((c) => c.repo === `${OWNER}/workflows`).map((c) => c.body)).toEqual([expect.stringMatching(/^> (#1: )?refusing to allow/m)]);
  });

  test("a secondary rate limit: no call before retry-after, then the merge lands", async () => {
    await greenPr("secondary", "squash");
    await github.ciPassesOnEveryBranch("secondary");
    const installationCalls = () => gh.requests.filter((r) => r.authorization === `token ghs_installation_${INSTALLATION}`).length;
    gh.secondaryRateLimit(INSTALLATION, 120);
    const until = clock.ms + 120_000;
    await github.drain();
    const refused = installationCalls();
    const [head] = await pendingEffects("secondary");
    expect(head!.nextAttemptAt!.getTime()).toBeGreaterThanOrEqual(until);
    for (let i = 0; i < 11; i++) {
      clock.advance(10_000);
      await server.greenline.worker.tick();
    }
    expect(installationCalls()).toBe(refused);
    clock.ms = head!.nextAttemptAt!.getTime();
    await github.drain();
    expect(gh.pr(`${OWNER}/secondary`, 1)!.merged).toBe(true);
  });
});

describe("Greenline's Octokit, with Probot's throttling on (as in production)", () => {
  let gh: GitHubSimulator;
  let server: TestServer;
  const clock = new TestClock();

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    gh.useClock(() => clock.ms);
    gh.installApp(99, "octo-t");
    server = await startTestServer(BACKENDS[0]!, { githubApp: { appId: gh.appId, privateKey: gh.privateKey, webhookSecret: gh.webhookSecret, apiUrl: gh.url }, now: clock.now });
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("a rate limit is not waited out inside the request: the refusal comes at once, then no request until the reset", async () => {
    const repo = { host: "github.com", owner: "octo-t", name: "app" };
    const { codeHost } = server.greenline.services;
    expect(await codeHost.getBranchHead(repo, "main")).toBe(gh.branchHead("octo-t/app", "main"));
    gh.setRateLimit(99, gh.rateLimitOf(99).used);
    const resetAt = gh.rateLimitOf(99).resetAt;
    await expect(codeHost.getBranchHead(repo, "main")).rejects.toMatchObject({ kind: "rate_limited", retryAt: resetAt });
    const calls = gh.requests.length;
    await expect(codeHost.getBranchHead(repo, "main")).rejects.toMatchObject({ kind: "rate_limited", retryAt: resetAt });
    expect(gh.requests.length).toBe(calls);
    clock.ms = resetAt;
    expect(await codeHost.getBranchHead(repo, "main")).toBe(gh.branchHead("octo-t/app", "main"));
  });
});
