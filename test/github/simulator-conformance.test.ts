import { createHash } from "node:crypto";
import { ProbotOctokit } from "probot";
import { componentSchema, operationFor, responseSchema, validate } from "../support/github/openapi.js";
import { DEFAULT_PERMISSIONS, routeNeeds } from "../support/github/permissions.js";
import { APP_PERMISSIONS, GitHubSimulator } from "../support/github-simulator.js";

/**
 * The simulator's REST answers conform to GitHub's published description (@octokit/openapi): a
 * scripted scenario calls every route the simulator serves, and each recorded answer is checked
 * against the schema of its operation and status code. When the simulator drifts from GitHub
 * (a field missing, a wrong type, a status the operation never answers), this fails.
 */
describe("the GitHub simulator conforms to GitHub's REST description", () => {
  let gh: GitHubSimulator;

  beforeAll(async () => {
    gh = await new GitHubSimulator().start();
  });
  afterAll(async () => {
    await gh?.stop();
  });

  async function scenario() {
    const owner = "octo-conf";
    const repo = "app";
    const full = `${owner}/${repo}`;
    const r = { owner, repo };
    gh.installApp(601, owner, { ...DEFAULT_PERMISSIONS, administration: "read", workflows: "write" });
    const octokit = new ProbotOctokit({ auth: { token: "ghs_installation_601" }, baseUrl: gh.url, retry: { enabled: false }, throttle: { enabled: false } });
    const settle = (call: Promise<unknown>) => call.catch(() => undefined);

    gh.createBranch(full, "main");
    gh.push(full, "main", { ".github/CODEOWNERS": "* @octo-conf/core\n", ".github/workflows/ci.yml": "on: push\njobs:\n  build: {runs-on: ubuntu-latest}\n" });
    gh.protect(full, "main", { requiredChecks: ["build"], strict: true, requiredReviews: 1, restrictPushes: true, appMayPush: true });
    const rulesetId = gh.addRuleset(full, { requiredChecks: ["build"], requiredReviews: 0, allowedMergeMethods: ["squash", "merge"], linearHistory: true, nonFastForward: true });
    gh.addRuleset(full, { name: "queue", branches: ["release/*"], mergeQueue: true, restrictUpdates: true, restrictCreations: true });
    const pr1 = gh.openPr(full, { number: 1, files: { "src/a.ts": "a" } });
    const pr2 = gh.openPr(full, { number: 2, files: { "src/b.ts": "b" } });
    gh.openPr(full, { number: 3, files: { ".github/CODEOWNERS": "conflict" } });

    // The App authenticates as itself, finds its installation and gets a token for it.
    const app = new ProbotOctokit({ auth: { appId: Number(gh.appId), privateKey: gh.privateKey }, baseUrl: gh.url, retry: { enabled: false }, throttle: { enabled: false } });
    const { data: installation } = await app.rest.apps.getRepoInstallation(r);
    await app.rest.apps.createInstallationAccessToken({ installation_id: installation.id });
    await octokit.rest.repos.get(r);
    await octokit.rest.repos.getBranch({ ...r, branch: "main" });
    await settle(octokit.rest.repos.getBranch({ ...r, branch: "nope" }));
    await octokit.rest.repos.getBranchProtection({ ...r, branch: "main" });
    await octokit.rest.repos.getStatusChecksProtection({ ...r, branch: "main" });
    gh.createBranch(full, "develop", "main");
    await settle(octokit.rest.repos.getBranchProtection({ ...r, branch: "develop" }));
    await octokit.rest.repos.getBranchRules({ ...r, branch: "main" });
    await octokit.rest.repos.getBranchRules({ ...r, branch: "release/1" });
    await octokit.rest.repos.getRepoRulesets(r);
    await octokit.rest.repos.getRepoRuleset({ ...r, ruleset_id: rulesetId });
    await octokit.rest.repos.getContent({ ...r, path: ".github/CODEOWNERS", ref: "main" });
    await settle(octokit.rest.repos.getContent({ ...r, path: "missing.txt" }));
    await octokit.rest.repos.getContent({ ...r, path: ".github", ref: "main" });
    gh.createBranch(full, "blobs", "main");
    gh.push(full, "blobs", { "big.bin": "b".repeat(1_200_000) });
    const { data: big } = await octokit.rest.repos.getContent({ ...r, path: "big.bin", ref: "blobs" });
    expect(big).toMatchObject({ encoding: "none", content: "", size: 1_200_000 });
    await octokit.rest.git.getBlob({ ...r, file_sha: (big as { sha: string }).sha });
    await octokit.rest.repos.getContent({ ...r, path: ".github/workflows", ref: "main" });
    gh.setWorkflowState(full, ".github/workflows/ci.yml", "disabled_manually");
    await octokit.rest.actions.listRepoWorkflows(r);
    await octokit.rest.repos.compareCommitsWithBasehead({ ...r, basehead: `main...${pr1.headSha}` });
    await octokit.rest.repos.getCollaboratorPermissionLevel({ ...r, username: "hubot" });

    for (const n of [1, 2, 3]) {
      await octokit.rest.pulls.get({ ...r, pull_number: n });
      await octokit.rest.pulls.get({ ...r, pull_number: n });
    }
    await settle(octokit.rest.pulls.get({ ...r, pull_number: 99 }));
    await octokit.rest.issues.createComment({ ...r, issue_number: 1, body: "Queued." });

    await octokit.rest.repos.createCommitStatus({ ...r, sha: pr1.headSha, state: "pending", context: "greenline/merge-queue", description: "queued", target_url: "https://example.com/q" });
    await settle(octokit.request("POST /repos/{owner}/{repo}/statuses/{sha}", { ...r, sha: pr1.headSha, state: "passed" as "success" }));
    gh.reportStatus(full, pr1.headSha, "build", "success");
    await octokit.rest.repos.getCombinedStatusForRef({ ...r, ref: pr1.headSha });
    const { data: run } = await octokit.rest.checks.create({ ...r, head_sha: pr2.headSha, name: "build", status: "in_progress", details_url: "https://ci.example.com/1" });
    await octokit.rest.checks.listForRef({ ...r, ref: pr2.headSha });
    gh.appCheckRun(full, pr2.headSha, "license/cla", "cla-assistant");
    gh.createCheckRun(full, pr2.headSha, "test");
    await octokit.rest.checks.listForRef({ ...r, ref: pr2.headSha });
    await octokit.rest.repos.listCommitStatusesForRef({ ...r, ref: pr1.headSha });
    await octokit.rest.checks.listSuitesForRef({ ...r, ref: pr2.headSha });
    await octokit.rest.checks.update({ ...r, check_run_id: run.id, conclusion: "success" });
    await octokit.rest.checks.get({ ...r, check_run_id: run.id });
    await octokit.rest.checks.listSuitesForRef({ ...r, ref: pr2.headSha });

    // Testing branches: created, merged into, read, deleted.
    await octokit.rest.git.createRef({ ...r, ref: "refs/heads/greenline/test-1", sha: gh.branchHead(full, "main") });
    await settle(octokit.rest.git.createRef({ ...r, ref: "refs/heads/greenline/test-1", sha: gh.branchHead(full, "main") }));
    await octokit.rest.repos.merge({ ...r, base: "greenline/test-1", head: pr1.headSha, commit_message: "test #1" });
    await settle(octokit.rest.repos.merge({ ...r, base: "greenline/test-1", head: pr1.headSha }));
    await octokit.rest.git.getRef({ ...r, ref: "heads/greenline/test-1" });
    await octokit.rest.git.updateRef({ ...r, ref: "heads/greenline/test-1", sha: pr2.headSha, force: true });
    await octokit.rest.git.deleteRef({ ...r, ref: "heads/greenline/test-1" });
    await settle(octokit.rest.git.updateRef({ ...r, ref: "heads/main", sha: pr1.headSha }));

    // Merges refused, then done.
    await settle(octokit.rest.pulls.merge({ ...r, pull_number: 1, sha: "0".repeat(40) }));
    await settle(octokit.rest.pulls.merge({ ...r, pull_number: 1, merge_method: "squash" }));
    gh.approve(full, 1);
    await octokit.rest.pulls.listReviews({ ...r, pull_number: 1 });
    await octokit.rest.pulls.merge({ ...r, pull_number: 1, merge_method: "squash" });
    await octokit.rest.pulls.get({ ...r, pull_number: 1 });
    await octokit.rest.git.getCommit({ ...r, commit_sha: gh.branchHead(full, "main") });
    gh.push(full, "develop", { "docs/d.md": "d" });
    await octokit.rest.pulls.create({ ...r, head: "develop", base: "main", title: "Greenline testing branch", draft: true });
    await octokit.rest.pulls.list({ ...r, head: `${owner}:develop` });
    await octokit.rest.pulls.update({ ...r, pull_number: 1001, state: "closed" });

    // GitHub Actions' runs: a fork PR's (no pull_requests, the fork as head_repository) and a
    // branch PR's (its PR listed); another repository's run and an unknown id are 404.
    const forkPr = gh.openPr(full, { number: 4, headRepo: "alice/app", headRef: "patch-1", author: "alice" });
    const forkRun = gh.startWorkflowRun(full, { name: "CI", event: "pull_request", headSha: forkPr.headSha, headBranch: "patch-1", headRepo: "alice/app", actor: "alice" });
    const ownRun = gh.startWorkflowRun(full, { name: "CI", event: "pull_request", headSha: pr2.headSha, headBranch: pr2.headRef, status: "queued" });
    const elsewhere = gh.startWorkflowRun("octo-conf/elsewhere", { name: "CI", event: "push", headSha: pr2.headSha, headBranch: "main" });
    workflowRuns.fork = (await octokit.rest.actions.getWorkflowRun({ ...r, run_id: forkRun })).data;
    gh.completeWorkflowRun(ownRun, "failure");
    workflowRuns.own = (await octokit.rest.actions.getWorkflowRun({ ...r, run_id: ownRun })).data;
    await settle(octokit.rest.actions.getWorkflowRun({ ...r, run_id: elsewhere }));
    await settle(octokit.rest.actions.getWorkflowRun({ ...r, run_id: 42 }));
    // A testing commit's runs listed, the failed job of one re-run; again while it runs: refused.
    const tested = gh.startWorkflowRun(full, { name: "Tests", event: "push", headSha: pr2.headSha, headBranch: pr2.headRef });
    const unitJob = gh.startJob(tested, "unit");
    gh.completeCheckRun(unitJob, "failure");
    // The job behind a check run, with its steps; another app's check run is no job.
    gh.setJobSteps(unitJob, [
      { name: "Test", conclusion: "failure" },
      { name: "Build", conclusion: "skipped" },
    ]);
    await octokit.rest.actions.getJobForWorkflowRun({ ...r, job_id: unitJob });
    await settle(octokit.rest.actions.getJobForWorkflowRun({ ...r, job_id: gh.checkRun(full, pr2.headSha, "external", "completed", "failure").id }));
    await octokit.rest.actions.listWorkflowRunsForRepo({ ...r, head_sha: pr2.headSha, branch: pr2.headRef, per_page: 100 });
    await octokit.rest.actions.reRunWorkflowFailedJobs({ ...r, run_id: tested });
    await settle(octokit.rest.actions.reRunWorkflowFailedJobs({ ...r, run_id: tested }));
    await octokit.rest.actions.listWorkflowRunsForRepo({ ...r, head_sha: pr2.headSha });
    await settle(octokit.rest.actions.reRunWorkflowFailedJobs({ ...r, run_id: 42 }));
    // Without actions: write, a re-run is refused (reading is not).
    gh.setPermissions(601, { ...DEFAULT_PERMISSIONS, administration: "read", workflows: "write", actions: "read" });
    await settle(octokit.rest.actions.reRunWorkflowFailedJobs({ ...r, run_id: tested }));

    // Permission refusals.
    gh.setPermissions(601, DEFAULT_PERMISSIONS);
    await settle(octokit.rest.repos.getBranchProtection({ ...r, branch: "main" }));
    const { actions: _actions, ...withoutActions } = DEFAULT_PERMISSIONS;
    gh.setPermissions(601, withoutActions);
    await settle(octokit.rest.actions.getWorkflowRun({ ...r, run_id: forkRun }));
  }
  const workflowRuns: Record<string, { pull_requests?: unknown[] | null; head_repository: { full_name: string; fork: boolean }; status: string | null; conclusion: string | null }> = {};

  test("every answer of a scripted scenario validates against its operation's schema", async () => {
    await scenario();
    const problems: string[] = [];
    const checked = new Set<string>();
    for (const request of gh.requests) {
      // GraphQL (the fast-forward's `updateRefs`) is not in the REST description.
      if (request.path === "/graphql") continue;
      const found = operationFor(request.method, request.path);
      if (!found) {
        problems.push(`${request.method} ${request.path}: no operation in GitHub's description`);
        continue;
      }
      const { template, operation } = found;
      const name = `${request.method} ${template} ${request.status}`;
      if (!(String(request.status) in operation.responses)) {
        // The description leaves out refusals every endpoint can give (403 for a missing App
        // permission, 422 validation): those must be 4xx with GitHub's error shape.
        const generic = request.status === 403 || request.status === 422 || request.status === 404;
        if (!generic) problems.push(`${name}: ${operation.operationId} never answers ${request.status} (declares ${Object.keys(operation.responses).join(", ")})`);
        const body = request.response as { message?: string };
        const errorShape = componentSchema(body?.message === "Validation Failed" ? "validation-error" : "basic-error");
        for (const error of validate(errorShape, request.response)) problems.push(`${name} (undeclared error): ${error}`);
        checked.add(name);
        continue;
      }
      checked.add(name);
      const schema = responseSchema(operation, request.status!);
      if (!schema) {
        if (request.response !== undefined && request.status !== 204) problems.push(`${name}: GitHub declares no body, the simulator sent one`);
        continue;
      }
      for (const error of validate(schema, request.response)) problems.push(`${name} (${operation.operationId}): ${error}`);
    }
    expect(problems).toEqual([]);
    expect(gh.requests.filter((request) => request.response !== undefined).length).toBeGreaterThan(40);
    // The scenario covers the routes Greenline uses and the refusals it must understand.
    expect([...checked].sort()).toEqual(
      expect.arrayContaining([
        "GET /repos/{owner}/{repo}/branches/{branch} 200",
        "GET /repos/{owner}/{repo}/branches/{branch} 404",
        "GET /repos/{owner}/{repo}/branches/{branch}/protection 403",
        "GET /repos/{owner}/{repo}/rules/branches/{branch} 200",
        "GET /repos/{owner}/{repo}/pulls/{pull_number} 200",
        "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge 200",
        "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge 405",
        "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge 409",
        "PATCH /repos/{owner}/{repo}/git/refs/{ref} 422",
        "POST /repos/{owner}/{repo}/statuses/{sha} 422",
        "GET /repos/{owner}/{repo}/commits/{ref}/check-runs 200",
        "GET /repos/{owner}/{repo}/actions/runs/{run_id} 200",
        "GET /repos/{owner}/{repo}/actions/runs/{run_id} 403",
        "GET /repos/{owner}/{repo}/actions/runs/{run_id} 404",
        "GET /repos/{owner}/{repo}/actions/runs 200",
        "POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs 201",
        "POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs 403",
        "POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs 404",
        "GET /repos/{owner}/{repo}/actions/jobs/{job_id} 200",
        "GET /repos/{owner}/{repo}/actions/jobs/{job_id} 404",
      ]),
    );
    // GitHub lists no pull request on a fork's run (github/docs#22501); a branch PR's run lists it.
    expect(workflowRuns.fork).toMatchObject({ pull_requests: [], head_repository: { full_name: "alice/app", fork: true }, status: "in_progress", conclusion: null });
    expect(workflowRuns.own).toMatchObject({ pull_requests: [expect.objectContaining({ number: 2 })], head_repository: { full_name: "octo-conf/app", fork: false }, status: "completed", conclusion: "failure" });
    const refusedRun = gh.requests.filter((request) => request.path.includes("/actions/runs/") && request.status === 403);
    expect(refusedRun.map((request) => `${request.method} ${(request.response as { message: string }).message}`)).toEqual([
      "POST This workflow is already running",
      "POST Resource not accessible by integration",
      "GET Resource not accessible by integration",
    ]);
    // A re-run is the run's next attempt, queued, its failed job a new check run.
    const listed = gh.requests.filter((request) => request.path === "/repos/octo-conf/app/actions/runs").map((request) => request.response as { workflow_runs: { name: string; run_attempt: number; status: string }[] });
    expect(listed.map((answer) => answer.workflow_runs.filter((run) => run.name === "Tests").map((run) => [run.run_attempt, run.status]))).toEqual([[[1, "completed"]], [[2, "queued"]]]);
  });

  test("every repository route the scenario used declares the App permission it needs", () => {
    const undeclared = gh.requests.filter((r) => r.path.startsWith("/repos/") && !/\/installation$/.test(r.path) && routeNeeds(r.method, r.path) === undefined);
    expect(undeclared.map((r) => `${r.method} ${r.path}`)).toEqual([]);
  });

  test("the checker itself catches a drifted answer", () => {
    const { operation } = operationFor("GET", "/repos/o/r/pulls/1")!;
    const schema = responseSchema(operation, 200)!;
    const answer = gh.requests.find((r) => r.method === "GET" && r.path === "/repos/octo-conf/app/pulls/2" && r.status === 200)!.response as Record<string, unknown>;
    expect(validate(schema, answer)).toEqual([]);
    const { mergeable_state: _, ...missing } = answer;
    expect(validate(schema, missing)).toContain("$.mergeable_state: required");
    expect(validate(schema, { ...answer, number: "2" })).toContain("$.number: expected integer, got string");
    expect(validate(schema, { ...answer, state: "merged" }).join()).toMatch(/\$\.state: "merged" not in/);
    const head = answer.head as { repo: Record<string, unknown> };
    const { full_name: __, ...repo } = head.repo;
    expect(validate(schema, { ...answer, head: { ...head, repo } })).toContain("$.head.repo.full_name: required");
  });
});

