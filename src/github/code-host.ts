import type { Probot } from "probot";
import type { CodeHost, PullRequestInfo, RepoRef } from "../codehost/code-host.js";
import type { Mergeability } from "../domain/states.js";

type OctokitError = { status?: number };

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
  readonly kind = "github" as const;
  readonly #installations = new Map<string, number>();

  constructor(private readonly probot: Probot) {}

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
      };
    } catch (error) {
      if ((error as OctokitError).status === 404) return null;
      throw error;
    }
  }
}
