import { CodeHostRefusal, type LandedPrs, type MergeRequest, type MergeResult, type RepoRef } from "../../ports/code-host.js";
import type { GitHubClient, Octokit } from "./client.js";
import { refusalOf } from "./refusals.js";

type Params = { owner: string; repo: string };
type PullRequest = { number: number; merged: boolean; commits?: number };

/** How many commits a PR's merge adds on the target's first-parent line: one, or one per commit when rebased. */
function stepsOf(method: "merge" | "squash" | "rebase", pr: PullRequest): number {
  return method === "rebase" ? Math.max(1, pr.commits ?? 1) : 1;
}

/**
 * Landing tested PRs on the target branch on GitHub (the guarantee of each merge method:
 * docs/github.md, "What each merge method guarantees").
 */
export class GitHubMerging {
  /**
   * Targets ("owner/name:branch", lower-case) where GitHub refused a fast-forward (branch
   * protection or rulesets require pull requests, or restrict pushers): merged through the PR
   * API from then on, without asking for the refused push again.
   */
  readonly #pushRefused = new Set<string>();

  constructor(private readonly client: GitHubClient) {}

  /**
   * With merge commits and an exact tree the target is fast-forwarded to the tested commit
   * itself when it descends from the target's head. Otherwise (or when GitHub refuses the push)
   * each PR is merged through GitHub, in order, pinned to the head that was tested, and each
   * merge is checked to have landed right on top of the one before: the same changes applied in
   * the same order on the same tree give the tree that was tested.
   */
  async mergeTestedRun(repo: RepoRef, request: MergeRequest): Promise<MergeResult> {
    const octokit = await this.client.octokit(repo);
    const params = { owner: repo.owner, repo: repo.name };
    const method = request.method === "merge_commit" ? "merge" : request.method;
    const head = await this.#targetHead(octokit, repo, request.targetBranch);
    if (head !== request.expectedHead) {
      // Every merge of the request moves the target: a target still where the queue left it
      // has none of them, so the PRs are read only when it moved (a retry, or someone's push).
      const prs: PullRequest[] = [];
      for (const number of request.prNumbers) prs.push((await octokit.rest.pulls.get({ ...params, pull_number: number })).data);
      // Repeating a merge that already happened changes nothing.
      if (prs.every((pr) => pr.merged)) return { kind: "merged", head };
      const landedBefore = prs.slice(
        0,
        prs.findIndex((pr) => !pr.merged),
      );
      if (landedBefore.length === 0) return { kind: "target_moved", head };
      // An earlier attempt landed the first PRs and stopped (a crash, a transient error). If
      // the target is exactly those merges on top of where the queue left it, carry on from
      // there; otherwise they are merged, and the others must be tested again.
      const steps = landedBefore.reduce((sum, pr) => sum + stepsOf(method, pr), 0);
      const prNumbers = landedBefore.map((pr) => pr.number);
      if ((await this.#firstParentBack(octokit, params, head, steps)) !== request.expectedHead) return { kind: "target_moved", head, landed: { prNumbers, head } };
      return this.#mergeOneByOne(octokit, params, repo, request, prs.slice(landedBefore.length), { prNumbers, head });
    }
    const target = `${repo.owner}/${repo.name}:${request.targetBranch}`.toLowerCase();
    if (request.method === "merge_commit" && request.exactTree && request.tested && !this.#pushRefused.has(target)) {
      // The tested commit itself lands when it was built on the target's very head commit (a
      // run further down a chain was built on an equal tree, but other commits): fast-forward.
      // The fast-forward is not pinned to the PRs' heads as a PR merge is: a PR pushed to since
      // it was tested (its synchronize lost or late) would stay open on GitHub, its old commit
      // landed. It is refused as a moved head (cancelled pr_updated); the others are tested again.
      const moved = await this.#movedHead(octokit, params, request);
      if (moved) return { kind: "refused", head, prNumber: moved.number, reason: "head_moved", message: `the head of #${moved.number} moved to ${moved.sha} after ${request.heads[moved.number]} was tested` };
      // GitHub refuses an update that is not a fast-forward, so the push itself is the test.
      try {
        await octokit.rest.git.updateRef({ ...params, ref: `heads/${request.targetBranch}`, sha: request.tested.sha, force: false });
        return { kind: "merged", head: request.tested.sha };
      } catch (error) {
        const refusal = refusalOf(error, "update_ref");
        if (refusal.kind === "target_moved") {
          // Not a fast-forward: the target moved since it was read, or the tested commit was
          // not built on it (then each PR is merged, below).
          const now = await this.#targetHead(octokit, repo, request.targetBranch);
          if (now !== head) return { kind: "target_moved", head: now };
        } else {
          // Protection or rulesets refuse the push (pull requests required, pushers restricted):
          // GitHub still merges the PRs themselves, which lands the same tree (checked below).
          if (refusal.kind !== "cannot_merge" && refusal.kind !== "permission_missing") throw refusal;
          this.#pushRefused.add(target);
        }
      }
    }
    // Only a rebase needs the PRs themselves (how many commits each adds).
    const prs: PullRequest[] = [];
    for (const number of request.prNumbers) prs.push(method === "rebase" ? (await octokit.rest.pulls.get({ ...params, pull_number: number })).data : { number, merged: false });
    return this.#mergeOneByOne(octokit, params, repo, request, prs, { prNumbers: [], head });
  }

  /**
   * The first PR of the request whose head is no longer the commit that was tested, with its
   * head now; null when none moved. One list of the target's open PRs answers for a whole batch
   * (a PR not in it, closed or beyond the first page, is read on its own).
   */
  async #movedHead(octokit: Octokit, params: Params, request: MergeRequest): Promise<{ number: number; sha: string } | null> {
    const { data: open } = await octokit.rest.pulls.list({ ...params, state: "open", base: request.targetBranch, per_page: 100 });
    for (const number of request.prNumbers) {
      const pinned = request.heads[number];
      if (pinned === undefined) continue;
      const listed = open.find((pr) => pr.number === number);
      const sha = listed ? listed.head.sha : (await octokit.rest.pulls.get({ ...params, pull_number: number })).data.head.sha;
      if (sha !== pinned) return { number, sha };
    }
    return null;
  }

  /** Merges `prs` one by one on top of `landed` (the PRs of the request already merged, and the head they made). */
  async #mergeOneByOne(octokit: Octokit, params: Params, repo: RepoRef, request: MergeRequest, prs: PullRequest[], landedSoFar: LandedPrs): Promise<MergeResult> {
    const method = request.method === "merge_commit" ? "merge" : request.method;
    const landed = [...landedSoFar.prNumbers];
    let before = landedSoFar.head;
    const soFar = (): { landed?: LandedPrs } => (landed.length > 0 ? { landed: { prNumbers: [...landed], head: before } } : {});
    for (const pr of prs) {
      // The commit that was tested, never the head as it is now: a push since must not land.
      const sha = request.heads[pr.number];
      if (!sha) throw new Error(`no tested head is known for #${pr.number}`);
      let merged: string;
      try {
        merged = (await octokit.rest.pulls.merge({ ...params, pull_number: pr.number, sha, merge_method: method })).data.sha;
      } catch (error) {
        const refusal = refusalOf(error, "merge_pr");
        if (refusal.transient || refusal.kind === "permission_missing" || refusal.kind === "not_found") throw refusal;
        const now = await this.#targetHead(octokit, repo, request.targetBranch);
        if (refusal.kind === "head_moved") {
          // 409 says "Head branch was modified" or "Base branch was modified": ask which.
          const { data: current } = await octokit.rest.pulls.get({ ...params, pull_number: pr.number });
          if (current.head.sha === sha) return { kind: "target_moved", head: now, ...soFar() };
          return { kind: "refused", head: now, ...soFar(), prNumber: pr.number, reason: "head_moved", message: refusal.message };
        }
        // A refusal while the target moved under the merge may be caused by the move (a
        // conflict with it, a check it now lacks): test again on the new head.
        if (now !== before || refusal.kind !== "cannot_merge") return { kind: "target_moved", head: now, ...soFar() };
        return { kind: "refused", head: now, ...soFar(), prNumber: pr.number, reason: "cannot_merge", message: refusal.message };
      }
      // GitHub merged on top of whatever the target was by then: if that is not the commit the
      // previous merge made, someone else's commit slipped in between, and the target is not
      // the tree that was tested. The PR is merged all the same; the rest must be tested again.
      const under = await this.#firstParentBack(octokit, params, merged, stepsOf(method, pr));
      if (under !== before) return { kind: "landed_on_moved_target", head: merged, ...soFar(), movedUnder: pr.number, foreignSha: under };
      landed.push(pr.number);
      before = merged;
    }
    return { kind: "merged", head: before };
  }

  /** The commit `steps` first parents back from `sha` (what a merge of that many commits was made on). */
  async #firstParentBack(octokit: Octokit, params: Params, sha: string, steps: number): Promise<string> {
    let current = sha;
    for (let i = 0; i < steps; i++) {
      const { data } = await octokit.rest.git.getCommit({ ...params, commit_sha: current });
      current = data.parents[0]?.sha ?? "";
    }
    return current;
  }

  async #targetHead(octokit: Octokit, repo: RepoRef, branch: string): Promise<string> {
    const head = await this.client.branchHead(octokit, repo, branch);
    if (head === null) throw new CodeHostRefusal("not_found", `the target branch ${branch} does not exist in ${repo.owner}/${repo.name}`);
    return head;
  }
}
