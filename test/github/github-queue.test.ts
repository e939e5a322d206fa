import { REASONS } from "../../src/domain/reasons.js";
import { BACKENDS } from "../support/backends.js";
import { DashboardClient } from "../support/dashboard.js";
import { DEFAULT_PERMISSIONS } from "../support/github/permissions.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, type TestServer } from "../support/harness.js";

/**
 * The merge queue as a GitHub App, end to end: the real Octokit (through Probot) builds testing
 * branches, reads CI results from signed `status` and `check_run` webhooks, and merges through a
 * simulated GitHub served over HTTP. The simulator's CI fails a testing branch holding a file
 * named BROKEN, and the invariant is checked on GitHub's side: the target ends with exactly the
 * merged PRs' changes.
 */
describe.each(BACKENDS)("the merge queue on GitHub, $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const OWNER = "octo-q";

  const reported = new Set<string>();

  /** Simulated CI: reports on every testing branch not yet reported, the way `kind` says. */
  async function ciReports(name: string, kind: "status" | "check_run") {
    // Read every branch before reporting: each delivery is processed at once, and may delete branches.
    const branches = gh.branches(`${OWNER}/${name}`, "greenline/").map((branch) => ({ ...branch, broken: gh.files(`${OWNER}/${name}`, branch.name).BROKEN !== undefined }));
    for (const { broken, ...branch } of branches) {
      if (reported.has(branch.sha)) continue;
      reported.add(branch.sha);
      if (kind === "status") {
        // A status that is not required first: it decides nothing.
        await github.deliverThenDrain("status", github.statusPayload(name, branch.sha, "lint", "success"));
        await github.deliverThenDrain("status", github.statusPayload(name, branch.sha, "ci/test", broken ? "failure" : "success"));
      } else {
        const checkRun = (status: string, conclusion: string | null) => ({
          action: status === "completed" ? "completed" : "created",
          check_run: { id: 1, name: "build", head_sha: branch.sha, status, conclusion },
          repository: github.repository(name),
          installation: { id: github.installation },
        });
        await github.deliverThenDrain("check_run", checkRun("in_progress", null));
        await github.deliverThenDrain("check_run", checkRun("completed", broken ? "failure" : "success"));
      }
    }
  }

  async function runUntilDrained(name: string, kind: "status" | "check_run") {
    for (let round = 0; round < 30; round++) {
      await server.greenline.worker.drain();
      await ciReports(name, kind);
      await server.greenline.worker.drain();
      const { enqueuedPullRequests } = await api.ok("getQueue", github.queue(name));
      const effects = await server.greenline.services.db.read((tx) => tx.effect.count({ where: { doneAt: null } }));
      if (enqueuedPullRequests.length === 0 && effects === 0) return;
    }
    throw new Error("the queue did not drain");
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    server = await startTestServer(backend, { githubApp: githubAppOf(gh) });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 77, drain: true });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("single mode: PRs are tested together on testing branches, merged by fast-forward; a broken PR never lands", async () => {
    await api.ok("createQueue", { ...github.queue("app"), concurrency: 3, requiredStatuses: ["ci/test"], mergeMethod: "merge_commit" });
    gh.openPr(`${OWNER}/app`, { number: 1, files: { "src/a.ts": "a" } });
    gh.openPr(`${OWNER}/app`, { number: 2, files: { "src/b.ts": "b", BROKEN: "yes" } });
    gh.openPr(`${OWNER}/app`, { number: 3, files: { "src/c.ts": "c" } });
    for (const n of [1, 2, 3]) await api.ok("submitPullRequest", github.pr("app", n));
    await runUntilDrained("app", "status");

    const states = await Promise.all([1, 2, 3].map((n) => github.stateOf("app", n)));
    expect(states).toEqual(["merged", "failed", "merged"]);
    const files = gh.files(`${OWNER}/app`, "main");
    expect(Object.keys(files).sort()).toEqual(["README.md", "src/a.ts", "src/c.ts"]);
    // The first merge fast-forwarded the target to the tested commit (GraphQL's updateRefs, which
    // also deleted the testing branch).
    expect(gh.requests.filter((r) => r.method === "POST" && r.path === "/graphql" && r.status === 200 && !(r.response as { errors?: unknown }).errors).length).toBeGreaterThan(0);
    // GitHub agrees: the merged PRs are merged, the failed one is still open.
    expect([gh.pr(`${OWNER}/app`, 1)!.merged, gh.pr(`${OWNER}/app`, 2)!.merged, gh.pr(`${OWNER}/app`, 3)!.merged]).toEqual([true, false, true]);
    // Testing branches are deleted once done.
    expect(gh.branches(`${OWNER}/app`, "greenline/")).toEqual([]);
    // Each PR's head carries the queue's status; the failed PR was told why in a comment.
    const lastStatus = (n: number) => gh.statuses.filter((st) => st.sha === gh.pr(`${OWNER}/app`, n)!.headSha && st.context === "greenline/merge-queue").at(-1);
    expect(lastStatus(1)).toMatchObject({ state: "success", description: REASONS.merged });
    expect(lastStatus(2)).toMatchObject({ state: "failure", description: REASONS.tests_failed });
    expect(gh.statuses.filter((st) => st.sha === gh.pr(`${OWNER}/app`, 3)!.headSha).map((st) => st.state)).toContain("pending");
    expect(gh.comments.map((c) => [c.number, c.body])).toEqual([[2, expect.stringContaining(`**failed** (\`tests_failed\`). ${REASONS.tests_failed}`)]]);
    const details = await api.ok("getMergeQueueTestingDetails", github.pr("app", 3));
    expect(details).toMatchObject({
      status: "succeeded",
      statusChecks: expect.arrayContaining([
        { context: "ci/test", state: "SUCCESS" },
        { context: "lint", state: "SUCCESS" },
      ]),
    });
    const failing = await server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { lastError: { not: null } } }));
    expect(failing.map((e) => [e.kind, e.lastError])).toEqual([]);
  });

  test("a failed PR's timeline names the failing check with its page and the required check that never reported; the status, the comment and the API say the same sentence", async () => {
    await api.ok("createQueue", { ...github.queue("checks"), requiredStatuses: ["build", "deploy-preview"] });
    gh.openPr(`${OWNER}/checks`, { number: 1, files: { "src/a.ts": "a", BROKEN: "yes" } });
    await api.ok("submitPullRequest", github.pr("checks", 1));
    await runUntilDrained("checks", "check_run");

    const pr = await api.ok("getSubmittedPullRequest", { ...github.queue("checks"), pr: { number: 1 }, includeTimeline: true });
    expect(pr).toMatchObject({ state: "failed", stateReason: "tests_failed" });
    const failed = pr.timeline.at(-1);
    expect(failed).toMatchObject({
      state: "failed",
      reason: "tests_failed",
      message: REASONS.tests_failed,
      evidence: {
        run: { kind: "main", tested: [1], stack: [1], testBranch: expect.stringMatching(/^greenline\/main\/run-\d+$/), testedHead: expect.stringMatching(/^[0-9a-f]{40}$/) },
        failingChecks: [{ name: "build", state: "failure", url: `https://github.com/${OWNER}/checks/runs/1` }],
        missingChecks: ["deploy-preview"],
      },
    });
    // Failed alone with nothing behind it: it was given one more run first.
    expect(pr.timeline.map((e: { reason: string }) => e.reason)).toContain("retrying_failed_run");
    // The same words on GitHub: the PR's status and the queue's comment.
    const statuses = gh.statuses.filter((st) => st.sha === gh.pr(`${OWNER}/checks`, 1)!.headSha && st.context === "greenline/merge-queue");
    expect(statuses.at(-1)).toMatchObject({ state: "failure", description: failed.message });
    // Without a public URL (GREENLINE_PUBLIC_URL), nothing links to the dashboard (test/github/pr-page-links.test.ts: with one).
    expect(statuses.map((st) => st.targetUrl)).toEqual(statuses.map(() => null));
    // The PR's dashboard page links the testing branch to its page on GitHub and the failing check to its run.
    const dashboard = await DashboardClient.signIn(server.url, api.token);
    const page = await dashboard.get(`/queues/github.com/${OWNER}/checks/main/pulls/1`);
    expect(page.status).toBe(200);
    const branch = failed.evidence.run.testBranch;
    expect(page.text).toContain(`<a href="https://github.com/${OWNER}/checks/tree/${branch}" rel="noreferrer"><code>${branch}</code></a>`);
    expect(page.text).toContain(`<a href="https://github.com/${OWNER}/checks/runs/1" rel="noreferrer">build</a> (failure)`);
    expect(gh.comments.filter((c) => c.repo === `${OWNER}/checks`).map((c) => c.body)).toEqual([`Greenline removed this pull request from the merge queue for \`main\`: **failed** (\`tests_failed\`). ${failed.message}`]);
    // While it waited, the status said where it stood in the API's words.
    expect(statuses[0]).toMatchObject({ state: "pending", description: expect.stringContaining(REASONS.testing.replace(/\.$/, "")) });
  });

  test("parallel mode with squash merges and branch protection's required checks: each PR lands as one commit", async () => {
    gh.protect(`${OWNER}/mono`, "main", ["build"]);
    // Greenline reads classic protection, which needs Administration (read): issue 12, failure 1.
    gh.setPermissions(77, { ...DEFAULT_PERMISSIONS, administration: "read" });
    await api.ok("createQueue", { ...github.queue("mono"), mode: "parallel", concurrency: 4, mergeMethod: "squash" });
    gh.openPr(`${OWNER}/mono`, { number: 1, files: { "api/x.ts": "1" } });
    gh.openPr(`${OWNER}/mono`, { number: 2, files: { "web/y.ts": "2" } });
    gh.openPr(`${OWNER}/mono`, { number: 3, files: { "api/z.ts": "3" } });
    // The repository's CI ran on the PRs: GitHub blocks a PR whose required check is missing on its head.
    for (const n of [1, 2, 3]) gh.completeCheckRun(gh.createCheckRun(`${OWNER}/mono`, gh.pr(`${OWNER}/mono`, n)!.headSha, "build"), "success");
    const targets: Record<number, string[]> = { 1: ["//api"], 2: ["//web"], 3: ["//api"] };
    for (const n of [1, 2, 3]) {
      await api.ok("setImpactedTargets", { ...github.queue("mono"), pr: { number: n }, impactedTargets: targets[n] });
      await api.ok("submitPullRequest", github.pr("mono", n));
    }
    await server.greenline.worker.drain();
    // #2 is alone in its lane; #3 is tested on top of #1.
    expect(await api.ok("getMergeQueueTestingDetails", github.pr("mono", 2))).toMatchObject({ dependentPrs: [] });
    expect(await api.ok("getMergeQueueTestingDetails", github.pr("mono", 3))).toMatchObject({ dependentPrs: [1] });
    await runUntilDrained("mono", "check_run");
    const files = gh.files(`${OWNER}/mono`, "main");
    expect(Object.keys(files).sort()).toEqual(["README.md", "api/x.ts", "api/z.ts", "web/y.ts"]);
    // Squash: one commit per PR on the target, each with a single parent.
    const history = gh.history(`${OWNER}/mono`, "main");
    expect(history).toHaveLength(4);
    expect(history.slice(0, 3).every((c) => c.parents.length === 1)).toBe(true);
  });

  test("a push to the target outside the queue restarts the runs on the new head; the queue's own merges are not mistaken for one", async () => {
    await api.ok("createQueue", { ...github.queue("moved"), requiredStatuses: ["ci/test"], mergeMethod: "merge_commit" });
    gh.openPr(`${OWNER}/moved`, { number: 1, files: { "src/one.ts": "1" } });
    await api.ok("submitPullRequest", github.pr("moved", 1));
    await server.greenline.worker.drain();
    const first = await api.ok("getMergeQueueTestingDetails", github.pr("moved", 1));
    const pushed = gh.push(`${OWNER}/moved`, "main", { "docs/hotfix.md": "outside" });
    const push = (after: string) =>
      github.deliverThenDrain("push", { ref: "refs/heads/main", before: "0".repeat(40), after, deleted: false, repository: github.pushRepository("moved"), installation: { id: github.installation } });
    await push(pushed);
    await server.greenline.worker.drain();
    const second = await api.ok("getMergeQueueTestingDetails", github.pr("moved", 1));
    expect(second.testRunId).not.toBe(first.testRunId);
    expect(gh.files(`${OWNER}/moved`, second.testBranch)["docs/hotfix.md"]).toBe("outside");
    await runUntilDrained("moved", "status");
    expect(Object.keys(gh.files(`${OWNER}/moved`, "main")).sort()).toEqual(["README.md", "docs/hotfix.md", "src/one.ts"]);
    // GitHub also sends a push for the queue's own merge: it changes nothing.
    const transitions = await server.greenline.services.db.read((tx) => tx.transition.count());
    await push(gh.branchHead(`${OWNER}/moved`, "main"));
    await server.greenline.worker.drain();
    expect(await server.greenline.services.db.read((tx) => tx.transition.count())).toBe(transitions);
  });
});
