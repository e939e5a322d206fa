import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * A required check that an App reports on pull requests only (a CLA check) is taken from each
 * pull request's own head when the queue lists it in pullRequestChecks: testing branches do not
 * wait for it, and GitHub's branch rules check it on the PR's head when it merges (the simulator
 * refuses a PR merge whose head lacks a required check, as GitHub does). Real server, real
 * Octokit, the simulated GitHub over HTTP (docs/preflight.md).
 */
describe.each(BACKENDS)("checks taken from each pull request's head, $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const clock = new TestClock();
  const OWNER = "octo-cla";
  const full = (name: string) => `${OWNER}/${name}`;

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    gh.useClock(() => clock.ms);
    server = await startTestServer(backend, { githubApp: githubAppOf(gh), now: clock.now });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 87 });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  /** A PR whose head CI and the CLA app have checked. */
  function openChecked(name: string, n: number, cla: "success" | "failure") {
    gh.openPr(full(name), { number: n, files: { [`src/${n}.ts`]: `${n}` } });
    const head = gh.pr(full(name), n)!.headSha;
    gh.setStatus(full(name), head, "ci/test", "success");
    gh.setStatus(full(name), head, "cla/check", cla, "cla-bot");
  }

  async function testingRound(name: string) {
    await server.greenline.worker.drain();
    clock.advance(5 * 60_000);
    await github.ciPasses(name);
    await server.greenline.worker.drain();
  }

  test("listed: the testing branch needs only CI's check; a PR whose head fails the CLA waits, not ready, until its head passes", async () => {
    const name = "listed";
    gh.ruleset(full(name), "main", ["ci/test", "cla/check"]);
    const created = await api.ok("createQueue", { ...github.queue(name), pullRequestChecks: ["cla/check"] });
    expect(created.pullRequestChecks).toEqual(["cla/check"]);
    // The preflight counts it as satisfied, and says why.
    const setup = await api.ok("checkQueueSetup", github.queue(name));
    expect(setup.checks.find((c: { context: string }) => c.context === "cla/check")).toMatchObject({ verdict: "pull_request_head" });

    openChecked(name, 1, "success");
    openChecked(name, 2, "failure");
    for (const n of [1, 2]) await api.ok("submitPullRequest", github.pr(name, n));
    await testingRound(name);
    expect(gh.pr(full(name), 1)!.merged).toBe(true);
    // GitHub says PR 2 cannot merge (a required check fails on its head): it is not tested.
    const waiting = await api.ok("getSubmittedPullRequest", github.pr(name, 2));
    expect(waiting).toMatchObject({ state: "not_ready", readiness: { gitHubMergeability: "not_mergeable" } });
    // The author signs the CLA: the app reports on the PR's head, and the queue takes it from there.
    const head = gh.pr(full(name), 2)!.headSha;
    gh.setStatus(full(name), head, "cla/check", "success", "cla-bot");
    await github.deliver("status", github.statusPayload(name, head, "cla/check", "success"));
    await testingRound(name);
    await testingRound(name);
    expect(gh.pr(full(name), 2)!.merged).toBe(true);
  });

  test("not listed: the testing branch waits for the CLA check, which never comes there", async () => {
    const name = "unlisted";
    gh.ruleset(full(name), "main", ["ci/test", "cla/check"]);
    await api.ok("createQueue", github.queue(name));
    openChecked(name, 1, "success");
    await api.ok("submitPullRequest", github.pr(name, 1));
    await testingRound(name);
    expect((await api.ok("getSubmittedPullRequest", github.pr(name, 1))).state).toBe("testing");
    // Listing it lets the next report settle the run: CI's check alone is required there now.
    await api.ok("updateQueue", { ...github.queue(name), pullRequestChecks: ["cla/check"] });
    await github.ciPassesOnEveryBranch(name);
    await server.greenline.worker.drain();
    expect(gh.pr(full(name), 1)!.merged).toBe(true);
  });

  test("only checks the branch's rules require may be listed (400 naming the field); another organization's queue is a 404 that says nothing of its rules", async () => {
    const name = "refused";
    gh.ruleset(full(name), "main", ["ci/test"]);
    await api.ok("createQueue", github.queue(name));
    const refused = await api.call("updateQueue", { ...github.queue(name), pullRequestChecks: ["cla/check"] });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toEqual([{ path: "pullRequestChecks", message: expect.stringContaining('"cla/check" is not required by the branch\'s rulesets or protection (they require: "ci/test")') }]);
    expect((await api.ok("getQueue", github.queue(name))).pullRequestChecks).toEqual([]);
    const creating = await api.call("createQueue", { ...github.queue("other"), pullRequestChecks: ["nope"] });
    expect(creating.status).toBe(400);
    const stranger = await server.clientFor("stranger-org");
    const foreign = await stranger.call("updateQueue", { ...github.queue(name), pullRequestChecks: ["cla/check"] });
    expect(foreign.status).toBe(404);
    expect(JSON.stringify(foreign.body)).not.toContain("ci/test");
  });
});
