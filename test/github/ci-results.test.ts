import { reconcileCommit } from "../../src/queue/status-checks.js";
import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, TestClock, type TestServer } from "../support/harness.js";
import { TRUNK_TESTING_DETAILS, trunkErrors } from "../support/trunk-schemas.js";

/**
 * CI results on GitHub, end to end (issue 12, items 1 and 6): the checks a branch requires are
 * read as a default installation may (rulesets; classic protection through "Get a branch"),
 * "no requirement known" never passes a run, a late or reordered delivery never takes a check
 * back, a lost delivery is made up by polling, and an out-of-order push echo never moves the
 * queue's view of the target back. CI state lives in the simulator (`ciStatus`, `checkRun`);
 * the tests deliver (or lose) the webhooks by hand, in the order they choose.
 */
describe.each(BACKENDS)("CI results on GitHub, $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const clock = new TestClock();
  const OWNER = "octo-ci";

  /** CI sets a status on GitHub; `send` false loses its delivery. */
  async function status(name: string, sha: string, context: string, state: "pending" | "success" | "failure", send = true) {
    const s = gh.ciStatus(`${OWNER}/${name}`, sha, context, state);
    if (send) expect(await github.deliverAnswering("status", { ...s, name: `${OWNER}/${name}`, repository: github.repository(name), installation: { id: github.installation } })).toBe(200);
    return s;
  }
  const checkRunPayload = (name: string, action: string, run: object) => ({ action, check_run: run, repository: github.repository(name), installation: { id: github.installation } });

  /**
   * Opens and submits a PR; answers its testing branch's commit once the worker built it. The
   * PR's own CI reported `greenOnHead` on its head (GitHub holds a PR missing its required
   * checks `blocked`: not ready for the queue).
   */
  async function submitted(name: string, number: number, greenOnHead: string[] = []): Promise<string> {
    const opened = gh.openPr(`${OWNER}/${name}`, { number, files: { [`src/${number}.ts`]: String(number) } });
    for (const context of greenOnHead) gh.ciStatus(`${OWNER}/${name}`, opened.headSha, context, "success");
    await api.ok("submitPullRequest", github.pr(name, number));
    await server.greenline.worker.drain();
    const branches = gh.branches(`${OWNER}/${name}`, "greenline/");
    expect(branches).toHaveLength(1);
    return branches[0]!.sha;
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    server = await startTestServer(backend, { now: clock.now, githubApp: githubAppOf(gh) });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 78 });
    api = github.api;
  });
  afterEach(() => {
    gh.administrationRead = false;
    gh.rulesRefused = false;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("rulesets' required checks are honoured: the first green check does not pass the run", async () => {
    gh.ruleset(`${OWNER}/rules`, "main", ["build", "lint"]);
    // Even where classic protection is readable (it answers 404: no protection), rulesets count.
    gh.administrationRead = true;
    await api.ok("createQueue", { ...github.queue("rules"), mergeMethod: "merge_commit" });
    const sha = await submitted("rules", 1, ["build", "lint"]);
    const lint = gh.checkRun(`${OWNER}/rules`, sha, "lint", "completed", "success");
    expect(await github.deliverAnswering("check_run", checkRunPayload("rules", "completed", lint))).toBe(200);
    await server.greenline.worker.drain();
    expect(await github.stateOf("rules", 1)).toBe("testing");
    const build = gh.checkRun(`${OWNER}/rules`, sha, "build", "completed", "success");
    expect(await github.deliverAnswering("check_run", checkRunPayload("rules", "completed", build))).toBe(200);
    await server.greenline.worker.drain();
    expect(await github.stateOf("rules", 1)).toBe("merged");
  });

  test("classic protection is read without administration permission, and a 403 never loses the delivery", async () => {
    gh.protect(`${OWNER}/classic`, "main", ["build"]);
    await api.ok("createQueue", { ...github.queue("classic"), mergeMethod: "merge_commit" });
    const sha = await submitted("classic", 1, ["build"]);
    await status("classic", sha, "lint", "success");
    await server.greenline.worker.drain();
    expect(await github.stateOf("classic", 1)).toBe("testing");
    await status("classic", sha, "build", "success");
    await server.greenline.worker.drain();
    expect(await github.stateOf("classic", 1)).toBe("merged");
    expect(gh.requests.filter((r) => r.path.endsWith("/protection/required_status_checks"))).toEqual([]);
  });

  test("no required check at all: the run waits until every check suite completed and no status is pending", async () => {
    gh.administrationRead = true;
    await api.ok("createQueue", { ...github.queue("free"), mergeMethod: "merge_commit" });
    const sha = await submitted("free", 1);
    // build's check run exists on GitHub, its delivery is late: lint being green is not enough.
    const build = gh.checkRun(`${OWNER}/free`, sha, "build", "in_progress");
    const lint = gh.checkRun(`${OWNER}/free`, sha, "lint", "completed", "success");
    expect(await github.deliverAnswering("check_run", checkRunPayload("free", "completed", lint))).toBe(200);
    await status("free", sha, "docs", "success");
    await server.greenline.worker.drain();
    expect(await github.stateOf("free", 1)).toBe("testing");
    const done = gh.checkRun(`${OWNER}/free`, sha, "build", "completed", "success", build.id);
    expect(await github.deliverAnswering("check_run", checkRunPayload("free", "completed", done))).toBe(200);
    await server.greenline.worker.drain();
    expect(await github.stateOf("free", 1)).toBe("merged");
  });

  test("a late check_run.created after completed, and an older status after a newer one, take nothing back", async () => {
    await api.ok("createQueue", { ...github.queue("late"), requiredStatuses: ["build", "ci/test", "lint"], mergeMethod: "merge_commit" });
    const sha = await submitted("late", 1);
    const created = gh.checkRun(`${OWNER}/late`, sha, "build", "queued");
    const completed = gh.checkRun(`${OWNER}/late`, sha, "build", "completed", "success", created.id);
    expect(await github.deliverAnswering("check_run", checkRunPayload("late", "completed", completed))).toBe(200);
    expect(await github.deliverAnswering("check_run", checkRunPayload("late", "created", created))).toBe(200);
    const pending = gh.ciStatus(`${OWNER}/late`, sha, "ci/test", "pending");
    await status("late", sha, "ci/test", "success");
    expect(await github.deliverAnswering("status", { ...pending, name: `${OWNER}/late`, repository: github.repository("late"), installation: { id: github.installation } })).toBe(200);
    await server.greenline.worker.drain();
    expect(await github.stateOf("late", 1)).toBe("testing");
    await status("late", sha, "lint", "success");
    await server.greenline.worker.drain();
    expect(await github.stateOf("late", 1)).toBe("merged");
  });

  test("a re-run check may go back to pending", async () => {
    await api.ok("createQueue", { ...github.queue("rerun"), requiredStatuses: ["build", "lint"], mergeMethod: "merge_commit" });
    const sha = await submitted("rerun", 1);
    const first = gh.checkRun(`${OWNER}/rerun`, sha, "build", "completed", "success");
    expect(await github.deliverAnswering("check_run", checkRunPayload("rerun", "completed", first))).toBe(200);
    const again = gh.checkRun(`${OWNER}/rerun`, sha, "build", "queued");
    expect(await github.deliverAnswering("check_run", checkRunPayload("rerun", "created", again))).toBe(200);
    await status("rerun", sha, "lint", "success");
    await server.greenline.worker.drain();
    expect(await github.stateOf("rerun", 1)).toBe("testing");
    const details = await api.ok("getMergeQueueTestingDetails", github.pr("rerun", 1));
    // As on Trunk: commit statuses under statusChecks, check runs under checkSuites (GitHub's enums in Trunk's UPPERCASE; no null fields).
    expect(details.statusChecks).toEqual([{ context: "lint", state: "SUCCESS" }]);
    expect(details.checkSuites).toEqual([{ checkRuns: [{ name: "build", url: `https://github.com/${OWNER}/rerun/runs/${again.id}`, status: "IN_PROGRESS" }] }]);
    expect(trunkErrors(TRUNK_TESTING_DETAILS, details)).toEqual([]);
    const done = gh.checkRun(`${OWNER}/rerun`, sha, "build", "completed", "failure", again.id);
    expect(await github.deliverAnswering("check_run", checkRunPayload("rerun", "completed", done))).toBe(200);
    const failed = await api.ok("getMergeQueueTestingDetails", { ...github.queue("rerun"), testRunId: details.testRunId });
    expect(failed.checkSuites).toEqual([{ checkRuns: [{ name: "build", url: `https://github.com/${OWNER}/rerun/runs/${again.id}`, status: "COMPLETED", conclusion: "FAILURE" }] }]);
    expect(trunkErrors(TRUNK_TESTING_DETAILS, failed)).toEqual([]);
  });

  test("a lost status delivery costs one poll interval, and polling stays bounded", async () => {
    await api.ok("createQueue", { ...github.queue("lost"), requiredStatuses: ["ci/test"], mergeMethod: "merge_commit" });
    const sha = await submitted("lost", 1);
    const polls = () => gh.requests.filter((r) => r.path.includes(`/${OWNER}/lost/commits/${sha}/`)).length;
    await status("lost", sha, "ci/test", "pending", false);
    // Polled while CI runs: at 30 s, 60 s, 120 s (doubling), not at every tick; two calls each
    // while a check is pending (check suites are asked only once every check is done).
    for (let i = 0; i < 24; i++) {
      clock.advance(5_000);
      await server.greenline.worker.drain();
    }
    expect(await github.stateOf("lost", 1)).toBe("testing");
    expect(polls()).toBe(3 * 2);
    await status("lost", sha, "ci/test", "success", false);
    clock.advance(120_000);
    await server.greenline.worker.drain();
    expect(await github.stateOf("lost", 1)).toBe("merged");
    expect(polls()).toBe(3 * 2 + 3);
  });

  test("push deliveries out of order: a late echo of an older push does not move the known target head back", async () => {
    await api.ok("createQueue", { ...github.queue("pushes"), requiredStatuses: ["ci/test"], mergeMethod: "merge_commit" });
    await submitted("pushes", 1);
    const base = gh.branchHead(`${OWNER}/pushes`, "main");
    const first = gh.push(`${OWNER}/pushes`, "main", { "docs/one.md": "1" });
    const second = gh.push(`${OWNER}/pushes`, "main", { "docs/two.md": "2" });
    const push = (before: string, after: string) =>
      github.deliverAnswering("push", { ref: "refs/heads/main", before, after, deleted: false, repository: github.pushRepository("pushes"), installation: { id: github.installation } });
    expect(await push(first, second)).toBe(200);
    await server.greenline.worker.drain();
    const moved = await api.ok("getMergeQueueTestingDetails", github.pr("pushes", 1));
    expect(gh.files(`${OWNER}/pushes`, moved.testBranch)["docs/two.md"]).toBe("2");
    const transitions = await server.greenline.services.db.read((tx) => tx.transition.count());
    expect(await push(base, first)).toBe(200);
    await server.greenline.worker.drain();
    expect((await api.ok("getMergeQueueTestingDetails", github.pr("pushes", 1))).testRunId).toBe(moved.testRunId);
    expect(await server.greenline.services.db.read((tx) => tx.transition.count())).toBe(transitions);
    const sha = gh.branches(`${OWNER}/pushes`, "greenline/")[0]!.sha;
    await status("pushes", sha, "ci/test", "success");
    await server.greenline.worker.drain();
    expect(await github.stateOf("pushes", 1)).toBe("merged");
    expect(Object.keys(gh.files(`${OWNER}/pushes`, "main")).sort()).toEqual(["README.md", "docs/one.md", "docs/two.md", "src/1.ts"]);
  });

  test("the queue says where its required checks come from, and warns when the branch requires none", async () => {
    gh.ruleset(`${OWNER}/said`, "main", ["build"]);
    gh.protect(`${OWNER}/said`, "main", ["lint"]);
    expect(await api.ok("createQueue", github.queue("said"))).toMatchObject({ requiredStatuses: [], requiredStatusesSource: "rulesets_and_branch_protection" });
    const created = await api.ok("createQueue", github.queue("bare"));
    expect(created).toMatchObject({ requiredStatusesSource: "none", requiredStatusesWarning: expect.stringContaining("requires no status check") });
    expect(await api.ok("getQueue", github.queue("bare"))).toMatchObject({ requiredStatusesSource: "none", requiredStatusesWarning: expect.any(String) });
    const own = await api.ok("updateQueue", { ...github.queue("bare"), requiredStatuses: ["ci/test"] });
    expect(own).toMatchObject({ requiredStatuses: ["ci/test"], requiredStatusesSource: "merge_instance" });
    expect(own.requiredStatusesWarning).toBeUndefined();
  });

  test("requirements that cannot be read: the queue says so, runs wait, and pass once they can be read", async () => {
    gh.rulesRefused = true;
    const created = await api.ok("createQueue", { ...github.queue("unread"), mergeMethod: "merge_commit" });
    expect(created).toMatchObject({ requiredStatusesSource: "unknown", requiredStatusesWarning: expect.stringContaining("could not be read") });
    const sha = await submitted("unread", 1);
    await status("unread", sha, "ci/test", "success");
    clock.advance(30_000);
    await server.greenline.worker.drain();
    expect(await github.stateOf("unread", 1)).toBe("testing");
    // Readable again: the next poll (after the cache's minute) reads "none" and CI has finished.
    gh.rulesRefused = false;
    clock.advance(60_000);
    await server.greenline.worker.drain();
    expect(await github.stateOf("unread", 1)).toBe("merged");
    expect(await api.ok("getQueue", github.queue("unread"))).toMatchObject({ requiredStatusesSource: "none" });
  });

  test("a delivery that says CI changed without saying how (a completed check suite) reconciles the commit at once", async () => {
    await api.ok("createQueue", { ...github.queue("suite"), mergeMethod: "merge_commit" });
    const sha = await submitted("suite", 1);
    gh.checkRun(`${OWNER}/suite`, sha, "build", "completed", "success");
    gh.checkRun(`${OWNER}/suite`, sha, "lint", "completed", "success");
    const repo = github.queue("suite").repo;
    expect(await reconcileCommit(server.greenline.services, repo, sha)).toBe(1);
    await server.greenline.worker.drain();
    expect(await github.stateOf("suite", 1)).toBe("merged");
    expect(await reconcileCommit(server.greenline.services, repo, sha)).toBe(0);
  });
});
