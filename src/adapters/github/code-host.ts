import type { Probot } from "probot";
import type { CodeHost, MergeRequest, Permission, MergeResult, PullRequestInfo, RepoRef, StatusCheck, TestRunRequest, TestRunStart } from "../../ports/code-host.js";
import type { Mergeability } from "../../domain/states.js";
import type { CheckState } from "../../domain/status-checks.js";
import type { Tx } from "../../store/database.js";
import { installationAccountsOf } from "../../store/repositories.js";

type OctokitError = { status?: number };

/** The commit status context Greenline sets on queued PRs. */
export const PR_STATUS_CONTEXT = "greenline/merge-queue";

/**
 * GitHub's mergeable_state, as it bears on the queue. "behind" is fine: the queue tests the PR
 * on top of the target anyway. "blocked" (failing required checks or missing reviews) and
 * "dirty" (conflicts) are not. "unknown" means GitHub is still computing.
 */
export function mergeabilityOf(pr: { mergeable: boolean | null; mergeable_state?: string; draft?: boolean }): Mergeability {
  if (pr.draft) return "not_mergeable";
  switch (pr.mergeable_state) {
    case "clean":
    case "unstable":
    case "has_hooks":
    case "behind":
      return "mergeable";
    case "dirty":
    case "blocked":
    case "draft":
      return "not_mergeable";
  }
  if (pr.mergeable === null || pr.mergeable_state === "unknown") return "in_progress";
  return pr.mergeable ? "mergeable" : "not_mergeable";
}

/** The code host port over GitHub's REST API, through Probot's authenticated Octokit. */
export class GitHubCodeHost implements CodeHost {
  readonly name = "github";
  readonly notifiesPullRequests = true;
  readonly #installations = new Map<string, number>();

  constructor(private readonly probot: Probot) {}

  /**
   * An organization owns the repositories of the accounts where the App is installed for it
   * (the installation webhooks record them).
   */
  async mayOwnRepository(tx: Tx, organizationId: string, repo: RepoRef): Promise<boolean> {
    const accounts = await installationAccountsOf(tx, organizationId);
    return accounts.some((login) => login.toLowerCase() === repo.owner.toLowerCase());
  }

  /** CI reports through commit statuses and check runs, each stored as it arrives. */
  statusChecksOf(run: { reported: Readonly<Record<string, CheckState>> }): StatusCheck[] {
    return Object.entries(run.reported).map(([context, state]) => ({ context, state }));
  }

