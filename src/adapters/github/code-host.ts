import type { Probot } from "probot";
import { FileTooLargeError } from "../../ports/code-host.js";
import type {
  WorkflowFiles,
  CiResults,
  CiRetries,
  CodeHost,
  MergeRequest,
  MergeResult,
  Permission,
  PullRequestInfo,
  ReadPullRequestHint,
  RepoRef,
  StatusCheck,
  TargetCheck,
  TestRunRequest,
  TestRunStart,
  WorkflowRuns,
} from "../../ports/code-host.js";
import type { CheckState, RequiredChecks } from "../../domain/status-checks.js";
import type { Tx } from "../../store/database.js";
import { installationAccountsOf } from "../../store/repositories.js";
import { GitHubChecks } from "./checks.js";
import { GitHubCiRetries } from "./ci-retries.js";
import { GitHubClient } from "./client.js";
import { GitHubMerging } from "./merging.js";
import { GitHubPullRequests, type PermissionScope } from "./pull-requests.js";
import { GitHubTargets } from "./targets.js";
import { GitHubTestingBranches } from "./testing-branches.js";
import { GitHubWorkflowRuns } from "./workflow-runs.js";
import { GitHubWorkflowFiles } from "./workflow-files.js";
import type { CheckReporter } from "../../domain/preflight/checks.js";
import { refusalOf, type GitHubOperation } from "./refusals.js";
import { WRITE_PRIORITY, WRITE_SPACING_MS, WriteGate, withWritePriority } from "./write-order.js";

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
  readonly #workflows: GitHubWorkflowFiles;
  /** Deliveries get lost and reordered: runs in flight are reconciled with GitHub's own view. */
  readonly ciResults: CiResults;
  /** GitHub Actions' runs: a fork PR's upload of impacted targets names its run instead of a token. */
  readonly workflowRuns: WorkflowRuns;
  /** GitHub Actions re-runs a testing commit's failed jobs alone (flake-aware retries; `actions: write`). */
  readonly ciRetries: CiRetries;
  /** Push deliveries arrive out of order: their commits are placed with the compare API. */
  readonly ancestry: NonNullable<CodeHost["ancestry"]>;
  readonly #targets: GitHubTargets;
  /** Retries wait while an installation has less than its reserve of the rate limit left. */
  readonly rateBudget: NonNullable<CodeHost["rateBudget"]>;

  /**
   * `now`: the clock of the caches and of rate limits (the checks a branch requires are cached
   * for a while); `reservePercent`: the share of each installation's rate limit kept for first
   * attempts (DEFAULT_RESERVE_PERCENT); `writeSpacingMs`: the time between two writes' turns in
   * the write gate (WRITE_SPACING_MS, as Octokit's throttle spaces them; 0 with the throttle off),
   * or the `writeGate` itself (tests hold its turns).
   */
  constructor(probot: Probot, options: { now?: () => number; reservePercent?: number; writeSpacingMs?: number; writeGate?: WriteGate } = {}) {
    this.#client = new GitHubClient(probot, options.now ?? Date.now, options.reservePercent, options.writeGate ?? new WriteGate(options.writeSpacingMs ?? WRITE_SPACING_MS));
    this.rateBudget = { reserveReachedUntil: (repo) => this.#client.reserveReachedUntil(repo), limits: () => this.#client.rateLimits() };
    this.#pulls = new GitHubPullRequests(this.#client);
    // Testing branches deleted by the fast-forward that landed them: their cleanup skips the deletion.
    const deletedWithMerge = new Set<string>();
    this.#branches = new GitHubTestingBranches(this.#client, deletedWithMerge);
    this.#checks = new GitHubChecks(this.#client, options.now);
    this.#merging = new GitHubMerging(this.#client, deletedWithMerge);
    this.#workflows = new GitHubWorkflowFiles(this.#client, (repo, path, ref, maxBytes) => this.#pulls.readFile(repo, path, ref, maxBytes));
    this.ciResults = { ciStatusOf: (repo, sha) => classified(this.#checks.ciStatusOf(repo, sha), "read") };
    const runs = new GitHubWorkflowRuns(this.#client);
    this.workflowRuns = { workflowRun: (repo, runId) => classified(runs.workflowRun(repo, runId), "read") };
    const retries = new GitHubCiRetries(this.#client);
    this.ciRetries = { rerunFailedJobs: (repo, request) => classified(retries.rerunFailedJobs(repo, request), "write"), jobOf: (repo, id) => classified(retries.jobOf(repo, id), "read") };
    this.ancestry = { isAncestor: (repo, ancestor, descendant) => classified(this.#checks.isAncestor(repo, ancestor, descendant), "read") };
    this.#targets = new GitHubTargets(this.#client);
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

  getPullRequest(repo: RepoRef, number: number, hint: ReadPullRequestHint): Promise<PullRequestInfo | null> {
    return classified(this.#pulls.getPullRequest(repo, number, hint), "read");
  }

  pullRequestWithHead(repo: RepoRef, branch: string, hint: ReadPullRequestHint): Promise<PullRequestInfo | null> {
    return classified(this.#pulls.pullRequestWithHead(repo, branch, hint), "read");
  }

  async getBranchHead(repo: RepoRef, branch: string): Promise<string | null> {
    const octokit = await classified(this.#client.octokitOrNull(repo), "read");
    return octokit ? classified(this.#client.branchHead(octokit, repo, branch), "read") : null;
  }

  startTestRun(repo: RepoRef, request: TestRunRequest): Promise<TestRunStart> {
    return classified(this.#branches.startTestRun(repo, request), "write");
  }

  cancelTestRun(repo: RepoRef, testBranch: string, options?: { pullRequest?: boolean }): Promise<void> {
    return classified(
      withWritePriority(WRITE_PRIORITY.cleanup, () => this.#branches.cancelTestRun(repo, testBranch, options)),
      "delete_ref",
    );
  }

  checkTarget(repo: RepoRef, branch: string): Promise<TargetCheck> {
    return classified(this.#targets.checkTarget(repo, branch), "read");
  }

  requiredStatuses(repo: RepoRef, branch: string): Promise<RequiredChecks> {
    return classified(this.#checks.requiredStatuses(repo, branch), "read");
  }

  /** A branch's page on GitHub (or GitHub Enterprise Server, at its own host): `/<owner>/<repo>/tree/<branch>`. */
  branchUrl(repo: RepoRef, branch: string): string {
    return `https://${repo.host}/${encodeURIComponent(repo.owner)}/${encodeURIComponent(repo.name)}/tree/${branch.split("/").map(encodeURIComponent).join("/")}`;
  }

  setPullRequestStatus(repo: RepoRef, sha: string, status: { state: "pending" | "success" | "failure" | "error"; description: string; targetUrl?: string }): Promise<void> {
    return classified(
      withWritePriority(WRITE_PRIORITY.notification, () => this.#pulls.setPullRequestStatus(repo, sha, status)),
      "write",
    );
  }

  commentOnPullRequest(repo: RepoRef, number: number, body: string): Promise<void> {
    return classified(
      withWritePriority(WRITE_PRIORITY.notification, () => this.#pulls.commentOnPullRequest(repo, number, body)),
      "write",
    );
  }

  permissionOf(repo: RepoRef, user: string): Promise<Permission> {
    return classified(this.#pulls.permissionOf(repo, user), "read");
  }

  readFile(repo: RepoRef, path: string, ref: string, maxBytes?: number): Promise<string | null> {
    return classified(this.#pulls.readFile(repo, path, ref, maxBytes), "read");
  }

  workflowFiles(repo: RepoRef, ref: string): Promise<WorkflowFiles> {
    return classified(this.#workflows.workflowFiles(repo, ref), "read");
  }

  recentCheckReporters(repo: RepoRef, branch: string): Promise<CheckReporter[]> {
    return classified(this.#workflows.recentCheckReporters(repo, branch), "read");
  }

  forgetInstallations(): void {
    this.#client.forgetInstallations();
    this.#pulls.forgetPermissions();
  }

  forgetPermissions(scope: PermissionScope): void {
    this.#pulls.forgetPermissions(scope);
  }

  /**
   * One call through the repository's installation (`GET /repos/{owner}/{repo}`, asking for a
   * token first when none is held): resolves when GitHub answers, throws its refusal (classified:
   * installation_suspended, installation_removed, transient…) otherwise.
   */
  async probeInstallation(repo: RepoRef): Promise<void> {
    await classified(
      (async () => {
        const octokit = await this.#client.octokit(repo);
        await octokit.rest.repos.get({ owner: repo.owner, repo: repo.name });
      })(),
      "read",
    );
  }

  mergeTestedRun(repo: RepoRef, request: MergeRequest): Promise<MergeResult> {
    return classified(this.#merging.mergeTestedRun(repo, request), "write");
  }
}

/**
 * Every call of the port answers GitHub's refusals classified (refusals.ts), so nothing above
 * the port sees an Octokit error: a 422 on a status for an unknown commit is permanent, a 502 is
 * transient, a rate limit says when to ask again.
 */
async function classified<T>(call: Promise<T>, operation: GitHubOperation): Promise<T> {
  try {
    return await call;
  } catch (error) {
    // Not a refusal of GitHub's: the caller's own limit, told as such.
    if (error instanceof FileTooLargeError) throw error;
    throw refusalOf(error, operation);
  }
}
