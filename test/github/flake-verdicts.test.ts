import { reconcileCommit } from "../../src/queue/status-checks.js";
import { testCaseId } from "../../src/domain/flaky/identity.js";
import { SimulatedCi } from "../support/github-ci.js";
import { DEFAULT_PERMISSIONS } from "../support/github/permissions.js";
import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { installationCreated } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * Flake-aware verdicts on GitHub (issue 16): a required check's failure is read from the uploads
 * attributed to that check — by its check run id (GitHub Actions' job.check_run_id) or its name
 * — never from another check's uploads: a lint job failing next to a test job whose only failure
 * is quarantined is a real failure. Real Octokit against the simulator, real database.
 */
describe.each(BACKENDS)("flake-aware verdicts on GitHub, $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const clock = new TestClock();
  const OWNER = "octo-flaky";

  const entry = (name: string, number: number) =>
    api.ok<{ state: string; timeline: { state: string; reason: string; evidence: { flaky?: { rule: string } } }[] }>("getSubmittedPullRequest", { ...github.pr(name, number), includeTimeline: true });
  const report = (cases: { name: string; fail?: string }[]) =>
    `<?xml version="1.0"?><testsuites><testsuite name="suite">${cases.map((c) => (c.fail ? `<testcase classname="pkg.Tests" name="${c.name}"><failure message="${c.fail}"/></testcase>` : `<testcase classname="pkg.Tests" name="${c.name}"/>`)).join("")}</testsuite></testsuites>`;
  const upload = (name: string, sha: string, branch: string, cases: { name: string; fail?: string }[], check: { check_name?: string; check_run_id?: number }) =>
    api.ok("flaky-tests/upload", { repo: github.queue(name).repo, org_url_slug: OWNER, commit_sha: sha, branch, junit_xml: [report(cases)], ...check });
  async function completedCheck(name: string, sha: string, check: string, conclusion: "success" | "failure", deliverIt = true) {
    const run = gh.checkRun(`${OWNER}/${name}`, sha, check, "completed", conclusion);
    if (deliverIt) expect(await github.deliverAnswering("check_run", { action: "completed", check_run: run, repository: github.repository(name), installation: { id: 78 } })).toBe(200);
    return run;
  }
  /** A queue requiring `tests` and `lint`, with test `racy` quarantined; PR 1 testing: its testing branch. */
  async function testing(name: string) {
    gh.ruleset(`${OWNER}/${name}`, "main", ["tests", "lint"]);
    await api.ok("createQueue", { ...github.queue(name), mergeMethod: "merge_commit" });
    await upload(name, "a".repeat(40), "feature", [{ name: "racy", fail: "timed out" }], {});
    const test_id = testCaseId(OWNER, `github.com/${OWNER}/${name}`, { file: "", classname: "pkg.Tests", parent: "suite", name: "racy" });
    await api.ok("flaky-tests/set-quarantine-setting", { repo: github.queue(name).repo, org_url_slug: OWNER, test_id, setting: "always" });
    const opened = gh.openPr(`${OWNER}/${name}`, { number: 1, files: { "src/1.ts": "1" } });
    for (const context of ["tests", "lint"]) gh.ciStatus(`${OWNER}/${name}`, opened.headSha, context, "success");
    await api.ok("submitPullRequest", github.pr(name, 1));
    await server.greenline.worker.drain();
    const [branch] = gh.branches(`${OWNER}/${name}`, "greenline/");
    return { sha: branch!.sha, branch: branch!.name };
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    server = await startTestServer(backend, { now: clock.now, githubApp: { appId: gh.appId, privateKey: gh.privateKey, webhookSecret: gh.webhookSecret, apiUrl: gh.url, throttle: false } });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 78 });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  /** The `tests` job of a GitHub Actions workflow run on the testing commit: its check run id. */
  function testsJob(name: string, sha: string, branch: string) {
    const run = gh.startWorkflowRun(`${OWNER}/${name}`, { name: "CI", event: "push", headSha: sha, headBranch: branch });
    return gh.startJob(run, "tests");
  }

  test("the failed check's upload names its check run: its only failure is quarantined, its job stopped at that step, so it does not count and the PR merges", async () => {
    const { sha, branch } = await testing("byid");
    const job = testsJob("byid", sha, branch);
    await upload("byid", sha, branch, [{ name: "ok" }, { name: "racy", fail: "timed out" }], { check_run_id: job });
    await completedCheck("byid", sha, "lint", "success");
    const done = gh.checkRun(`${OWNER}/byid`, sha, "tests", "completed", "failure", job);
    expect(await github.deliverAnswering("check_run", { action: "completed", check_run: done, repository: github.repository("byid"), installation: { id: 78 } })).toBe(200);
    await server.greenline.worker.drain();
    const after = await entry("byid", 1);
    expect(after.state).toBe("merged");
    expect(after.timeline.map((e) => e.evidence.flaky?.rule).filter(Boolean)).toEqual(["failures_excused"]);
  });

  test("a job that skipped a step after its quarantined failure is not excused: its failed job runs again (the quarantine applies there)", async () => {
    const { sha, branch } = await testing("skipped");
    const job = testsJob("skipped", sha, branch);
    await upload("skipped", sha, branch, [{ name: "ok" }, { name: "racy", fail: "timed out" }], { check_run_id: job });
    await completedCheck("skipped", sha, "lint", "success");
    const done = gh.checkRun(`${OWNER}/skipped`, sha, "tests", "completed", "failure", job);
    gh.setJobSteps(job, [
      { name: "Test", conclusion: "failure" },
      { name: "Build", conclusion: "skipped" },
    ]);
    expect(await github.deliverAnswering("check_run", { action: "completed", check_run: done, repository: github.repository("skipped"), installation: { id: 78 } })).toBe(200);
    await server.greenline.worker.drain();
    const after = await entry("skipped", 1);
    expect(after.state).toBe("testing");
    expect(after.timeline.at(-1)).toMatchObject({ reason: "flaky_retry", evidence: { flaky: { rule: "quarantined_job_incomplete" } } });
    expect(gh.requests.filter((r) => r.method === "POST" && r.path.endsWith("/rerun-failed-jobs"))).toHaveLength(1);
  });

  test("a lint check failing next to a test job whose only failure is quarantined is a real failure: no upload is lint's", async () => {
    const { sha, branch } = await testing("lint");
    const tests = await completedCheck("lint", sha, "tests", "success", false);
    await upload("lint", sha, branch, [{ name: "ok" }, { name: "racy", fail: "timed out" }], { check_run_id: tests.id, check_name: "tests" });
    await github.deliverAnswering("check_run", { action: "completed", check_run: tests, repository: github.repository("lint"), installation: { id: 78 } });
    await completedCheck("lint", sha, "lint", "failure");
    await server.greenline.worker.drain();
    const after = await entry("lint", 1);
    expect(after.state).not.toBe("merged");
    expect(after.timeline.find((e) => e.state === "pending_failure")!.evidence.flaky).toMatchObject({ rule: "no_test_results", checks: ["lint"] });
  });

  test("an upload that names its check (a commit status's context) is attributed by name; a status says nothing of skipped steps, so the run is tested again", async () => {
    const { sha, branch } = await testing("byname");
    await upload("byname", sha, branch, [{ name: "ok" }, { name: "racy", fail: "timed out" }], { check_name: "tests" });
    await completedCheck("byname", sha, "lint", "success");
    const s = gh.ciStatus(`${OWNER}/byname`, sha, "tests", "failure");
    expect(await github.deliverAnswering("status", { ...s, name: `${OWNER}/byname`, repository: github.repository("byname"), installation: { id: 78 } })).toBe(200);
    await server.greenline.worker.drain();
    const after = await entry("byname", 1);
    expect(after.state).toBe("testing");
    expect(after.timeline.map((e) => [e.reason, e.evidence.flaky?.rule])).toEqual(
      expect.arrayContaining([
        ["flaky_retry", "quarantined_job_incomplete"],
        ["flaky_retry_new_run", "quarantined_job_incomplete"],
      ]),
    );
  });

  test("a test that never failed before fails the PR at once, and the PR's comment names it with its judgement", async () => {
    const { sha, branch } = await testing("real");
    const tests = gh.checkRun(`${OWNER}/real`, sha, "tests", "in_progress");
    await upload("real", sha, branch, [{ name: "ok" }, { name: "checkout_total", fail: "expected 42 to be 41" }], { check_run_id: tests.id });
    await completedCheck("real", sha, "lint", "success");
    const done = gh.checkRun(`${OWNER}/real`, sha, "tests", "completed", "failure", tests.id);
    expect(await github.deliverAnswering("check_run", { action: "completed", check_run: done, repository: github.repository("real"), installation: { id: 78 } })).toBe(200);
    await server.greenline.worker.drain();
    expect((await entry("real", 1)).state).toBe("failed");
    const comments = gh.comments.filter((c) => c.repo === `${OWNER}/real` && c.number === 1).map((c) => c.body);
    expect(comments).toEqual([expect.stringContaining("Failing tests (`real_failure`): `checkout_total` (new failure).")]);
  });

  test("uploads naming no check are not attributed when the commit has several checks: a real failure", async () => {
    const { sha, branch } = await testing("unnamed");
    await upload("unnamed", sha, branch, [{ name: "ok" }, { name: "racy", fail: "timed out" }], {});
    await completedCheck("unnamed", sha, "lint", "success");
    await completedCheck("unnamed", sha, "tests", "failure");
    await server.greenline.worker.drain();
    const after = await entry("unnamed", 1);
    expect(after.state).not.toBe("merged");
    expect(after.timeline.find((e) => e.state === "pending_failure")!.evidence.flaky).toMatchObject({ rule: "no_test_results", checks: ["tests"] });
  });
});

