import { ProbotOctokit } from "probot";
import { refusalOf, type GitHubOperation } from "../../src/adapters/github/refusals.js";
import { GitHubSimulator, SUSPENDED_MESSAGE } from "../support/github-simulator.js";

/**
 * GitHub's refusals, classified once: each case is a real RequestError, from the real Octokit
 * talking HTTP to the simulator (no HTTP retries, so each refusal is the first answer).
 */
describe("refusalOf: GitHub's answers classified", () => {
  let gh: GitHubSimulator;
  let octokit: InstanceType<typeof ProbotOctokit>;
  let clock = Date.parse("2026-11-22T09:00:00Z");
  const REPO = { owner: "octo", repo: "app" };

  beforeAll(async () => {
    gh = await new GitHubSimulator().start();
    gh.useClock(() => clock);
    gh.installApp(7, "octo");
    octokit = new ProbotOctokit({ auth: { token: "ghs_installation_7" }, baseUrl: gh.url, throttle: { enabled: false }, retry: { enabled: false } });
    gh.openPr("octo/app", { number: 1 });
  });
  afterAll(() => gh?.stop());

  async function refusal(operation: GitHubOperation, call: () => Promise<unknown>) {
    try {
      await call();
    } catch (error) {
      return refusalOf(error, operation, clock);
    }
    throw new Error("GitHub did not refuse");
  }
  const mergePr = () => refusal("merge_pr", () => octokit.rest.pulls.merge({ ...REPO, pull_number: 1, merge_method: "squash" }));
  const updateRef = () => refusal("update_ref", () => octokit.rest.git.updateRef({ ...REPO, ref: "heads/main", sha: gh.pr("octo/app", 1)!.headSha }));

  test.each([
    [405, 'Required status check "build" is expected.', "cannot_merge"],
    [405, "Merge commits are not allowed on this repository.", "cannot_merge"],
    [405, "Repository rule violations found\n\nChanges must be made through the merge queue", "cannot_merge"],
    [405, "At least 1 approving review is required by reviewers with write access.", "cannot_merge"],
    [405, "Base branch was modified. Review and try the merge again.", "target_moved"],
    [409, "Head branch was modified. Review and try the merge again.", "head_moved"],
    [403, "Resource not accessible by integration", "permission_missing"],
    [404, "Not Found", "not_found"],
    [502, "Server Error", "transient"],
  ] as const)("pulls.merge answering %i %j is %s, with GitHub's message", async (status, message, kind) => {
    gh.failNext("PUT", /\/pulls\/1\/merge$/, status, message);
    const classified = await mergePr();
    expect({ kind: classified.kind, message: classified.message, transient: classified.transient }).toEqual({ kind, message, transient: kind === "transient" });
  });

  test.each([
    [422, "Update is not a fast forward", "target_moved"],
    [422, "Changes must be made through a pull request.", "cannot_merge"],
    [422, "Repository rule violations found\n\nCannot update this protected ref.", "cannot_merge"],
    [422, "Reference does not exist", "not_found"],
  ] as const)("git.updateRef answering %i %j is %s", async (status, message, kind) => {
    gh.failNext("PATCH", /\/git\/refs\/heads\/main$/, status, message);
    expect((await updateRef()).kind).toBe(kind);
  });

  test("a merge of branches that conflicts is a conflict", async () => {
    gh.failNext("POST", /\/merges$/, 409, "Merge conflict");
    expect((await refusal("merge_branches", () => octokit.rest.repos.merge({ ...REPO, base: "main", head: "feature" }))).kind).toBe("conflict");
  });

  test("the primary rate limit: 403 with x-ratelimit-remaining 0, over at x-ratelimit-reset", async () => {
    gh.setRateLimit(7, gh.rateLimitOf(7).used);
    const limited = await refusal("read", () => octokit.rest.repos.getBranch({ ...REPO, branch: "main" }));
    expect(limited).toMatchObject({ kind: "rate_limited", message: "API rate limit exceeded for installation ID 7.", retryAt: gh.rateLimitOf(7).resetAt });
    expect(limited.retryAt! % 1000).toBe(0);
    // Past the reset the installation may call again.
    clock = gh.rateLimitOf(7).resetAt;
    await expect(octokit.rest.repos.getBranch({ ...REPO, branch: "main" })).resolves.toMatchObject({ status: 200 });
    gh.setRateLimit(7, 5000);
  });

  test("a secondary rate limit: 403 with retry-after, over that many seconds after GitHub answered", async () => {
    gh.secondaryRateLimit(7, 30);
    const limited = await refusal("write", () => octokit.rest.issues.createComment({ ...REPO, issue_number: 1, body: "hi" }));
    expect(limited).toMatchObject({ kind: "rate_limited", retryAt: clock + 30_000 });
    expect(limited.message).toMatch(/secondary rate limit/);
    clock += 30_000;
  });

  test("a secondary rate limit without retry-after waits a minute; a 429 is a rate limit too", async () => {
    gh.failNext("GET", /\/branches\/main$/, 403, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.");
    expect(await refusal("read", () => octokit.rest.repos.getBranch({ ...REPO, branch: "main" }))).toMatchObject({ kind: "rate_limited", retryAt: clock + 60_000 });
    gh.failNext("GET", /\/branches\/main$/, 429, "Too Many Requests", 1, { "retry-after": "5" });
    expect(await refusal("read", () => octokit.rest.repos.getBranch({ ...REPO, branch: "main" }))).toMatchObject({ kind: "rate_limited", retryAt: clock + 5_000 });
  });

  test("every answer carries GitHub's rate-limit headers for the installation", async () => {
    const { headers } = await octokit.rest.repos.getBranch({ ...REPO, branch: "main" });
    const window = gh.rateLimitOf(7);
    expect(headers).toMatchObject({
      "x-ratelimit-limit": "5000",
      "x-ratelimit-remaining": String(window.remaining),
      "x-ratelimit-used": String(window.used),
      "x-ratelimit-reset": String(window.resetAt / 1000),
      "x-ratelimit-resource": "core",
    });
  });

  test("a suspended installation: a call with a token issued before answers 403 'This installation has been suspended', a refusal of the installation, not of the request", async () => {
    gh.suspendInstallation(7);
    try {
      for (const operation of ["read", "write", "merge_pr", "update_ref"] as const) {
        const classified = await refusal(operation, () => octokit.rest.repos.getBranch({ ...REPO, branch: "main" }));
        expect({ kind: classified.kind, message: classified.message, transient: classified.transient }).toEqual({ kind: "installation_suspended", message: SUSPENDED_MESSAGE, transient: true });
      }
    } finally {
      gh.unsuspendInstallation(7);
    }
    await expect(octokit.rest.repos.getBranch({ ...REPO, branch: "main" })).resolves.toMatchObject({ status: 200 });
  });

  test("the token request of a suspended installation answers 403 with GitHub's message; of an installation that is gone, 404: installation_suspended, installation_removed", async () => {
    const app = new ProbotOctokit({ auth: { appId: Number(gh.appId), privateKey: gh.privateKey }, baseUrl: gh.url, throttle: { enabled: false }, retry: { enabled: false } });
    const tokenOf = (id: number) => refusal("read", () => app.request("POST /app/installations/{installation_id}/access_tokens", { installation_id: id }));
    gh.suspendInstallation(7);
    try {
      expect(await tokenOf(7)).toMatchObject({ kind: "installation_suspended", message: SUSPENDED_MESSAGE });
      // Through the App's own endpoint too (JWT): 204, and the token request works again.
      await expect(app.request("DELETE /app/installations/{installation_id}/suspended", { installation_id: 7 })).resolves.toMatchObject({ status: 204 });
      expect(gh.isSuspended(7)).toBe(false);
    } finally {
      gh.unsuspendInstallation(7);
    }
    expect(await tokenOf(404_404)).toMatchObject({ kind: "installation_removed" });
    // A 404 of any other request is the thing's, not the installation's.
    gh.failNext("GET", /\/branches\/main$/, 404, "Branch not found");
    expect((await refusal("read", () => octokit.rest.repos.getBranch({ ...REPO, branch: "main" }))).kind).toBe("not_found");
  });

  test("no answer at all is transient", async () => {
    const offline = new ProbotOctokit({ auth: { token: "x" }, baseUrl: "http://127.0.0.1:1", throttle: { enabled: false }, retry: { enabled: false } });
    const classified = await refusal("read", () => offline.rest.repos.getBranch({ ...REPO, branch: "main" }));
    expect(classified.kind).toBe("transient");
  });
});
