import { readFileSync } from "node:fs";
import { Probot, ProbotOctokit } from "probot";
import { parse as parseYaml } from "yaml";
import { GitHubCodeHost } from "../../src/adapters/github/code-host.js";
import { CodeHostRefusal, type CiRetries, type RepoRef } from "../../src/ports/code-host.js";
import { SimulatedCi, type Workflow } from "../support/github-ci.js";
import { DEFAULT_PERMISSIONS } from "../support/github/permissions.js";
import { GitHubSimulator, type SimulatorEvent } from "../support/github-simulator.js";

/**
 * The GitHub adapter's re-run of a testing commit's failed CI jobs (issue 16), through real
 * Octokit against the simulator: only the failed runs' failed jobs start again, as new check
 * runs; without `actions: write` GitHub's refusal is classified once; asking again while they
 * run is harmless; a commit whose CI only sets commit statuses has nothing to re-run.
 */
describe("re-running a testing commit's failed jobs on GitHub", () => {
  let gh: GitHubSimulator;
  let ciRetries: CiRetries;
  const INSTALLATION = 900;
  const OWNER = "octo-rerun";
  const full = `${OWNER}/app`;
  const repo: RepoRef = { host: "github.com", owner: OWNER, name: "app" };
  const events: SimulatorEvent[] = [];

  // A simulator per test: its CI listens to every push of the simulator.
  beforeEach(async () => {
    gh = await new GitHubSimulator().start();
    events.length = 0;
    gh.onEvent = (event) => events.push(event);
    const probot = new Probot({
      appId: gh.appId,
      privateKey: gh.privateKey,
      secret: gh.webhookSecret,
      baseUrl: gh.url,
      logLevel: "fatal",
      Octokit: ProbotOctokit.defaults({ retry: { enabled: false }, throttle: { enabled: false } }),
    });
    ciRetries = new GitHubCodeHost(probot, { writeSpacingMs: 0 }).ciRetries;
  });
  afterEach(async () => {
    await gh?.stop();
  });

  /** The App installed with `permissions`, CI running `workflows`. */
  function repository(workflows: Workflow[], permissions = DEFAULT_PERMISSIONS) {
    gh.installApp(INSTALLATION, OWNER, permissions);
    const ci = new SimulatedCi(gh, workflows).attach();
    /** The queue pushes a testing branch; CI runs on it and reports. */
    const testingCommit = (branch = "greenline/main/run-1") => {
      gh.createBranch(full, branch, "main");
      const sha = gh.push(full, branch, { "src/change.ts": branch });
      ci.finish();
      events.length = 0;
      // The verdict asks about the failed checks' check runs.
      const checkRunIds = gh
        .checkRuns(full, sha)
        .filter((r) => r.conclusion === "failure" || r.conclusion === "timed_out")
        .map((r) => r.id);
      return { sha, request: { queueId: "q1", runId: "run-1", testBranch: branch, sha, checkRunIds } };
    };
    return { ci, testingCommit };
  }

  const runsOf = (sha: string) =>
    gh
      .checkRuns(full, sha)
      .map((r) => ({ id: r.id, name: r.name, status: r.status, conclusion: r.conclusion }))
      .sort((a, b) => a.id - b.id);

  test("the App asks for actions: write (app.yml), as the simulator's default installation grants", () => {
    const manifest = parseYaml(readFileSync(new URL("../../app.yml", import.meta.url), "utf8")) as { default_permissions: Record<string, string> };
    expect(manifest.default_permissions.actions).toBe("write");
    expect(DEFAULT_PERMISSIONS.actions).toBe("write");
  });

  test("only the failed runs' failed jobs run again, as new check runs with higher ids", async () => {
    const { testingCommit } = repository([
      { name: "unit", on: ["push"], branches: "greenline/", report: "check_run", fails: (_files, attempt) => attempt === 1 },
      { name: "e2e", on: ["push"], branches: "greenline/", report: "check_run", fails: (_files, attempt) => attempt === 1, failsAs: "timed_out" },
      { name: "lint", on: ["push"], branches: "greenline/", report: "check_run" },
    ]);
    const { sha, request } = testingCommit();
    const before = runsOf(sha);
    expect(before.map((r) => [r.name, r.conclusion])).toEqual([
      ["unit", "failure"],
      ["e2e", "timed_out"],
      ["lint", "success"],
    ]);

    expect(await ciRetries.rerunFailedJobs(repo, request)).toEqual({ rerun: 2 });

    const after = runsOf(sha);
    const added = after.slice(before.length);
    expect(added.map((r) => [r.name, r.status]).sort()).toEqual([
      ["e2e", "queued"],
      ["unit", "queued"],
    ]);
    expect(Math.min(...added.map((r) => r.id))).toBeGreaterThan(Math.max(...before.map((r) => r.id)));
    // GitHub tells of the new jobs as it does of any check run.
    expect(events.filter((e) => e.kind === "check_run").map((e) => e.kind === "check_run" && [e.action, e.checkRun.id])).toEqual(added.map((r) => ["created", r.id]));
    expect(gh.checkState(full, sha, "unit")).toBe("pending");
    // The lint run passed: it was not asked to run again.
    expect(gh.requests.filter((r) => r.method === "POST" && r.path.endsWith("/rerun-failed-jobs"))).toHaveLength(2);
  });

  test("re-run jobs report anew: the flaky jobs pass on their second attempt and the runs conclude", async () => {
    const { ci, testingCommit } = repository([{ name: "unit", on: ["push"], branches: "greenline/", report: "check_run", fails: (_files, attempt) => attempt === 1 }]);
    const { sha, request } = testingCommit();
    expect(await ciRetries.rerunFailedJobs(repo, request)).toEqual({ rerun: 1 });
    events.length = 0;
    ci.finish();
    expect(gh.checkState(full, sha, "unit")).toBe("success");
    const completed = events.filter((e) => e.kind === "check_run" || e.kind === "check_suite").map((e) => `${e.kind}:${"action" in e ? e.action : ""}`);
    expect(completed).toEqual(["check_run:completed", "check_suite:completed"]);
    const run = ci.runs.find((r) => r.attempt === 2)!;
    expect(gh.workflowRun(run.workflowRunId!)).toMatchObject({ status: "completed", conclusion: "success", attempt: 2 });
  });

  test("asking again (a repeated effect) is harmless: the judged jobs' run is on a later attempt, it counts as re-run and nothing more starts", async () => {
    const { ci, testingCommit } = repository([{ name: "unit", on: ["push"], branches: "greenline/", report: "check_run", fails: () => true }]);
    const { sha, request } = testingCommit();
    expect(await ciRetries.rerunFailedJobs(repo, request)).toEqual({ rerun: 1 });
    const count = runsOf(sha).length;
    expect(await ciRetries.rerunFailedJobs(repo, request)).toEqual({ rerun: 1 });
    // Even once the re-run failed again: the judged check runs are the first attempt's.
    ci.finish();
    expect(await ciRetries.rerunFailedJobs(repo, request)).toEqual({ rerun: 1 });
    expect(runsOf(sha)).toHaveLength(count);
    expect(gh.requests.filter((r) => r.method === "POST" && r.path.endsWith("/rerun-failed-jobs"))).toHaveLength(1);
  });

  test("a run that started again just before the re-run (GitHub's 403 already running) counts as re-run", async () => {
    const { testingCommit } = repository([{ name: "unit", on: ["push"], branches: "greenline/", report: "check_run", fails: () => true }]);
    const { request } = testingCommit();
    gh.failNext("POST", /\/rerun-failed-jobs$/, 403, "This workflow is already running");
    expect(await ciRetries.rerunFailedJobs(repo, request)).toEqual({ rerun: 1 });
  });

  test("a workflow run whose other jobs still run: a transient refusal (asked again later), nothing re-run yet", async () => {
    repository([]);
    gh.createBranch(full, "greenline/main/run-1", "main");
    const sha = gh.push(full, "greenline/main/run-1", { "src/change.ts": "x" });
    const run = gh.startWorkflowRun(full, { name: "CI", event: "push", headSha: sha, headBranch: "greenline/main/run-1" });
    const unit = gh.startJob(run, "unit");
    gh.startJob(run, "e2e");
    gh.completeCheckRun(full, unit, "failure");
    const refusal = await ciRetries.rerunFailedJobs(repo, { queueId: "q1", runId: "run-1", testBranch: "greenline/main/run-1", sha, checkRunIds: [unit] }).catch((error: unknown) => error);
    expect(refusal).toMatchObject({ kind: "transient", message: expect.stringContaining("still in_progress") });
    expect(gh.requests.filter((r) => r.method === "POST" && r.path.endsWith("/rerun-failed-jobs"))).toHaveLength(0);
  });

  test("another workflow's failure on the commit is not re-run: only the judged checks' runs are", async () => {
    const { testingCommit } = repository([
      { name: "unit", on: ["push"], branches: "greenline/", report: "check_run", fails: () => true },
      { name: "docs", on: ["push"], branches: "greenline/", report: "check_run", fails: () => true },
    ]);
    const { sha, request } = testingCommit();
    const unit = gh.checkRuns(full, sha).find((r) => r.name === "unit")!;
    expect(await ciRetries.rerunFailedJobs(repo, { ...request, checkRunIds: [unit.id] })).toEqual({ rerun: 1 });
    expect(runsOf(sha).filter((r) => r.name === "docs")).toHaveLength(1);
  });

  test("a job's steps: one failed step and none skipped after it, or the steps a failure kept from running", async () => {
    const { testingCommit } = repository([{ name: "unit", on: ["push"], branches: "greenline/", report: "check_run", fails: () => true }]);
    const { request } = testingCommit();
    const id = request.checkRunIds[0]!;
    expect(await ciRetries.jobOf(repo, id)).toMatchObject({ completed: true, failedSteps: 1, skippedAfterFailure: 0, attempt: 1 });
    gh.setJobSteps(id, [
      { name: "Install", conclusion: "success" },
      { name: "Test", conclusion: "failure" },
      { name: "Build", conclusion: "skipped" },
      { name: "Upload results", conclusion: "success" },
    ]);
    expect(await ciRetries.jobOf(repo, id)).toMatchObject({ failedSteps: 1, skippedAfterFailure: 1 });
    // Another app's check run is no job.
    const other = gh.checkRun(full, request.sha, "external", "completed", "failure");
    expect(await ciRetries.jobOf(repo, other.id)).toBeNull();
  });

  test("GitHub itself refuses a run that is running: 403 This workflow is already running (the adapter never asks it)", async () => {
    repository([]);
    const sha = gh.push(full, "main", { "a.txt": "a" });
    const run = gh.startWorkflowRun(full, { name: "CI", event: "push", headSha: sha, headBranch: "main" });
    const octokit = new ProbotOctokit({ auth: { token: `ghs_installation_${INSTALLATION}` }, baseUrl: gh.url, retry: { enabled: false }, throttle: { enabled: false } });
    await expect(octokit.rest.actions.reRunWorkflowFailedJobs({ owner: OWNER, repo: "app", run_id: run })).rejects.toMatchObject({
      status: 403,
      response: { data: { message: "This workflow is already running" } },
    });
  });

  test("without actions: write: a permanent refusal, permission_missing, in GitHub's words", async () => {
    const { testingCommit } = repository([{ name: "unit", on: ["push"], branches: "greenline/", report: "check_run", fails: () => true }], { ...DEFAULT_PERMISSIONS, actions: "read" });
    const { request } = testingCommit();
    const refusal = await ciRetries.rerunFailedJobs(repo, request).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(CodeHostRefusal);
    expect(refusal).toMatchObject({ kind: "permission_missing", message: "Resource not accessible by integration" });
  });

  test("a run over 30 days old cannot be re-run: GitHub's refusal, permanent", async () => {
    const { testingCommit } = repository([{ name: "unit", on: ["push"], branches: "greenline/", report: "check_run", fails: () => true }]);
    const { request } = testingCommit();
    const now = Date.now() + 31 * 24 * 3600_000;
    gh.useClock(() => now);
    try {
      const refusal = await ciRetries.rerunFailedJobs(repo, request).catch((error: unknown) => error);
      expect(refusal).toMatchObject({ kind: "cannot_merge", message: "Unable to retry this workflow run because it was created over a month ago" });
    } finally {
      gh.useClock(() => Date.now());
    }
  });

  test("a commit whose CI only sets commit statuses has no check run to re-run: nothing to re-run", async () => {
    const { testingCommit } = repository([{ name: "ci/jenkins", on: ["push"], branches: "greenline/", report: "status", fails: () => true }]);
    const { sha, request } = testingCommit();
    expect(gh.checkState(full, sha, "ci/jenkins")).toBe("failure");
    expect(request.checkRunIds).toEqual([]);
    expect(await ciRetries.rerunFailedJobs(repo, request)).toEqual({ rerun: 0 });
  });

  test("runs of the same commit on another branch are not the queue's to re-run", async () => {
    const { testingCommit } = repository([{ name: "unit", on: ["push"], branches: "greenline/", report: "check_run", fails: () => true }]);
    const { sha, request } = testingCommit();
    // The same commit, run on another branch, failed there too.
    const elsewhere = gh.startWorkflowRun(full, { name: "unit", event: "push", headSha: sha, headBranch: "elsewhere" });
    gh.completeCheckRun(full, gh.startJob(elsewhere, "unit"), "failure");
    expect(await ciRetries.rerunFailedJobs(repo, request)).toEqual({ rerun: 1 });
    expect(gh.workflowRun(elsewhere)).toMatchObject({ status: "completed", attempt: 1 });
    // The other branch's failed job, asked about, is another commit's: not re-run.
    const theirs = gh.jobsOf(elsewhere)[0]!.id;
    expect(await ciRetries.rerunFailedJobs(repo, { ...request, checkRunIds: [theirs] })).toEqual({ rerun: 0 });
  });
});