/**
 * The retry itself on GitHub: a known-flaky failure re-runs the failed job through GitHub
 * Actions' re-run-failed-jobs (the same run goes on; its job reports anew as a new check run),
 * and without `actions: write` the run is started again on its own, saying why.
 */
describe.each(BACKENDS)("flaky retries on GitHub Actions, $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  let ci: SimulatedCi;
  const clock = new TestClock();
  const OWNER = "octo-retry";

  const entry = (name: string) =>
    api.ok<{ state: string; timeline: { reason: string; message: string; evidence: { run?: { id: string }; flaky?: { rule: string } } }[] }>("getSubmittedPullRequest", { ...github.pr(name, 1), includeTimeline: true });
  const report = (racy: "fail" | "pass") =>
    `<?xml version="1.0"?><testsuites><testsuite name="suite"><testcase classname="pkg.Tests" name="ok"/><testcase classname="pkg.Tests" name="racy">${racy === "fail" ? '<failure message="socket hang up"/>' : ""}</testcase></testsuite></testsuites>`;
  const upload = (name: string, sha: string, branch: string, racy: "fail" | "pass", checkRunId?: number) =>
    api.ok("flaky-tests/upload", { repo: github.queue(name).repo, org_url_slug: OWNER, commit_sha: sha, branch, junit_xml: [report(racy)], ...(checkRunId ? { check_run_id: checkRunId } : {}) });
  /** CI finishes on the testing branch; the job's upload names its check run; Greenline reads the commit's CI. */
  async function ciFinishes(name: string, racy: "fail" | "pass") {
    const [branch] = gh.branches(`${OWNER}/${name}`, "greenline/");
    ci.finish();
    const job = gh
      .checkRuns(`${OWNER}/${name}`, branch!.sha)
      .filter((r) => r.name === "tests")
      .sort((a, b) => b.id - a.id)[0]!;
    await upload(name, branch!.sha, branch!.name, racy, job.id);
    await reconcileCommit(server.greenline.services, github.queue(name).repo, branch!.sha);
    await server.greenline.worker.drain();
    return branch!;
  }
  /** A queue retrying flaky tests, `racy` flaky (not quarantined), PR 1 testing. */
  async function testing(name: string, required = ["tests"]) {
    gh.ruleset(`${OWNER}/${name}`, "main", required);
    await api.ok("createQueue", { ...github.queue(name), mergeMethod: "merge_commit", flakeHandling: "retry_flaky" });
    await upload(name, "b".repeat(40), "feature", "fail");
    await upload(name, "b".repeat(40), "feature", "pass");
    const test_id = testCaseId(OWNER, `github.com/${OWNER}/${name}`, { file: "", classname: "pkg.Tests", parent: "suite", name: "racy" });
    await api.ok("flaky-tests/set-quarantine-setting", { repo: github.queue(name).repo, org_url_slug: OWNER, test_id, setting: "never" });
    const opened = gh.openPr(`${OWNER}/${name}`, { number: 1, files: { [`src/${name}.ts`]: "1" } });
    for (const context of required) gh.ciStatus(`${OWNER}/${name}`, opened.headSha, context, "success");
    await api.ok("submitPullRequest", github.pr(name, 1));
    await server.greenline.worker.drain();
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    // The `tests` workflow of testing branches flakes on its first attempt.
    ci = new SimulatedCi(gh, [
      { name: "tests", on: ["push"], branches: "greenline/", report: "check_run", fails: (_files, attempt) => attempt === 1 },
      // Only the "twice" repository's PR has e2e tests that flake.
      { name: "e2e", on: ["push"], branches: "greenline/", report: "check_run", fails: (files, attempt) => attempt === 1 && "src/twice.ts" in files },
    ]).attach();
    server = await startTestServer(backend, { now: clock.now, githubApp: { appId: gh.appId, privateKey: gh.privateKey, webhookSecret: gh.webhookSecret, apiUrl: gh.url, throttle: false } });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 78 });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("a known-flaky failure re-runs only the failed job; the same run passes on its second attempt and the PR merges", async () => {
    await testing("rerun");
    const first = await ciFinishes("rerun", "fail");
    const retried = await entry("rerun");
    expect(retried.state).toBe("testing");
    expect(retried.timeline.at(-1)).toMatchObject({ reason: "flaky_retry", evidence: { flaky: { rule: "flaky_retry" } } });
    expect(gh.requests.filter((r) => r.method === "POST" && r.path.endsWith("/rerun-failed-jobs"))).toHaveLength(1);
    const second = await ciFinishes("rerun", "pass");
    expect(second).toEqual(first);
    expect((await entry("rerun")).state).toBe("merged");
  });

  test("two checks flaking one after the other: each gets its own re-run, and the run merges once both pass", async () => {
    await testing("twice", ["tests", "e2e"]);
    const [branch] = gh.branches(`${OWNER}/twice`, "greenline/");
    const sha = branch!.sha;
    ci.finish();
    const deliverRun = async (name: string) => {
      const run = gh
        .checkRuns(`${OWNER}/twice`, sha)
        .filter((r) => r.name === name)
        .sort((a, b) => b.id - a.id)[0]!;
      await upload("twice", sha, branch!.name, run.conclusion === "success" ? "pass" : "fail", run.id);
      const payload = { id: run.id, name, head_sha: sha, status: run.status, conclusion: run.conclusion };
      expect(
        await github.deliverAnswering("check_run", {
          action: "completed",
          check_run: payload,
          repository: github.repository("twice"),
          installation: { id: 78 },
        }),
      ).toBe(200);
      await server.greenline.worker.drain();
    };
    await deliverRun("tests");
    await deliverRun("e2e");
    const retried = await entry("twice");
    expect(retried.state).toBe("testing");
    expect(retried.timeline.filter((e) => e.reason === "flaky_retry")).toHaveLength(2);
    // One re-run per check, each of its own workflow run.
    expect(gh.requests.filter((r) => r.method === "POST" && r.path.startsWith(`/repos/${OWNER}/twice/`) && r.path.endsWith("/rerun-failed-jobs"))).toHaveLength(2);
    ci.finish();
    await deliverRun("tests");
    await deliverRun("e2e");
    expect((await entry("twice")).state).toBe("merged");
  });

  test("without actions: write the run is started again on its own, with GitHub's words", async () => {
    gh.installApp(79, "octo-noactions", { ...DEFAULT_PERMISSIONS, actions: "read" });
    // A second owner whose installation cannot re-run jobs.
    await github.deliverAnswering("installation", installationCreated(79, "octo-noactions"));
    const other = await server.clientFor("octo-noactions");
    const name = "app";
    const q = { repo: { host: "github.com", owner: "octo-noactions", name }, targetBranch: "main" };
    gh.ruleset(`octo-noactions/${name}`, "main", ["tests"]);
    await other.ok("createQueue", { ...q, mergeMethod: "merge_commit", flakeHandling: "retry_flaky" });
    const up = (sha: string, branch: string, racy: "fail" | "pass", checkRunId?: number) =>
      other.ok("flaky-tests/upload", { repo: q.repo, org_url_slug: "octo-noactions", commit_sha: sha, branch, junit_xml: [report(racy)], ...(checkRunId ? { check_run_id: checkRunId } : {}) });
    await up("c".repeat(40), "feature", "fail");
    await up("c".repeat(40), "feature", "pass");
    const test_id = testCaseId("octo-noactions", `github.com/octo-noactions/${name}`, { file: "", classname: "pkg.Tests", parent: "suite", name: "racy" });
    await other.ok("flaky-tests/set-quarantine-setting", { repo: q.repo, org_url_slug: "octo-noactions", test_id, setting: "never" });
    const opened = gh.openPr(`octo-noactions/${name}`, { number: 1, files: { "src/1.ts": "1" } });
    gh.ciStatus(`octo-noactions/${name}`, opened.headSha, "tests", "success");
    await other.ok("submitPullRequest", { ...q, pr: { number: 1 } });
    await server.greenline.worker.drain();
    const [branch] = gh.branches(`octo-noactions/${name}`, "greenline/");
    ci.finish();
    const job = gh.checkRuns(`octo-noactions/${name}`, branch!.sha).find((r) => r.name === "tests")!;
    await up(branch!.sha, branch!.name, "fail", job.id);
    await reconcileCommit(server.greenline.services, q.repo, branch!.sha);
    await server.greenline.worker.drain();
    const after = await other.ok<{ state: string; timeline: { reason: string; message: string; evidence: { run?: { id: string } } }[] }>("getSubmittedPullRequest", { ...q, pr: { number: 1 }, includeTimeline: true });
    expect(after.state).toBe("testing");
    const fallback = after.timeline.at(-1)!;
    expect(fallback.reason).toBe("flaky_retry_new_run");
    expect(fallback.message).toContain("Resource not accessible by integration");
    expect(fallback.evidence.run!.id).toBe("run-2");
    const branches = gh.branches(`octo-noactions/${name}`, "greenline/").map((b) => b.name);
    expect(branches).toContain("greenline/main/run-2");
  });
});
