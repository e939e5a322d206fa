import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

describe.each(BACKENDS)("queues on $name", (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
  });
  afterAll(() => server?.close());

  test("another organization's createQueue on a repository it does not own is a 404 that writes nothing, not even the sandbox's branch", async () => {
    await server.api.ok("createQueue", queueOf("owned"));
    const rival = await server.clientFor("rival-queues");
    const refused = await rival.call("createQueue", queueOf("owned", "rival-branch"));
    expect(refused.status).toBe(404);
    const refs = await server.greenline.services.db.read((tx) => tx.sandboxRef.findMany({ where: { repoKey: "github.com/acme/owned" }, select: { name: true } }));
    expect(refs.map((ref) => ref.name)).toEqual(["main"]);
  });

  test("createQueue answers the queue record with documented defaults", async () => {
    const created = await server.api.ok("createQueue", queueOf("defaults"));
    expect(created).toEqual({
      state: "running",
      branch: "main",
      mode: "single",
      concurrency: 1,
      bisectionConcurrency: 1,
      testingTimeoutMinutes: 300,
      checksStartTimeoutMinutes: 10,
      pendingFailureDepth: 0,
      canOptimisticallyMerge: false,
      batch: false,
      batchingMaxWaitTimeMinutes: 5,
      batchingMinSize: 4,
      commentsEnabled: true,
      commandsEnabled: true,
      createPrsForTestingBranches: false,
      statusCheckEnabled: true,
      requiredStatuses: [],
      requiredStatusesSource: "repo_provider_branch_protection",
      // The sandbox runs no workflow files: its CI reports on every testing branch, nothing to warn of.
      setupWarnings: [],
      directMergeMode: "off",
      optimizationMode: "off",
      mergeMethod: "squash",
      flakeHandling: "quarantined",
      flakyRetries: 1,
      ciBudget: 0,
      tuning: "fixed",
      pullRequestChecks: [],
    });
    const fetched = await server.api.ok("getQueue", queueOf("defaults"));
    // getQueue answers the record without the creation's preflight.
    const { setupWarnings: _preflight, ...record } = created;
    expect(fetched).toEqual({
      ...record,
      neverSeenRequiredChecks: [],
      blockedReason: null,
      freeze: { frozen: false, since: null, until: null, testing: true, reasons: [], nextChangeAt: null },
      enqueuedPullRequests: [],
    });
  });

  test("readers asking at once after each write all see that write (getQueue and getSubmittedPullRequest share one reading per version)", async () => {
    await server.api.ok("createQueue", { ...queueOf("shared-reads"), state: "paused" });
    for (const number of [1, 2, 3]) {
      await server.api.ok("submitPullRequest", prOf(number, "shared-reads"));
      const [queues, prs] = await Promise.all([
        Promise.all(Array.from({ length: 6 }, () => server.api.ok("getQueue", queueOf("shared-reads")))),
        Promise.all(Array.from({ length: 6 }, () => server.api.ok("getSubmittedPullRequest", prOf(number, "shared-reads")))),
      ]);
      for (const queue of queues) expect(queue.enqueuedPullRequests.map((pr: { prNumber: number }) => pr.prNumber)).toEqual([1, 2, 3].slice(0, number));
      for (const pr of prs) expect(pr).toMatchObject({ prNumber: number, state: "pending", position: { index: number, ahead: number - 1 } });
    }
    await server.api.ok("cancelPullRequest", prOf(2, "shared-reads"));
    const [queue, cancelled] = await Promise.all([server.api.ok("getQueue", queueOf("shared-reads")), server.api.ok("getSubmittedPullRequest", prOf(2, "shared-reads"))]);
    expect(queue.enqueuedPullRequests.map((pr: { prNumber: number }) => pr.prNumber)).toEqual([1, 3]);
    expect(cancelled).toMatchObject({ prNumber: 2, state: "cancelled", position: null, estimatedMergeAt: null });
  });

  test("createQueue accepts any updateQueue setting and 409s when the queue exists", async () => {
    const created = await server.api.ok("createQueue", { ...queueOf("configured"), mode: "PARALLEL", concurrency: 4294967295, batch: true, requiredStatuses: ["ci/test"] });
    expect(created).toMatchObject({ mode: "parallel", concurrency: 4294967295, batch: true, requiredStatuses: ["ci/test"] });
    const again = await server.api.call("createQueue", queueOf("configured"));
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("conflict");
    expect(again.body.error.message).toContain('already exists for branch "main"');
  });

  test("queues of different branches of one repository are independent", async () => {
    await server.api.ok("createQueue", queueOf("branches", "main"));
    await server.api.ok("createQueue", queueOf("branches", "release"));
    await server.api.ok("updateQueue", { ...queueOf("branches", "release"), state: "paused" });
    expect((await server.api.ok("getQueue", queueOf("branches", "main"))).state).toBe("running");
    expect((await server.api.ok("getQueue", queueOf("branches", "release"))).state).toBe("paused");
  });

  test("repository names are case-insensitive", async () => {
    await server.api.ok("createQueue", queueOf("CaseRepo"));
    const fetched = await server.api.call("getQueue", { repo: { host: "GitHub.com", owner: "ACME", name: "caserepo" }, targetBranch: "main" });
    expect(fetched.status).toBe(200);
  });

  test("getQueue of a missing queue is 404", async () => {
    const response = await server.api.call("getQueue", queueOf("nothing-here"));
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe("not_found");
  });

  test("updateQueue changes only the given fields and answers the full record", async () => {
    await server.api.ok("createQueue", queueOf("update"));
    const updated = await server.api.ok("updateQueue", {
      ...queueOf("update"),
      concurrency: 5,
      mergeMethod: "REBASE",
      directMergeMode: "always",
      optimizationMode: "bisection_skip_redundant_tests",
      pendingFailureDepth: 2,
      canOptimisticallyMerge: true,
    });
    expect(updated).toMatchObject({
      concurrency: 5,
      mergeMethod: "rebase",
      directMergeMode: "always",
      optimizationMode: "bisection_skip_redundant_tests",
      pendingFailureDepth: 2,
      canOptimisticallyMerge: true,
      batch: false,
      testingTimeoutMinutes: 300,
    });
    const second = await server.api.ok("updateQueue", { ...queueOf("update"), batch: true });
    expect(second).toMatchObject({ concurrency: 5, mergeMethod: "rebase", batch: true });
  });

  test("requiredStatuses: an empty list is ignored, deleteRequiredStatuses removes the override; the record always lists them and says where they come from", async () => {
    const fromProtection = { requiredStatuses: [], requiredStatusesSource: "repo_provider_branch_protection" };
    const fromQueue = { requiredStatuses: ["build", "test"], requiredStatusesSource: "merge_instance" };
    expect(await server.api.ok("createQueue", queueOf("statuses"))).toMatchObject(fromProtection);
    expect(await server.api.ok("updateQueue", { ...queueOf("statuses"), requiredStatuses: ["build", "test"] })).toMatchObject(fromQueue);
    expect(await server.api.ok("updateQueue", { ...queueOf("statuses"), requiredStatuses: [] })).toMatchObject(fromQueue);
    expect(await server.api.ok("getQueue", queueOf("statuses"))).toMatchObject(fromQueue);
    expect(await server.api.ok("updateQueue", { ...queueOf("statuses"), deleteRequiredStatuses: true })).toMatchObject(fromProtection);
    expect(await server.api.ok("getQueue", queueOf("statuses"))).toMatchObject(fromProtection);
    const both = await server.api.call("updateQueue", { ...queueOf("statuses"), requiredStatuses: ["x"], deleteRequiredStatuses: true });
    expect(both.status).toBe(400);
    expect(both.body.error.details[0].path).toBe("deleteRequiredStatuses");
  });

  test.each([
    ["concurrency", 0],
    ["concurrency", 4294967296],
    ["bisectionConcurrency", -1],
    ["testingTimeoutMinutes", 1.5],
    ["pendingFailureDepth", "2"],
    ["batchingMinSize", null],
    ["batchingMaxWaitTimeMinutes", 0],
    ["flakyRetries", 6],
    ["flakyRetries", -1],
  ])("updateQueue rejects %s = %p naming the field", async (field, value) => {
    await server.api.call("createQueue", queueOf("bounds"));
    const response = await server.api.call("updateQueue", { ...queueOf("bounds"), [field]: value });
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe("invalid_argument");
    expect(response.body.error.details.map((d: { path: string }) => d.path)).toEqual([field]);
  });

  test.each([
    ["state", "switching_modes"],
    ["state", "stopped"],
    ["mode", "serial"],
    ["mergeMethod", "fast_forward"],
    ["directMergeMode", "never"],
    ["optimizationMode", "on"],
    ["flakeHandling", "sometimes"],
  ])("updateQueue rejects %s = %p", async (field, value) => {
    await server.api.call("createQueue", queueOf("enums"));
    const response = await server.api.call("updateQueue", { ...queueOf("enums"), [field]: value });
    expect(response.status).toBe(400);
    expect(response.body.error.details[0]).toMatchObject({ path: field });
  });

  test("queue states can be requested in either case", async () => {
    await server.api.ok("createQueue", queueOf("states"));
    expect((await server.api.ok("updateQueue", { ...queueOf("states"), state: "PAUSED" })).state).toBe("paused");
    expect((await server.api.ok("updateQueue", { ...queueOf("states"), state: "draining" })).state).toBe("draining");
    expect((await server.api.ok("updateQueue", { ...queueOf("states"), state: "RUNNING" })).state).toBe("running");
  });

  test("a mode change with nothing in flight applies at once", async () => {
    await server.api.ok("createQueue", queueOf("modes"));
    const updated = await server.api.ok("updateQueue", { ...queueOf("modes"), mode: "parallel" });
    expect(updated).toMatchObject({ mode: "parallel", state: "running" });
  });

  test("a mode change with work in flight goes through switching_modes, refusing submissions meanwhile", async () => {
    await server.api.ok("createQueue", queueOf("switch"));
    await server.api.ok("submitPullRequest", prOf(1, "switch"));
    const updated = await server.api.ok("updateQueue", { ...queueOf("switch"), mode: "parallel" });
    expect(updated).toMatchObject({ mode: "single", state: "switching_modes" });
    expect((await server.api.call("submitPullRequest", prOf(2, "switch"))).status).toBe(409);
    await server.api.ok("cancelPullRequest", prOf(1, "switch"));
    expect(await server.api.ok("getQueue", queueOf("switch"))).toMatchObject({ mode: "parallel", state: "running" });
  });

  test("deleteQueue refuses while PRs are in play, then deletes", async () => {
    await server.api.ok("createQueue", queueOf("delete"));
    await server.api.ok("submitPullRequest", prOf(7, "delete"));
    const refused = await server.api.call("deleteQueue", queueOf("delete"));
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("failed_precondition");
    expect(refused.body.error.message).toContain("#7 (testing)");
    expect((await server.api.ok("getQueue", queueOf("delete"))).enqueuedPullRequests).toHaveLength(1);

    await server.api.ok("cancelPullRequest", prOf(7, "delete"));
    expect(await server.api.ok("deleteQueue", queueOf("delete"))).toEqual({});
    expect((await server.api.call("getQueue", queueOf("delete"))).status).toBe(404);
    // The queue can be created again, empty.
    await server.api.ok("createQueue", queueOf("delete"));
    expect((await server.api.call("getSubmittedPullRequest", prOf(7, "delete"))).status).toBe(404);
  });

  test("deleteQueue of a missing queue is 404", async () => {
    expect((await server.api.call("deleteQueue", queueOf("never-created"))).status).toBe(404);
  });
});
