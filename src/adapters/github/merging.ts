import type { MergeRequest, MergeResult, RepoRef } from "../../ports/code-host.js";
import type { GitHubClient, OctokitError } from "./client.js";

/** Landing tested PRs on the target branch on GitHub. */
export class GitHubMerging {
  constructor(private readonly client: GitHubClient) {}

  /**
   * With merge commits and an exact tree the target is fast-forwarded to the tested commit
   * itself when it descends from the target's head. Otherwise each PR is merged through GitHub,
   * in order, pinned to the head sha that was tested: the same changes applied in the same
   * order on the same tree give the tree that was tested.
   */
  async mergeTestedRun(repo: RepoRef, request: MergeRequest): Promise<MergeResult> {
    const octokit = await this.client.octokit(repo);
    const params = { owner: repo.owner, repo: repo.name };
    const prs = [];
    for (const number of request.prNumbers) prs.push((await octokit.rest.pulls.get({ ...params, pull_number: number })).data);
    const head = await this.client.branchHead(octokit, repo, request.targetBranch);
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
        if (status === 405 || status === 409) return { kind: "target_moved", head: (await this.client.branchHead(octokit, repo, request.targetBranch)) ?? "" };
        throw error;
      }
    }
    return { kind: "merged", head: (await this.client.branchHead(octokit, repo, request.targetBranch)) ?? "" };
  }
}
