import type { RepoRef, WorkflowRun, WorkflowRuns } from "../../ports/code-host.js";
import type { GitHubClient, OctokitError } from "./client.js";

/**
 * GitHub Actions' workflow runs (`GET /repos/{owner}/{repo}/actions/runs/{run_id}`, which needs
 * the App's `actions: read`; docs/github.md, "Fork PRs' impacted targets").
 */
export class GitHubWorkflowRuns implements WorkflowRuns {
  constructor(private readonly client: GitHubClient) {}

  async workflowRun(repo: RepoRef, runId: string): Promise<WorkflowRun | null> {
    const id = Number(runId);
    if (!/^\d{1,19}$/.test(runId) || !Number.isSafeInteger(id) || id < 1) return null;
    const octokit = await this.client.octokitOrNull(repo);
    if (!octokit) return null;
    try {
      const { data } = await octokit.rest.actions.getWorkflowRun({ owner: repo.owner, repo: repo.name, run_id: id });
      // A run of another repository is not this one's (GitHub answers 404 anyway).
      if (data.repository.full_name.toLowerCase() !== `${repo.owner}/${repo.name}`.toLowerCase()) return null;
      const head = data.head_repository as { owner?: { login?: string } | null; name?: string } | null | undefined;
      return {
        id: String(data.id),
        status: data.status ?? null,
        event: data.event,
        headSha: data.head_sha,
        headRepository: head?.owner?.login && head.name ? { owner: head.owner.login, name: head.name } : null,
      };
    } catch (error) {
      if ((error as OctokitError).status === 404) return null;
      throw error;
    }
  }
}
