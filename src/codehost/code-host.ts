import type { Mergeability } from "../domain/states.js";

export type RepoRef = { host: string; owner: string; name: string };

export type PullRequestInfo = {
  number: number;
  title: string;
  author: string;
  headSha: string;
  baseBranch: string;
  state: "open" | "closed" | "merged";
  mergeability: Mergeability;
};

/**
 * Everything Greenline asks of the code host. GitHub (through Octokit) and the sandbox
 * implement it.
 */
export interface CodeHost {
  readonly kind: "sandbox" | "github";
  /** The PR, or null when the repository has no such PR. */
  getPullRequest(repo: RepoRef, number: number, hint: { targetBranch: string }): Promise<PullRequestInfo | null>;
}
