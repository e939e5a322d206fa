import { APP_BOT } from "./model.js";
import { PullRequests } from "./pulls.js";
import type { RepoRequest } from "./request-log.js";
import type { MergeMethod } from "./rules.js";

/**
 * Merging a pull request (`PUT …/pulls/{n}/merge`) as GitHub does: refused for a closed PR, a
 * moved head (`sha`), a draft, a merge method the repository does not allow, a workflow file
 * without `workflows: write`, a conflict, protection and rulesets; and the hook a test runs just
 * before a merge (`beforeMerge`).
 */
export abstract class Merging extends PullRequests {
  /** Run just before GitHub merges a PR (by "owner/name#number"), once; an answer it returns is sent instead of merging. */
  readonly #beforeMergeHooks = new Map<string, () => undefined | { status: number; message: string }>();

  /**
   * Runs `action` (someone else's push, say) right before GitHub merges PR `number`, once; an
   * answer it returns (a failure of GitHub's, a refusal) is sent instead of merging.
   */
  beforeMerge(repo: string, number: number, action: () => undefined | { status: number; message: string }): void {
    this.#beforeMergeHooks.set(`${repo.toLowerCase()}#${number}`, action);
  }

  protected answerMerge({ method, rest, body, repoName, settings, installation, send, error, notFound }: RepoRequest): boolean {
    let match: RegExpExecArray | null;
    if ((match = /^\/pulls\/(\d+)\/merge$/.exec(rest)) && method === "PUT") {
      const pr = this.pulls.get(`${repoName}#${match[1]}`);
      if (!pr) return notFound();
      const mergeMethod: MergeMethod = body.merge_method ?? "merge";
      if (!["merge", "squash", "rebase"].includes(mergeMethod)) {
        return send(422, {
          message: "Validation Failed",
          errors: [{ resource: "PullRequest", field: "merge_method", code: "invalid" }],
          documentation_url: "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request",
          status: "422",
        });
      }
      if (pr.merged || pr.state !== "open") return error(405, "Pull Request is not mergeable");
      if (body.sha && body.sha !== pr.headSha) return error(409, "Head branch was modified. Review and try the merge again.");
      if (pr.draft) return error(405, "Pull Request is still a draft");
      if ((pr.retargetRefusals ?? 0) > 0) {
        pr.retargetRefusals = (pr.retargetRefusals ?? 0) - 1;
        return error(405, "Base branch was modified. Review and try the merge again.");
      }
      const hook = this.#beforeMergeHooks.get(`${repoName}#${pr.number}`);
      this.#beforeMergeHooks.delete(`${repoName}#${pr.number}`);
      const answer = hook?.();
      if (answer) return error(answer.status, answer.message);
      const allowed = { merge: settings.allowMergeCommit, squash: settings.allowSquashMerge, rebase: settings.allowRebaseMerge }[mergeMethod];
      if (!allowed) return error(405, `${{ merge: "Merge commits", squash: "Squash merges", rebase: "Rebase merges" }[mergeMethod]} are not allowed on this repository.`);
      // What the PR changes: its head against its merge base with the branch it merges into.
      const mergeBase = this.mergeBase(this.refs.get(`${repoName}:${pr.base}`) ?? pr.baseSha, pr.headSha);
      const workflow = this.workflowChange(this.commits.get(mergeBase ?? "")?.tree ?? {}, this.commits.get(pr.headSha)!.tree);
      if (workflow && this.installations.get(installation)!.permissions.workflows !== "write") return error(403, this.workflowRefusal(workflow));
      const baseSha = this.branchHead(repoName, pr.base);
      const tree = this.applyChanges(baseSha, pr.headSha);
      if (!tree) return error(405, mergeMethod === "rebase" ? "This branch can't be rebased" : "Pull Request is not mergeable");
      this.checkRules(repoName, this.prChange(repoName, pr, mergeMethod), 405);
      const sha =
        mergeMethod === "merge" ? this.commit([baseSha, pr.headSha], tree, body.commit_title ?? `Merge pull request #${pr.number}`) : this.commit([baseSha], tree, body.commit_title ?? `${pr.title} (#${pr.number})`);
      pr.merged = true;
      pr.state = "closed";
      pr.mergeCommitSha = sha;
      this.setRef(repoName, pr.base, sha);
      this.emit({ kind: "pull_request", action: "closed", repo: repoName, pr: this.snapshot(pr), sender: APP_BOT });
      // "Automatically delete head branches": then the head branch goes (its push), which moves the PRs based on it.
      if (this.#deletesHeadBranch(repoName, pr.headRef, pr.headRepo)) this.deleteRef(repoName, pr.headRef, APP_BOT);
      return send(200, { sha, merged: true, message: "Pull Request successfully merged" });
    }

    return false;
  }

  /**
   * Whether GitHub deletes a merged PR's head branch: the repository deletes head branches on
   * merge, the branch is in the repository (not a fork's) and still there, is not the default
   * branch, and no protection or ruleset forbids deleting it.
   */
  #deletesHeadBranch(repo: string, branch: string, headRepo: string): boolean {
    const settings = this.settings(repo);
    if (!settings.deleteBranchOnMerge || headRepo.toLowerCase() !== repo.toLowerCase()) return false;
    if (!this.refs.has(`${repo.toLowerCase()}:${branch}`) || branch === settings.defaultBranch) return false;
    return !this.deletionProtected(repo, branch);
  }
}
