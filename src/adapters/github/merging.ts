import { CodeHostRefusal, type LandedPrs, type MergeRequest, type MergeResult, type RepoRef } from "../../ports/code-host.js";
import type { GitHubClient, Octokit } from "./client.js";
import { refusalOf } from "./refusals.js";

type Params = { owner: string; repo: string };
/** A PR as GitHub answers `GET /pulls/{n}` (the fields read here). */
type PullRequest = { number: number; state: string; merged: boolean; merge_commit_sha: string | null; base: { ref: string }; head: { sha: string }; commits?: number };
type PrChange = { reason: "closed" | "base_changed" | "head_moved"; message: string };
/** How many testing branches deleted by their fast-forward are remembered for their cleanup (the oldest forgotten first: its cleanup then asks GitHub, which answers 422, ignored). */
const DELETED_WITH_MERGE_KEPT = 10_000;
/** Git's zero object id: as `afterOid`, a ref update deletes the ref. */
const ZERO_OID = "0".repeat(40);

/** How many commits a PR's merge adds on the target's first-parent line: one, or one per commit when rebased. */
function stepsOf(method: "merge" | "squash" | "rebase", pr: PullRequest): number {
  return method === "rebase" ? Math.max(1, pr.commits ?? 1) : 1;
}

/**
 * Why a PR, as GitHub answers it now, must not be merged into the request's target: closed (or
 * merged outside the queue), based on another branch (GitHub merges a PR into its current base,
 * whatever the queue was told last), or at a head other than the tested one. Null: it may.
 */
