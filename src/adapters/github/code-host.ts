import type { Probot } from "probot";
import type { CodeHost, MergeRequest, MergeResult, Permission, PullRequestInfo, RepoRef, StatusCheck, TestRunRequest, TestRunStart } from "../../ports/code-host.js";
import type { CheckState } from "../../domain/status-checks.js";
import type { Tx } from "../../store/database.js";
import { installationAccountsOf } from "../../store/repositories.js";
import { GitHubChecks } from "./checks.js";
import { GitHubClient } from "./client.js";
import { GitHubMerging } from "./merging.js";
import { GitHubPullRequests } from "./pull-requests.js";
import { GitHubTestingBranches } from "./testing-branches.js";

export { mergeabilityOf, PR_STATUS_CONTEXT } from "./pull-requests.js";

/**
 * The code host port over GitHub's REST API, through Probot's authenticated Octokit. Each part
 * of the port lives in a module of its own: the client (installations), pull requests, testing
 * branches, checks and merging.
 */
export class GitHubCodeHost implements CodeHost {
  readonly name = "github";
  readonly notifiesPullRequests = true;
  readonly #client: GitHubClient;
  readonly #pulls: GitHubPullRequests;
  readonly #branches: GitHubTestingBranches;
  readonly #checks: GitHubChecks;
  readonly #merging: GitHubMerging;

  constructor(probot: Probot) {
    this.#client = new GitHubClient(probot);
    this.#pulls = new GitHubPullRequests(this.#client);
    this.#branches = new GitHubTestingBranches(this.#client);
    this.#checks = new GitHubChecks(this.#client);
    this.#merging = new GitHubMerging(this.#client);
  }

  /**
   * An organization owns the repositories of the accounts where the App is installed for it
   * (the installation webhooks record them).
   */
  async mayOwnRepository(tx: Tx, organizationId: string, repo: RepoRef): Promise<boolean> {
    const accounts = await installationAccountsOf(tx, organizationId);
    return accounts.some((login) => login.toLowerCase() === repo.owner.toLowerCase());
  }

  statusChecksOf(run: { reported: Readonly<Record<string, CheckState>> }): StatusCheck[] {
    return this.#checks.statusChecksOf(run);
  }

  getPullRequest(repo: RepoRef, number: number): Promise<PullRequestInfo | null> {
    return this.#pulls.getPullRequest(repo, number);
  }

  async getBranchHead(repo: RepoRef, branch: string): Promise<string | null> {
    const octokit = await this.#client.octokitOrNull(repo);
    return octokit ? this.#client.branchHead(octokit, repo, branch) : null;
  }

  startTestRun(repo: RepoRef, request: TestRunRequest): Promise<TestRunStart> {
    return this.#branches.startTestRun(repo, request);
  }

  cancelTestRun(repo: RepoRef, testBranch: string): Promise<void> {
    return this.#branches.cancelTestRun(repo, testBranch);
  }

  requiredStatuses(repo: RepoRef, branch: string): Promise<string[]> {
    return this.#checks.requiredStatuses(repo, branch);
  }

  setPullRequestStatus(repo: RepoRef, sha: string, status: { state: "pending" | "success" | "failure" | "error"; description: string }): Promise<void> {
    return this.#pulls.setPullRequestStatus(repo, sha, status);
  }

  commentOnPullRequest(repo: RepoRef, number: number, body: string): Promise<void> {
    return this.#pulls.commentOnPullRequest(repo, number, body);
  }

  permissionOf(repo: RepoRef, user: string): Promise<Permission> {
    return this.#pulls.permissionOf(repo, user);
  }

  readFile(repo: RepoRef, path: string, ref: string): Promise<string | null> {
    return this.#pulls.readFile(repo, path, ref);
  }

  forgetInstallations(): void {
    this.#client.forgetInstallations();
  }

  mergeTestedRun(repo: RepoRef, request: MergeRequest): Promise<MergeResult> {
    return this.#merging.mergeTestedRun(repo, request);
  }
}
