import type { RepoRef, StatusCheck } from "../../ports/code-host.js";
import type { CheckState } from "../../domain/status-checks.js";
import type { GitHubClient, OctokitError } from "./client.js";

/** CI results and the checks a branch requires, on GitHub. */
export class GitHubChecks {
  constructor(private readonly client: GitHubClient) {}

  /** CI reports through commit statuses and check runs, each stored as it arrives. */
  statusChecksOf(run: { reported: Readonly<Record<string, CheckState>> }): StatusCheck[] {
    return Object.entries(run.reported).map(([context, state]) => ({ context, state }));
  }

  async requiredStatuses(repo: RepoRef, branch: string): Promise<string[]> {
    const octokit = await this.client.octokit(repo);
    try {
      const { data } = await octokit.rest.repos.getStatusChecksProtection({ owner: repo.owner, repo: repo.name, branch });
      return [...new Set([...(data.contexts ?? []), ...(data.checks ?? []).map((c) => c.context)])];
    } catch (error) {
      // 404: the branch is not protected, or requires no status checks.
      if ((error as OctokitError).status === 404) return [];
      throw error;
    }
  }
}
