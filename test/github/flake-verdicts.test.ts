import { testCaseId } from "../../src/domain/flaky/identity.js";
import { BACKENDS } from "../support/backends.js";
import { postWebhook } from "../support/webhook-post.js";
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
  const clock = new TestClock();
  const OWNER = "octo-flaky";

  async function deliver(event: string, payload: object) {
    const response = await postWebhook(server.url, gh, event, payload);
    await server.greenline.worker.processWebhooks();
    return response.status;
  }
  const repository = (name: string) => ({ name, full_name: `${OWNER}/${name}`, html_url: `https://github.com/${OWNER}/${name}`, owner: { login: OWNER, name: OWNER } });
  const queue = (name: string) => ({ repo: { host: "github.com", owner: OWNER, name }, targetBranch: "main" });
  const pr = (name: string, number: number) => ({ ...queue(name), pr: { number } });
  const entry = (name: string, number: number) =>
    api.ok<{ state: string; timeline: { state: string; evidence: { flaky?: { rule: string } } }[] }>("getSubmittedPullRequest", { ...pr(name, number), includeTimeline: true });
  const report = (cases: { name: string; fail?: string }[]) =>
    `<?xml version="1.0"?><testsuites><testsuite name="suite">${cases.map((c) => (c.fail ? `<testcase classname="pkg.Tests" name="${c.name}"><failure message="${c.fail}"/></testcase>` : `<testcase classname="pkg.Tests" name="${c.name}"/>`)).join("")}</testsuite></testsuites>`;
  const upload = (name: string, sha: string, branch: string, cases: { name: string; fail?: string }[], check: { check_name?: string; check_run_id?: number }) =>
    api.ok("flaky-tests/upload", { repo: queue(name).repo, org_url_slug: OWNER, commit_sha: sha, branch, junit_xml: [report(cases)], ...check });
  async function completedCheck(name: string, sha: string, check: string, conclusion: "success" | "failure", deliverIt = true) {
    const run = gh.checkRun(`${OWNER}/${name}`, sha, check, "completed", conclusion);
    if (deliverIt) expect(await deliver("check_run", { action: "completed", check_run: run, repository: repository(name), installation: { id: 78 } })).toBe(200);
    return run;
  }
  /** A queue requiring `tests` and `lint`, with test `racy` quarantined; PR 1 testing: its testing branch. */
  async function testing(name: string) {
    gh.ruleset(`${OWNER}/${name}`, "main", ["tests", "lint"]);
    await api.ok("createQueue", { ...queue(name), mergeMethod: "merge_commit" });
    await upload(name, "a".repeat(40), "feature", [{ name: "racy", fail: "timed out" }], {});
    const test_id = testCaseId(OWNER, `github.com/${OWNER}/${name}`, { file: "", classname: "pkg.Tests", parent: "suite", name: "racy" });
    await api.ok("flaky-tests/set-quarantine-setting", { repo: queue(name).repo, org_url_slug: OWNER, test_id, setting: "always" });
    const opened = gh.openPr(`${OWNER}/${name}`, { number: 1, files: { "src/1.ts": "1" } });
    for (const context of ["tests", "lint"]) gh.ciStatus(`${OWNER}/${name}`, opened.headSha, context, "success");
    await api.ok("submitPullRequest", pr(name, 1));
    await server.greenline.worker.drain();
    const [branch] = gh.branches(`${OWNER}/${name}`, "greenline/");
    return { sha: branch!.sha, branch: branch!.name };
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    server = await startTestServer(backend, { now: clock.now, githubApp: { appId: gh.appId, privateKey: gh.privateKey, webhookSecret: gh.webhookSecret, apiUrl: gh.url, throttle: false } });
    gh.installApp(78, OWNER);
    await deliver("installation", { action: "created", installation: { id: 78, account: { login: OWNER, id: 780, type: "Organization" } }, repositories: [], sender: { login: "admin", id: 1, type: "User" } });
    api = await server.clientFor(OWNER);
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("the failed check's upload names its check run: its only failure is quarantined, so it does not count and the PR merges", async () => {
    const { sha, branch } = await testing("byid");
    const tests = gh.checkRun(`${OWNER}/byid`, sha, "tests", "in_progress");
    await upload("byid", sha, branch, [{ name: "ok" }, { name: "racy", fail: "timed out" }], { check_run_id: tests.id });
    await completedCheck("byid", sha, "lint", "success");
    const done = gh.checkRun(`${OWNER}/byid`, sha, "tests", "completed", "failure", tests.id);
    expect(await deliver("check_run", { action: "completed", check_run: done, repository: repository("byid"), installation: { id: 78 } })).toBe(200);
    await server.greenline.worker.drain();
    const after = await entry("byid", 1);
    expect(after.state).toBe("merged");
    expect(after.timeline.map((e) => e.evidence.flaky?.rule).filter(Boolean)).toEqual(["failures_excused"]);
  });

  test("a lint check failing next to a test job whose only failure is quarantined is a real failure: no upload is lint's", async () => {
    const { sha, branch } = await testing("lint");
    const tests = await completedCheck("lint", sha, "tests", "success", false);
    await upload("lint", sha, branch, [{ name: "ok" }, { name: "racy", fail: "timed out" }], { check_run_id: tests.id, check_name: "tests" });
    await deliver("check_run", { action: "completed", check_run: tests, repository: repository("lint"), installation: { id: 78 } });
    await completedCheck("lint", sha, "lint", "failure");
    await server.greenline.worker.drain();
    const after = await entry("lint", 1);
    expect(after.state).not.toBe("merged");
    expect(after.timeline.find((e) => e.state === "pending_failure")!.evidence.flaky).toMatchObject({ rule: "no_test_results", checks: ["lint"] });
  });

  test("an upload that names its check (a commit status's context) is attributed by name", async () => {
    const { sha, branch } = await testing("byname");
    await upload("byname", sha, branch, [{ name: "ok" }, { name: "racy", fail: "timed out" }], { check_name: "tests" });
    await completedCheck("byname", sha, "lint", "success");
    const s = gh.ciStatus(`${OWNER}/byname`, sha, "tests", "failure");
    expect(await deliver("status", { ...s, name: `${OWNER}/byname`, repository: repository("byname"), installation: { id: 78 } })).toBe(200);
    await server.greenline.worker.drain();
    expect((await entry("byname", 1)).state).toBe("merged");
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
