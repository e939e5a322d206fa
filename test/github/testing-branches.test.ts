import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, type TestServer } from "../support/harness.js";

/**
 * Testing branches on GitHub, end to end through the real Octokit and the simulator: built in a
 * scratch branch and published once (one push, one CI run per testing branch), never built on a
 * leftover branch, failed with GitHub's reason when GitHub refuses to build them, opened as draft
 * PRs when the queue asks; and queues refused at creation on branches Greenline could never
 * merge into.
 */
describe.each(BACKENDS)("testing branches on GitHub, $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const OWNER = "octo-tb";

  async function runUntilDrained(name: string) {
    for (let round = 0; round < 30; round++) {
      await server.greenline.worker.drain();
      await github.ciPasses(name);
      await server.greenline.worker.drain();
      const { enqueuedPullRequests } = await api.ok("getQueue", github.queue(name));
      const effects = await server.greenline.services.db.read((tx) => tx.effect.count({ where: { doneAt: null, queue: { repository: { name } } } }));
      if (enqueuedPullRequests.length === 0 && effects === 0) return;
    }
    const effects = await server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { doneAt: null, queue: { repository: { name } } } }));
    throw new Error(`the queue did not drain: ${JSON.stringify(effects.map((e) => [e.kind, e.lastError]))}`);
  }

  /** Effects still to do, of one kind (a PR whose head is gone cannot get a status either: GitHub refuses it). */
  const pendingEffects = (name: string, kind: string) => server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { doneAt: null, kind, queue: { repository: { name } } } }));

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    server = await startTestServer(backend, { githubApp: githubAppOf(gh) });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 78 });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("three stacked PRs: each testing branch is pushed once, at its final commit (CI runs once per testing branch)", async () => {
    const repo = `${OWNER}/stack`;
    await api.ok("createQueue", { ...github.queue("stack"), concurrency: 3, requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    for (const n of [1, 2, 3]) gh.openPr(repo, { number: n, files: { [`src/${n}.ts`]: String(n) } });
    for (const n of [1, 2, 3]) await api.ok("submitPullRequest", github.pr("stack", n));
    await server.greenline.worker.drain();
    const third = await api.ok("getMergeQueueTestingDetails", github.pr("stack", 3));
    expect(third.dependentPrs).toEqual([1, 2]);
    // The testing branch of #3 holds #1, #2 and #3, and was pushed once (it was 4: the base, then one merge per PR).
    expect(Object.keys(gh.files(repo, third.testBranch)).sort()).toEqual(["README.md", "src/1.ts", "src/2.ts", "src/3.ts"]);
    expect(gh.pushesTo(repo, third.testBranch)).toBe(1);
    const testingPushes = gh.refPushes.filter((p) => p.repo === repo && p.branch.startsWith("greenline/"));
    expect(testingPushes).toHaveLength(3);
    // Each run starts from the run before it (same base, its stack a prefix): one merge per new PR
    // (it was 1 + 2 + 3), from the pinned heads, in the queue's one scratch branch.
    expect(gh.requests.filter((r) => r.method === "POST" && r.path === `/repos/${repo}/merges`)).toHaveLength(3);
    expect(gh.branches(repo, "greenline-scratch/").map((b) => b.name)).toEqual(["greenline-scratch/main"]);
    await runUntilDrained("stack");
    expect(await Promise.all([1, 2, 3].map((n) => github.stateOf("stack", n)))).toEqual(["merged", "merged", "merged"]);
    expect(gh.branches(repo, "greenline/")).toEqual([]);
  });

  test("a fork PR is tested at the head pinned when it was submitted: a later push to the fork is neither tested nor merged", async () => {
    await api.ok("createQueue", { ...github.queue("fork"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    const submittedHead = gh.openPr(`${OWNER}/fork`, { number: 1, headRepo: "mallory/fork", headRef: "feature", files: { "src/fork.ts": "reviewed" } }).headSha;
    await api.ok("submitPullRequest", github.pr("fork", 1));
    await server.greenline.worker.drain();
    // The fork's author pushes after the submission; the synchronize delivery never comes.
    gh.amendPr(`${OWNER}/fork`, 1, { "src/fork.ts": "not reviewed", "ci/steal-secrets.sh": "curl evil" });
    await server.greenline.worker.drain();
    const [testing] = gh.branches(`${OWNER}/fork`, "greenline/");
    // The testing branch holds the pinned head's changes, not the later push's.
    expect(gh.filesAt(testing!.sha)["src/fork.ts"]).toBe("reviewed");
    expect(gh.filesAt(testing!.sha)["ci/steal-secrets.sh"]).toBeUndefined();
    expect((await github.submitted("fork", 1)).prSha).toBe(submittedHead);
    await runUntilDrained("fork");
    // Merged pinned to the tested head: GitHub refuses (the head moved), the PR is cancelled.
    expect(await github.submitted("fork", 1)).toMatchObject({ state: "cancelled", stateReason: "pr_updated" });
    expect(gh.files(`${OWNER}/fork`, "main")["src/fork.ts"]).toBeUndefined();
    expect(gh.files(`${OWNER}/fork`, "main")["ci/steal-secrets.sh"]).toBeUndefined();
  });

  test("an earlier run's commit that is gone is not built on: the testing branch is built from the base", async () => {
    const repo = `${OWNER}/regc`;
    await api.ok("createQueue", { ...github.queue("regc"), concurrency: 2, requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(repo, { number: 1, files: { "src/1.ts": "1" } });
    gh.openPr(repo, { number: 2, files: { "src/2.ts": "2" } });
    await api.ok("submitPullRequest", github.pr("regc", 1));
    await server.greenline.worker.drain();
    const first = await api.ok("getMergeQueueTestingDetails", github.pr("regc", 1));
    gh.forgetCommit(first.testBranchSha);
    await api.ok("submitPullRequest", github.pr("regc", 2));
    await server.greenline.worker.drain();
    const second = await api.ok("getMergeQueueTestingDetails", github.pr("regc", 2));
    expect(second).toMatchObject({ status: "in_progress", dependentPrs: [1] });
    expect(Object.keys(gh.files(repo, second.testBranch)).sort()).toEqual(["README.md", "src/1.ts", "src/2.ts"]);
    expect(await pendingEffects("regc", "start_run")).toEqual([]);
  });

  test("a leftover branch with the testing branch's name (another queue's run) is never built on", async () => {
    const repo = `${OWNER}/leftover`;
    // A branch of an earlier life of the repository's queue, with content of its own.
    gh.push(repo, "greenline/main/run-1", { LEFTOVER: "from another run" });
    gh.push(repo, "greenline-scratch/main", { STALE: "half-built" });
    await api.ok("createQueue", { ...github.queue("leftover"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(repo, { number: 1, files: { "src/one.ts": "1" } });
    await api.ok("submitPullRequest", github.pr("leftover", 1));
    await server.greenline.worker.drain();
    const details = await api.ok("getMergeQueueTestingDetails", github.pr("leftover", 1));
    expect(details.testBranch).toBe("greenline/main/run-1");
    expect(Object.keys(gh.files(repo, details.testBranch)).sort()).toEqual(["README.md", "src/one.ts"]);
    expect(details.testBranchSha).toBe(gh.branchHead(repo, details.testBranch));
    await runUntilDrained("leftover");
    expect(await github.stateOf("leftover", 1)).toBe("merged");
    expect(Object.keys(gh.files(repo, "main")).sort()).toEqual(["README.md", "src/one.ts"]);
  });

  test("starting a run again (the effect retried after a crash) ends on the branch it built, never on the first attempt's", async () => {
    const repo = `${OWNER}/retry`;
    gh.openPr(repo, { number: 1, files: { "src/one.ts": "1" } });
    const request = { queueId: "q", runId: "run-9", targetBranch: "main", baseSha: gh.branchHead(repo, "main"), stack: [1], heads: { 1: gh.pr(repo, 1)!.headSha } };
    const codeHost = server.greenline.services.codeHost;
    const first = await codeHost.startTestRun({ host: "github.com", owner: OWNER, name: "retry" }, request);
    const again = await codeHost.startTestRun({ host: "github.com", owner: OWNER, name: "retry" }, request);
    expect(first.kind === "started" && again.kind === "started").toBe(true);
    if (again.kind !== "started") return;
    expect(gh.branchHead(repo, again.testBranch)).toBe(again.sha);
    expect(Object.keys(gh.files(repo, again.testBranch)).sort()).toEqual(["README.md", "src/one.ts"]);
  });

  test("a PR whose pinned head is gone fails with GitHub's reason instead of retrying forever", async () => {
    const repo = `${OWNER}/gone`;
    await api.ok("createQueue", { ...github.queue("gone"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    const opened = gh.openPr(repo, { number: 1, files: { "src/one.ts": "1" } });
    await api.ok("submitPullRequest", github.pr("gone", 1));
    // The head commit disappears before the worker builds the testing branch (a force-push and
    // garbage collection, a deleted fork).
    gh.forgetCommit(opened.headSha);
    await server.greenline.worker.drain();
    await server.greenline.worker.drain();
    expect(await github.stateOf("gone", 1)).toBe("failed");
    expect(await pendingEffects("gone", "start_run")).toEqual([]);
    expect(gh.comments.filter((c) => c.repo === repo).map((c) => c.body)).toContainEqual(expect.stringContaining("is gone"));
  });

  test("a PR changing workflows while the App lacks `workflows: write` fails with that reason", async () => {
    const repo = `${OWNER}/workflows`;
    gh.workflowsWritable = false;
    try {
      await api.ok("createQueue", { ...github.queue("workflows"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
      gh.openPr(repo, { number: 1, files: { ".github/workflows/ci.yml": "on: push" } });
      gh.openPr(repo, { number: 2, files: { "src/two.ts": "2" } });
      await api.ok("submitPullRequest", github.pr("workflows", 1));
      await server.greenline.worker.drain();
      await server.greenline.worker.drain();
      expect(await github.stateOf("workflows", 1)).toBe("failed");
      expect(gh.comments.filter((c) => c.repo === repo && c.number === 1).map((c) => c.body)).toContainEqual(expect.stringContaining("without `workflows` permission"));
      expect(await pendingEffects("workflows", "start_run")).toEqual([]);
      // The queue goes on with other PRs.
      await api.ok("submitPullRequest", github.pr("workflows", 2));
      await runUntilDrained("workflows");
      expect(await github.stateOf("workflows", 2)).toBe("merged");
    } finally {
      gh.workflowsWritable = true;
    }
  });

  test("createPrsForTestingBranches: a draft PR per testing branch, closed when the run ends or is cancelled", async () => {
    const repo = `${OWNER}/prs`;
    await api.ok("createQueue", { ...github.queue("prs"), requiredStatuses: ["ci/test"], mergeMethod: "squash", createPrsForTestingBranches: true });
    gh.openPr(repo, { number: 1, files: { "src/one.ts": "1" } });
    gh.openPr(repo, { number: 2, files: { "src/two.ts": "2" } });
    await api.ok("submitPullRequest", github.pr("prs", 1));
    await server.greenline.worker.drain();
    const first = await api.ok("getMergeQueueTestingDetails", github.pr("prs", 1));
    const [draft] = gh.prsFrom(repo, first.testBranch);
    expect(draft).toMatchObject({ state: "open", draft: true, base: "main", title: expect.stringContaining("#1") });
    await runUntilDrained("prs");
    expect(await github.stateOf("prs", 1)).toBe("merged");
    expect(gh.prsFrom(repo, first.testBranch).map((p) => p.state)).toEqual(["closed"]);

    await api.ok("submitPullRequest", github.pr("prs", 2));
    await server.greenline.worker.drain();
    const second = await api.ok("getMergeQueueTestingDetails", github.pr("prs", 2));
    expect(gh.prsFrom(repo, second.testBranch).map((p) => p.state)).toEqual(["open"]);
    await api.ok("cancelPullRequest", github.pr("prs", 2));
    await server.greenline.worker.drain();
    expect(gh.prsFrom(repo, second.testBranch).map((p) => p.state)).toEqual(["closed"]);
    expect(gh.branches(repo, "greenline/")).toEqual([]);
    expect(await pendingEffects("prs", "start_run")).toEqual([]);
  });

  test("a queue is refused on a branch that requires GitHub's merge queue, or where the App can neither push nor merge", async () => {
    gh.addRuleset(`${OWNER}/ghqueue`, "main", ["merge_queue", "pull_request"]);
    const refused = await api.call("createQueue", github.queue("ghqueue"));
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/requires GitHub's merge queue.*Remove that rule/);

    gh.addRuleset(`${OWNER}/restricted`, "main", ["update"], "never");
    const restricted = await api.call("createQueue", github.queue("restricted"));
    expect(restricted.status).toBe(409);
    expect(restricted.body.error.message).toMatch(/Restrict updates.*bypass list/);

    // On the bypass list: fine; a rule requiring pull requests alone leaves merging them.
    gh.addRuleset(`${OWNER}/bypassed`, "main", ["update"], "always");
    await api.ok("createQueue", github.queue("bypassed"));
    gh.addRuleset(`${OWNER}/prs-only`, "main", ["pull_request", "required_linear_history"]);
    await api.ok("createQueue", github.queue("prs-only"));
  });
});
