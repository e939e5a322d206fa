import { CodeHostRefusal, type RepoRef, type TestRunRequest, type TestRunStart } from "../../ports/code-host.js";
import type { GitHubClient, Octokit, OctokitError } from "./client.js";
import { refusalOf } from "./refusals.js";

/** Where CI looks: testing branches are `greenline/<target>/<run>` (CI triggers on `greenline/**`). */
export function testingBranchOf(targetBranch: string, runId: string): string {
  return `greenline/${targetBranch}/${runId}`;
}

/**
 * Where a queue's testing branches are built, merge by merge, before each is published: outside
 * `greenline/**`, so CI configured for testing branches does not run on each intermediate push.
 * One per queue, kept between runs (a run resets it: one call, where creating and deleting it
 * would take two); the queue's effects run one at a time, so runs never share it at once.
 */
export function scratchBranchOf(targetBranch: string): string {
  return `greenline-scratch/${targetBranch}`;
}

type Params = { owner: string; repo: string };

function statusOf(error: unknown): number | undefined {
  return (error as OctokitError).status;
}

function alreadyExists(error: unknown): boolean {
  return statusOf(error) === 422 && /already exists/i.test(messageOf(error));
}

function messageOf(error: unknown): string {
  const data = (error as { response?: { data?: { message?: unknown } } }).response?.data;
  return typeof data?.message === "string" ? data.message : String((error as Error).message ?? error);
}

/** GitHub's answer when a commit to build on is gone: a permanent refusal, never a "try again". */
function gone(error: unknown, what: string): CodeHostRefusal {
  return new CodeHostRefusal("not_found", `${what}: ${messageOf(error)}`);
}

/**
 * Testing branches on GitHub: the base plus each PR of the stack (at the head pinned when it was
 * submitted), merged in order in a scratch branch, then published once at the final commit, so
 * that CI watching `greenline/**` runs once per testing branch (not once per merge).
 */
export class GitHubTestingBranches {
  /**
   * Where this process last left each queue's scratch branch ("owner/name:branch", lower-case).
   * In single mode each run starts from the run before it, which is where the scratch branch
   * was left: its reset is skipped, and the first merge's answer (its first parent) shows
   * whether the branch really was there; when it was not, the run is built again after a reset.
   */
  readonly #scratchAt = new Map<string, string>();

  /** `deletedWithMerge`: testing branches ("owner/name:branch", lower-case) the fast-forward that landed them deleted already (shared with GitHubMerging). */
  constructor(
    private readonly client: GitHubClient,
    private readonly deletedWithMerge: Set<string> = new Set(),
  ) {}

  /**
   * Safe to repeat (the effect is retried after a crash): the scratch branch is reset to where
   * the build starts, and a testing branch of the same name (an earlier attempt, or
   * a leftover of another queue's run with the same id) is moved to what was built now. A merge
   * conflict answers `conflict`; a commit that is gone, or a merge GitHub refuses (a PR changing
   * workflows without the `workflows` permission), throws a permanent CodeHostRefusal.
   */
  async startTestRun(repo: RepoRef, request: TestRunRequest): Promise<TestRunStart> {
    const octokit = await this.client.octokit(repo);
    const params = { owner: repo.owner, repo: repo.name };
    const testBranch = testingBranchOf(request.targetBranch, request.runId);
    const scratch = scratchBranchOf(request.targetBranch);
    const key = `${repo.owner}/${repo.name}:${scratch}`.toLowerCase();
    const left = this.#scratchAt.get(key);
    this.#scratchAt.delete(key);
    // An earlier run's commit holding the first PRs of the stack saves merging them again.
    let prefix: TestRunRequest["prefix"] | null = null;
    let unverified: string | null = null;
    if (request.prefix && left === request.prefix.sha) [prefix, unverified] = [request.prefix, left];
    else if (!request.prefix && left === request.baseSha) unverified = left;
    else {
      prefix = request.prefix && (await this.#startScratch(octokit, params, scratch, request.prefix.sha, { fallBack: true })) ? request.prefix : null;
      if (!prefix) await this.#startScratch(octokit, params, scratch, request.baseSha, { fallBack: false });
    }
    let sha = prefix?.sha ?? request.baseSha;
    for (const number of request.stack.slice(prefix?.length ?? 0)) {
      const head = request.heads[number];
      if (!head) throw new CodeHostRefusal("not_found", `#${number} has no pinned head commit to test`);
      try {
        const { data, status } = await octokit.rest.repos.merge({ ...params, base: scratch, head, commit_message: `Greenline: test #${number} (${request.runId})` });
        // The scratch branch was not where this process left it (another instance, a manual
        // push; or nothing merged, which cannot say): built again from a reset.
        if (unverified !== null && (status !== 201 || data.parents[0]?.sha !== unverified)) return this.startTestRun(repo, request);
        unverified = null;
        // 204: the head is in the branch already (nothing to merge).
        if (status === 201) sha = data.sha;
      } catch (error) {
        // A conflict (or a refusal) on a scratch branch that may not be where it was left says nothing yet.
        if (unverified !== null) return this.startTestRun(repo, request);
        if (statusOf(error) === 409) return { kind: "conflict", prNumber: number };
        if (statusOf(error) === 404) throw gone(error, `the head commit ${head} of #${number} is gone`);
        const refusal = refusalOf(error, "merge_branches");
        throw refusal.transient ? refusal : new CodeHostRefusal(refusal.kind, `#${number}: ${refusal.message}`);
      }
    }
    await this.#publish(octokit, params, testBranch, sha);
    // With no merge, where the scratch branch is was never checked: not remembered.
    if (unverified === null) this.#scratchAt.set(key, sha);
    if (request.pullRequest) await this.#openPullRequest(octokit, params, testBranch, request);
    return { kind: "started", testBranch, sha };
  }

  /**
   * Points the scratch branch at `sha`, whatever an earlier run or attempt left on it. false
   * when that commit is gone and `fallBack` (an earlier run's commit: the caller builds from the
   * base instead); a gone base is a permanent refusal.
   */
  async #startScratch(octokit: Octokit, params: Params, scratch: string, sha: string, options: { fallBack: boolean }): Promise<boolean> {
    let refused: unknown;
    try {
      await octokit.rest.git.updateRef({ ...params, ref: `heads/${scratch}`, sha, force: true });
      return true;
    } catch (error) {
      refused = error;
    }
    if (statusOf(refused) === 422 && /reference does not exist/i.test(messageOf(refused))) {
      // The queue's first run: the scratch branch is created.
      try {
        await octokit.rest.git.createRef({ ...params, ref: `refs/heads/${scratch}`, sha });
        return true;
      } catch (error) {
        refused = error;
      }
    }
    // 422 "Object does not exist": the commit is gone.
    if (statusOf(refused) !== 422 && statusOf(refused) !== 404) throw refusalOf(refused, "update_ref");
    if (options.fallBack) return false;
    throw gone(refused, `the base commit ${sha} is gone`);
  }