/**
 * Registering the App from a manifest (`greenline setup github`): GitHub's web page takes the
 * manifest and redirects with a code; the code's exchange (`apps/create-from-manifest`, no
 * authentication) answers as GitHub's description says, once.
 */
describe("the simulator's App manifest flow conforms to GitHub's", () => {
  let gh: GitHubSimulator;
  beforeAll(async () => {
    gh = await new GitHubSimulator().start();
  });
  afterAll(async () => {
    await gh?.stop();
  });

  const manifest = {
    name: "Greenline Test",
    url: "https://example.com",
    hook_attributes: { url: "https://example.com/api/github/webhooks" },
    redirect_url: "http://127.0.0.1:9/callback",
    public: false,
    default_permissions: { contents: "write", metadata: "read" },
    default_events: ["push"],
  };
  const register = (body: object, path = "/settings/apps/new?state=s1") =>
    fetch(`${gh.url}${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ manifest: JSON.stringify(body) }).toString(), redirect: "manual" });

  test("the page redirects to redirect_url with a code and the state; the code converts once, as the schema says", async () => {
    const page = await register(manifest, "/organizations/acme/settings/apps/new?state=s1");
    expect(page.status).toBe(302);
    const location = new URL(page.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(manifest.redirect_url);
    expect(location.searchParams.get("state")).toBe("s1");
    const code = location.searchParams.get("code")!;
    const octokit = new ProbotOctokit({ baseUrl: gh.url, retry: { enabled: false }, throttle: { enabled: false } });
    const { data } = await octokit.rest.apps.createFromManifest({ code });
    expect(data).toMatchObject({
      id: Number(gh.appId),
      slug: "greenline-test",
      owner: { login: "acme", type: "Organization" },
      pem: gh.privateKey,
      webhook_secret: gh.webhookSecret,
      permissions: manifest.default_permissions,
      events: ["push"],
    });
    await expect(octokit.rest.apps.createFromManifest({ code })).rejects.toMatchObject({ status: 404 });
    await expect(octokit.rest.apps.createFromManifest({ code: "unknown" })).rejects.toMatchObject({ status: 404 });

    const conversions = gh.requests.filter((r) => r.path.startsWith("/app-manifests/"));
    expect(conversions.map((r) => r.status)).toEqual([201, 404, 404]);
    for (const request of conversions) {
      const { operation } = operationFor(request.method, request.path)!;
      expect(operation.operationId).toBe("apps/create-from-manifest");
      expect(validate(responseSchema(operation, request.status!)!, request.response)).toEqual([]);
    }
  });

  test("a code is good for an hour", async () => {
    let now = Date.now();
    gh.useClock(() => now);
    const page = await register(manifest);
    const code = new URL(page.headers.get("location")!).searchParams.get("code")!;
    now += 3600_000;
    expect((await fetch(`${gh.url}/app-manifests/${code}/conversions`, { method: "POST" })).status).toBe(404);
    gh.useClock(() => Date.now());
  });

  test.each([
    [{ ...manifest, url: undefined }, "url (the homepage) must be an http(s) URL"],
    [{ ...manifest, hook_attributes: {} }, "hook_attributes.url must be an http(s) URL while the webhook is active"],
    [{ ...manifest, redirect_url: undefined }, "redirect_url must be an http(s) URL"],
    [{ ...manifest, default_permissions: { pull_request: "write" } }, "default_permissions: pull_request is not a permission"],
    [{ ...manifest, default_permissions: { workflows: "read" } }, 'default_permissions: workflows cannot be "read" (write)'],
    [{ ...manifest, name: "" }, "name can't be blank"],
  ])("the page refuses a manifest GitHub refuses (%#)", async (body, message) => {
    const page = await register(body);
    expect(page.status).toBe(422);
    expect(await page.json()).toEqual({ message });
  });

  test("a manifest without a webhook (active: false) needs no webhook url", async () => {
    expect((await register({ ...manifest, hook_attributes: { active: false } })).status).toBe(302);
  });

  test("the permissions the page accepts are GitHub's app-permissions, with their access levels", () => {
    const schema = componentSchema("app-permissions");
    expect(Object.fromEntries(Object.entries(schema.properties!).map(([name, p]) => [name, p.enum]))).toEqual(APP_PERMISSIONS);
  });
});

/**
 * "Sign in with GitHub" (the dashboard): GitHub's OAuth web flow for the App — the authorize
 * page's redirects and refusals, the code exchange's answers (200 with `error` when refused) —
 * and the routes a user access token reads, whose answers must match GitHub's description.
 */
describe("the simulator's OAuth web flow and user-token routes conform to GitHub's", () => {
  let gh: GitHubSimulator;
  const callback = "http://127.0.0.1:9/sign-in/github/callback";
  beforeAll(async () => {
    gh = await new GitHubSimulator().start();
    gh.callbackUrls = [callback];
    gh.installApp(701, "octo-user-conf");
    gh.grant("octo-user-conf/app", "alice", "write");
    gh.grant("octo-user-conf/lib", "alice", "read");
    gh.webUser = "alice";
  });
  afterAll(async () => {
    await gh?.stop();
  });

  const authorize = (params: Record<string, string>) => fetch(`${gh.url}/login/oauth/authorize?${new URLSearchParams(params)}`, { redirect: "manual" });
  const exchange = (params: Record<string, string>, json = true) =>
    fetch(`${gh.url}/login/oauth/access_token`, {
      method: "POST",
      headers: json ? { accept: "application/json", "content-type": "application/json" } : { "content-type": "application/x-www-form-urlencoded" },
      body: json ? JSON.stringify(params) : new URLSearchParams(params).toString(),
    });
  const errorOf = async (response: Response) => ((await response.json()) as { error?: string }).error;
  async function codeFor(extra: Record<string, string> = {}): Promise<string> {
    const page = await authorize({ client_id: gh.clientId, redirect_uri: callback, state: "s1", ...extra });
    expect(page.status).toBe(302);
    const location = new URL(page.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(callback);
    expect(location.searchParams.get("state")).toBe("s1");
    return location.searchParams.get("code")!;
  }

  test("the authorize page: an unknown client is not found; a redirect_uri that is not a callback URL goes back with redirect_uri_mismatch", async () => {
    expect((await authorize({ client_id: "Iv1.unknown", state: "s1" })).status).toBe(404);
    const mismatch = await authorize({ client_id: gh.clientId, redirect_uri: "http://127.0.0.1:9/elsewhere", state: "s1" });
    expect(mismatch.status).toBe(302);
    const location = new URL(mismatch.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(callback);
    expect(Object.fromEntries(location.searchParams)).toMatchObject({ error: "redirect_uri_mismatch", state: "s1" });
    const plain = await authorize({ client_id: gh.clientId, code_challenge: "x".repeat(43), code_challenge_method: "plain" });
    expect(new URL(plain.headers.get("location")!).searchParams.get("error")).toBe("invalid_request");
  });

  test("the code exchange answers a user access token once; refusals are 200 with GitHub's error names; a form is answered as a form", async () => {
    const code = await codeFor();
    const form = await exchange({ client_id: gh.clientId, client_secret: gh.clientSecret, code }, false);
    expect(form.headers.get("content-type")).toMatch(/^application\/x-www-form-urlencoded/);
    const answer = Object.fromEntries(new URLSearchParams(await form.text()));
    expect(answer).toMatchObject({ access_token: expect.stringMatching(/^ghu_/), token_type: "bearer", expires_in: "28800", refresh_token: expect.stringMatching(/^ghr_/) });
    const again = await exchange({ client_id: gh.clientId, client_secret: gh.clientSecret, code });
    expect([again.status, await errorOf(again)]).toEqual([200, "bad_verification_code"]);
    const wrongSecret = await exchange({ client_id: gh.clientId, client_secret: "nope", code: await codeFor() });
    expect(await errorOf(wrongSecret)).toBe("incorrect_client_credentials");
    const otherRedirect = await exchange({ client_id: gh.clientId, client_secret: gh.clientSecret, code: await codeFor(), redirect_uri: "http://127.0.0.1:9/elsewhere" });
    expect(await errorOf(otherRedirect)).toBe("redirect_uri_mismatch");
  });

  test("PKCE: a code issued for a challenge is exchanged only with its verifier (S256)", async () => {
    const verifier = "v".repeat(43);
    const challenge = createHash("sha256").update(verifier).digest("base64url");
    const code = await codeFor({ code_challenge: challenge, code_challenge_method: "S256" });
    const wrong = (await (await exchange({ client_id: gh.clientId, client_secret: gh.clientSecret, code, code_verifier: "w".repeat(43) })).json()) as { error?: string };
    expect(wrong.error).toBe("bad_verification_code");
    const second = await codeFor({ code_challenge: challenge, code_challenge_method: "S256" });
    const right = (await (await exchange({ client_id: gh.clientId, client_secret: gh.clientSecret, code: second, code_verifier: verifier })).json()) as { access_token?: string };
    expect(right.access_token).toMatch(/^ghu_/);
  });

  test("GET /user, /user/installations and /user/installations/{id}/repositories answer a user token as the description says", async () => {
    const { access_token: token } = (await (await exchange({ client_id: gh.clientId, client_secret: gh.clientSecret, code: await codeFor() })).json()) as { access_token: string };
    const user = new ProbotOctokit({ auth: { token }, baseUrl: gh.url, retry: { enabled: false }, throttle: { enabled: false } });
    expect((await user.rest.users.getAuthenticated()).data.login).toBe("alice");
    const { data: installations } = await user.rest.apps.listInstallationsForAuthenticatedUser();
    expect(installations.installations.map((i) => [i.id, i.account && "login" in i.account ? i.account.login : null])).toEqual([[701, "octo-user-conf"]]);
    const { data: repos } = await user.rest.apps.listInstallationReposForAuthenticatedUser({ installation_id: 701 });
    expect(repos.repositories.map((r) => [r.full_name, r.permissions?.push])).toEqual([
      ["octo-user-conf/app", true],
      ["octo-user-conf/lib", false],
    ]);
    await expect(user.rest.apps.listInstallationReposForAuthenticatedUser({ installation_id: 999 })).rejects.toMatchObject({ status: 404 });
    const stranger = new ProbotOctokit({ auth: { token: "ghu_unknown" }, baseUrl: gh.url, retry: { enabled: false }, throttle: { enabled: false } });
    await expect(stranger.rest.users.getAuthenticated()).rejects.toMatchObject({ status: 401 });

    const problems: string[] = [];
    const checked = gh.requests.filter((r) => r.path.startsWith("/user"));
    for (const request of checked) {
      const { template, operation } = operationFor(request.method, request.path)!;
      const schema = responseSchema(operation, request.status!) ?? componentSchema("basic-error");
      for (const error of validate(schema, request.response)) problems.push(`${request.method} ${template} ${request.status}: ${error}`);
    }
    expect(problems).toEqual([]);
    expect(checked.map((r) => `${r.method} ${operationFor(r.method, r.path)!.template} ${r.status}`)).toEqual([
      "GET /user 200",
      "GET /user/installations 200",
      "GET /user/installations/{installation_id}/repositories 200",
      "GET /user/installations/{installation_id}/repositories 404",
      "GET /user 401",
    ]);
  });
});
