import type { Mergeability } from "../domain/states.js";

export type RepoRef = { host: string; owner: string; name: string };

/** A repository's key: lower-case "host/owner/name" (GitHub names are case-insensitive). */
export function repositoryKey(repo: RepoRef): string {
  return `${repo.host}/${repo.owner}/${repo.name}`.toLowerCase();
}

export type PullRequestInfo = {
  number: number;
  title: string;
  author: string;
  headSha: string;
  baseBranch: string;
  state: "open" | "closed" | "merged";
  mergeability: Mergeability;
  /**
   * The target commit the PR's head is up to date with, when its own checks are green (what
   * a direct merge needs); null when it is behind the target or its checks are not green.
   */
  greenBaseSha: string | null;
};

export type TestRunRequest = {
  queueId: string;
  runId: string;
  targetBranch: string;
  /** The commit to build on, and the PRs to apply on top of it, in order. */
  baseSha: string;
  stack: number[];
};

export type TestRunStart = { kind: "started"; testBranch: string; sha: string } | { kind: "conflict"; prNumber: number };

export type MergeRequest = {
  targetBranch: string;
  /** The head the target must still have: the run's base plus the PRs merged since. */
  expectedHead: string;
  prNumbers: number[];
  /** The testing branch that tested these PRs; null for a direct merge (no queue run). */
  tested: { branch: string; sha: string } | null;
  /**
   * true: the target must end with exactly the tested tree (single mode; the target is
   * fast-forwarded to the tested commit where the merge method allows). false: other lanes'
   * PRs may have merged since the run started (parallel mode), or nothing was tested (direct
   * merge): each PR is merged on its own.
   */
  exactTree: boolean;
  method: "merge_commit" | "squash" | "rebase";
};

export type MergeResult = { kind: "merged"; head: string } | { kind: "target_moved"; head: string };

/**
 * Everything Greenline asks of the code host. GitHub (through Octokit) and the sandbox
 * implement it. Every method is safe to call again with the same arguments (effects are
 * retried after a crash).
 */
export type Permission = "admin" | "write" | "read" | "none";

export interface CodeHost {
  readonly kind: "sandbox" | "github";
  /** The PR, or null when the repository has no such PR. */
  getPullRequest(repo: RepoRef, number: number, hint: { targetBranch: string }): Promise<PullRequestInfo | null>;
  /** The head commit of a branch, or null when it does not exist. */
  getBranchHead(repo: RepoRef, branch: string): Promise<string | null>;
  /** Builds the testing branch (base + stack) and starts CI on it. */
  startTestRun(repo: RepoRef, request: TestRunRequest): Promise<TestRunStart>;
  /** Stops CI on a testing branch and deletes it. */
  cancelTestRun(repo: RepoRef, testBranch: string): Promise<void>;
  /**
   * The statuses a testing branch for `branch` must report green, from the code host's branch
   * protection (used when the queue sets no requiredStatuses of its own).
   */
  requiredStatuses(repo: RepoRef, branch: string): Promise<string[]>;
  /** Sets the merge queue's status on a PR's head commit (context `greenline/merge-queue`). */
  setPullRequestStatus(repo: RepoRef, sha: string, status: { state: "pending" | "success" | "failure" | "error"; description: string }): Promise<void>;
  /** Comments on a PR. */
  commentOnPullRequest(repo: RepoRef, number: number, body: string): Promise<void>;
  /** What a user may do in the repository, as GitHub answers it ("none" for a stranger). */
  permissionOf(repo: RepoRef, user: string): Promise<Permission>;
  /** Lands the PRs whose combined tree the testing branch tested. */
  mergeTestedRun(repo: RepoRef, request: MergeRequest): Promise<MergeResult>;
  /** A file's text at a ref (commit sha or branch), or null when there is no such file or ref. */
  readFile(repo: RepoRef, path: string, ref: string): Promise<string | null>;
}
