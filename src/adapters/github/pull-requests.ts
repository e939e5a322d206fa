import { FILE_READ_BYTES, FileTooLargeError, type Permission, type PullRequestInfo, type ReadPullRequestHint, type RepoRef } from "../../ports/code-host.js";
import type { Mergeability } from "../../domain/states.js";
import type { GitHubClient, Octokit, OctokitError } from "./client.js";

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

/** How long an allowed command author's permission is kept (docs/decisions.md, "Command authors' permission, cached a minute"). */
export const PERMISSION_CACHE_MS = 60_000;

/** Which cached permissions to forget: a repository's, an account's (owner alone), one user's in either. */
export type PermissionScope = { owner: string; repo?: string; user?: string };

/** Pull requests on GitHub: reading them, and what the queue shows on them. */
export class GitHubPullRequests {
  /**
   * Allowed answers to the permission check ("admin", "write"), per "installation:owner/repo:user"
   * (lower-case), with when each expires: a command author's next commands within a minute ask
   * GitHub nothing. Refusals ("read", "none") are never kept, so a new grant is heard at once.
   */
  readonly #allowed = new Map<string, { permission: Permission; until: number }>();

  constructor(private readonly client: GitHubClient) {}

  async getPullRequest(repo: RepoRef, number: number, hint: ReadPullRequestHint): Promise<PullRequestInfo | null> {
    const octokit = await this.client.octokitOrNull(repo);
    if (!octokit) return null;
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
        // Only a queue that merges up-to-date PRs directly needs it: two calls saved on every other read.
        greenBaseSha: hint.directMerge && data.mergeable_state === "clean" ? await this.#upToDateBase(octokit, repo, data.base.ref, data.head.sha) : null,
      };
    } catch (error) {
      if ((error as OctokitError).status === 404) return null;
      throw error;
    }
  }

  /**
   * The PR whose head is `branch` of the repository itself: the open one, else the last merged
   * (one list of at most 10, newest first, then the PR itself for its mergeability).
   */
  async pullRequestWithHead(repo: RepoRef, branch: string, hint: ReadPullRequestHint): Promise<PullRequestInfo | null> {
    const octokit = await this.client.octokitOrNull(repo);
    if (!octokit) return null;
    const { data } = await octokit.rest.pulls.list({ owner: repo.owner, repo: repo.name, state: "all", head: `${repo.owner}:${branch}`, per_page: 10 });
    const ours = data.filter((pr) => pr.head.ref === branch && pr.head.repo?.full_name?.toLowerCase() === `${repo.owner}/${repo.name}`.toLowerCase());
    const pick = ours.find((pr) => pr.state === "open") ?? ours.find((pr) => pr.merged_at !== null);
    if (!pick) return null;
    // A long-lived branch is no stack's: the default branch, or one GitHub protects (a
    // `develop` with a release PR into main). A merged PR's branch counts only while it is
    // still at the head that merged (commits pushed to it since never went through a PR).
    if (branch === pick.head.repo?.default_branch) return null;
    const { data: head } = await octokit.rest.repos.getBranch({ owner: repo.owner, repo: repo.name, branch });
    if (head.protected) return null;
    if (pick.state !== "open" && head.commit.sha !== pick.head.sha) return null;
    return this.getPullRequest(repo, pick.number, hint);
  }

  /** The target's head when the PR's head contains it (the PR is up to date), else null. */
  async #upToDateBase(octokit: Octokit, repo: RepoRef, base: string, head: string): Promise<string | null> {
    const [{ data: comparison }, { data: branch }] = await Promise.all([
      octokit.rest.repos.compareCommitsWithBasehead({ owner: repo.owner, repo: repo.name, basehead: `${base}...${head}` }),
      octokit.rest.repos.getBranch({ owner: repo.owner, repo: repo.name, branch: base }),
    ]);
    return comparison.behind_by === 0 && comparison.merge_base_commit.sha === branch.commit.sha ? branch.commit.sha : null;
  }

  async setPullRequestStatus(repo: RepoRef, sha: string, status: { state: "pending" | "success" | "failure" | "error"; description: string; targetUrl?: string }): Promise<void> {
    const octokit = await this.client.octokit(repo);
    const link = status.targetUrl === undefined ? {} : { target_url: status.targetUrl };
    await octokit.rest.repos.createCommitStatus({ owner: repo.owner, repo: repo.name, sha, state: status.state, context: PR_STATUS_CONTEXT, description: status.description.slice(0, 140), ...link });
  }

  async commentOnPullRequest(repo: RepoRef, number: number, body: string): Promise<void> {
    const octokit = await this.client.octokit(repo);
    await octokit.rest.issues.createComment({ owner: repo.owner, repo: repo.name, issue_number: number, body });
  }

  /**
   * The user's permission on the repository. An allowed answer is kept PERMISSION_CACHE_MS per
   * installation, repository and user (in this process); `forgetPermissions` drops it sooner
   * (a `member`, `membership`, `organization` or `repository` delivery, installations changing).
   */
  async permissionOf(repo: RepoRef, user: string): Promise<Permission> {
    const installation = await this.client.installationFor(repo);
    const key = `${installation}:${repo.owner}/${repo.name}:${user}`.toLowerCase();
    const now = this.client.now();
    const kept = this.#allowed.get(key);
    if (kept && now < kept.until) return kept.permission;
    this.#allowed.delete(key);
    const octokit = await this.client.octokit(repo);
    let permission: Permission;
    try {
      // `permission` folds GitHub's roles into admin / write (maintain too) / read (triage too) / none;
      // `role_name` tells maintain apart (it may merge hotfixes: docs/freezes.md).
      const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({ owner: repo.owner, repo: repo.name, username: user });
      const folded = (["admin", "write", "read"] as const).find((p) => p === data.permission) ?? "none";
      permission = folded === "write" && (data as { role_name?: string }).role_name === "maintain" ? "maintain" : folded;
    } catch (error) {
      if ((error as OctokitError).status === 404) return "none";
      throw error;
    }
    if (permission === "admin" || permission === "maintain" || permission === "write") this.#allowed.set(key, { permission, until: now + PERMISSION_CACHE_MS });
    return permission;
  }

  /** Forgets the kept permissions in `scope` (all of them without one). */
  forgetPermissions(scope?: PermissionScope): void {
    if (!scope) {
      this.#allowed.clear();
      return;
    }
    const owner = scope.owner.toLowerCase();
    const repo = scope.repo?.toLowerCase();
    const user = scope.user?.toLowerCase();
    for (const key of [...this.#allowed.keys()]) {
      const [, where = "", who = ""] = key.split(":");
      const [keyOwner, keyRepo] = where.split("/");
      if (keyOwner === owner && (repo === undefined || keyRepo === repo) && (user === undefined || who === user)) this.#allowed.delete(key);
    }
  }

  async readFile(repo: RepoRef, path: string, ref: string, maxBytes = FILE_READ_BYTES): Promise<string | null> {
    const octokit = await this.client.octokitOrNull(repo);
    if (!octokit) return null;
    try {
      const { data } = await octokit.rest.repos.getContent({ owner: repo.owner, repo: repo.name, path, ref });
      if (Array.isArray(data) || data.type !== "file" || !("content" in data)) return null;
      if (data.size > maxBytes) throw new FileTooLargeError(path, data.size, maxBytes);
      // Files of 1 to 100 MB come without content (encoding "none"): their blob has it.
      if (data.encoding === "none") {
        const { data: blob } = await octokit.rest.git.getBlob({ owner: repo.owner, repo: repo.name, file_sha: data.sha });
        return Buffer.from(blob.content, "base64").toString("utf8");
      }
      return Buffer.from(data.content, "base64").toString("utf8");
    } catch (error) {
      if ((error as OctokitError).status === 404) return null;
      throw error;
    }
  }
}
