import { BACKENDS } from "../support/backends.js";
import { runGreenlineCli } from "../support/cli-process.js";
import { startGitHubWorld, type GitHubWorld } from "../support/github-world.js";
import { TestClock, type ApiClient } from "../support/harness.js";

/**
 * Issue 26, part 1: the preflight. `checkQueueSetup` reads the branch's required checks, the
 * repository's workflow files and who reported checks on recent pull requests, through the App
 * (the GitHub simulator over HTTP, real Octokit), and says of each required check whether it
 * will report on the queue's testing commits, and why not, with the fix. Reads only.
 */
/** The real `greenline` CLI in its own process, without this machine's CI variables. */
const greenline = (args: string[], env: Record<string, string>) => runGreenlineCli(args, env);

describe.each(BACKENDS)("checkQueueSetup on GitHub, $name", (backend) => {
  const clock = new TestClock();
  const OWNER = "octo-doctor";
  const FULL = `${OWNER}/app`;
  const queue = { repo: { host: "github.com", owner: OWNER, name: "app" }, targetBranch: "main" };
  let world: GitHubWorld;
  let api: ApiClient;
  let stranger: ApiClient;

  const CI = "name: CI\non:\n  pull_request:\n  merge_group:\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps: [{run: make}]\n";
  const LINT = "on:\n  push:\n    branches: [main, 'greenline/**']\njobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps: [{run: make lint}]\n";
  const E2E = "on: [push, pull_request]\njobs:\n  e2e:\n    if: github.event_name == 'pull_request'\n    runs-on: ubuntu-latest\n    steps: [{run: make e2e}]\n";

  beforeAll(async () => {
    world = await startGitHubWorld(backend, clock, [
      { owner: OWNER, installation: 61 },
      { owner: "octo-other", installation: 62 },
    ]);
    api = world.accounts[0]!.api;
    stranger = world.accounts[1]!.api;
    world.gh.push(FULL, "main", { ".github/workflows/ci.yml": CI, ".github/workflows/lint.yml": LINT, ".github/workflows/e2e.yml": E2E, ".github/workflows/broken.yml": "on: [push\n", "README.md": "app\n" });
    world.gh.protect(FULL, "main", { requiredChecks: ["build", "lint", "e2e", "license/cla"] });
    const pr = world.gh.openPr(FULL, { number: 1, files: { "src/a.ts": "a" } });
    world.gh.appCheckRun(FULL, pr.headSha, "license/cla", "cla-assistant");
    world.gh.createCheckRun(FULL, pr.headSha, "build");
  });
  afterAll(() => world?.close());

  test("names each required check's source, whether it reports on testing branches and the fix; reads only", async () => {
    const before = world.gh.requests.length;
    const report = await api.ok("checkQueueSetup", queue);
    const calls = world.gh.requests.slice(before);
    expect(calls.filter((r) => r.method !== "GET" && !r.path.includes("/access_tokens"))).toEqual([]);
    expect(report).toMatchObject({ ok: false, mode: "push", queueExists: false, requiredStatusesSource: "repo_provider_branch_protection" });
    const by = Object.fromEntries(report.checks.map((c: { context: string }) => [c.context, c]));
    expect(by.build).toMatchObject({ verdict: "never", sources: [".github/workflows/ci.yml: build"] });
    expect(by.build.why).toContain("runs on `pull_request`, `merge_group` only; testing branches are pushes");
    expect(by.build.fix).toContain("push: { branches: ['greenline/**'] }");
    expect(by.build.fix).toContain("createPrsForTestingBranches");
    expect(by.lint).toMatchObject({ verdict: "reports", sources: [".github/workflows/lint.yml: lint"] });
    expect(by.e2e).toMatchObject({ verdict: "passes_without_running" });
    expect(by.e2e.why).toContain("GitHub counts a skipped job as passing");
    expect(by["license/cla"]).toMatchObject({ verdict: "never", reportedBy: "cla-assistant", sources: [] });
    expect(report.warnings).toEqual([expect.stringContaining(".github/workflows/broken.yml could not be read: not valid YAML")]);
  });

  test("in the draft-PR mode the pull_request workflow reports; a queue's own mode and requiredStatuses are used", async () => {
    const draft = await api.ok("checkQueueSetup", { ...queue, mode: "draft_pr" });
    expect(Object.fromEntries(draft.checks.map((c: { context: string; verdict: string }) => [c.context, c.verdict]))).toEqual({ build: "reports", lint: "reports", e2e: "reports", "license/cla": "unknown" });
    const created = await api.ok("createQueue", { ...queue, requiredStatuses: ["build", "lint"], createPrsForTestingBranches: true });
    // Both required checks report; the workflow file that is not YAML is still told.
    expect(created.setupWarnings).toEqual([expect.stringContaining(".github/workflows/broken.yml could not be read")]);
    // Turning draft PRs off is answered with what it breaks; a pause is not checked again.
    const off = await api.ok("updateQueue", { ...queue, createPrsForTestingBranches: false });
    expect(off.setupWarnings).toEqual([
      expect.stringMatching(/^`build` comes from \.github\/workflows\/ci\.yml \(job `build`\): .* Fix: add `push: \{ branches: \['greenline\/\*\*'\] \}` to its `on:`/),
      expect.stringContaining("broken.yml"),
    ]);
    expect((await api.ok("updateQueue", { ...queue, state: "paused" })).setupWarnings).toBeUndefined();
    await api.ok("updateQueue", { ...queue, state: "running", createPrsForTestingBranches: true });
    const own = await api.ok("checkQueueSetup", queue);
    expect(own).toMatchObject({ ok: true, mode: "draft_pr", queueExists: true, requiredStatusesSource: "merge_instance" });
    expect(own.checks.map((c: { verdict: string }) => c.verdict)).toEqual(["reports", "reports"]);
  });

  test("greenline doctor prints each check's verdict, why and the fix for the queue; exit 1 while one will not report", async () => {
    const env = { GREENLINE_URL: world.server.url, GREENLINE_API_TOKEN: api.token };
    const result = await greenline(["doctor", "--repo", FULL, "--branch", "main", "--mode", "push"], env);
    expect(result).toMatchObject({ code: 1, stderr: "" });
    expect(result.stdout).toContain(`Preflight of the queue main of ${FULL} (pushed testing branches)`);
    expect(result.stdout).toContain("FAIL build: never reports");
    expect(result.stdout).toContain("fix: add `push: { branches: ['greenline/**'] }` to its `on:`");
    expect(result.stdout).toContain("ok   lint: reports");
    // The queue (created above) requires build and lint only.
    expect(result.stdout).not.toContain("e2e");
    const ok = await greenline(["doctor", "--repo", FULL, "--branch", "main", "--json"], env);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ ok: true, mode: "draft_pr" });
    const bad = await greenline(["doctor", "--repo", FULL, "--branch", "main", "--mode", "pr"], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--mode must be push or draft_pr");
  });

  test("a workflow turned off in GitHub reports nothing, whatever its triggers say", async () => {
    world.gh.setWorkflowState(FULL, ".github/workflows/lint.yml", "disabled_manually");
    try {
      const report = await api.ok("checkQueueSetup", { ...queue, mode: "push" });
      expect(report.checks.find((c: { context: string }) => c.context === "lint")).toMatchObject({ verdict: "never" });
      expect(report.warnings).toContainEqual(".github/workflows/lint.yml could not be read: turned off in GitHub (disabled_manually).");
    } finally {
      world.gh.setWorkflowState(FULL, ".github/workflows/lint.yml", null);
    }
  });

  test("the fix the report names works: a push trigger for greenline/** makes the check report", async () => {
    world.gh.push(FULL, "main", { ".github/workflows/ci.yml": CI.replace("  merge_group:\n", "  merge_group:\n  push:\n    branches: ['greenline/**']\n") });
    const report = await api.ok("checkQueueSetup", { ...queue, mode: "push" });
    expect(report.checks.find((c: { context: string }) => c.context === "build")).toMatchObject({ verdict: "reports" });
  });

  test("not while the installation is down to its rate-limit reserve: 429 with when, and updateQueue says it did not check", async () => {
    const { used } = world.gh.rateLimitOf(61);
    world.gh.setRateLimit(61, used + 8);
    try {
      // A read that brings GitHub's rate-limit headers back (its own answer may be the limit's), then the preflight is refused.
      await api.call("checkQueueSetup", queue);
      const refused = await api.call("checkQueueSetup", queue);
      expect(refused.status).toBe(429);
      expect(refused.body.error.message).toContain("down to the reserve kept for the queues until");
      const calls = world.gh.requests.length;
      const updated = await api.ok("updateQueue", { ...queue, requiredStatuses: ["build", "lint"] });
      expect(updated.setupWarnings).toEqual([expect.stringMatching(/^The queue's setup was not checked: the code host's rate limit is down to the reserve/)]);
      expect(world.gh.requests.slice(calls).filter((r) => r.path.includes("/contents/"))).toEqual([]);
    } finally {
      // The next window: the App learns of the limit's reset from the clock, as it would.
      world.gh.setRateLimit(61, 5000);
      clock.advance(world.gh.rateLimitOf(61).resetAt - clock.ms);
    }
  });

  test("bad input is a 400 naming the field; another organization's repository is not found, as one that does not exist", async () => {
    const bad = await api.call("checkQueueSetup", { ...queue, mode: "pr" });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain("mode");
    const before = world.gh.requests.length;
    const other = await stranger.call("checkQueueSetup", queue);
    const missing = await stranger.call("checkQueueSetup", { ...queue, repo: { ...queue.repo, name: "nothing-here" } });
    expect(other.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(other.body.error.message.replace("app", "nothing-here")).toBe(missing.body.error.message);
    expect(world.gh.requests.slice(before).filter((r) => r.path.includes("/contents/") || r.path.includes("/pulls"))).toEqual([]);
    // The owner asking of a branch that does not exist: not found, naming it.
    const noBranch = await api.call("checkQueueSetup", { ...queue, targetBranch: "nope" });
    expect(noBranch.status).toBe(404);
    expect(noBranch.body.error.message).toBe(`branch nope of ${FULL} not found`);
  });
});