  async #installationFor(repo: RepoRef): Promise<number | null> {
    const key = `${repo.owner}/${repo.name}`.toLowerCase();
    const cached = this.#installations.get(key);
    if (cached !== undefined) return cached;
    const app = await this.probot.auth();
    try {
      const { data } = await app.rest.apps.getRepoInstallation({ owner: repo.owner, repo: repo.name });
      this.#installations.set(key, data.id);
      return data.id;
    } catch (error) {
      if ((error as OctokitError).status === 404) return null;
      throw error;
    }
  }

  async getPullRequest(repo: RepoRef, number: number): Promise<PullRequestInfo | null> {
    const installation = await this.#installationFor(repo);
    if (installation === null) return null;
    const octokit = await this.probot.auth(installation);
    try {
      const { data } = await octokit.rest.pulls.get({ owner: repo.owner, repo: repo.name, pull_number: number });
      return {
        number: data.number,
        title: data.title,
        author: data.user?.login ?? "ghost",
        headSha: data.head.sha,
        baseBranch: data.base.ref,
        state: data.merged ? "merged" : data.state === "open" ? "open" : "closed",
        mergeability: mergeabilityOf(data),
        greenBaseSha: data.mergeable_state === "clean" ? await this.#upToDateBase(octokit, repo, data.base.ref, data.head.sha) : null,
      };
    } catch (error) {
      if ((error as OctokitError).status === 404) return null;
      throw error;
    }
  }

  /** The target's head when the PR's head contains it (the PR is up to date), else null. */
  async #upToDateBase(octokit: Awaited<ReturnType<Probot["auth"]>>, repo: RepoRef, base: string, head: string): Promise<string | null> {
    const [{ data: comparison }, { data: branch }] = await Promise.all([
      octokit.rest.repos.compareCommitsWithBasehead({ owner: repo.owner, repo: repo.name, basehead: `${base}...${head}` }),
      octokit.rest.repos.getBranch({ owner: repo.owner, repo: repo.name, branch: base }),
    ]);
    return comparison.behind_by === 0 && comparison.merge_base_commit.sha === branch.commit.sha ? branch.commit.sha : null;
  }

  async #octokit(repo: RepoRef) {
    const installation = await this.#installationFor(repo);
    if (installation === null) throw new Error(`the GitHub App is not installed for ${repo.owner}/${repo.name}`);
    return this.probot.auth(installation);
  }

  async getBranchHead(repo: RepoRef, branch: string): Promise<string | null> {
    const installation = await this.#installationFor(repo);
    if (installation === null) return null;
    const octokit = await this.probot.auth(installation);
    try {
      const { data } = await octokit.rest.repos.getBranch({ owner: repo.owner, repo: repo.name, branch });
      return data.commit.sha;
    } catch (error) {
      if ((error as OctokitError).status === 404) return null;
      throw error;
    }
  }

  /**
   * The testing branch is created at the base and each PR's head is merged into it in order
   * (GitHub's merge API); CI runs on the push. A 409 from GitHub is a merge conflict.
   */
  async startTestRun(repo: RepoRef, request: TestRunRequest): Promise<TestRunStart> {
    const octokit = await this.#octokit(repo);
    const testBranch = `greenline/${request.targetBranch}/${request.runId}`;
    const params = { owner: repo.owner, repo: repo.name };
    try {
      await octokit.rest.git.createRef({ ...params, ref: `refs/heads/${testBranch}`, sha: request.baseSha });
    } catch (error) {
      // 422: the branch exists already (a retried effect); carry on from where it is.
      if ((error as OctokitError).status !== 422) throw error;
    }
    let sha = request.baseSha;
    for (const number of request.stack) {
      const { data: pr } = await octokit.rest.pulls.get({ ...params, pull_number: number });
      try {
        const { data, status } = await octokit.rest.repos.merge({ ...params, base: testBranch, head: pr.head.sha, commit_message: `Greenline: test #${number} (${request.runId})` });
        if (status === 201) sha = data.sha;
      } catch (error) {
        if ((error as OctokitError).status === 409) return { kind: "conflict", prNumber: number };
        throw error;
      }
    }
    const { data: head } = await octokit.rest.repos.getBranch({ ...params, branch: testBranch });
    return { kind: "started", testBranch, sha: head.commit.sha ?? sha };
  }

  async cancelTestRun(repo: RepoRef, testBranch: string): Promise<void> {
    const octokit = await this.#octokit(repo);
    try {
      await octokit.rest.git.deleteRef({ owner: repo.owner, repo: repo.name, ref: `heads/${testBranch}` });
    } catch (error) {
      if ((error as OctokitError).status !== 404 && (error as OctokitError).status !== 422) throw error;
    }
  }

  async setPullRequestStatus(repo: RepoRef, sha: string, status: { state: "pending" | "success" | "failure" | "error"; description: string }): Promise<void> {
    const octokit = await this.#octokit(repo);
    await octokit.rest.repos.createCommitStatus({ owner: repo.owner, repo: repo.name, sha, state: status.state, context: PR_STATUS_CONTEXT, description: status.description.slice(0, 140) });
  }

  async commentOnPullRequest(repo: RepoRef, number: number, body: string): Promise<void> {
    const octokit = await this.#octokit(repo);
    await octokit.rest.issues.createComment({ owner: repo.owner, repo: repo.name, issue_number: number, body });
  }

  async permissionOf(repo: RepoRef, user: string): Promise<Permission> {
    const octokit = await this.#octokit(repo);
    try {
      // `permission` folds GitHub's roles into admin / write (maintain too) / read (triage too) / none.
      const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({ owner: repo.owner, repo: repo.name, username: user });
      return (["admin", "write", "read"] as const).find((p) => p === data.permission) ?? "none";
    } catch (error) {
      if ((error as OctokitError).status === 404) return "none";
      throw error;
    }
  }

  async readFile(repo: RepoRef, path: string, ref: string): Promise<string | null> {
    const installation = await this.#installationFor(repo);
    if (installation === null) return null;
    const octokit = await this.probot.auth(installation);
    try {
      const { data } = await octokit.rest.repos.getContent({ owner: repo.owner, repo: repo.name, path, ref });
      if (Array.isArray(data) || data.type !== "file" || !("content" in data)) return null;
      return Buffer.from(data.content, "base64").toString("utf8");
    } catch (error) {
      if ((error as OctokitError).status === 404) return null;
      throw error;
    }
  }

  async requiredStatuses(repo: RepoRef, branch: string): Promise<string[]> {
    const octokit = await this.#octokit(repo);
    try {
      const { data } = await octokit.rest.repos.getStatusChecksProtection({ owner: repo.owner, repo: repo.name, branch });
      return [...new Set([...(data.contexts ?? []), ...(data.checks ?? []).map((c) => c.context)])];
    } catch (error) {
      // 404: the branch is not protected, or requires no status checks.
      if ((error as OctokitError).status === 404) return [];
      throw error;
    }
  }

  /**
   * With merge commits and an exact tree the target is fast-forwarded to the tested commit
   * itself when it descends from the target's head. Otherwise each PR is merged through GitHub,
   * in order, pinned to the head sha that was tested: the same changes applied in the same
   * order on the same tree give the tree that was tested.
   */
  async mergeTestedRun(repo: RepoRef, request: MergeRequest): Promise<MergeResult> {
    const octokit = await this.#octokit(repo);
    const params = { owner: repo.owner, repo: repo.name };
    const prs = [];
    for (const number of request.prNumbers) prs.push((await octokit.rest.pulls.get({ ...params, pull_number: number })).data);
    const head = await this.getBranchHead(repo, request.targetBranch);
    // Repeating a merge that already happened changes nothing.
    if (prs.every((pr) => pr.merged)) return { kind: "merged", head: head ?? "" };
    if (head !== request.expectedHead) return { kind: "target_moved", head: head ?? "" };
    if (request.method === "merge_commit" && request.exactTree && request.tested && head) {
      // The tested commit itself lands when it was built on the target's very head commit (a
      // run further down a chain was built on an equal tree, but other commits): fast-forward.
      const { data: comparison } = await octokit.rest.repos.compareCommitsWithBasehead({ ...params, basehead: `${head}...${request.tested.sha}` });
      if (comparison.behind_by === 0) {
        await octokit.rest.git.updateRef({ ...params, ref: `heads/${request.targetBranch}`, sha: request.tested.sha, force: false });
        return { kind: "merged", head: request.tested.sha };
      }
    }
    const method = request.method === "merge_commit" ? "merge" : request.method;
    for (const pr of prs) {
      if (pr.merged) continue;
      try {
        await octokit.rest.pulls.merge({ ...params, pull_number: pr.number, sha: pr.head.sha, merge_method: method });
      } catch (error) {
        // 405 not mergeable / 409 head moved: the target or the PR changed under us.
        const status = (error as OctokitError).status;
        if (status === 405 || status === 409) return { kind: "target_moved", head: (await this.getBranchHead(repo, request.targetBranch)) ?? "" };
        throw error;
      }
    }
    return { kind: "merged", head: (await this.getBranchHead(repo, request.targetBranch)) ?? "" };
  }
}
