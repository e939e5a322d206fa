import { ProbotOctokit } from "probot";
import { DEFAULT_PERMISSIONS } from "../support/github/permissions.js";
import { GitHubSimulator, type SimulatorEvent } from "../support/github-simulator.js";

/**
 * The simulated GitHub refuses what GitHub refuses, asked through the real Octokit: App
 * permissions, classic protection and rulesets on ref updates and merges, workflow files, branches
 * that do not exist; mergeability is computed lazily; statuses and check runs are validated.
 */
describe("the GitHub simulator", () => {
  let gh: GitHubSimulator;
  let octokit: InstanceType<typeof ProbotOctokit>;
  let repoCount = 0;
  const OWNER = "octo-sim";
  const INSTALLATION = 501;
  let events: SimulatorEvent[] = [];

  beforeAll(async () => {
    gh = await new GitHubSimulator().start();
    gh.installApp(INSTALLATION, OWNER);
    gh.onEvent = (event) => events.push(event);
    octokit = new ProbotOctokit({ auth: { token: `ghs_installation_${INSTALLATION}` }, baseUrl: gh.url, retry: { enabled: false }, throttle: { enabled: false } });
  });
  afterAll(async () => {
    await gh?.stop();
  });
  beforeEach(() => {
    gh.setPermissions(INSTALLATION, DEFAULT_PERMISSIONS);
    events = [];
  });

  /** A fresh repository with a main branch. */
  function newRepo() {
    const name = `repo${++repoCount}`;
    gh.createBranch(`${OWNER}/${name}`, "main");
    return { owner: OWNER, repo: name, full: `${OWNER}/${name}` };
  }

  /** The status and message GitHub answered. */
  async function refusal(call: Promise<unknown>): Promise<{ status: number; message: string }> {
    try {
      await call;
    } catch (e) {
      const error = e as { status: number; response?: { data?: { message?: string } } };
      return { status: error.status, message: error.response?.data?.message ?? "" };
    }
    throw new Error("the call was not refused");
  }

  describe("App permissions", () => {
    test("the installation token lists what the installation was granted (app.yml's permissions by default)", async () => {
      const app = new ProbotOctokit({ auth: { token: "unused" }, baseUrl: gh.url });
      // Without a valid App JWT the token route is refused.
      expect((await refusal(app.request("POST /app/installations/{id}/access_tokens", { id: INSTALLATION }))).status).toBe(401);
      expect(gh.permissionsOf(INSTALLATION)).toEqual({ actions: "write", checks: "write", contents: "write", issues: "write", metadata: "read", pull_requests: "write", statuses: "write" });
    });

    test("a call the permissions do not cover answers 403 Resource not accessible by integration", async () => {
      const r = newRepo();
      gh.protect(r.full, "main", ["build"]);
      // Branch protection needs Administration, which app.yml does not ask for.
      expect(await refusal(octokit.rest.repos.getStatusChecksProtection({ ...r, branch: "main" }))).toEqual({ status: 403, message: "Resource not accessible by integration" });
      // Rules for a branch need only Metadata.
      expect((await octokit.rest.repos.getBranchRules({ ...r, branch: "main" })).status).toBe(200);
      gh.setPermissions(INSTALLATION, { ...DEFAULT_PERMISSIONS, administration: "read" });
      expect((await octokit.rest.repos.getStatusChecksProtection({ ...r, branch: "main" })).data.contexts).toEqual(["build"]);
    });

    test("statuses need statuses: write, comments issues or pull_requests: write, merges contents: write", async () => {
      const r = newRepo();
      const pr = gh.openPr(r.full, { number: 1 });
      gh.setPermissions(INSTALLATION, { metadata: "read", pull_requests: "read" });
      expect((await refusal(octokit.rest.repos.createCommitStatus({ ...r, sha: pr.headSha, state: "success", context: "x" }))).status).toBe(403);
      expect((await refusal(octokit.rest.issues.createComment({ ...r, issue_number: 1, body: "hi" }))).status).toBe(403);
      expect((await refusal(octokit.rest.pulls.merge({ ...r, pull_number: 1 }))).status).toBe(403);
      expect((await refusal(octokit.rest.checks.create({ ...r, head_sha: pr.headSha, name: "build" }))).status).toBe(403);
      expect((await octokit.rest.pulls.get({ ...r, pull_number: 1 })).status).toBe(200);
      gh.setPermissions(INSTALLATION, { metadata: "read", pull_requests: "write" });
      expect((await octokit.rest.issues.createComment({ ...r, issue_number: 1, body: "hi" })).status).toBe(201);
    });
  });

  describe("branches", () => {
    test("a branch that was never created answers 404 Branch not found", async () => {
      const r = newRepo();
      expect(await refusal(octokit.rest.repos.getBranch({ ...r, branch: "develop" }))).toEqual({ status: 404, message: "Branch not found" });
      gh.createBranch(r.full, "develop", "main");
      expect((await octokit.rest.repos.getBranch({ ...r, branch: "develop" })).data.commit.sha).toBe(gh.branchHead(r.full, "main"));
    });

    test("an unprotected branch's protection answers 404 Branch not protected", async () => {
      const r = newRepo();
      gh.setPermissions(INSTALLATION, { ...DEFAULT_PERMISSIONS, administration: "read" });
      expect(await refusal(octokit.rest.repos.getBranchProtection({ ...r, branch: "main" }))).toEqual({ status: 404, message: "Branch not protected" });
    });
  });

  describe("classic branch protection", () => {
    test("a ref update to a branch requiring pull requests answers 422 Changes must be made through a pull request.", async () => {
      const r = newRepo();
      gh.protect(r.full, "main", { requiredReviews: 1 });
      const pr = gh.openPr(r.full, { number: 1 });
      expect(await refusal(octokit.rest.git.updateRef({ ...r, ref: "heads/main", sha: pr.headSha }))).toEqual({ status: 422, message: "Changes must be made through a pull request." });
      expect(gh.branchHead(r.full, "main")).toBe(pr.baseSha);
    });

    test("a ref update must carry the required checks; restricted pushers are refused unless the App is allowed", async () => {
      const r = newRepo();
      gh.protect(r.full, "main", ["build"]);
      const pr = gh.openPr(r.full, { number: 1 });
      expect(await refusal(octokit.rest.git.updateRef({ ...r, ref: "heads/main", sha: pr.headSha }))).toEqual({ status: 422, message: 'Required status check "build" is expected.' });
      gh.reportStatus(r.full, pr.headSha, "build", "success");
      gh.protect(r.full, "main", { requiredChecks: ["build"], restrictPushes: true });
      expect((await refusal(octokit.rest.git.updateRef({ ...r, ref: "heads/main", sha: pr.headSha }))).message).toMatch(/^You're not authorized to push to this branch/);
      gh.protect(r.full, "main", { requiredChecks: ["build"], restrictPushes: true, appMayPush: true });
      expect((await octokit.rest.git.updateRef({ ...r, ref: "heads/main", sha: pr.headSha })).status).toBe(200);
      expect(gh.pr(r.full, 1)!.merged).toBe(true);
    });

    test("pulls.merge answers 405 with the reason: required check, reviews, strict mode, merge method; 409 when the head moved", async () => {
      const r = newRepo();
      gh.protect(r.full, "main", { requiredChecks: ["build"], strict: true, requiredReviews: 1 });
      const pr = gh.openPr(r.full, { number: 1 });
      const merge = (extra: object = {}) => refusal(octokit.rest.pulls.merge({ ...r, pull_number: 1, sha: pr.headSha, merge_method: "squash", ...extra }));
      expect(await merge({ sha: "0".repeat(40) })).toEqual({ status: 409, message: "Head branch was modified. Review and try the merge again." });
      // Classic protection gives every reason at once.
      expect(await merge()).toEqual({ status: 405, message: 'Required status check "build" is expected. At least 1 approving review is required by reviewers with write access.' });
      const run = gh.createCheckRun(r.full, pr.headSha, "build");
      gh.completeCheckRun(run, "failure");
      expect((await merge()).message).toMatch(/^Required status check "build" is failing\./);
      gh.reportStatus(r.full, pr.headSha, "build", "success");
      gh.completeCheckRun(gh.createCheckRun(r.full, pr.headSha, "build"), "success");
      expect(await merge()).toEqual({ status: 405, message: "At least 1 approving review is required by reviewers with write access." });
      gh.approve(r.full, 1);
      gh.push(r.full, "main", { "other.txt": "moved" });
      expect((await merge()).message).toBe("Head branch is out of date. Review and try the merge again.");
      gh.protect(r.full, "main", { requiredChecks: ["build"], requiredReviews: 1 });
      gh.setRepository(r.full, { allowSquashMerge: false });
      expect(await merge()).toEqual({ status: 405, message: "Squash merges are not allowed on this repository." });
      gh.setRepository(r.full, { allowSquashMerge: true });
      const merged = await octokit.rest.pulls.merge({ ...r, pull_number: 1, sha: pr.headSha, merge_method: "squash" });
      expect(merged.data).toMatchObject({ merged: true, sha: gh.branchHead(r.full, "main") });
      expect(events.filter((e) => e.kind === "pull_request").map((e) => e.kind === "pull_request" && [e.action, e.pr.merged])).toContainEqual(["closed", true]);
    });

    test("linear history refuses merge commits", async () => {
      const r = newRepo();
      gh.protect(r.full, "main", { linearHistory: true });
      gh.openPr(r.full, { number: 1 });
      expect(await refusal(octokit.rest.pulls.merge({ ...r, pull_number: 1, merge_method: "merge" }))).toEqual({ status: 405, message: "This branch must not contain merge commits." });
      expect((await octokit.rest.pulls.merge({ ...r, pull_number: 1, merge_method: "rebase" })).data.merged).toBe(true);
    });
  });

  describe("rulesets", () => {
    test("rules for a branch are served with their ruleset; the ruleset says whether the App may bypass it", async () => {
      const r = newRepo();
      const id = gh.addRuleset(r.full, { requiredChecks: ["build", "lint"], strict: true, requiredReviews: 0, allowedMergeMethods: ["squash"] });
      const { data: rules } = await octokit.rest.repos.getBranchRules({ ...r, branch: "main" });
      expect(rules.map((rule) => rule.type)).toEqual(["required_status_checks", "pull_request"]);
      expect(rules[0]).toMatchObject({
        ruleset_id: id,
        ruleset_source_type: "Repository",
        ruleset_source: r.full,
        parameters: { required_status_checks: [{ context: "build" }, { context: "lint" }], strict_required_status_checks_policy: true },
      });
      expect((await octokit.rest.repos.getBranchRules({ ...r, branch: "feature" })).data).toEqual([]);
      expect((await octokit.rest.repos.getRepoRuleset({ ...r, ruleset_id: id })).data).toMatchObject({ id, current_user_can_bypass: "never", enforcement: "active" });
      // Classic protection is not set: its endpoint says so (with administration), the rules say the rest.
      gh.setPermissions(INSTALLATION, { ...DEFAULT_PERMISSIONS, administration: "read" });
      expect((await refusal(octokit.rest.repos.getStatusChecksProtection({ ...r, branch: "main" }))).status).toBe(404);
    });

    test("ref updates violating rules answer 422 Repository rule violations found; an App on the bypass list goes through", async () => {
      const r = newRepo();
      const id = gh.addRuleset(r.full, { requiredReviews: 0 });
      const pr = gh.openPr(r.full, { number: 1 });
      expect(await refusal(octokit.rest.git.updateRef({ ...r, ref: "heads/main", sha: pr.headSha }))).toEqual({
        status: 422,
        message: "Repository rule violations found\n\nChanges must be made through a pull request.\n\n",
      });
      gh.setRulesetBypass(r.full, id, "pull_requests_only");
      expect((await refusal(octokit.rest.git.updateRef({ ...r, ref: "heads/main", sha: pr.headSha }))).status).toBe(422);
      gh.setRulesetBypass(r.full, id, "always");
      expect((await octokit.rest.git.updateRef({ ...r, ref: "heads/main", sha: pr.headSha })).status).toBe(200);
    });

    test("the merges API into a branch with restricted updates is refused; a merge queue refuses PR merges", async () => {
      const r = newRepo();
      gh.addRuleset(r.full, { restrictUpdates: true });
      const pr = gh.openPr(r.full, { number: 1 });
      expect(await refusal(octokit.rest.repos.merge({ ...r, base: "main", head: pr.headSha }))).toEqual({
        status: 422,
        message: "Repository rule violations found\n\nCannot update this protected ref.\n\n",
      });
      const q = newRepo();
      gh.addRuleset(q.full, { mergeQueue: true });
      gh.openPr(q.full, { number: 1 });
      const refused = await refusal(octokit.rest.pulls.merge({ ...q, pull_number: 1 }));
      expect(refused.status).toBe(405);
      expect(refused.message).toContain("Changes must be made through the merge queue");
    });

    test("required checks of a ruleset are evaluated on the PR head; allowed merge methods are enforced", async () => {
      const r = newRepo();
      gh.addRuleset(r.full, { requiredChecks: ["build"], allowedMergeMethods: ["squash"] });
      const pr = gh.openPr(r.full, { number: 1 });
      expect((await refusal(octokit.rest.pulls.merge({ ...r, pull_number: 1, merge_method: "squash" }))).message).toContain('Required status check "build" is expected.');
      gh.reportStatus(r.full, pr.headSha, "build", "success");
      expect((await refusal(octokit.rest.pulls.merge({ ...r, pull_number: 1, merge_method: "merge" }))).message).toContain("Merge method merge is not allowed");
      expect((await octokit.rest.pulls.merge({ ...r, pull_number: 1, merge_method: "squash" })).data.merged).toBe(true);
    });
  });

  describe("workflow files", () => {
    const WORKFLOW_REFUSAL = "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission";

    test("a ref update, a merge or a PR merge that changes .github/workflows is refused without workflows: write", async () => {
      const r = newRepo();
      const pr = gh.openPr(r.full, { number: 1, files: { ".github/workflows/ci.yml": "on: push\n" } });
      expect(await refusal(octokit.rest.git.updateRef({ ...r, ref: "heads/main", sha: pr.headSha }))).toEqual({ status: 422, message: WORKFLOW_REFUSAL });
      expect(await refusal(octokit.rest.git.createRef({ ...r, ref: "refs/heads/greenline/test", sha: pr.headSha }))).toEqual({ status: 422, message: WORKFLOW_REFUSAL });
      expect(await refusal(octokit.rest.repos.merge({ ...r, base: "main", head: pr.headSha }))).toEqual({ status: 422, message: WORKFLOW_REFUSAL });
      expect(await refusal(octokit.rest.pulls.merge({ ...r, pull_number: 1 }))).toEqual({ status: 403, message: WORKFLOW_REFUSAL });
      gh.setPermissions(INSTALLATION, { ...DEFAULT_PERMISSIONS, workflows: "write" });
      expect((await octokit.rest.pulls.merge({ ...r, pull_number: 1 })).data.merged).toBe(true);
    });
  });

  describe("mergeability", () => {
    test("is unknown (null) on the first read after a PR opens or its base moves, then computed: clean, blocked, behind, dirty, unstable, draft", async () => {
      const r = newRepo();
      const read = async (n: number) => {
        const { data } = await octokit.rest.pulls.get({ ...r, pull_number: n });
        return [data.mergeable, data.mergeable_state];
      };
      const pr = gh.openPr(r.full, { number: 1, files: { "a.txt": "pr" } });
      expect(await read(1)).toEqual([null, "unknown"]);
      expect(await read(1)).toEqual([true, "clean"]);
      gh.reportStatus(r.full, pr.headSha, "lint", "failure");
      expect(await read(1)).toEqual([true, "unstable"]);
      gh.protect(r.full, "main", { requiredChecks: ["build"], strict: true });
      expect(await read(1)).toEqual([true, "blocked"]);
      gh.reportStatus(r.full, pr.headSha, "build", "success");
      gh.push(r.full, "main", { "b.txt": "elsewhere" });
      expect(await read(1)).toEqual([null, "unknown"]);
      expect(await read(1)).toEqual([true, "behind"]);
      gh.push(r.full, "main", { "a.txt": "conflicting" });
      await read(1);
      expect(await read(1)).toEqual([false, "dirty"]);
      gh.openPr(r.full, { number: 2, draft: true });
      await read(2);
      expect(await read(2)).toEqual([true, "draft"]);
    });
  });

  describe("statuses and check runs", () => {
    test("a status with an invalid state answers 422 Validation Failed naming the field", async () => {
      const r = newRepo();
      const pr = gh.openPr(r.full, { number: 1 });
      const response = await fetch(`${gh.url}/repos/${r.full}/statuses/${pr.headSha}`, {
        method: "POST",
        headers: { authorization: `token ghs_installation_${INSTALLATION}`, "content-type": "application/json" },
        body: JSON.stringify({ state: "passed", context: "ci" }),
      });
      expect(response.status).toBe(422);
      expect(await response.json()).toMatchObject({ message: "Validation Failed", errors: [{ resource: "Status", field: "state" }] });
    });

    test("a SHA takes at most 1000 statuses per context: the 1001st answers 422, another context still goes", async () => {
      const r = newRepo();
      const sha = gh.openPr(r.full, { number: 1 }).headSha;
      for (let i = 0; i < 999; i++) gh.reportStatus(r.full, sha, "ci", "pending");
      await octokit.rest.repos.createCommitStatus({ ...r, sha, state: "success", context: "ci" });
      const response = await fetch(`${gh.url}/repos/${r.full}/statuses/${sha}`, {
        method: "POST",
        headers: { authorization: `token ghs_installation_${INSTALLATION}`, "content-type": "application/json" },
        body: JSON.stringify({ state: "success", context: "ci" }),
      });
      expect(response.status).toBe(422);
      expect(await response.json()).toMatchObject({ message: "Validation Failed", errors: [{ resource: "Status", message: "This SHA and context has reached the maximum number of statuses." }] });
      await octokit.rest.repos.createCommitStatus({ ...r, sha, state: "success", context: "lint" });
    });

    test("the combined status keeps the latest state of each context; check runs and suites are listed by commit", async () => {
      const r = newRepo();
      const sha = gh.openPr(r.full, { number: 1 }).headSha;
      await octokit.rest.repos.createCommitStatus({ ...r, sha, state: "pending", context: "ci" });
      await octokit.rest.repos.createCommitStatus({ ...r, sha, state: "success", context: "ci" });
      gh.reportStatus(r.full, sha, "lint", "success");
      const combined = (await octokit.rest.repos.getCombinedStatusForRef({ ...r, ref: sha })).data;
      expect([combined.state, combined.total_count]).toEqual(["success", 2]);
      const { data: created } = await octokit.rest.checks.create({ ...r, head_sha: sha, name: "build", status: "in_progress" });
      expect((await octokit.rest.checks.listForRef({ ...r, ref: sha })).data.check_runs.map((c) => [c.name, c.status])).toEqual([["build", "in_progress"]]);
      await octokit.rest.checks.update({ ...r, check_run_id: created.id, conclusion: "success" });
      expect((await octokit.rest.checks.listForRef({ ...r, ref: sha })).data.check_runs.map((c) => [c.status, c.conclusion])).toEqual([["completed", "success"]]);
      expect((await octokit.rest.checks.listSuitesForRef({ ...r, ref: sha })).data.check_suites.map((s) => s.conclusion)).toEqual(["success"]);
      expect(events.filter((e) => e.kind === "check_run").map((e) => e.kind === "check_run" && e.action)).toEqual(["created", "completed"]);
    });
  });

  describe("pull requests the App opens", () => {
    test("a draft PR for a branch is opened, listed by head, refused twice and without commits, closed when its branch is deleted", async () => {
      const r = newRepo();
      const pr = gh.openPr(r.full, { number: 1 });
      gh.createBranch(r.full, "greenline/test-1", pr.headSha);
      gh.createBranch(r.full, "greenline/empty", "main");
      const { data: opened } = await octokit.rest.pulls.create({ ...r, head: "greenline/test-1", base: "main", title: "Testing #1", draft: true });
      expect(opened).toMatchObject({ number: 1001, draft: true, state: "open", head: { ref: "greenline/test-1", sha: pr.headSha } });
      const listed = (await octokit.rest.pulls.list({ ...r, head: `${OWNER}:greenline/test-1` })).data;
      expect(listed.map((p) => p.number)).toEqual([1001]);
      const again = await refusal(octokit.rest.pulls.create({ ...r, head: "greenline/test-1", base: "main", title: "again" }));
      expect(again.status).toBe(422);
      expect((await refusal(octokit.rest.pulls.create({ ...r, head: "greenline/empty", base: "main", title: "empty" }))).status).toBe(422);
      await octokit.rest.git.deleteRef({ ...r, ref: "heads/greenline/test-1" });
      expect(gh.pr(r.full, 1001)).toMatchObject({ state: "closed", merged: false });
      expect((await octokit.rest.pulls.list({ ...r, head: `${OWNER}:greenline/test-1` })).data).toEqual([]);
    });

    test("a fork PR's head lives in the fork", async () => {
      const r = newRepo();
      gh.openPr(r.full, { number: 1, headRepo: "mallory/app", headRef: "evil" });
      await octokit.rest.pulls.get({ ...r, pull_number: 1 });
      const { data } = await octokit.rest.pulls.get({ ...r, pull_number: 1 });
      expect([data.head.repo?.full_name, data.head.label, data.base.repo.full_name]).toEqual(["mallory/app", "mallory:evil", r.full]);
      expect(gh.hasBranch(r.full, "evil")).toBe(false);
    });
  });

  test("installing, changing permissions and uninstalling are events; an uninstalled App's token is refused", async () => {
    gh.installApp(777, "octo-gone");
    gh.setPermissions(777, { ...DEFAULT_PERMISSIONS, administration: "read" });
    gh.uninstallApp(777);
    expect(events.map((e) => e.kind === "installation" && [e.action, e.installation.id])).toEqual([
      ["created", 777],
      ["new_permissions_accepted", 777],
      ["deleted", 777],
    ]);
    gh.createBranch("octo-gone/app", "main");
    const gone = new ProbotOctokit({ auth: { token: "ghs_installation_777" }, baseUrl: gh.url, retry: { enabled: false }, throttle: { enabled: false } });
    expect((await refusal(gone.rest.repos.getBranch({ owner: "octo-gone", repo: "app", branch: "main" }))).status).toBe(401);
  });

  test("what happens is reported to onEvent, with who did it: pushes, PRs opened and merged, statuses, reviews, check runs and suites", async () => {
    const r = newRepo();
    const root = gh.branchHead(r.full, "main");
    expect(events).toEqual([
      {
        kind: "push",
        repo: r.full,
        branch: "main",
        before: "0".repeat(40),
        after: root,
        created: true,
        deleted: false,
        forced: false,
        commits: [{ sha: root, parents: [], message: "Initial commit", added: ["README.md"], removed: [], modified: [] }],
        sender: "octocat",
      },
    ]);
    events = [];
    const pr = gh.openPr(r.full, { number: 1 });
    gh.approve(r.full, 1);
    gh.reportStatus(r.full, pr.headSha, "ci", "success");
    const run = gh.createCheckRun(r.full, { name: "build", headSha: pr.headSha });
    gh.completeCheckRun(r.full, run, "success");
    await octokit.rest.git.updateRef({ ...r, ref: "heads/main", sha: pr.headSha });
    expect(events.map((e) => e.kind)).toEqual(["pull_request", "pull_request_review", "status", "check_run", "check_run", "check_suite", "push", "pull_request"]);
    expect(events[0]).toMatchObject({ action: "opened", pr: { number: 1, mergeableState: "unknown" }, sender: "octocat" });
    expect(events[2]).toMatchObject({ kind: "status", sha: pr.headSha, context: "ci", state: "success", sender: "ci-bot", commit: { added: ["changes/pr-1.txt"] } });
    expect(events[5]).toMatchObject({ kind: "check_suite", action: "completed", conclusion: "success", runs: 1 });
    expect(events[6]).toMatchObject({ kind: "push", branch: "main", before: root, after: pr.headSha, created: false, forced: false, sender: "greenline[bot]" });
    expect(events[7]).toMatchObject({ kind: "pull_request", action: "closed", pr: { number: 1, merged: true }, sender: "greenline[bot]" });
  });

  test("compatibility verbs of the parallel work: flags, rulesets by type, requirePullRequests, amendPr, beforeMerge, outage", async () => {
    const r = newRepo();
    gh.protect(r.full, "main", ["build"]);
    gh.administrationRead = true;
    expect((await octokit.rest.repos.getStatusChecksProtection({ ...r, branch: "main" })).data.contexts).toEqual(["build"]);
    gh.administrationRead = false;
    expect((await refusal(octokit.rest.repos.getStatusChecksProtection({ ...r, branch: "main" }))).status).toBe(403);
    gh.rulesRefused = true;
    expect((await refusal(octokit.rest.repos.getBranchRules({ ...r, branch: "main" }))).status).toBe(403);
    gh.rulesRefused = false;
    const q = newRepo();
    gh.addRuleset(q.full, "main", ["merge_queue"], "never");
    expect((await octokit.rest.repos.getBranchRules({ ...q, branch: "main" })).data.map((rule) => rule.type)).toEqual(["merge_queue"]);
    gh.requirePullRequests(q.full, "main", { approvals: 1 });
    const pr = gh.openPr(q.full, { number: 1 });
    expect((await refusal(octokit.rest.git.updateRef({ ...q, ref: "heads/main", sha: pr.headSha }))).message).toBe("Changes must be made through a pull request.");
    events = [];
    const amended = gh.amendPr(q.full, 1, { "more.txt": "x" });
    expect([events, gh.pr(q.full, 1)!.headSha, gh.parentsOf(amended)]).toEqual([[], amended, [pr.baseSha]]);
    const m = newRepo();
    gh.openPr(m.full, { number: 1 });
    gh.beforeMerge(m.full, 1, () => {
      gh.push(m.full, "main", { "foreign.txt": "landed first" });
    });
    const { data } = await octokit.rest.pulls.merge({ ...m, pull_number: 1 });
    expect(gh.parentsOf(data.sha)[0]).not.toBe(gh.pr(m.full, 1)!.baseSha);
    expect((await octokit.rest.git.getCommit({ ...m, commit_sha: data.sha })).data.parents.map((p) => p.sha)).toEqual(gh.parentsOf(data.sha));
    gh.outage = 502;
    expect((await refusal(octokit.rest.pulls.get({ ...m, pull_number: 1 }))).status).toBe(502);
    gh.outage = null;
  });
});
