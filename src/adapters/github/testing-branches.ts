import type { RepoRef, TestRunRequest, TestRunStart } from "../../ports/code-host.js";
import type { GitHubClient, OctokitError } from "./client.js";

/** Testing branches on GitHub: built from the target and the stacked PRs; CI runs on them. */
export class GitHubTestingBranches {
  constructor(private readonly client: GitHubClient) {}

  /**
   * The testing branch is created at the base and each PR's head is merged into it in order
   * (GitHub's merge API); CI runs on the push. A 409 from GitHub is a merge conflict.
   */
  async startTestRun(repo: RepoRef, request: TestRunRequest): Promise<TestRunStart> {
    const octokit = await this.client.octokit(repo);
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
    const octokit = await this.client.octokit(repo);
    try {
      await octokit.rest.git.deleteRef({ owner: repo.owner, repo: repo.name, ref: `heads/${testBranch}` });
    } catch (error) {
      if ((error as OctokitError).status !== 404 && (error as OctokitError).status !== 422) throw error;
    }
  }
}