  /** Creates the testing branch at `sha`: its one push, the one CI runs on. */
  async #publish(octokit: Octokit, params: Params, testBranch: string, sha: string): Promise<void> {
    try {
      await octokit.rest.git.createRef({ ...params, ref: `refs/heads/${testBranch}`, sha });
    } catch (error) {
      if (!alreadyExists(error)) throw refusalOf(error, "create_ref");
      // Never test on a branch whose content is unknown: it is moved to what was built now.
      await octokit.rest.git.updateRef({ ...params, ref: `heads/${testBranch}`, sha, force: true });
    }
  }

  async #deleteBranch(octokit: Octokit, params: Params, branch: string): Promise<void> {
    try {
      await octokit.rest.git.deleteRef({ ...params, ref: `heads/${branch}` });
    } catch (error) {
      // Gone already ("Reference does not exist").
      if (statusOf(error) !== 404 && statusOf(error) !== 422) throw refusalOf(error, "delete_ref");
    }
  }

  /**
   * A draft PR from the testing branch to the target, so that workflows triggered only by
   * `pull_request` run on it. An earlier attempt's PR is kept (422 "A pull request already exists").
   */
  async #openPullRequest(octokit: Octokit, params: Params, testBranch: string, request: TestRunRequest): Promise<void> {
    const prs = request.stack.map((n) => `#${n}`).join(", ");
    const pull = {
      ...params,
      head: testBranch,
      base: request.targetBranch,
      title: `Greenline ${request.runId}: testing ${prs}`,
      body: `Greenline's merge queue tests ${prs} on \`${request.targetBranch}\` here. It closes this pull request when the run ends; do not merge it.`,
    };
    try {
      await octokit.rest.pulls.create({ ...pull, draft: true });
    } catch (error) {
      if (alreadyExists(error)) return;
      // Repositories whose plan has no draft PRs refuse `draft`: an ordinary PR does the same.
      if (statusOf(error) === 422 && /draft/i.test(messageOf(error))) {
        await octokit.rest.pulls.create(pull);
        return;
      }
      throw refusalOf(error, "write");
    }
  }

  /**
   * Closes the testing branch's PR (when the queue opens them) and deletes the branch; CI runs
   * on a deleted branch are left to finish (their results are ignored).
   */
  async cancelTestRun(repo: RepoRef, testBranch: string, options: { pullRequest?: boolean } = {}): Promise<void> {
    const octokit = await this.client.octokit(repo);
    const params = { owner: repo.owner, repo: repo.name };
    if (options.pullRequest) {
      const { data: open } = await octokit.rest.pulls.list({ ...params, head: `${repo.owner}:${testBranch}`, state: "open" });
      for (const pr of open) await octokit.rest.pulls.update({ ...params, pull_number: pr.number, state: "closed" });
    }
    // Deleted with the fast-forward that landed it (GitHubMerging): nothing left to delete. Kept
    // in this process only: another replica cleaning up deletes again (GitHub answers 422, ignored).
    if (this.deletedWithMerge.delete(`${repo.owner}/${repo.name}:${testBranch}`.toLowerCase())) return;
    await this.#deleteBranch(octokit, params, testBranch);
  }
}
