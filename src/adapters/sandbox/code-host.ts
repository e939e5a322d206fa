import { createHash } from "node:crypto";
import type { Database, Tx } from "../../store/database.js";
import * as sandboxStore from "../../store/sandbox-store.js";
import { refusalOf, type GitHubOperation } from "../github/refusals.js";
import type { SandboxFaults } from "../../domain/sandbox-faults.js";
import type { CheckState, RequiredChecks } from "../../domain/status-checks.js";
import {
  FILE_READ_BYTES,
  FileTooLargeError,
  repositoryKey,
  type CiRetries,
  type CodeHost,
  type MergeRequest,
  type MergeResult,
  type Permission,
  type PolledCiResult,
  type PolledEvents,
  type PullRequestInfo,
  type ReadPullRequestHint,
  type RepoRef,
  type StatusCheck,
  type TestRunRequest,
  type TestRunStart,
} from "../../ports/code-host.js";

export type SandboxOptions = {
  /** How long simulated CI takes, in ms (GREENLINE_SANDBOX_CI_MS). */
  ciMs: number;
  /** Probability that a PR's changes break the build: every run holding it fails. */
  failureRate: number;
  /** Probability that a run fails although nothing in it is broken. */
  flakeRate: number;
  /** Source of randomness in [0, 1) for flakes; injected so tests are repeatable. */
  random: () => number;
  now: () => Date;
  /** A testing aid: code hosts that are slow or failing for some owners (GREENLINE_SANDBOX_FAULTS). */
  faults?: SandboxFaults;
};

type Tree = sandboxStore.SandboxTree;

/** The status context simulated CI reports on testing branches. */
export const SANDBOX_CI_CONTEXT = "greenline/sandbox-ci";

function shaOf(...parts: string[]): string {
  return createHash("sha1").update(parts.join("\0")).digest("hex");
}

/** A number in [0, 1) fixed by its input: whether a PR is broken never changes between runs. */
function unitHash(text: string): number {
  return createHash("sha256").update(text).digest().readUInt32BE(0) / 2 ** 32;
}

/**
 * The code host used when no GitHub App is configured: a simulated GitHub kept in the
 * database. Repositories are commit graphs with whole trees; every PR referenced through the
 * API exists (it adds a file of its own on top of the branch it targets); testing branches are
 * built by applying PRs in order and can conflict; merges land the PRs on the target and check
 * that the result is the very tree that was tested; CI reports after `ciMs`, failing runs that
 * hold a broken PR and flaking at `flakeRate`.
 */
export class SandboxCodeHost implements CodeHost, PolledEvents {
  readonly name = "sandbox";
  /** The sandbox shows PR states through the API only. */
  readonly notifiesPullRequests = false;
  /** No webhooks: the worker polls simulated CI and the target branches. */
  readonly polling: PolledEvents = this;

  constructor(
    private readonly db: Database,
    private readonly options: SandboxOptions,
  ) {}

