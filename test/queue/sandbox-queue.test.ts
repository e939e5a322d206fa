import { BACKENDS } from "../support/backends.js";
import { ciFinishes, prOf, queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const CI_MS = 60_000;

describe.each(BACKENDS)("the merge queue on the sandbox, $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock();

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: CI_MS } });
  });
  afterAll(() => server?.close());

  const sandbox = () => server.greenline.sandbox!;
  const worker = () => server.greenline.worker;
  const state = async (n: number, name: string) => (await server.api.ok("getSubmittedPullRequest", prOf(n, name))).state;
  async function noFailedEffects(): Promise<void> {
    const failing = await server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { lastError: { not: null } } }));
    expect(failing.map((e) => [e.kind, e.lastError])).toEqual([]);
  }

  test("PRs are tested on top of each other and merged; the target holds exactly what was tested", async () => {
    await server.api.ok("createQueue", { ...queueOf("chain"), concurrency: 3 });
    for (const n of [1, 2, 3]) await server.api.ok("submitPullRequest", prOf(n, "chain"));
    await worker().drain();
    const details = await server.api.ok("getMergeQueueTestingDetails", prOf(3, "chain"));
    expect(details).toMatchObject({
      status: "in_progress",
      testBranch: expect.stringMatching(/^greenline\/main\/run-3$/),
      testBranchSha: expect.stringMatching(/^[0-9a-f]{40}$/),
      testedPullRequests: [{ prNumber: 3, title: "Sandbox pull request #3" }],
      dependentPrs: [1, 2],
      // Trunk's enum of commit status states: UPPERCASE (docs/decisions.md).
      statusChecks: [{ context: "greenline/sandbox-ci", state: "PENDING" }],
    });
    await ciFinishes(server, clock);
    for (const n of [1, 2, 3]) expect(await state(n, "chain")).toBe("merged");
    const files = await sandbox().branchFiles(repo("chain"), "main");
    expect(Object.keys(files).sort()).toEqual(["README.md", "changes/pr-1.txt", "changes/pr-2.txt", "changes/pr-3.txt"]);
    expect(await server.api.ok("getMergeQueueTestingDetails", prOf(3, "chain"))).toMatchObject({ status: "succeeded" });
    expect((await server.api.ok("getQueue", queueOf("chain"))).enqueuedPullRequests).toEqual([]);
    await noFailedEffects();
  });

  test("diagnoses need named checks: on the sandbox (its CI always starts, reporting outcomes), with a checks-start timeout as long as its CI, no diagnosis on the API or the timeline; the PR merges", async () => {
    await server.api.ok("createQueue", { ...queueOf("no-diagnosis"), requiredStatuses: ["build"], checksStartTimeoutMinutes: 1 });
    await server.api.ok("submitPullRequest", prOf(1, "no-diagnosis"));
    await worker().drain();
    clock.advance(CI_MS - 1);
    await worker().drain();
    expect(await server.api.ok("getMergeQueueTestingDetails", prOf(1, "no-diagnosis"))).toMatchObject({ status: "in_progress", diagnosis: null });
    expect((await server.api.ok("getQueue", queueOf("no-diagnosis"))).blockedReason).toBeNull();
    await ciFinishes(server, clock);
    const { state: final, timeline } = await server.api.ok("getSubmittedPullRequest", { ...prOf(1, "no-diagnosis"), includeTimeline: true });
    expect(final).toBe("merged");
    expect(timeline.map((e: { reason: string }) => e.reason)).not.toContain("no_checks_started");
    expect(timeline.every((e: { previousState: string | null; state: string }) => e.previousState !== e.state)).toBe(true);
    await noFailedEffects();
  });

  test("a broken PR fails and never lands; the PRs behind it are retested without it and merge", async () => {
    await server.api.ok("createQueue", { ...queueOf("broken"), concurrency: 3 });
    await sandbox().openPullRequest(repo("broken"), { number: 2, targetBranch: "main", files: { "src/bad.ts": "syntax error" }, broken: true });
    for (const n of [1, 2, 3]) await server.api.ok("submitPullRequest", prOf(n, "broken"));
    await ciFinishes(server, clock);
    expect(await server.api.ok("getSubmittedPullRequest", prOf(2, "broken"))).toMatchObject({ state: "failed", stateReason: "tests_failed" });
    expect(await state(1, "broken")).toBe("merged");
    expect(await state(3, "broken")).toBe("testing");
    await ciFinishes(server, clock);
    expect(await state(3, "broken")).toBe("merged");
    const files = await sandbox().branchFiles(repo("broken"), "main");
    expect(files["src/bad.ts"]).toBeUndefined();
    expect(files["changes/pr-3.txt"]).toBeDefined();
    await noFailedEffects();
  });

  test("a PR that conflicts with the PRs ahead fails with merge_conflict", async () => {
    await server.api.ok("createQueue", { ...queueOf("conflict"), concurrency: 2 });
    await sandbox().openPullRequest(repo("conflict"), { number: 1, targetBranch: "main", files: { "config.yml": "a: 1" } });
    await sandbox().openPullRequest(repo("conflict"), { number: 2, targetBranch: "main", files: { "config.yml": "a: 2" } });
    await server.api.ok("submitPullRequest", prOf(1, "conflict"));
    await server.api.ok("submitPullRequest", prOf(2, "conflict"));
    await ciFinishes(server, clock);
    expect(await state(1, "conflict")).toBe("merged");
    expect(await server.api.ok("getSubmittedPullRequest", prOf(2, "conflict"))).toMatchObject({ state: "failed", stateReason: "merge_conflict" });
    expect((await sandbox().branchFiles(repo("conflict"), "main"))["config.yml"]).toBe("a: 1");
  });

  test("a push to the target outside the queue restarts the runs on the new base", async () => {
    await server.api.ok("createQueue", queueOf("moved"));
    await server.api.ok("submitPullRequest", prOf(1, "moved"));
    await worker().drain();
    const before = await server.api.ok("getMergeQueueTestingDetails", prOf(1, "moved"));
    await sandbox().pushToBranch(repo("moved"), "main", { "hotfix.txt": "pushed by hand" });
    await worker().drain();
    const after = await server.api.ok("getMergeQueueTestingDetails", prOf(1, "moved"));
    expect(after.testRunId).not.toBe(before.testRunId);
    expect(after.status).toBe("in_progress");
    await ciFinishes(server, clock);
    expect(await state(1, "moved")).toBe("merged");
    const files = await sandbox().branchFiles(repo("moved"), "main");
    expect(files["hotfix.txt"]).toBe("pushed by hand");
    expect(files["changes/pr-1.txt"]).toBeDefined();
    await noFailedEffects();
  });

  test("an overdue run fails with reason timeout", async () => {
    // CI here takes 10 minutes; the queue allows 2.
    const slowClock = new TestClock();
    const slow = await startTestServer(backend, { now: slowClock.now, sandbox: { ciMs: 10 * 60_000 } });
    try {
      await slow.api.ok("createQueue", { ...queueOf("slow"), testingTimeoutMinutes: 2 });
      await slow.api.ok("submitPullRequest", prOf(1, "slow"));
      await slow.greenline.worker.drain();
      slowClock.advance(119_000);
      await slow.greenline.worker.drain();
      expect((await slow.api.ok("getSubmittedPullRequest", prOf(1, "slow"))).state).toBe("testing");
      slowClock.advance(1_000);
      await slow.greenline.worker.drain();
      expect(await slow.api.ok("getSubmittedPullRequest", prOf(1, "slow"))).toMatchObject({ state: "failed", stateReason: "timeout" });
      expect(await slow.api.ok("getMergeQueueTestingDetails", prOf(1, "slow"))).toMatchObject({ status: "failed", failureReason: "timeout" });
    } finally {
      await slow.close();
    }
  });

  test("timeouts and batch waits at the documented maximum (4294967295 minutes): the queue waits, tests and merges, answering 200 throughout", async () => {
    const MAX = 4294967295;
    const queue = queueOf("patient");
    await server.api.ok("createQueue", { ...queue, concurrency: 2, batch: true, batchingMinSize: 2, batchingMaxWaitTimeMinutes: MAX, testingTimeoutMinutes: MAX });
    await server.api.ok("submitPullRequest", prOf(1, "patient"));
    await worker().drain();
    // Alone, the PR waits for a second one: the deadline of that wait (past year 9999) is never.
    expect(await state(1, "patient")).toBe("pending");
    clock.advance(365 * 24 * 60 * 60_000);
    await worker().drain();
    expect(await state(1, "patient")).toBe("pending");
    await server.api.ok("submitPullRequest", prOf(2, "patient"));
    await worker().drain();
    expect([await state(1, "patient"), await state(2, "patient")]).toEqual(["testing", "testing"]);
    await server.api.ok("updateQueue", { ...queue, testingTimeoutMinutes: MAX - 1, batchingMaxWaitTimeMinutes: MAX - 1 });
    await server.api.ok("submitPullRequest", prOf(3, "patient"));
    await ciFinishes(server, clock);
    expect([await state(1, "patient"), await state(2, "patient")]).toEqual(["merged", "merged"]);
    expect(await server.api.ok("getQueue", queue)).toMatchObject({ testingTimeoutMinutes: MAX - 1, batchingMaxWaitTimeMinutes: MAX - 1 });
    await noFailedEffects();
  });

  test("restartTestsOnPullRequest re-runs the PR; pausing holds merges until resumed", async () => {
    await server.api.ok("createQueue", queueOf("restart"));
    await server.api.ok("submitPullRequest", prOf(1, "restart"));
    await worker().drain();
    const first = (await server.api.ok("getMergeQueueTestingDetails", prOf(1, "restart"))).testRunId;
    await server.api.ok("restartTestsOnPullRequest", prOf(1, "restart"));
    await worker().drain();
    const second = await server.api.ok("getMergeQueueTestingDetails", prOf(1, "restart"));
    expect(second.testRunId).not.toBe(first);
    await server.api.ok("updateQueue", { ...queueOf("restart"), state: "paused" });
    await ciFinishes(server, clock);
    expect(await state(1, "restart")).toBe("tests_passed");
    await server.api.ok("updateQueue", { ...queueOf("restart"), state: "running" });
    await worker().drain();
    expect(await state(1, "restart")).toBe("merged");
  });

  test("batches merge as separate PRs; a failed batch is bisected to its culprit", async () => {
    await server.api.ok("createQueue", { ...queueOf("batches"), batch: true, batchingMinSize: 4, bisectionConcurrency: 2, optimizationMode: "bisection_skip_redundant_tests" });
    await sandbox().openPullRequest(repo("batches"), { number: 3, targetBranch: "main", files: { "src/three.ts": "broken" }, broken: true });
    for (const n of [1, 2, 3, 4]) await server.api.ok("submitPullRequest", prOf(n, "batches"));
    for (let i = 0; i < 4; i++) await ciFinishes(server, clock);
    const states = await Promise.all([1, 2, 3, 4].map((n) => state(n, "batches")));
    expect(states).toEqual(["merged", "merged", "failed", "merged"]);
    const details = await server.api.ok("getMergeQueueTestingDetails", prOf(4, "batches"));
    expect(details.isBisection).toBe(true);
    await noFailedEffects();
  });

  test("parallel mode: PRs in disjoint lanes test and merge independently; overlapping ones stack", async () => {
    await server.api.ok("createQueue", { ...queueOf("lanes"), mode: "parallel", concurrency: 5 });
    await sandbox().openPullRequest(repo("lanes"), { number: 1, targetBranch: "main", files: { "api/a.ts": "1", "api/broken.ts": "x" }, broken: true });
    await sandbox().openPullRequest(repo("lanes"), { number: 2, targetBranch: "main", files: { "web/b.ts": "2" } });
    await sandbox().openPullRequest(repo("lanes"), { number: 3, targetBranch: "main", files: { "api/c.ts": "3" } });
    const targets: Record<number, string[]> = { 1: ["//api"], 2: ["//web"], 3: ["//api"] };
    for (const n of [1, 2, 3]) await server.api.ok("submitPullRequest", prOf(n, "lanes"));
    // Without impacted targets for their head, PRs wait in not_ready.
    await worker().drain();
    expect(await state(2, "lanes")).toBe("not_ready");
    for (const n of [1, 2, 3]) await server.api.ok("setImpactedTargets", { ...prOf(n, "lanes"), impactedTargets: targets[n] });
    await worker().drain();
    expect(await server.api.ok("getMergeQueueTestingDetails", prOf(2, "lanes"))).toMatchObject({ dependentPrs: [], impactedTargets: ["//web"] });
    expect(await server.api.ok("getMergeQueueTestingDetails", prOf(3, "lanes"))).toMatchObject({ dependentPrs: [1] });
    await ciFinishes(server, clock);
    // #1 is broken: it fails; #2 merged from its own lane meanwhile; #3 is retested without #1.
    expect([await state(1, "lanes"), await state(2, "lanes"), await state(3, "lanes")]).toEqual(["failed", "merged", "testing"]);
    await ciFinishes(server, clock);
    expect(await state(3, "lanes")).toBe("merged");
    const files = await sandbox().branchFiles(repo("lanes"), "main");
    expect(Object.keys(files).sort()).toEqual(["README.md", "api/c.ts", "web/b.ts"]);
    // Landed merges folded into the base: nothing is left unconfirmed.
    const queue = await server.greenline.services.db.read((tx) => tx.queue.findFirstOrThrow({ where: { branch: "main", repository: { name: "lanes" } } }));
    expect(JSON.parse(queue.mergedPrs)).toEqual([]);
    await noFailedEffects();
  });

  test("directMergeMode always: an up-to-date green PR with an empty queue merges without a queue run; one behind is tested", async () => {
    await server.api.ok("createQueue", { ...queueOf("direct"), directMergeMode: "always" });
    await sandbox().openPullRequest(repo("direct"), { number: 1, targetBranch: "main", files: { "docs/one.md": "1" } });
    await sandbox().openPullRequest(repo("direct"), { number: 2, targetBranch: "main", files: { "docs/two.md": "2" } });
    await server.api.ok("submitPullRequest", prOf(1, "direct"));
    await worker().drain();
    expect(await server.api.ok("getSubmittedPullRequest", prOf(1, "direct"))).toMatchObject({ state: "merged", stateReason: "direct_merge" });
    expect(await server.api.call("getMergeQueueTestingDetails", prOf(1, "direct"))).toMatchObject({ status: 404 });
    // #2 was opened before #1 landed: it is behind the target, so it goes through a queue run.
    await server.api.ok("submitPullRequest", prOf(2, "direct"));
    await worker().drain();
    expect(await state(2, "direct")).toBe("testing");
    await ciFinishes(server, clock);
    expect(await state(2, "direct")).toBe("merged");
    const files = await sandbox().branchFiles(repo("direct"), "main");
    expect([files["docs/one.md"], files["docs/two.md"]]).toEqual(["1", "2"]);
    await noFailedEffects();
  });
});