function changeOf(pr: PullRequest, request: MergeRequest): PrChange | null {
  if (pr.state !== "open") return { reason: "closed", message: `#${pr.number} is ${pr.merged ? "merged" : "closed"} on GitHub` };
  // A stacked PR still on the branch of the PR under it is moved to the target as it merges (docs/stacks.md).
  if (pr.base.ref !== request.targetBranch && pr.base.ref !== request.stackBases?.[pr.number])
    return { reason: "base_changed", message: `the base branch of #${pr.number} is ${pr.base.ref}, not ${request.targetBranch}` };
  const pinned = request.heads[pr.number];
  if (pinned !== undefined && pr.head.sha !== pinned) return { reason: "head_moved", message: `the head of #${pr.number} moved to ${pr.head.sha} after ${pinned} was tested` };
  return null;
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
  /**
   * Targets where GitHub's GraphQL `updateRefs` was refused and a REST push then went through
   * (the mutation unknown to a GitHub Enterprise Server, a rule on deleting testing branches):
   * fast-forwarded by REST alone from then on.
   */
  readonly #updateRefsRefused = new Set<string>();

  /**
   * `deletedWithMerge`: testing branches ("owner/name:branch", lower-case) deleted in the same
   * atomic ref update as the fast-forward that landed them; their run's cleanup need not.
   */
  constructor(
    private readonly client: GitHubClient,
    private readonly deletedWithMerge: Set<string> = new Set(),
  ) {}

  /**
   * With merge commits and an exact tree the target is fast-forwarded to the tested commit
   * itself when it descends from the target's head. Otherwise (or when GitHub refuses the push)
   * each PR is merged through GitHub, in order, pinned to the head that was tested, once read
   * and found still open and based on the target, and each merge is checked to have landed on
   * the target right on top of the one before: the same changes applied in the same order on
   * the same tree give the tree that was tested.
   */
  async mergeTestedRun(repo: RepoRef, request: MergeRequest): Promise<MergeResult> {
    const result = await this.#mergeTestedRun(repo, request);
    if (result.kind === "merged" && request.retargetAfter) await this.#retargetAbove(repo, request.targetBranch, request.retargetAfter);
    return result;
  }

  /**
   * The PRs stacked on PRs that just merged, still based on their branches, moved to the target
   * (docs/stacks.md: as GitHub does when a merged PR's branch is deleted, which it does not
   * always do through the API). A refusal is left alone: each PR is moved again as it merges.
   */
  async #retargetAbove(repo: RepoRef, targetBranch: string, prs: Readonly<Record<number, string>>): Promise<void> {
    const octokit = await this.client.octokit(repo);
    const params = { owner: repo.owner, repo: repo.name };
    for (const [number, base] of Object.entries(prs)) {
      try {
        const { data: pr } = await octokit.rest.pulls.get({ ...params, pull_number: Number(number) });
        if (pr.state === "open" && pr.base.ref === base) await octokit.rest.pulls.update({ ...params, pull_number: Number(number), base: targetBranch });
      } catch (error) {
        const refusal = refusalOf(error, "write");
        if (refusal.transient) throw refusal;
      }
    }
  }

  async #mergeTestedRun(repo: RepoRef, request: MergeRequest): Promise<MergeResult> {
    const octokit = await this.client.octokit(repo);
    const params = { owner: repo.owner, repo: repo.name };
    const target = `${repo.owner}/${repo.name}:${request.targetBranch}`.toLowerCase();
    let headRead: string | null = null;
    if (request.method === "merge_commit" && request.exactTree && request.tested && !request.throughPullRequests && !this.#pushRefused.has(target)) {
      // The tested commit itself lands when it was built on the target's very head commit (a
      // run further down a chain was built on an equal tree, but other commits): fast-forward.
      // The target is not read first: the push is made only if the target is still where the
      // run was built (GraphQL's `updateRefs` with `beforeOid`, which also deletes the testing
      // branch in the same atomic update: docs/github.md, "What each merge method guarantees");
      // the target is read when GitHub refuses it.
      // The fast-forward is not pinned to the PRs' heads as a PR merge is: a PR pushed to since
      // it was tested (its synchronize lost or late) would stay open on GitHub, its old commit
      // landed. It is refused as a moved head (cancelled pr_updated); the others are tested again.
      // So is a PR closed or moved to another base since (its webhook lost): the push would land
      // its commits on a branch GitHub does not merge it into. Both leave the queue as their
      // webhook would have made them (pr_closed, base_branch_changed). A later PR of the request
      // that changed leaves the ones before it to be merged one by one (which stops at it).
      const { changed, repositoryId } = await this.#changedPr(octokit, params, request);
      if (changed) {
        // A PR of the request not open any more may be one an earlier attempt merged (a retry
        // after a crash): where the target is tells.
        const head = await this.#targetHead(octokit, repo, request.targetBranch);
        if (head !== request.expectedHead) return this.#afterMove(octokit, params, repo, request, head);
        if (changed.number === request.prNumbers[0]) return { kind: "refused", head, prNumber: changed.number, reason: changed.reason, message: changed.message };
        return this.#mergeOneByOne(octokit, params, repo, request, request.prNumbers, { prNumbers: [], head });
      }
      const tested = request.tested;
      const asOne = repositoryId !== null && !this.#updateRefsRefused.has(target);
      if (asOne && (await this.#fastForwardAndDelete(octokit, repositoryId, request.targetBranch, request.expectedHead, tested))) {
        this.deletedWithMerge.add(`${repo.owner}/${repo.name}:${tested.branch}`.toLowerCase());
        // Bounded: a run whose cleanup another replica did is never taken out here.
        if (this.deletedWithMerge.size > DELETED_WITH_MERGE_KEPT) this.deletedWithMerge.delete(this.deletedWithMerge.values().next().value!);
        return { kind: "merged", head: tested.sha };
      }
      // Refused as one update (a target moved — on, elsewhere, or back, which only `beforeOid`
      // sees — is the common reason), or GitHub does not take it: the target is read. The REST
      // push refuses a target moved on or elsewhere, not one moved back, so it is never made
      // without this read just before, as it was before GraphQL.
      const now = await this.#targetHead(octokit, repo, request.targetBranch);
      // Its PRs were all open on the target a moment ago: none of them landed.
      if (now !== request.expectedHead) return { kind: "target_moved", head: now };
      const pushed = await this.#fastForward(octokit, params, repo, request, tested.sha, target);
      // Refused as one update, pushed as two: GitHub's refusal was not about the target (a
      // server without the mutation, a rule on deleting the testing branch). REST from now on.
      if (asOne && "kind" in pushed && pushed.kind === "merged") this.#updateRefsRefused.add(target);
      if ("kind" in pushed) return pushed;
      headRead = pushed.head ?? now;
    }
    // Merged PR by PR: the target is read first, so that no PR is merged onto a target moved
    // since the run was built (each merge is also checked to land right on the one before).
    const head = headRead ?? (await this.#targetHead(octokit, repo, request.targetBranch));
    if (head !== request.expectedHead) return this.#afterMove(octokit, params, repo, request, head);
    return this.#mergeOneByOne(octokit, params, repo, request, request.prNumbers, { prNumbers: [], head });
  }

  /**
   * The target is at `head`, not where the queue left it (`request.expectedHead`). Every merge
   * of the request moves the target: a target still where the queue left it has none of them,
   * so the PRs are read only when it moved (a retry, or someone's push).
   */
  async #afterMove(octokit: Octokit, params: Params, repo: RepoRef, request: MergeRequest, head: string): Promise<MergeResult> {
    const method = request.method === "merge_commit" ? "merge" : request.method;
    const prs: PullRequest[] = [];
    for (const number of request.prNumbers) prs.push((await octokit.rest.pulls.get({ ...params, pull_number: number })).data);
    // Merged into the target, that is: a PR moved to another base merges there.
    const mergedHere = (pr: PullRequest) => pr.merged && pr.base.ref === request.targetBranch;
    // Repeating a merge that already happened changes nothing.
    if (prs.every(mergedHere)) return { kind: "merged", head };
    const landedBefore = prs.slice(
      0,
      prs.findIndex((pr) => !mergedHere(pr)),
    );
    const next = prs[landedBefore.length]!;
    if (landedBefore.length === 0) return { kind: "target_moved", head };
    // An earlier attempt landed the first PRs and stopped (a crash, a transient error). If
    // the target is exactly those merges on top of where the queue left it, carry on from
    // there; otherwise they are merged, and the others must be tested again.
    const steps = landedBefore.reduce((sum, pr) => sum + stepsOf(method, pr), 0);
    const prNumbers = landedBefore.map((pr) => pr.number);
    const landed = { prNumbers, head };
    if ((await this.#firstParentBack(octokit, params, head, steps)) !== request.expectedHead) return { kind: "target_moved", head, landed };
    // The earlier attempt merged the next PR into the branch it had been moved to.
    if (next.merged) return { kind: "landed_elsewhere", head, landed, prNumber: next.number, branch: next.base.ref, sha: next.merge_commit_sha ?? "" };
    return this.#mergeOneByOne(octokit, params, repo, request, request.prNumbers.slice(landedBefore.length), { prNumbers, head });
  }

  /**
   * Fast-forwards the target from `expectedHead` to the tested commit and deletes the testing
   * branch, in one atomic GraphQL `updateRefs` (docs/github.md, "Merging"): GitHub moves the
   * target only if it is still at `expectedHead` (`beforeOid`) and the move is a fast-forward
   * (no `force`), and deletes the testing branch only if it is still at the tested commit; if
   * any of that is refused, nothing is changed. true: done. false: GitHub answered with errors
   * (a target moved, a rule, a server without the mutation): the REST push says which.
   * Anything else (no answer, a rate limit) is thrown, and the merge asked again.
   */
  async #fastForwardAndDelete(octokit: Octokit, repositoryId: string, targetBranch: string, expectedHead: string, tested: { branch: string; sha: string }): Promise<boolean> {
    const refUpdates = [
      { name: `refs/heads/${targetBranch}`, beforeOid: expectedHead, afterOid: tested.sha, force: false },
      { name: `refs/heads/${tested.branch}`, beforeOid: tested.sha, afterOid: ZERO_OID, force: true },
    ];
    try {
      await octokit.graphql("mutation($input: UpdateRefsInput!) { updateRefs(input: $input) { clientMutationId } }", { input: { repositoryId, refUpdates } });
      return true;
    } catch (error) {
      if (Array.isArray((error as { errors?: unknown }).errors)) return false;
      throw refusalOf(error, "update_ref");
    }
  }

  /**
   * Fast-forwards the target to the tested commit, built on `request.expectedHead`. GitHub
   * refuses an update that is not a fast-forward, so the push itself is the test. `{ head }`:
   * not pushed, merge each PR instead (`head`: the target's head if it was read meanwhile).
   */
  async #fastForward(octokit: Octokit, params: Params, repo: RepoRef, request: MergeRequest, tested: string, target: string): Promise<MergeResult | { head: string | null }> {
    try {
      await octokit.rest.git.updateRef({ ...params, ref: `heads/${request.targetBranch}`, sha: tested, force: false });
      return { kind: "merged", head: tested };
    } catch (error) {
      const refusal = refusalOf(error, "update_ref");
      // The target branch is gone: said as a read of it says it.
      if (refusal.kind === "not_found") await this.#targetHead(octokit, repo, request.targetBranch);
      if (refusal.kind === "target_moved") {
        // Not a fast-forward: the target moved since the run was built (its PRs were all open
        // on the target a moment ago: none of them landed), or the tested commit was not built
        // on it (then each PR is merged).
        const now = await this.#targetHead(octokit, repo, request.targetBranch);
        return now !== request.expectedHead ? { kind: "target_moved", head: now } : { head: now };
      }
      // Protection or rulesets refuse the push (pull requests required, pushers restricted):
      // GitHub still merges the PRs themselves, which lands the same tree (checked as it goes).
      if (refusal.kind !== "cannot_merge" && refusal.kind !== "permission_missing") throw refusal;
      this.#pushRefused.add(target);
      return { head: null };
    }
  }

  /**
   * The first PR of the request that must not land (closed, on another base, or at a head other
   * than the tested one: changeOf), with why; null when none. One list of the target's open PRs
   * answers for a whole batch (a PR not in it — closed, moved to another base, or beyond the
   * first page — is read on its own). With it, the repository's GraphQL node id, from the list
   * (null when no PR is listed).
   */
  async #changedPr(octokit: Octokit, params: Params, request: MergeRequest): Promise<{ changed: (PrChange & { number: number }) | null; repositoryId: string | null }> {
    const { data: open } = await octokit.rest.pulls.list({ ...params, state: "open", base: request.targetBranch, per_page: 100 });
    // The repository's GraphQL id, as the list answers it (what `updateRefs` names the repository by).
    const repositoryId = open[0]?.base.repo.node_id ?? null;
    for (const number of request.prNumbers) {
      const listed = open.find((pr) => pr.number === number);
      // Listed: open, on the target; only its head is left to check.
      const pr: PullRequest = listed
        ? { number, state: "open", merged: false, merge_commit_sha: null, base: { ref: request.targetBranch }, head: listed.head }
        : (await octokit.rest.pulls.get({ ...params, pull_number: number })).data;
      const changed = changeOf(pr, request);
      if (changed) return { changed: { number, ...changed }, repositoryId };
    }
    return { changed: null, repositoryId };
  }

  /** Merges the PRs `numbers` one by one on top of `landed` (the PRs of the request already merged, and the head they made). */
  async #mergeOneByOne(octokit: Octokit, params: Params, repo: RepoRef, request: MergeRequest, numbers: readonly number[], landedSoFar: LandedPrs): Promise<MergeResult> {
    const method = request.method === "merge_commit" ? "merge" : request.method;
    const landed = [...landedSoFar.prNumbers];
    let before = landedSoFar.head;
    const soFar = (): { landed?: LandedPrs } => (landed.length > 0 ? { landed: { prNumbers: [...landed], head: before } } : {});
    for (const number of numbers) {
      // The commit that was tested, never the head as it is now: a push since must not land.
      const sha = request.heads[number];
      if (!sha) throw new Error(`no tested head is known for #${number}`);
      // Read as it is now, never as the last webhook said: GitHub merges a PR into its current
      // base, so a PR moved to another branch (its `edited` delivery lost) must not be merged,
      // and a closed one leaves as closed rather than failing on GitHub's "not mergeable".
      const { data: pr } = await octokit.rest.pulls.get({ ...params, pull_number: number });
      const changed = changeOf(pr, request);
      if (changed) return { kind: "refused", head: await this.#targetHead(octokit, repo, request.targetBranch), ...soFar(), prNumber: number, ...changed };
      const retargeted = pr.base.ref !== request.targetBranch;
      if (retargeted) {
        // Stacked, and the PRs under it landed: moved to the target first (GitHub merges a PR into its base).
        try {
          await octokit.rest.pulls.update({ ...params, pull_number: number, base: request.targetBranch });
        } catch (error) {
          const refusal = refusalOf(error, "write");
          if (refusal.transient || refusal.kind === "permission_missing") throw refusal;
          // GitHub will not move it (its words kept): it cannot merge into the target.
          const message = `#${number} could not be moved from ${pr.base.ref} to ${request.targetBranch}: ${refusal.message}`;
          return { kind: "refused", head: await this.#targetHead(octokit, repo, request.targetBranch), ...soFar(), prNumber: number, reason: "cannot_merge", message };
        }
      }
      let merged: string;
      try {
        merged = (await octokit.rest.pulls.merge({ ...params, pull_number: number, sha, merge_method: method })).data.sha;
      } catch (error) {
        const refusal = refusalOf(error, "merge_pr");
        if (refusal.transient || refusal.kind === "permission_missing" || refusal.kind === "not_found") throw refusal;
        // Just moved to the target, GitHub may answer "not mergeable" or "base branch was modified"
        // while it computes the PR again: asked again later, with backoff (the merge resumes after
        // the PRs that landed: #afterMove), never taken for a refusal of the PR.
        if (retargeted && (refusal.kind === "cannot_merge" || refusal.kind === "head_moved" || refusal.kind === "target_moved")) {
          throw new CodeHostRefusal("transient", `#${number} was just moved to ${request.targetBranch} and GitHub is not ready to merge it yet: ${refusal.message}`);
        }
        const now = await this.#targetHead(octokit, repo, request.targetBranch);
        if (refusal.kind === "head_moved") {
          // 409 says "Head branch was modified" or "Base branch was modified": ask which.
          const { data: current } = await octokit.rest.pulls.get({ ...params, pull_number: number });
          if (current.head.sha === sha) return { kind: "target_moved", head: now, ...soFar() };
          return { kind: "refused", head: now, ...soFar(), prNumber: number, reason: "head_moved", message: refusal.message };
        }
        // A refusal while the target moved under the merge may be caused by the move (a
        // conflict with it, a check it now lacks): test again on the new head.
        if (now !== before || refusal.kind !== "cannot_merge") return { kind: "target_moved", head: now, ...soFar() };
        return { kind: "refused", head: now, ...soFar(), prNumber: number, reason: "cannot_merge", message: refusal.message };
      }
      const landing = await this.#landingOf(octokit, params, request.targetBranch, before, merged, stepsOf(method, pr));
      if (!landing) {
        // Its base changed between the read and the merge: GitHub merged it there. Never a
        // merge into the target, which that merge left where it was.
        const { data: after } = await octokit.rest.pulls.get({ ...params, pull_number: number });
        return { kind: "landed_elsewhere", head: await this.#targetHead(octokit, repo, request.targetBranch), ...soFar(), prNumber: number, branch: after.base.ref, sha: merged };
      }
      // GitHub merged on top of whatever the target was by then: if that is not the commit the
      // previous merge made, someone else's commit slipped in between, and the target is not
      // the tree that was tested. The PR is merged all the same; the rest must be tested again.
      if (landing.under !== before) return { kind: "landed_on_moved_target", head: merged, ...soFar(), movedUnder: number, foreignSha: landing.under };
      landed.push(number);
      before = merged;
    }
    return { kind: "merged", head: before };
  }

  /**
   * Where a merge GitHub just made (`merged`, adding `steps` commits on the first-parent line)
   * landed: null when it is not on the target branch (GitHub merged into another base), else
   * the commit it was made on (`before` when nothing slipped in). One comparison of `before`
   * with the target answers both: the target's new commits, with their parents.
   */
  async #landingOf(octokit: Octokit, params: Params, branch: string, before: string, merged: string, steps: number): Promise<{ under: string } | null> {
    const { data } = await octokit.rest.repos.compareCommitsWithBasehead({ ...params, basehead: `${before}...${branch}` });
    const parents = new Map(data.commits.map((c) => [c.sha, c.parents[0]?.sha ?? ""]));
    if (!parents.has(merged)) {
      // GitHub lists 250 commits at most: beyond them, ask whether the target holds the merge.
      if (data.commits.length >= data.total_commits) return null;
      const { data: held } = await octokit.rest.repos.compareCommitsWithBasehead({ ...params, basehead: `${merged}...${branch}` });
      if (held.status !== "identical" && held.status !== "ahead") return null;
    }
    let under = merged;
    for (let i = 0; i < steps; i++) under = parents.get(under) ?? (await this.#firstParentBack(octokit, params, under, 1));
    return { under };
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
