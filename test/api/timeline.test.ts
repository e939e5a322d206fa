import { createToken } from "../../src/auth/tokens.js";
import { REASONS } from "../../src/domain/reasons.js";
import { TIMELINE_MAX } from "../../src/domain/timeline.js";
import { BACKENDS } from "../support/backends.js";
import { ApiClient, ciFinishes, prOf, queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const CI_MS = 60_000;

/**
 * Timelines, positions and estimates, and operator actions, through the real API on the
 * sandbox (its CI fails a PR opened as broken): what each transition says, who caused it, and
 * the evidence it carries.
 */
describe.each(BACKENDS)("timelines and queue events, $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock();
  const clients = new Map<string, ApiClient>();

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: CI_MS } });
  });
  afterAll(() => server?.close());

  /** A client of the acme organization whose API token is called `name`. */
  async function as(name: string): Promise<ApiClient> {
    if (!clients.has(name)) {
      const { token } = await createToken(server.greenline.services.db, "acme", name);
      clients.set(name, new ApiClient(server.url, token));
    }
    return clients.get(name)!;
  }
  const sandbox = () => server.greenline.sandbox!;
  const worker = () => server.greenline.worker;
  const timelineOf = async (n: number, name: string) => (await server.api.ok("getSubmittedPullRequest", { ...prOf(n, name), includeTimeline: true })).timeline;

  test("a failed PR's timeline names its run, its reason and who moved it; the PR behind it blames it; positions and estimates", async () => {
    const bot = await as("release-bot");
    await server.api.ok("createQueue", { ...queueOf("fail"), concurrency: 3 });
    await sandbox().openPullRequest(repo("fail"), { number: 2, targetBranch: "main", files: { "src/bad.ts": "syntax error" }, broken: true });
    for (const n of [1, 2, 3]) await bot.ok("submitPullRequest", prOf(n, "fail"));
    await worker().drain();

    // Three in line; no run has finished, so no estimate yet.
    const queued = (await server.api.ok("getQueue", queueOf("fail"))).enqueuedPullRequests;
    expect(queued.map((pr: any) => [pr.prNumber, pr.position, pr.estimatedMergeAt])).toEqual([
      [1, { index: 1, ahead: 0 }, null],
      [2, { index: 2, ahead: 1 }, null],
      [3, { index: 3, ahead: 2 }, null],
    ]);
    // The API answers no timeline unless asked.
    expect(await server.api.ok("getSubmittedPullRequest", prOf(2, "fail"))).not.toHaveProperty("timeline");

    await ciFinishes(server, clock);
    const timeline = await timelineOf(2, "fail");
    expect(timeline[0]).toEqual({
      at: expect.any(String),
      state: "pending",
      previousState: null,
      reason: "submitted",
      message: REASONS.submitted,
      actor: { kind: "token", name: "release-bot" },
      evidence: { prHead: expect.stringMatching(/^[0-9a-f]{40}$/), command: "submitPullRequest" },
    });
    const run = { id: "run-2", kind: "main", testBranch: "greenline/main/run-2", testedHead: expect.stringMatching(/^[0-9a-f]{40}$/), tested: [2], stack: [1, 2] };
    // The run starts before its testing branch exists: the branch and its head come with its result.
    expect(timeline[1]).toMatchObject({ state: "testing", previousState: "pending", reason: "testing", message: REASONS.testing, actor: { kind: "token", name: "release-bot" } });
    expect(timeline[1].evidence.run).toEqual({ ...run, testBranch: null, testedHead: null });
    // CI's verdict is the code host's (the sandbox's); the failure comes with the run that failed.
    expect(timeline).toContainEqual(
      expect.objectContaining({ state: "pending_failure", reason: "tests_failed", message: REASONS.tests_failed, actor: { kind: "code_host", name: "sandbox" }, evidence: expect.objectContaining({ run }) }),
    );
    expect(timeline.at(-1)).toMatchObject({ state: "failed", previousState: "pending_failure", reason: "tests_failed", message: REASONS.tests_failed, evidence: { run } });
    // Oldest first.
    expect(timeline.map((e: any) => e.at)).toEqual([...timeline.map((e: any) => e.at)].sort());

    // PR 3's run held PR 2: it is tested again, and its timeline says whose failure did it.
    expect(await timelineOf(3, "fail")).toContainEqual(
      expect.objectContaining({
        state: "pending",
        reason: "restarted_prs_ahead_changed",
        message: REASONS.restarted_prs_ahead_changed,
        evidence: expect.objectContaining({ blamedPr: 2, run: expect.objectContaining({ id: "run-3", stack: [1, 2, 3] }) }),
      }),
    );

    // PR 3 is first in line now, and two finished runs (one failed) give an estimate: within
    // one CI duration, stretched by the failure rate.
    const pr3 = await server.api.ok("getSubmittedPullRequest", prOf(3, "fail"));
    expect(pr3).toMatchObject({ state: "testing", position: { index: 1, ahead: 0 } });
    const eta = Date.parse(pr3.estimatedMergeAt) - clock.ms;
    expect(eta).toBeGreaterThan(0);
    expect(eta).toBeLessThanOrEqual(3 * CI_MS);
    // A PR out of the queue has no place.
    expect(await server.api.ok("getSubmittedPullRequest", prOf(2, "fail"))).toMatchObject({ position: null, estimatedMergeAt: null });
  });

  test("an estimate is counted from when it is asked: CI running late is estimated now, never in the past, by both endpoints alike; a paused queue tells none", async () => {
    await server.api.ok("createQueue", { ...queueOf("late"), concurrency: 1 });
    await server.api.ok("submitPullRequest", prOf(1, "late"));
    await ciFinishes(server, clock);
    await server.api.ok("submitPullRequest", prOf(2, "late"));
    await worker().drain();
    const estimates = async () => {
      const queued = (await server.api.ok("getQueue", queueOf("late"))).enqueuedPullRequests.find((pr: any) => pr.prNumber === 2);
      const alone = await server.api.ok("getSubmittedPullRequest", prOf(2, "late"));
      return [queued.estimatedMergeAt, alone.estimatedMergeAt] as (string | null)[];
    };
    const first = await estimates();
    expect(Date.parse(first[0]!)).toBeGreaterThan(clock.ms);
    expect(first[1]).toBe(first[0]);

    // CI runs three times as long as it did: nothing in the queue changed, yet no answer tells a time gone by.
    clock.advance(3 * CI_MS);
    const late = await estimates();
    for (const at of late) expect(Date.parse(at!)).toBeGreaterThanOrEqual(clock.ms);
    expect(late[1]).toBe(late[0]);

    // Paused: nothing moves until someone resumes it, so no time is told (the place in line stays).
    await server.api.ok("updateQueue", { ...queueOf("late"), state: "paused" });
    expect(await estimates()).toEqual([null, null]);
    expect((await server.api.ok("getSubmittedPullRequest", prOf(2, "late"))).position).toEqual({ index: 1, ahead: 0 });
    await server.api.ok("updateQueue", { ...queueOf("late"), state: "running" });
    for (const at of await estimates()) expect(Date.parse(at!)).toBeGreaterThanOrEqual(clock.ms);
  });

  test("a failed batch is bisected: the culprit's failure names it, with the batch it was found in", async () => {
    await server.api.ok("createQueue", { ...queueOf("batch"), batch: true, batchingMinSize: 2 });
    await sandbox().openPullRequest(repo("batch"), { number: 2, targetBranch: "main", files: { "src/bad.ts": "syntax error" }, broken: true });
    for (const n of [1, 2]) await server.api.ok("submitPullRequest", prOf(n, "batch"));
    for (let round = 0; round < 6; round++) await ciFinishes(server, clock);
    expect((await server.api.ok("getSubmittedPullRequest", prOf(1, "batch"))).state).toBe("merged");

    const timeline = await timelineOf(2, "batch");
    expect(timeline).toContainEqual(
      expect.objectContaining({
        state: "pending",
        reason: "bisecting_failed_batch",
        message: REASONS.bisecting_failed_batch,
        evidence: expect.objectContaining({ run: expect.objectContaining({ id: "run-1", tested: [1, 2] }), bisection: { batch: [1, 2], groupSize: 1 } }),
      }),
    );
    expect(timeline.at(-1)).toMatchObject({
      state: "failed",
      reason: "tests_failed",
      evidence: { blamedPr: 2, bisection: { batch: [1, 2], culprit: 2 }, run: { kind: "bisection", tested: [2] } },
    });
    // The innocent PR was bisected out of the same batch.
    expect(await timelineOf(1, "batch")).toContainEqual(expect.objectContaining({ reason: "bisecting_failed_batch", evidence: expect.objectContaining({ bisection: { batch: [1, 2], groupSize: 1 } }) }));
  });

  test("a cancel names the token that did it; cancelling someone else's PR and urgent submissions are operator actions", async () => {
    const alice = await as("alice");
    const bob = await as("bob");
    await server.api.ok("createQueue", queueOf("cancels"));
    await alice.ok("submitPullRequest", prOf(1, "cancels"));
    await bob.ok("cancelPullRequest", prOf(1, "cancels"));
    expect((await timelineOf(1, "cancels")).at(-1)).toMatchObject({
      state: "cancelled",
      reason: "cancelled_by_user",
      message: REASONS.cancelled_by_user,
      actor: { kind: "token", name: "bob" },
      evidence: { command: "cancelPullRequest" },
    });
    // Cancelling one's own PR is no operator action.
    await alice.ok("submitPullRequest", prOf(2, "cancels"));
    await alice.ok("cancelPullRequest", prOf(2, "cancels"));
    await bob.ok("submitPullRequest", { ...prOf(3, "cancels"), priority: "urgent" });

    const { events } = await server.api.ok("getQueueEvents", queueOf("cancels"));
    expect(events.map((e: any) => [e.kind, e.actor, e.details])).toEqual([
      ["urgent_submission", { kind: "token", name: "bob" }, { prNumber: 3, command: "submitPullRequest" }],
      ["cancelled_by_other", { kind: "token", name: "bob" }, { prNumber: 1, submittedBy: { kind: "token", name: "alice" }, command: "cancelPullRequest" }],
    ]);
  });

  test("pause, resume and settings changes are read back through getQueueEvents with who did them, newest first, paged", async () => {
    const ops = await as("ops");
    await server.api.ok("createQueue", queueOf("ops"));
    await ops.ok("updateQueue", { ...queueOf("ops"), state: "paused" });
    clock.advance(1000);
    await ops.ok("updateQueue", { ...queueOf("ops"), state: "running" });
    clock.advance(1000);
    await ops.ok("updateQueue", { ...queueOf("ops"), concurrency: 2, batch: true, requiredStatuses: ["ci/test"] });
    clock.advance(1000);
    // Changing nothing records nothing.
    await ops.ok("updateQueue", { ...queueOf("ops"), concurrency: 2, state: "running" });
    await server.api.ok("updateQueue", { ...queueOf("ops"), state: "draining" });

    const first = await server.api.ok("getQueueEvents", { ...queueOf("ops"), limit: 2 });
    expect(first.events.map((e: any) => [e.kind, e.actor.name, e.details])).toEqual([
      ["draining", "bootstrap (GREENLINE_API_TOKEN)", { from: "running", to: "draining", command: "updateQueue" }],
      ["settings_changed", "ops", { changes: { concurrency: { from: 1, to: 2 }, batch: { from: false, to: true }, requiredStatuses: { from: null, to: ["ci/test"] } }, command: "updateQueue" }],
    ]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await server.api.ok("getQueueEvents", { ...queueOf("ops"), limit: 2, cursor: first.nextCursor });
    expect(second.events.map((e: any) => [e.kind, e.actor, e.details])).toEqual([
      ["resumed", { kind: "token", name: "ops" }, { from: "paused", to: "running", command: "updateQueue" }],
      ["paused", { kind: "token", name: "ops" }, { from: "running", to: "paused", command: "updateQueue" }],
    ]);
    expect(second).not.toHaveProperty("nextCursor");
    expect(Date.parse(second.events[0].at)).toBeGreaterThan(Date.parse(second.events[1].at));

    // Another queue's cursor, or none of this queue's, is refused by name.
    const bad = await server.api.call("getQueueEvents", { ...queueOf("cancels"), cursor: first.nextCursor });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual([{ path: "cursor", message: expect.stringContaining("not a cursor of this queue") }]);
    const tooMany = await server.api.call("getQueueEvents", { ...queueOf("ops"), limit: 101 });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.details).toEqual([{ path: "limit", message: expect.any(String) }]);
  });

  test(`a timeline keeps at most ${TIMELINE_MAX} transitions: the first and the latest`, async () => {
    await server.api.ok("createQueue", queueOf("bounded"));
    await server.api.ok("submitPullRequest", prOf(1, "bounded"));
    // Each restart is two transitions (testing → pending → testing).
    for (let i = 0; i < TIMELINE_MAX / 2 + 5; i++) await server.api.ok("restartTestsOnPullRequest", prOf(1, "bounded"));
    const timeline = await timelineOf(1, "bounded");
    expect(timeline).toHaveLength(TIMELINE_MAX);
    expect(timeline[0]).toMatchObject({ reason: "submitted", previousState: null });
    expect(timeline.at(-1)).toMatchObject({ state: "testing", previousState: "pending", reason: "testing" });
    expect(timeline.at(-2)).toMatchObject({ state: "pending", reason: "restart_requested", actor: { kind: "token", name: "bootstrap (GREENLINE_API_TOKEN)" }, evidence: { command: "restartTestsOnPullRequest" } });
    const stored = await server.greenline.services.db.read((tx) => tx.transition.count({ where: { entry: { prNumber: 1, queue: { repository: { name: "bounded" } } } } }));
    expect(stored).toBe(TIMELINE_MAX);
  });
});
