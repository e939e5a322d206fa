import { createHash } from "node:crypto";
import type { CodeHost, PullRequestInfo, RepoRef } from "./code-host.js";

/**
 * The code host used when no GitHub App is configured: every repository exists, and every
 * pull request referenced through the API exists in it, open and mergeable, based on the
 * branch of the queue it is submitted to. Its data is derived, so every replica agrees.
 */
export class SandboxCodeHost implements CodeHost {
  readonly kind = "sandbox" as const;

  async getPullRequest(repo: RepoRef, number: number, hint: { targetBranch: string }): Promise<PullRequestInfo> {
    const headSha = createHash("sha1").update(`${repo.host}/${repo.owner}/${repo.name}#${number}`.toLowerCase()).digest("hex");
    return {
      number,
      title: `Sandbox pull request #${number}`,
      author: `sandbox-author-${(number % 7) + 1}`,
      headSha,
      baseBranch: hint.targetBranch,
      state: "open",
      mergeability: "mergeable",
    };
  }
}
