import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

describe.each(BACKENDS)("pull requests on $name", (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
    await server.api.ok("createQueue", queueOf());
    await server.api.ok("createQueue", { ...queueOf("lanes"), mode: "parallel" });
  });
  afterAll(() => server?.close());

  test("submitPullRequest answers {} and the PR starts testing, with every field of the record", async () => {
    expect(await server.api.ok("submitPullRequest", prOf(1))).toEqual({});
    const record = await server.api.ok("getSubmittedPullRequest", prOf(1));
    expect(record).toEqual({
      id: expect.any(String),
      state: "testing",
      stateChangedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      stateReason: "testing",
      priorityValue: 100,
      priorityName: "medium",
      usedDefaultPriorityName: "medium",
      skipTheLine: false,
      forceEnqueued: false,
      isCurrentlySubmittedToQueue: true,
      noBatch: false,
      prNumber: 1,
      prTitle: "Sandbox pull request #1",
      prSha: expect.stringMatching(/^[0-9a-f]{40}$/),
      prBaseBranch: "main",
      prAuthor: expect.any(String),
      readiness: { requiresImpactedTargets: false, doesBaseBranchMatch: true, hasImpactedTargets: false, gitHubMergeability: "mergeable" },
      // First in line; no run has finished yet, so there is nothing to estimate from.
      position: { index: 1, ahead: 0 },
      estimatedMergeAt: null,
    });
  });

  test("priority accepts names in either case, numbers and numeric strings; pr.number accepts a numeric string", async () => {
    await server.api.ok("submitPullRequest", { ...prOf(2), pr: { number: "2" }, priority: "URGENT" });
    const urgent = await server.api.ok("getSubmittedPullRequest", prOf(2));
    expect(urgent).toMatchObject({ priorityValue: 0, priorityName: "urgent", skipTheLine: true });
    // SPEC.md: a string when the default was applied; never null.
    expect(urgent).not.toHaveProperty("usedDefaultPriorityName");
    expect((await server.api.ok("getQueue", queueOf())).enqueuedPullRequests.find((pr: { prNumber: number }) => pr.prNumber === 2)).not.toHaveProperty("usedDefaultPriorityName");
    await server.api.ok("submitPullRequest", { ...prOf(3), priority: 42 });
    expect(await server.api.ok("getSubmittedPullRequest", prOf(3))).toMatchObject({ priorityValue: 42, priorityName: "42", skipTheLine: false });
    await server.api.ok("submitPullRequest", { ...prOf(4), priority: "200" });
    expect(await server.api.ok("getSubmittedPullRequest", prOf(4))).toMatchObject({ priorityValue: 200, priorityName: "low" });
  });

  test.each([[-1], [256], ["highest"], [1.5], [true]])("priority %p is rejected", async (priority) => {
    const response = await server.api.call("submitPullRequest", { ...prOf(5), priority });
    expect(response.status).toBe(400);
    expect(response.body.error.details[0].path).toBe("priority");
    expect((await server.api.call("getSubmittedPullRequest", prOf(5))).status).toBe(404);
  });

  test("resubmitting a queued PR updates its priority and batching, keeping its state", async () => {
    await server.api.ok("submitPullRequest", prOf(10));
    const before = await server.api.ok("getSubmittedPullRequest", prOf(10));
    await server.api.ok("submitPullRequest", { ...prOf(10), priority: "high", noBatch: true });
    const after = await server.api.ok("getSubmittedPullRequest", prOf(10));
    expect(after).toMatchObject({ id: before.id, state: "pending", priorityValue: 10, priorityName: "high", noBatch: true, stateChangedAt: before.stateChangedAt });
  });

  test("getQueue lists the PRs in play in queue order: priority, then submission", async () => {
    await server.api.ok("createQueue", queueOf("order"));
    await server.api.ok("submitPullRequest", { ...prOf(21, "order"), priority: "low" });
    await server.api.ok("submitPullRequest", prOf(22, "order"));
    await server.api.ok("submitPullRequest", { ...prOf(23, "order"), priority: "urgent" });
    await server.api.ok("submitPullRequest", prOf(24, "order"));
    await server.api.ok("submitPullRequest", prOf(25, "order"));
    await server.api.ok("cancelPullRequest", prOf(25, "order"));
    const queue = await server.api.ok("getQueue", queueOf("order"));
    expect(queue.enqueuedPullRequests.map((pr: { prNumber: number }) => pr.prNumber)).toEqual([23, 22, 24, 21]);
  });

  test("cancelPullRequest cancels, is idempotent, and a cancelled PR can be submitted again", async () => {
    await server.api.ok("submitPullRequest", prOf(30));
    expect(await server.api.ok("cancelPullRequest", prOf(30))).toEqual({});
    expect(await server.api.ok("getSubmittedPullRequest", prOf(30))).toMatchObject({ state: "cancelled", stateReason: "cancelled_by_user", isCurrentlySubmittedToQueue: false });
    expect(await server.api.ok("cancelPullRequest", prOf(30))).toEqual({});
    await server.api.ok("submitPullRequest", prOf(30));
    expect(await server.api.ok("getSubmittedPullRequest", prOf(30))).toMatchObject({ state: "pending", stateReason: "resubmitted", isCurrentlySubmittedToQueue: true });
  });

  test("cancel, restart and get of a PR never submitted are 404", async () => {
    for (const op of ["cancelPullRequest", "restartTestsOnPullRequest", "getSubmittedPullRequest", "getMergeQueueTestingDetails"]) {
      const response = await server.api.call(op, prOf(999));
      expect([op, response.status]).toEqual([op, 404]);
      expect(response.body.error.message).toContain("#999");
    }
  });

  test("restartTestsOnPullRequest needs a PR in the queue", async () => {
    await server.api.ok("submitPullRequest", prOf(40));
    expect(await server.api.ok("restartTestsOnPullRequest", prOf(40))).toEqual({});
    await server.api.ok("cancelPullRequest", prOf(40));
    const response = await server.api.call("restartTestsOnPullRequest", prOf(40));
    expect(response.status).toBe(409);
    expect(response.body.error.message).toContain("cancelled");
  });

  test("getMergeQueueTestingDetails is 404 while the PR has no test run", async () => {
    await server.api.ok("submitPullRequest", prOf(45));
    const response = await server.api.call("getMergeQueueTestingDetails", prOf(45));
    expect(response.status).toBe(404);
    expect(response.body.error.message).toContain("no test run");
  });

  test("operations on a queue that does not exist are 404 and store nothing", async () => {
    for (const op of ["submitPullRequest", "cancelPullRequest", "restartTestsOnPullRequest", "getSubmittedPullRequest"]) {
      expect((await server.api.call(op, prOf(1, "web", "no-such-branch"))).status).toBe(404);
    }
    expect((await server.api.call("setImpactedTargets", { ...prOf(1, "web", "no-such-branch"), impactedTargets: ["a"] })).status).toBe(404);
  });

  test("a draining queue refuses submissions with 409; a paused queue accepts them", async () => {
    await server.api.ok("createQueue", queueOf("drain"));
    await server.api.ok("updateQueue", { ...queueOf("drain"), state: "draining" });
    const refused = await server.api.call("submitPullRequest", prOf(50, "drain"));
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain("draining");
    expect((await server.api.call("getSubmittedPullRequest", prOf(50, "drain"))).status).toBe(404);
    await server.api.ok("updateQueue", { ...queueOf("drain"), state: "paused" });
    await server.api.ok("submitPullRequest", prOf(50, "drain"));
    expect((await server.api.ok("getSubmittedPullRequest", prOf(50, "drain"))).state).toBe("pending");
  });

  describe("impacted targets", () => {
    test("in parallel mode a PR is not ready until targets for its head are set", async () => {
      await server.api.ok("submitPullRequest", prOf(60, "lanes"));
      const waiting = await server.api.ok("getSubmittedPullRequest", prOf(60, "lanes"));
      expect(waiting).toMatchObject({ state: "not_ready", readiness: { requiresImpactedTargets: true, hasImpactedTargets: false } });

      // Targets computed for another commit do not count.
      await server.api.ok("setImpactedTargets", { ...queueOf("lanes"), pr: { number: 60, sha: "a".repeat(40) }, impactedTargets: ["//app:lib"] });
      expect((await server.api.ok("getSubmittedPullRequest", prOf(60, "lanes"))).state).toBe("not_ready");

      expect(await server.api.ok("setImpactedTargets", { ...queueOf("lanes"), pr: { number: 60, sha: waiting.prSha }, impactedTargets: ["//app:lib"] })).toEqual({});
      expect(await server.api.ok("getSubmittedPullRequest", prOf(60, "lanes"))).toMatchObject({
        state: "testing",
        readiness: { hasImpactedTargets: true },
      });
    });

    test("targets uploaded before submission count, and ALL / IMPACTS_ALL are accepted", async () => {
      expect(await server.api.ok("setImpactedTargets", { ...prOf(61, "lanes"), impactedTargets: "ALL" })).toEqual({});
      await server.api.ok("submitPullRequest", prOf(61, "lanes"));
      expect((await server.api.ok("getSubmittedPullRequest", prOf(61, "lanes"))).state).toBe("pending");
      expect(await server.api.ok("setImpactedTargets", { ...prOf(62, "lanes"), impactedTargets: "IMPACTS_ALL" })).toEqual({});
      expect(await server.api.ok("setImpactedTargets", { ...prOf(63, "lanes"), impactedTargets: [] })).toEqual({});
    });

    test("a 19 MiB target list is accepted", async () => {
      const target = (i: number) => `//services/payments/internal/ledger/reconciliation:target_${String(i).padStart(7, "0")}`;
      const count = Math.ceil((19 * 1024 * 1024) / (target(0).length + 3));
      const impactedTargets = Array.from({ length: count }, (_, i) => target(i));
      const body = JSON.stringify({ ...prOf(64, "lanes"), impactedTargets });
      expect(body.length).toBeGreaterThan(19 * 1024 * 1024);
      expect(body.length).toBeLessThan(20 * 1024 * 1024);
      const response = await server.api.call("setImpactedTargets", body);
      expect(response.status).toBe(200);
      await server.api.ok("submitPullRequest", prOf(64, "lanes"));
      expect((await server.api.ok("getSubmittedPullRequest", prOf(64, "lanes"))).readiness.hasImpactedTargets).toBe(true);
    });

    test.each([[["ok", 5]], ["SOME"], [{ targets: [] }], [null]])("impactedTargets %p is rejected", async (impactedTargets) => {
      const response = await server.api.call("setImpactedTargets", { ...prOf(65, "lanes"), impactedTargets });
      expect(response.status).toBe(400);
      expect(response.body.error.details[0].path).toMatch(/^impactedTargets/);
    });
  });
});
