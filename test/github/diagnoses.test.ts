import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { WebhookReceiver } from "../support/webhook-receiver.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const MINUTE = 60_000;

/**
 * Diagnoses instead of silent waits (docs/diagnoses.md): a run whose required checks have not
 * appeared on its testing branch after the queue's checks-start timeout says which and why (no
 * CI on testing branches, names that do not match, a path filter), on the API and on the PR,
 * and keeps waiting; getQueue flags required checks never seen and says why a queue with PRs
 * waiting merges nothing (blockedReason, and the greenline_queue_blocked metric). The clock is
 * the test's.
 */
describe.each(BACKENDS)("diagnoses, $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const clock = new TestClock();
  const OWNER = "octo-diag";
  const INSTALLATION = 79;
  let receiver: WebhookReceiver | undefined;

  const diagnosisEntries = async (name: string, number: number) => (await github.timelineOf(name, number)).filter((e) => ["no_checks_started", "check_names_mismatch", "path_filter_likely"].includes(e.reason));
  const details = (name: string, number: number) => api.ok("getMergeQueueTestingDetails", github.pr(name, number));
  const commentsOn = (name: string, number: number) => gh.comments.filter((c) => c.repo === `${OWNER}/${name}` && c.number === number).map((c) => c.body);
  const queueStatusesOf = (name: string, sha: string) => gh.statuses.filter((s) => s.repo === `${OWNER}/${name}` && s.sha === sha && s.context === "greenline/merge-queue").map((s) => s.description);

  async function status(name: string, sha: string, context: string, state: "pending" | "success" | "failure") {
    const s = gh.ciStatus(`${OWNER}/${name}`, sha, context, state);
    await github.deliver("status", { ...s, name: `${OWNER}/${name}`, repository: github.repository(name), installation: { id: INSTALLATION } });
  }

  /** Opens and submits PR `number`; answers its testing branch's commit once built. */
  async function submitted(name: string, number: number): Promise<{ testSha: string; headSha: string }> {
    const opened = gh.openPr(`${OWNER}/${name}`, { number, files: { [`src/${number}.ts`]: String(number) } });
    await api.ok("submitPullRequest", github.pr(name, number));
    await github.drain();
    const branches = gh.branches(`${OWNER}/${name}`, "greenline/");
    expect(branches.length).toBeGreaterThan(0);
    return { testSha: branches.at(-1)!.sha, headSha: opened.headSha };
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    gh.useClock(() => clock.ms);
    server = await startTestServer(backend, { now: clock.now, random: () => 0.5, webhooks: { allowPrivate: true }, githubApp: githubAppOf(gh) });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: INSTALLATION, accountId: 790 });
    api = github.api;
  });
  afterAll(async () => {
    await receiver?.close();
    await server?.close();
    await gh?.stop();
  });

  test("no check of any kind on the testing branch: after the checks-start timeout the API and the PR say which check never appeared and that CI does not trigger on greenline/**; the run keeps waiting", async () => {
    await api.ok("createQueue", { ...github.queue("silent"), requiredStatuses: ["build"], mergeMethod: "merge_commit", checksStartTimeoutMinutes: 10 });
    const { headSha } = await submitted("silent", 1);
    clock.advance(9 * MINUTE);
    await github.drain();
    expect((await details("silent", 1)).diagnosis).toBeNull();
    expect((await api.ok("getQueue", github.queue("silent"))).neverSeenRequiredChecks).toEqual([]);

    clock.advance(MINUTE);
    await github.drain();
    const run = await details("silent", 1);
    expect(run.status).toBe("in_progress");
    expect(run.diagnosis).toMatchObject({ code: "no_checks_started", missingChecks: ["build"], seenChecks: [] });
    expect(run.diagnosis.message).toContain("greenline/**");
    expect(await github.stateOf("silent", 1)).toBe("testing");
    // Told on the PR once: a comment, and the queue's status description.
    expect(commentsOn("silent", 1)).toEqual([expect.stringContaining("no_checks_started")]);
    expect(commentsOn("silent", 1)[0]).toContain("greenline/**");
    expect(queueStatusesOf("silent", headSha).at(-1)).toBe("Testing: required check not started: build");
    const got = await api.ok("getQueue", github.queue("silent"));
    expect(got.neverSeenRequiredChecks).toEqual(["build"]);
    expect(got.blockedReason).toMatchObject({ code: "checks_not_started", evidence: { missingChecks: ["build"], diagnosis: "no_checks_started" } });
    // On the PR's timeline: an entry of its own, the state unchanged, the diagnosis's code and evidence.
    expect(await diagnosisEntries("silent", 1)).toEqual([
      {
        at: run.diagnosis.at,
        previousState: "testing",
        state: "testing",
        reason: "no_checks_started",
        message: expect.stringContaining("greenline/**"),
        actor: { kind: "engine", name: "greenline" },
        evidence: { run: expect.objectContaining({ id: expect.any(String), tested: [1] }), missingChecks: ["build"], seenChecks: [], prHead: headSha },
      },
    ]);
    expect((await github.timelineOf("silent", 1)).at(-1)!.reason).toBe("no_checks_started");
    clock.advance(30 * MINUTE);
    await github.drain();
    expect(commentsOn("silent", 1)).toHaveLength(1);
    expect(await diagnosisEntries("silent", 1)).toHaveLength(1);
    expect(await github.stateOf("silent", 1)).toBe("testing");
  });

  test("other checks appeared, not the required one: the diagnosis says the names don't match, with the close name seen", async () => {
    await api.ok("createQueue", { ...github.queue("names"), requiredStatuses: ["Build"], mergeMethod: "merge_commit" });
    const { testSha } = await submitted("names", 1);
    await status("names", testSha, "build", "success");
    await status("names", testSha, "lint", "success");
    clock.advance(10 * MINUTE);
    await github.drain();
    const { diagnosis } = await details("names", 1);
    expect(diagnosis).toMatchObject({ code: "check_names_mismatch", missingChecks: ["Build"], seenChecks: ["build", "lint"], suggestions: { Build: ["build"] } });
    expect(diagnosis.message).toContain(`seen "build", "lint"; required "Build"`);
    expect(commentsOn("names", 1)).toEqual([expect.stringContaining(`"Build" may be "build"`)]);
    expect(await diagnosisEntries("names", 1)).toEqual([
      expect.objectContaining({ reason: "check_names_mismatch", state: "testing", evidence: expect.objectContaining({ missingChecks: ["Build"], seenChecks: ["build", "lint"], suggestions: { Build: ["build"] } }) }),
    ]);
    expect((await api.ok("getQueue", github.queue("names"))).neverSeenRequiredChecks).toEqual(["Build"]);
  });

  test("a required check seen on earlier testing branches of the queue, not on this one: likely a path filter; getQueue flags nothing as never seen", async () => {
    await api.ok("createQueue", { ...github.queue("paths"), requiredStatuses: ["build", "docs"], mergeMethod: "merge_commit" });
    const first = await submitted("paths", 1);
    await status("paths", first.testSha, "build", "success");
    await status("paths", first.testSha, "docs", "success");
    await github.drain();
    expect(await github.stateOf("paths", 1)).toBe("merged");
    const second = await submitted("paths", 2);
    await status("paths", second.testSha, "build", "success");
    clock.advance(10 * MINUTE);
    await github.drain();
    const { diagnosis } = await details("paths", 2);
    expect(diagnosis).toMatchObject({ code: "path_filter_likely", missingChecks: ["docs"], seenChecks: ["build"] });
    expect(diagnosis.message).toContain("path filter");
    const got = await api.ok("getQueue", github.queue("paths"));
    expect(got.neverSeenRequiredChecks).toEqual([]);
    expect(got.blockedReason).toMatchObject({ code: "checks_not_started", evidence: { diagnosis: "path_filter_likely", missingChecks: ["docs"] } });
  });

  test("checksStartTimeoutMinutes must be less than the testing timeout, else a clear 400 naming the field", async () => {
    const created = await api.ok("createQueue", github.queue("bounds"));
    expect(created.checksStartTimeoutMinutes).toBe(10);
    const refused = await api.call("updateQueue", { ...github.queue("bounds"), testingTimeoutMinutes: 20, checksStartTimeoutMinutes: 20 });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details[0]).toMatchObject({ path: "checksStartTimeoutMinutes", message: expect.stringContaining("less than testingTimeoutMinutes (20)") });
    const refusedAtCreate = await api.call("createQueue", { ...github.queue("bounds2"), checksStartTimeoutMinutes: 300 });
    expect(refusedAtCreate.status).toBe(400);
    expect((await api.ok("updateQueue", { ...github.queue("bounds"), checksStartTimeoutMinutes: 5 })).checksStartTimeoutMinutes).toBe(5);
  });

  test("a paused queue with PRs waiting says so in getQueue and in greenline_queue_blocked", async () => {
    await api.ok("createQueue", { ...github.queue("paused"), requiredStatuses: ["build"], mergeMethod: "merge_commit" });
    expect((await api.ok("getQueue", github.queue("paused"))).blockedReason).toBeNull();
    await api.ok("updateQueue", { ...github.queue("paused"), state: "paused" });
    gh.openPr(`${OWNER}/paused`, { number: 1 });
    await api.ok("submitPullRequest", github.pr("paused", 1));
    await github.drain();
    const got = await api.ok("getQueue", github.queue("paused"));
    expect(got.blockedReason).toMatchObject({ code: "paused", evidence: { pullRequestsWaiting: 1 } });
    expect(got.blockedReason.since).toEqual(expect.any(String));
    const metrics = (await api.get("getMergeQueueMetrics")).text;
    const labels = `repo="${OWNER}/paused",branch="main",queue_type="main"`;
    expect(metrics).toContain(`greenline_queue_blocked{${labels},reason="paused"} 1`);
    expect(metrics).toContain(`greenline_queue_blocked{${labels},reason="effect_failing"} 0`);
    await api.ok("updateQueue", { ...github.queue("paused"), state: "running" });
    await github.drain();
    expect((await api.ok("getQueue", github.queue("paused"))).blockedReason).toBeNull();
    expect((await api.get("getMergeQueueMetrics")).text).toContain(`greenline_queue_blocked{${labels},reason="paused"} 0`);
  });

  test("an effect the code host keeps refusing: blockedReason names it, its attempts and the code host's words", async () => {
    await api.ok("createQueue", { ...github.queue("failing"), requiredStatuses: ["build"], mergeMethod: "merge_commit" });
    gh.openPr(`${OWNER}/failing`, { number: 1 });
    gh.failNext("POST", /\/failing\/statuses\//, 503, "Service Unavailable", 3);
    await api.ok("submitPullRequest", github.pr("failing", 1));
    await github.drain();
    const got = await api.ok("getQueue", github.queue("failing"));
    expect(got.blockedReason).toMatchObject({ code: "effect_failing", evidence: { effect: "pr_status", attempts: 1, error: expect.stringContaining("Service Unavailable") } });
    expect(got.blockedReason.message).toContain("Service Unavailable");
    expect((await api.get("getMergeQueueMetrics")).text).toContain(`greenline_queue_blocked{repo="${OWNER}/failing",branch="main",queue_type="main",reason="effect_failing"} 1`);
    clock.advance(10 * MINUTE);
    await github.drain();
    clock.advance(10 * MINUTE);
    await github.drain();
    clock.advance(10 * MINUTE);
    await github.drain();
    expect((await api.ok("getQueue", github.queue("failing"))).blockedReason?.code).not.toBe("effect_failing");
  });

  test("the installation's rate limit spent: blockedReason rate_limited with GitHub's words and the next attempt", async () => {
    await api.ok("createQueue", { ...github.queue("limited"), requiredStatuses: ["build"], mergeMethod: "squash" });
    const { testSha } = await submitted("limited", 1);
    gh.setRateLimit(INSTALLATION, gh.rateLimitOf(INSTALLATION).used);
    await status("limited", testSha, "build", "success");
    await github.drain();
    const got = await api.ok("getQueue", github.queue("limited"));
    expect(got.blockedReason).toMatchObject({ code: "rate_limited", evidence: { effect: expect.any(String), error: expect.stringContaining("rate limit exceeded") } });
    expect(got.blockedReason.evidence.nextAttemptAt).toEqual(expect.any(String));
    expect((await api.get("getMergeQueueMetrics")).text).toContain(`greenline_queue_blocked{repo="${OWNER}/limited",branch="main",queue_type="main",reason="rate_limited"} 1`);
    gh.setRateLimit(INSTALLATION, 5000);
    clock.ms = gh.rateLimitOf(INSTALLATION).resetAt;
    await github.drain();
    expect(await github.stateOf("limited", 1)).toBe("merged");
    expect((await api.ok("getQueue", github.queue("limited"))).blockedReason).toBeNull();
  });
  test("a required check never starting: queue.blocked checks_not_started once, with the missing checks; the check reporting and the PR merging: queue.unblocked", async () => {
    receiver = await new WebhookReceiver().start();
    const created = await api.ok("webhooks/create-endpoint", { url: receiver.url, events: ["queue.blocked", "queue.unblocked"] });
    receiver.secrets.push(created.secret);
    const ofRepo = () => receiver!.received.filter((m) => m.data.repository === `github.com/${OWNER}/hooked`).map((m) => [m.type, m.data.reason ?? m.data.previousReason]);
    await api.ok("createQueue", { ...github.queue("hooked"), requiredStatuses: ["build"], mergeMethod: "merge_commit", checksStartTimeoutMinutes: 10 });
    const { testSha } = await submitted("hooked", 1);
    clock.advance(10 * MINUTE);
    await github.drain();
    clock.advance(MINUTE);
    await github.drain();
    await server.greenline.worker.deliverWebhooks();
    expect(ofRepo()).toEqual([["queue.blocked", "checks_not_started"]]);
    const blocked = receiver.received.find((m) => m.data.repository === `github.com/${OWNER}/hooked`)!;
    expect(blocked.data).toMatchObject({ branch: "main", evidence: { diagnosis: "no_checks_started", missingChecks: ["build"], testBranch: expect.stringContaining("greenline/") } });
    await status("hooked", testSha, "build", "success");
    await github.drain();
    expect(await github.stateOf("hooked", 1)).toBe("merged");
    await server.greenline.worker.deliverWebhooks();
    expect(ofRepo()).toEqual([
      ["queue.blocked", "checks_not_started"],
      ["queue.unblocked", "checks_not_started"],
    ]);
  });
});
