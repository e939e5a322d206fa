import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * The rate-limit reserve: retries (of effects, of webhook deliveries) stop while an
 * installation has less than its reserve (20 % here) of its rate limit left, so failing work
 * never spends what the queues need to move forward; they resume after the reset. The
 * installation's limit is set low (GitHub's is 5,000 an hour); the clock is the test's.
 */
describe.each(BACKENDS)("the rate-limit reserve of an installation, $name", (backend) => {
  const OWNER = "octo-b";
  const INSTALLATION = 77;
  const LIMIT = 150;
  const RESERVE = LIMIT * 0.2;
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const clock = new TestClock();

  const callsTo = (names: string[]) => gh.requests.filter((r) => names.some((name) => r.path.startsWith(`/repos/${OWNER}/${name}/`))).length;
  /** Ticks the worker every `stepMs` until `until` (epoch ms, the test's clock). */
  async function tickUntil(until: number, stepMs: number) {
    while (clock.ms + stepMs <= until) {
      clock.advance(stepMs);
      await server.greenline.worker.tick();
    }
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    gh.useClock(() => clock.ms);
    server = await startTestServer(backend, {
      githubApp: githubAppOf(gh, { reservePercent: 20 }),
      now: clock.now,
      random: () => 0.5,
    });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: INSTALLATION, accountId: 770 });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("failing effects' retries stop at the reserve; a healthy queue of the installation still merges; the retries resume after the reset", async () => {
    const failing = ["down1", "down2", "down3", "down4"];
    // The queues first (each creation reads the repository's workflows for its preflight), then
    // the limit, in a window of its own: the retries alone are to meet the reserve.
    for (const name of [...failing, "healthy"]) await api.ok("createQueue", { ...github.queue(name), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    clock.advance(gh.rateLimitOf(INSTALLATION).resetAt - clock.ms);
    gh.setRateLimit(INSTALLATION, LIMIT);
    for (const name of failing) {
      gh.openPr(`${OWNER}/${name}`, { number: 1 });
      // Every status Greenline sets on these PRs fails (a 502, transient): its effect is retried.
      gh.failNext("POST", new RegExp(`/${name}/statuses/`), 502, "Bad Gateway", 1_000_000);
      await api.ok("submitPullRequest", github.pr(name, 1));
    }
    gh.openPr(`${OWNER}/healthy`, { number: 1, files: { "src/healthy.ts": "1" } });
    const { resetAt } = gh.rateLimitOf(INSTALLATION);
    const failingBefore = callsTo(failing);

    // Forty minutes of retries, a tick every ten seconds.
    await tickUntil(clock.ms + 40 * 60_000, 10_000);
    const spentByRetries = callsTo(failing) - failingBefore;
    // Without the reserve they spend the whole limit; with it, they stop short of the reserve
    // (give or take the attempt in flight when it was reached: a request and its HTTP retry).
    expect(gh.rateLimitOf(INSTALLATION).remaining).toBeGreaterThanOrEqual(RESERVE - 2);
    expect(spentByRetries).toBeLessThanOrEqual(LIMIT - RESERVE + 2);
    expect(spentByRetries).toBeGreaterThan(LIMIT / 2);
    // They wait for the reset, not counted as attempts.
    const waiting = await server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { doneAt: null, attempts: { gt: 0 }, queue: { repository: { name: { in: failing } } } } }));
    expect(waiting.length).toBeGreaterThan(0);
    for (const effect of waiting) expect(effect.nextAttemptAt!.getTime()).toBe(resetAt);

    // The healthy queue, in the same installation, merges on what the reserve kept.
    const failingAtReserve = callsTo(failing);
    await api.ok("submitPullRequest", github.pr("healthy", 1));
    await server.greenline.worker.drain();
    const [testing] = gh.branches(`${OWNER}/healthy`, "greenline/");
    await github.postAccepted("status", github.statusPayload("healthy", testing!.sha, "ci/test", "success"));
    await server.greenline.worker.drain();
    expect(gh.pr(`${OWNER}/healthy`, 1)!.merged).toBe(true);
    expect(await github.stateOf("healthy", 1)).toBe("merged");

    // Until the reset, the failing queues ask GitHub nothing more.
    await tickUntil(resetAt - 1, 60_000);
    expect(callsTo(failing)).toBe(failingAtReserve);
    // After it, their retries resume.
    clock.ms = resetAt;
    await server.greenline.worker.tick();
    expect(callsTo(failing)).toBeGreaterThan(failingAtReserve);
  });

  /** Spends the installation's rate limit (a fresh window of LIMIT) down to just below the reserve. Answers the reset. */
  async function spendDownToReserve(name: string): Promise<number> {
    const { resetAt } = gh.rateLimitOf(INSTALLATION);
    clock.ms = resetAt;
    gh.setRateLimit(INSTALLATION, LIMIT);
    const repo = { host: "github.com", owner: OWNER, name };
    while (gh.rateLimitOf(INSTALLATION).remaining >= RESERVE) await server.greenline.services.codeHost.getBranchHead(repo, "main");
    return gh.rateLimitOf(INSTALLATION).resetAt;
  }

  test("a webhook delivery that failed is not retried below the reserve; it is after the reset", async () => {
    await api.ok("createQueue", { ...github.queue("inbox"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(`${OWNER}/inbox`, { number: 1 });
    const resetAt = await spendDownToReserve("inbox");
    // Greenline's answer to the command fails (a 502, transient): the delivery is retried.
    gh.failNext("POST", /\/inbox\/issues\/1\/comments$/, 502, "Bad Gateway", 1_000_000);
    const comments = () => gh.requests.filter((r) => r.method === "POST" && /\/inbox\/issues\/1\/comments$/.test(r.path)).length;
    await github.postAccepted("issue_comment", {
      action: "created",
      issue: { number: 1, pull_request: { url: `${gh.url}/repos/${OWNER}/inbox/pulls/1` } },
      comment: { id: 1, body: "/greenline help", user: { login: "dev", type: "User" } },
      repository: github.repository("inbox"),
      installation: { id: INSTALLATION },
      sender: { login: "dev", id: 2, type: "User" },
    });
    await server.greenline.worker.processWebhooks();
    const firstAttempt = comments();
    expect(firstAttempt).toBeGreaterThan(0);
    // Half an hour of ticks: without the reserve, the delivery is retried (ten attempts in all) on the reserve.
    await tickUntil(clock.ms + 30 * 60_000, 10_000);
    expect(comments()).toBe(firstAttempt);
    const [delivery] = await server.greenline.services.db.read((tx) => tx.webhookDelivery.findMany({ where: { processedAt: null, failedAt: null, repositoryKey: `github.com/${OWNER}/inbox` } }));
    expect(delivery).toMatchObject({ attempts: 1, nextAttemptAt: new Date(resetAt) });
    clock.ms = resetAt;
    await server.greenline.worker.tick();
    expect(comments()).toBeGreaterThan(firstAttempt);
  });

  test("CI results of a run in flight are not polled below the reserve; they are after the reset", async () => {
    await api.ok("createQueue", { ...github.queue("polled"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(`${OWNER}/polled`, { number: 1, files: { "src/polled.ts": "1" } });
    await api.ok("submitPullRequest", github.pr("polled", 1));
    await server.greenline.worker.drain();
    const [testing] = gh.branches(`${OWNER}/polled`, "greenline/");
    const polls = () => gh.requests.filter((r) => r.method === "GET" && r.path.includes(`/polled/`) && r.path.includes(testing!.sha)).length;
    const resetAt = await spendDownToReserve("polled");
    // CI passes, and its delivery is lost: only polling can tell.
    gh.setStatus(`${OWNER}/polled`, testing!.sha, "ci/test", "success");
    const before = polls();
    await tickUntil(resetAt - 1, 60_000);
    expect(polls()).toBe(before);
    expect(await github.stateOf("polled", 1)).toBe("testing");
    clock.ms = resetAt;
    await server.greenline.worker.drain();
    expect(polls()).toBeGreaterThan(before);
    expect(await github.stateOf("polled", 1)).toBe("merged");
  });

  test("a PR whose mergeability GitHub is still computing is not re-read below the reserve; it is after the reset", async () => {
    await api.ok("createQueue", { ...github.queue("computing"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    // GitHub answers `mergeable: null` until the test says it is known.
    gh.openPr(`${OWNER}/computing`, { number: 1, files: { "src/computing.ts": "1" }, mergeableState: "unknown" });
    const resetAt = await spendDownToReserve("computing");
    const reads = () => gh.requests.filter((r) => r.method === "GET" && /\/computing\/pulls\/1$/.test(r.path)).length;
    await api.ok("submitPullRequest", github.pr("computing", 1));
    expect(await github.stateOf("computing", 1)).toBe("not_ready");
    const before = reads();
    await tickUntil(resetAt - 1, 10_000);
    // Without the reserve: a re-read every minute at most, on the reserve.
    expect(reads()).toBe(before);
    gh.pr(`${OWNER}/computing`, 1)!.mergeableState = undefined;
    clock.ms = resetAt;
    await server.greenline.worker.drain();
    expect(reads()).toBeGreaterThan(before);
    expect(await github.stateOf("computing", 1)).toBe("testing");
  });
});