  /**
   * The owner's fault, if any (GREENLINE_SANDBOX_FAULTS): waits, or throws the refusal GitHub's
   * classification makes of a 500. Before any database work: a slow call holds no connection.
   */
  async #fault(repo: RepoRef, operation: GitHubOperation): Promise<void> {
    const fault = this.options.faults?.get(repo.owner.toLowerCase());
    if (!fault) return;
    if (fault.kind === "slow") {
      await new Promise((resolve) => setTimeout(resolve, fault.ms));
      return;
    }
    if (fault.kind === "hold") {
      await fault.until;
      return;
    }
    if (fault.kind === "fail" || operation !== "read") {
      throw refusalOf({ status: 500, message: `sandbox: the code host of ${repo.owner} answered 500 (GREENLINE_SANDBOX_FAULTS)` }, operation);
    }
  }

  /** Anyone may: a repository belongs to the first organization that references it. */
  async mayOwnRepository(): Promise<boolean> {
    return true;
  }

  /** Simulated CI reports a run's outcome as a whole, under one context. */
  statusChecksOf(run: { state: CheckState }): StatusCheck[] {
    return [{ context: SANDBOX_CI_CONTEXT, state: run.state }];
  }

  async getPullRequest(repo: RepoRef, number: number, hint: ReadPullRequestHint): Promise<PullRequestInfo> {
    await this.#fault(repo, "read");
    const key = repositoryKey(repo);
    // A PR the sandbox has is read as GitHub answers one: without taking the writer's turn.
    const known = await this.db.read((tx) => sandboxStore.findSandboxPullRequest(tx, key, number));
    const pr =
      known ??
      (await this.db.transaction(async (tx) => {
        const existing = await sandboxStore.findSandboxPullRequest(tx, key, number);
        if (existing) return existing;
        const baseSha = await this.#ensureBranch(tx, key, hint.targetBranch);
        const base = await this.#tree(tx, baseSha);
        const patch: Tree = { [`changes/pr-${number}.txt`]: `Change made by pull request #${number}\n` };
        const headSha = await this.#commit(tx, key, baseSha, { ...base, ...patch }, `Pull request #${number}`);
        // Two replicas may reference a new PR at once: the first one stored stays.
        return sandboxStore.saveSandboxPullRequest(
          tx,
          {
            repoKey: key,
            number,
            title: `Sandbox pull request #${number}`,
            author: `sandbox-author-${(number % 7) + 1}`,
            baseBranch: hint.targetBranch,
            baseSha,
            headSha,
            patch,
            state: "open",
            broken: unitHash(`${key}#${number}`) < this.options.failureRate,
          },
          false,
        );
      }));
    return {
      number: pr.number,
      title: pr.title,
      author: pr.author,
      headSha: pr.headSha,
      baseBranch: pr.baseBranch,
      state: pr.state,
      mergeability: "mergeable",
      // A broken PR's own checks are red; a sound one is green on the commit it was opened on.
      greenBaseSha: pr.broken ? null : pr.baseSha,
    };
  }

  /** The sandbox's pull requests are all based on the queue's branch: none is stacked. */
  async pullRequestWithHead(): Promise<PullRequestInfo | null> {
    return null;
  }

  async getBranchHead(repo: RepoRef, branch: string): Promise<string> {
    await this.#fault(repo, "read");
    // The worker asks this every tick: a plain read, and a write transaction only to create the branch.
    const key = repositoryKey(repo);
    const sha = await this.db.read((tx) => sandboxStore.sandboxRefSha(tx, key, branch));
    return sha ?? this.db.transaction((tx) => this.#ensureBranch(tx, key, branch));
  }

  async startTestRun(repo: RepoRef, request: TestRunRequest): Promise<TestRunStart> {
    await this.#fault(repo, "create_ref");
    const key = repositoryKey(repo);
    const testBranch = `greenline/${request.targetBranch}/${request.runId}`;
    return this.db.transaction(async (tx) => {
      const jobId = `${request.queueId}:${request.runId}`;
      const existing = await sandboxStore.sandboxRefSha(tx, key, testBranch);
      if (existing) return { kind: "started", testBranch, sha: existing } as const;
      let sha = request.baseSha;
      let tree = await this.#tree(tx, sha);
      const prs = [];
      for (const number of request.stack) {
        const pr = await sandboxStore.getSandboxPullRequest(tx, key, number);
        const applied = applyPatch(tree, await this.#tree(tx, pr.baseSha), pr.patch);
        if (!applied) return { kind: "conflict", prNumber: number } as const;
        tree = applied;
        sha = await this.#commit(tx, key, sha, tree, `Pull request #${number} (testing ${request.runId})`);
        prs.push(pr);
      }
      await sandboxStore.createSandboxRef(tx, key, testBranch, sha);
      const broken = prs.some((pr) => pr.broken);
      await sandboxStore.insertSandboxCiJob(tx, { id: jobId, queueId: request.queueId, runId: request.runId, sha, dueAt: this.#ciDue(), outcome: this.#ciOutcome(broken) });
      return { kind: "started", testBranch, sha } as const;
    });
  }

  /** Simulated CI fails a run holding a broken PR, and flakes at `flakeRate`. */
  #ciOutcome(broken: boolean): sandboxStore.SandboxCiOutcome {
    if (broken) return "failed";
    return this.options.random() < this.options.flakeRate ? "flaked" : "passed";
  }

  #ciDue(): Date {
    return new Date(this.options.now().getTime() + this.options.ciMs);
  }

  /**
   * Runs the testing commit's failed CI job again: a new job, due after `ciMs`, fails again if
   * the run holds a broken PR, else flakes at `flakeRate` as any run does. Nothing to re-run
   * ({rerun: 0}) while its latest job has not reported (it is running, again perhaps) or when
   * that job did not fail.
   */
  readonly ciRetries: CiRetries = {
    // Its CI results come polled, one check of one step: no job records to read.
    jobOf: async () => null,
    rerunFailedJobs: async (repo, request) => {
      await this.#fault(repo, "write");
      return this.db.transaction(async (tx) => {
        const jobs = await sandboxStore.sandboxCiJobsOf(tx, request);
        const latest = jobs.at(-1);
        if (!latest?.delivered || (latest.outcome !== "failed" && latest.outcome !== "flaked")) return { rerun: 0 };
        const id = `${request.queueId}:${request.runId}:attempt-${jobs.length + 1}`;
        await sandboxStore.insertSandboxCiJob(tx, { id, queueId: request.queueId, runId: request.runId, sha: request.sha, dueAt: this.#ciDue(), outcome: this.#ciOutcome(latest.outcome === "failed") });
        return { rerun: 1 };
      });
    },
  };

  async cancelTestRun(repo: RepoRef, testBranch: string): Promise<void> {
    await this.#fault(repo, "delete_ref");
    const key = repositoryKey(repo);
    await this.db.transaction(async (tx) => {
      const sha = await sandboxStore.sandboxRefSha(tx, key, testBranch);
      if (!sha) return;
      await sandboxStore.deleteSandboxRef(tx, key, testBranch);
      await sandboxStore.cancelSandboxCiJobs(tx, sha, this.options.now());
    });
  }

  /** Never asked (notifiesPullRequests is false). */
  async setPullRequestStatus(repo: RepoRef): Promise<void> {
    await this.#fault(repo, "write");
  }

  async commentOnPullRequest(repo: RepoRef): Promise<void> {
    await this.#fault(repo, "write");
  }

  /** The sandbox has no users to tell apart: whoever reaches it may write. */
  async permissionOf(repo: RepoRef): Promise<Permission> {
    await this.#fault(repo, "read");
    return "write";
  }

  async requiredStatuses(repo: RepoRef): Promise<RequiredChecks> {
    await this.#fault(repo, "read");
    return { contexts: [SANDBOX_CI_CONTEXT], source: "branch_protection" };
  }

  async mergeTestedRun(repo: RepoRef, request: MergeRequest): Promise<MergeResult> {
    await this.#fault(repo, "merge_branches");
    const key = repositoryKey(repo);
    return this.db.transaction(async (tx) => {
      const head = await this.#ensureBranch(tx, key, request.targetBranch);
      const pending = [];
      for (const number of request.prNumbers) {
        const pr = await sandboxStore.getSandboxPullRequest(tx, key, number);
        if (pr.state !== "merged") pending.push(pr);
      }
      // Repeating a merge that already happened changes nothing.
      if (pending.length === 0) return { kind: "merged", head };
      if (head !== request.expectedHead) return { kind: "target_moved", head };
      // A direct merge needs the PR up to date with the target: the tree it was checked on.
      if (!request.tested && pending.some((pr) => pr.baseSha !== head || pr.broken)) return { kind: "target_moved", head };
      let sha = head;
      let tree = await this.#tree(tx, head);
      for (const pr of pending) {
        const applied = applyPatch(tree, await this.#tree(tx, pr.baseSha), pr.patch);
        if (!applied) throw new Error(`sandbox: PR #${pr.number} conflicts at merge time, after its run passed`);
        tree = applied;
        sha = await this.#commit(tx, key, sha, tree, `${pr.title} (#${pr.number})`);
      }
      // The invariant, checked where it matters: the target now holds the tree that was tested
      // (whole, or in parallel mode every file the merged PRs touch).
      if (request.tested) {
        const tested = await this.#tree(tx, request.tested.sha);
        const files = request.exactTree ? null : new Set(pending.flatMap((pr) => Object.keys(pr.patch)));
        const pick = (t: Tree) => JSON.stringify(sortTree(files ? Object.fromEntries(Object.entries(t).filter(([f]) => files.has(f))) : t));
        if (pick(tree) !== pick(tested)) {
          throw new Error(`sandbox: merging ${request.prNumbers.join(", ")} would not produce the tree run ${request.tested.branch} tested`);
        }
      }
      await sandboxStore.moveSandboxRef(tx, key, request.targetBranch, sha);
      await sandboxStore.markSandboxPullRequestsMerged(
        tx,
        key,
        pending.map((p) => p.number),
      );
      return { kind: "merged", head: sha };
    });
  }

  /**
   * Opens a pull request that changes `files` on top of `targetBranch` (tests and demos); a
   * broken PR fails every run that holds it.
   */
  async openPullRequest(repo: RepoRef, pr: { number: number; targetBranch: string; files: Tree; broken?: boolean; title?: string }): Promise<string> {
    const key = repositoryKey(repo);
    return this.db.transaction(async (tx) => {
      const baseSha = await this.#ensureBranch(tx, key, pr.targetBranch);
      const headSha = await this.#commit(tx, key, baseSha, { ...(await this.#tree(tx, baseSha)), ...pr.files }, `Pull request #${pr.number}`);
      await sandboxStore.saveSandboxPullRequest(
        tx,
        {
          repoKey: key,
          number: pr.number,
          title: pr.title ?? `Sandbox pull request #${pr.number}`,
          author: "sandbox-author",
          baseBranch: pr.targetBranch,
          baseSha,
          headSha,
          patch: pr.files,
          state: "open",
          broken: pr.broken ?? false,
        },
        true,
      );
      return headSha;
    });
  }

  async readFile(repo: RepoRef, path: string, ref: string, maxBytes = FILE_READ_BYTES): Promise<string | null> {
    await this.#fault(repo, "read");
    const key = repositoryKey(repo);
    const text = await this.db.read(async (tx) => {
      const byRef = await sandboxStore.sandboxRefSha(tx, key, ref);
      const commit = await sandboxStore.findSandboxCommit(tx, byRef ?? ref);
      if (!commit || commit.repoKey !== key) return null;
      return commit.tree[path] ?? null;
    });
    const bytes = text === null ? 0 : Buffer.byteLength(text);
    if (bytes > maxBytes) throw new FileTooLargeError(path, bytes, maxBytes);
    return text;
  }

  /** The files on a branch. */
  async branchFiles(repo: RepoRef, branch: string): Promise<Tree> {
    const key = repositoryKey(repo);
    return this.db.transaction(async (tx) => this.#tree(tx, await this.#ensureBranch(tx, key, branch)));
  }

  /** Pushes a commit to a branch outside the queue (tests and demos). */
  async pushToBranch(repo: RepoRef, branch: string, files: Tree): Promise<string> {
    const key = repositoryKey(repo);
    return this.db.transaction(async (tx) => {
      const head = await this.#ensureBranch(tx, key, branch);
      const sha = await this.#commit(tx, key, head, { ...(await this.#tree(tx, head)), ...files }, "Pushed outside the queue");
      await sandboxStore.moveSandboxRef(tx, key, branch, sha);
      return sha;
    });
  }

  /** Simulated CI results that are due, oldest first. */
  async dueCiResults(now: Date): Promise<PolledCiResult[]> {
    const due = await this.db.read((tx) => sandboxStore.dueSandboxCiJobs(tx, now));
    return due.map((result) => ({ ...result, check: SANDBOX_CI_CONTEXT }));
  }

  /** Marks a CI result delivered, inside the transaction that applied it. */
  async markDelivered(tx: Tx, id: string, at: Date): Promise<boolean> {
    return sandboxStore.markSandboxCiJobDelivered(tx, id, at);
  }

  async #ensureBranch(tx: Tx, key: string, branch: string): Promise<string> {
    const sha = await sandboxStore.sandboxRefSha(tx, key, branch);
    if (sha) return sha;
    const root = await this.#commit(tx, key, null, { "README.md": `# ${key}\n` }, "Initial commit");
    return sandboxStore.insertSandboxRef(tx, key, branch, root);
  }

  async #tree(tx: Tx, sha: string): Promise<Tree> {
    const commit = await sandboxStore.findSandboxCommit(tx, sha);
    if (!commit) throw new Error(`sandbox: no commit ${sha}`);
    return commit.tree;
  }

  async #commit(tx: Tx, key: string, parent: string | null, tree: Tree, message: string): Promise<string> {
    const body = JSON.stringify(sortTree(tree));
    const sha = shaOf(key, parent ?? "", body, message);
    await sandboxStore.insertSandboxCommit(tx, { sha, repoKey: key, parentSha: parent, tree: body, message, createdAt: this.options.now() });
    return sha;
  }
}

function sortTree(tree: Tree): Tree {
  return Object.fromEntries(Object.entries(tree).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * Applies a PR's patch (computed against `base`) to `current`, or null on a conflict: a path
 * the PR changes that changed differently since the PR's base.
 */
export function applyPatch(current: Tree, base: Tree, patch: Tree): Tree | null {
  const next = { ...current };
  for (const [path, content] of Object.entries(patch)) {
    if (current[path] !== base[path] && current[path] !== content) return null;
    next[path] = content;
  }
  return next;
}
