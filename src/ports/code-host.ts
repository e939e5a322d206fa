import type { Mergeability } from "../domain/states.js";
import type { CheckReport, CheckState, RequiredChecks } from "../domain/status-checks.js";
import type { Tx } from "../store/database.js";
import type { CheckReporter } from "../domain/preflight/checks.js";

export type RepoRef = { host: string; owner: string; name: string };

/** The largest file readFile reads unless told otherwise (GitHub sends files up to 1 MiB inline). */
export const FILE_READ_BYTES = 1024 * 1024;

/** A file readFile was asked for is larger than the caller takes: its path and size. */
export class FileTooLargeError extends Error {
  constructor(
    readonly path: string,
    readonly bytes: number,
    readonly maxBytes: number,
  ) {
    super(`${path} is ${bytes} bytes, larger than ${maxBytes}`);
  }
}

/** How many workflow files a preflight reads at most. */
export const WORKFLOW_FILES_READ = 50;
export type WorkflowFiles = { files: { path: string; text: string | null; error: string | null }[]; left: string[] };

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

/** What a PR is read for: the queue's target branch, and whether `greenBaseSha` is needed. */
export type ReadPullRequestHint = { targetBranch: string; directMerge: boolean };

export type TestRunRequest = {
  queueId: string;
  runId: string;
  targetBranch: string;
  /** The commit to build on, and the PRs to apply on top of it, in order. */
  baseSha: string;
  stack: number[];
  /**
   * The head commit pinned for each PR of the stack (when it was submitted): the commit to test,
   * whatever the PR's head is by now.
   */
  heads: Readonly<Record<number, string>>;
  /**
   * Open a PR from the testing branch to the target too (the queue's createPrsForTestingBranches),
   * for CI that runs only on pull requests; cancelTestRun closes it.
   */
  pullRequest?: boolean;
  /**
   * A commit that already holds the base plus the first `length` PRs of the stack (an earlier
   * run's testing branch): the build may start there and merge only the PRs after them.
   */
  prefix?: { length: number; sha: string } | null;
};

/** Whether the App can merge into a branch, as the code host's rules say; `reason` tells what to change. */
export type TargetCheck = { ok: true } | { ok: false; reason: string };

export type TestRunStart = { kind: "started"; testBranch: string; sha: string } | { kind: "conflict"; prNumber: number };

export type MergeRequest = {
  targetBranch: string;
  /** The head the target must still have: the run's base plus the PRs merged since. */
  expectedHead: string;
  prNumbers: number[];
  /** The head commit each PR was tested at: a PR whose head has moved since must not be merged. */
  heads: Readonly<Record<number, string>>;
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
  /**
   * Merge each PR through the code host's pull request merge, never by moving the target to the
   * tested commit: the host's branch rules then check each PR's own head (the queue's
   * pullRequestChecks rely on that).
   */
  throughPullRequests?: boolean;
  /**
   * Stacked PRs of the request (docs/stacks.md): the base each is expected to have (the head
   * branch of the PR it is stacked on). Such a PR is moved to the target branch just before it
   * merges, once the PRs under it have landed, as GitHub does when a merged PR's branch is
   * deleted; it is merged through the code host's pull request merge. Absent: none.
   */
  stackBases?: Readonly<Record<number, string>>;
  /**
   * PRs stacked right on the request's PRs that do not merge with them, with the base each has
   * (the branch of a PR of the request): moved to the target branch once the request has landed,
   * as GitHub does when a merged PR's branch is deleted. Absent: none.
   */
  retargetAfter?: Readonly<Record<number, string>>;
};

/** PRs of a merge request that did land (the first ones, in order), and the target head after the last of them. */
export type LandedPrs = { prNumbers: number[]; head: string };

/**
 * What became of a merge request. Merging PR by PR, the host may land the first PRs and stop:
 * `landed` says which (absent when none did).
 * - merged: every PR landed; the target is at `head`;
 * - target_moved: the target is not where the queue left it (someone else pushed): the PRs not
 *   landed must be tested again on `head`;
 * - landed_on_moved_target: the PRs in `landed` merged as tested, then `movedUnder` merged
 *   too, but on top of someone else's commit that slipped in under it (`foreignSha`): the
 *   target (at `head`, its merge) is not the tested tree. The PRs after it must be tested again;
 * - refused: the host will not merge `prNumber` (`reason` cannot_merge: for a reason of its own,
 *   said in `message`; head_moved: its head is no longer the tested commit; closed: it is closed
 *   (or merged outside the queue); base_changed: its base is no longer the target branch). The
 *   PRs after it must be tested again on `head`;
 * - landed_elsewhere: the PRs in `landed` merged as tested, then the host merged `prNumber` into
 *   another branch than the target (`branch`; its base changed as it was merged): it did not
 *   land on the target, which is at `head`. The PRs after it must be tested again.
 */
export type MergeResult =
  | { kind: "merged"; head: string }
  | { kind: "target_moved"; head: string; landed?: LandedPrs }
  | { kind: "landed_on_moved_target"; head: string; landed?: LandedPrs; movedUnder: number; foreignSha: string }
  | { kind: "refused"; head: string; landed?: LandedPrs; prNumber: number; reason: MergeRefusalReason; message: string }
  | { kind: "landed_elsewhere"; head: string; landed?: LandedPrs; prNumber: number; branch: string; sha: string };

/** Why the host will not merge a PR of a merge request (see MergeResult's `refused`). */
export type MergeRefusalReason = "cannot_merge" | "head_moved" | "closed" | "base_changed";

/** A user's role in a repository, as GitHub names them (triage reads as read, custom roles as their base). */
export type Permission = "admin" | "maintain" | "write" | "read" | "none";

/** A testing run's status checks as the API shows them. */
export type StatusCheck = { context: string; state: CheckState };

/** A CI result a polled host holds until Greenline has applied it. */
export type PolledCiResult = {
  id: string;
  queueId: string;
  runId: string;
  outcome: "passed" | "failed";
  /** The check the result is reported as (a failure's verdict reads the uploads naming it); "ci" when the host names none. */
  check?: string;
};

/** What CI says of a commit, read from the code host (not from deliveries). */
export type CiSnapshot = {
  /** Every commit status (latest per context) and check run (latest per name) on the commit, with ids. */
  checks: CheckReport[];
  /** CI has finished on the commit: every check suite completed, no commit status pending. */
  finished: boolean;
};

/**
 * A host whose CI results arrive as webhooks, which may be lost or reordered, offers to read
 * them: runs in flight are reconciled with it, and a run requiring no check asks it whether CI
 * finished before passing.
 */
export interface CiResults {
  ciStatusOf(repo: RepoRef, sha: string): Promise<CiSnapshot>;
}

/**
 * What a code host without webhooks offers instead: the worker asks it for the CI results that
 * are due, and compares the target branch heads of queues with runs in flight itself.
 */
export interface PolledEvents {
  /** CI results due at `now` and not yet delivered, oldest first. */
  dueCiResults(now: Date): Promise<PolledCiResult[]>;
  /**
   * Marks a CI result delivered inside the transaction that applies it, so a result is applied
   * once however many workers poll; answers false when it already was.
   */
  markDelivered(tx: Tx, id: string, at: Date): Promise<boolean>;
}

/**
 * A CI workflow run, as the code host tells it (GitHub Actions' `GET /actions/runs/{run_id}`):
 * what a fork PR's upload of impacted targets is authorised by (queue/forked-runs.ts).
 */
export type WorkflowRun = {
  id: string;
  /** queued, in_progress, completed, waiting, requested, pending, action_required…, as the host says; null when it says none. */
  status: string | null;
  /** The event that started it (pull_request, push…). */
  event: string;
  /** The commit it runs for. */
  headSha: string;
  /** The repository that commit comes from (a fork, for a fork PR's run); null when the host no longer knows it (a deleted fork). */
  headRepository: { owner: string; name: string } | null;
};

/** Present when the host runs CI itself and tells of its runs (GitHub Actions). */
export interface WorkflowRuns {
  /**
   * The run `runId` of the repository, or null when the repository has none by that id, or the
   * host cannot be asked about the repository (the App is not installed there). Refusals (a
   * permission missing, the host down) throw a CodeHostRefusal.
   */
  workflowRun(repo: RepoRef, runId: string): Promise<WorkflowRun | null>;
}

/**
 * A testing commit whose failed CI jobs are to run again: `checkRunIds`, the failed checks' check
 * runs the verdict judged (only their jobs' workflow runs are re-run; a check without one — a
 * commit status — cannot be).
 */
export type FailedJobsRequest = { queueId: string; runId: string; testBranch: string; sha: string; checkRunIds: number[] };

/**
 * The CI job behind a check run, as the host records it: its workflow run, and its steps — how
 * many failed, and how many were skipped after the first failure (the steps a failed test step
 * keeps from running: a build, an e2e suite). A failure is its tests' alone only when one step
 * failed and none was skipped after it.
 */
export type CiJob = { workflowRunId: string; attempt: number; completed: boolean; failedSteps: number; skippedAfterFailure: number };

/**
 * What a re-run of failed jobs did: `rerun` CI runs (workflow runs) had their failed jobs
 * started again (their checks go back to pending with new check ids, then report anew); 0 when
 * nothing on the commit could be re-run (its checks come from a CI the host does not run, say).
 */
export type FailedJobsRerun = { rerun: number };

/**
 * Present when the host runs CI itself and can run a commit's failed jobs again without running
 * the rest (GitHub Actions' `POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs`,
 * with the App's `actions: write`; the sandbox's CI). Refusals throw a CodeHostRefusal
 * (permission_missing without `actions: write`). Safe to repeat: a run whose jobs are running
 * again has no failed job left to re-run.
 */
export interface CiRetries {
  /**
   * Re-runs the failed jobs of the workflow runs behind `request.checkRunIds`; a workflow run
   * still going (its other jobs running) is a transient refusal (asked again later), one whose
   * jobs already run again counts as re-run.
   */
  rerunFailedJobs(repo: RepoRef, request: FailedJobsRequest): Promise<FailedJobsRerun>;
  /** The job behind a check run, or null when the check run is no job of the host's CI (another app's check). */
  jobOf(repo: RepoRef, checkRunId: number): Promise<CiJob | null>;
}

/**
 * Until when (epoch ms) retries against the installation behind `repo` wait, its rate limit
 * at the reserve (CodeHost.rateBudget), or null when they need not (no budget, or not reached
 * by `now`). The one reading of the reserve for effects, deliveries, re-reads and CI polls.
 */
export function rateReserveUntil(codeHost: Pick<CodeHost, "rateBudget">, repo: RepoRef, now: number): number | null {
  const until = codeHost.rateBudget?.reserveReachedUntil(repo) ?? null;
  return until !== null && until > now ? until : null;
}

/**
 * Everything Greenline asks of the code host. GitHub (through Octokit) and the sandbox
 * implement it. Every method is safe to call again with the same arguments (effects are
 * retried after a crash). Where hosts differ, the port says what this one does; nothing above
 * it asks which host it is.
 */
export interface CodeHost {
  /** A name to show (health check, logs), never to branch on. */
  readonly name: string;
  /**
   * true: people see PRs on the host, so the queue sets its status on queued PRs and comments
   * on them; false: the host shows nothing to people, the API alone tells PR states.
   */
  readonly notifiesPullRequests: boolean;
  /**
   * Present when the host sends no webhooks: CI results and target branch moves are polled by
   * the worker.
   */
  readonly polling?: PolledEvents;
  /** Present when CI results can be read from the host (reconciliation of webhooks). */
  readonly ciResults?: CiResults;
  /** Present when the host runs CI and can say of a run id what it runs (fork PRs' uploads, without a token). */
  readonly workflowRuns?: WorkflowRuns;
  /** Present when CI's failed jobs on a testing commit can be run again on their own (flake-aware retries). */
  readonly ciRetries?: CiRetries;
  /**
   * Present when the host tells of pushes by deliveries, which may arrive out of order: whether
   * `ancestor` is an ancestor of (or equal to) `descendant`, so a late echo of an older push
   * does not move the queue's view of its target back.
   */
  readonly ancestry?: { isAncestor(repo: RepoRef, ancestor: string, descendant: string): Promise<boolean> };
  /** Present when people can open a branch on the host: the branch's page (the dashboard links testing branches to it). */
  branchUrl?(repo: RepoRef, branch: string): string;
  /**
   * Present when the host limits each installation's requests per window (GitHub's rate
   * limit): the window's end (epoch ms) while what is left of the repository's installation is
   * below the reserve kept for the queue's progress, else null. Retries (of effects, webhook
   * deliveries, readiness re-reads, CI polls) wait for it; first attempts do not. Asks the
   * host nothing.
   */
  readonly rateBudget?: {
    reserveReachedUntil(repo: RepoRef): number | null;
    /** Each installation's rate limit as the host last answered it (service metrics; none known: empty). */
    limits?(): { installation: number; limit: number; remaining: number; resetAt: number }[];
  };
  /**
   * Whether an organization may own a repository no organization owns yet (it references it
   * for the first time); the first to claim it then owns it.
   */
  mayOwnRepository(tx: Tx, organizationId: string, repo: RepoRef): Promise<boolean>;
  /**
   * The status checks to show for a testing run, from what CI reported on its branch per
   * context and the run's state: hosts whose CI reports a run's outcome as a whole show it
   * under their own CI context.
   */
  statusChecksOf(run: { state: CheckState; reported: Readonly<Record<string, CheckState>> }): StatusCheck[];
  /**
   * The PR, or null when the repository has no such PR. `hint.directMerge`: whether the caller
   * needs `greenBaseSha` (only a queue that merges up-to-date PRs directly does); when false the
   * host may answer null there without asking (on GitHub it costs a comparison and a branch read).
   */
  getPullRequest(repo: RepoRef, number: number, hint: ReadPullRequestHint): Promise<PullRequestInfo | null>;
  /**
   * The pull request whose head is `branch` of the repository itself (a PR based on that branch
   * is stacked on it: docs/stacks.md): the open one, else the last one merged while the branch
   * is still at its merged head; null when none is, when the branch is long-lived (the default
   * branch, or protected), or on a host without stacks.
   */
  pullRequestWithHead(repo: RepoRef, branch: string, hint: ReadPullRequestHint): Promise<PullRequestInfo | null>;
  /** The head commit of a branch, or null when it does not exist. */
  getBranchHead(repo: RepoRef, branch: string): Promise<string | null>;
  /**
   * Builds the testing branch (base + stack, each PR at its pinned head) and starts CI on it.
   * A permanent refusal (a commit gone, a merge the host will not do) throws a CodeHostRefusal.
   */
  startTestRun(repo: RepoRef, request: TestRunRequest): Promise<TestRunStart>;
  /** Stops CI on a testing branch and deletes it (closing its PR when `pullRequest`). */
  cancelTestRun(repo: RepoRef, testBranch: string, options?: { pullRequest?: boolean }): Promise<void>;
  /**
   * Present when the host can tell at queue creation that it will refuse the queue's merges
   * into `branch` (the host's own merge queue required, no way for the App to push or merge).
   */
  checkTarget?(repo: RepoRef, branch: string): Promise<TargetCheck>;
  /**
   * The checks a testing branch for `branch` must report green, from the code host's rules
   * for the branch (used when the queue sets no requiredStatuses of its own), and where they
   * come from: "none" when the host was read and requires none, "unknown" when it could not be
   * read (never "queue"). Never throws on a refusal: unreadable is "unknown".
   */
  requiredStatuses(repo: RepoRef, branch: string): Promise<RequiredChecks>;
  /** Sets the merge queue's status on a PR's head commit (context `greenline/merge-queue`). */
  setPullRequestStatus(repo: RepoRef, sha: string, status: { state: "pending" | "success" | "failure" | "error"; description: string; targetUrl?: string }): Promise<void>;
  /** Comments on a PR. */
  commentOnPullRequest(repo: RepoRef, number: number, body: string): Promise<void>;
  /** What a user may do in the repository, as GitHub answers it ("none" for a stranger). */
  permissionOf(repo: RepoRef, user: string): Promise<Permission>;
  /** Lands the PRs whose combined tree the testing branch tested. */
  mergeTestedRun(repo: RepoRef, request: MergeRequest): Promise<MergeResult>;
  /**
   * A file's text at a ref (commit sha or branch), or null when there is no such file or ref.
   * A file larger than `maxBytes` (default FILE_READ_BYTES) is not read: FileTooLargeError.
   */
  readFile(repo: RepoRef, path: string, ref: string, maxBytes?: number): Promise<string | null>;
  /**
   * Present when the host runs CI from workflow files in the repository (GitHub Actions): the
   * workflow files at `ref` (`.github/workflows/*.yml`), each with its text, or why it could not
   * be read (too large); at most `WORKFLOW_FILES_READ` of them, the rest named in `left`.
   */
  workflowFiles?(repo: RepoRef, ref: string): Promise<WorkflowFiles>;
  /**
   * Present when the host can tell who reported checks on pull requests: the check runs (by
   * App) and commit statuses (by author) on the heads of the most recently updated pull
   * requests into `branch`.
   */
  recentCheckReporters?(repo: RepoRef, branch: string): Promise<CheckReporter[]>;
  /**
   * The App's installations changed (installed, removed, suspended, repositories added or
   * removed): a host that caches where it is installed forgets it. Absent: nothing is cached.
   */
  forgetInstallations?(): void;
  /**
   * Who may do what changed (a collaborator added, removed or given another role; a team's or an
   * organization's members): a host that keeps command authors' permissions forgets those in
   * `scope` (an account's, `owner` alone; a repository's; one user's). Absent: nothing is kept.
   */
  forgetPermissions?(scope: { owner: string; repo?: string; user?: string }): void;
  /**
   * Whether the code host works again for the repository's account after an installation
   * refusal: resolves when it answers (one cheap call through the installation), throws its
   * refusal otherwise. Absent: a host whose installations are never refused.
   */
  probeInstallation?(repo: RepoRef): Promise<void>;
}

/**
 * How the code host refused a request, as the adapter classified it (once, in one place):
 * - conflict: the changes do not merge;
 * - target_moved: the target branch is not where the queue left it (retest);
 * - head_moved: a PR's head is not the commit that was tested (the PR changed);
 * - cannot_merge: the host will not merge for a reason of its own (protection, rulesets,
 *   reviews, merge method, its own merge queue): permanent, shown to the user verbatim;
 * - permission_missing: the App lacks a permission: permanent, shown with what to grant;
 * - not_found: the repository, branch or PR is gone: permanent;
 * - rate_limited: try again at `retryAt` (epoch ms);
 * - transient: a network failure or a 5xx: try again with backoff;
 * - installation_suspended: the App's installation on the repository's account is suspended
 *   (GitHub's 403 "This installation has been suspended"): no fault of the request's, nothing
 *   of the account works until it is unsuspended;
 * - installation_removed: the App is not installed on the account any more (uninstalled): the
 *   same, until it is installed again.
 */
export type RefusalKind = "conflict" | "target_moved" | "head_moved" | "cannot_merge" | "permission_missing" | "not_found" | "rate_limited" | "transient" | "installation_suspended" | "installation_removed";

/** A refusal of the whole account, not of the request (the installation is suspended or gone). */
export function isInstallationRefusal(error: unknown): error is CodeHostRefusal & { kind: "installation_suspended" | "installation_removed" } {
  return error instanceof CodeHostRefusal && (error.kind === "installation_suspended" || error.kind === "installation_removed");
}

/** A refusal of the code host, thrown by adapters; `message` is the host's own words. */
export class CodeHostRefusal extends Error {
  constructor(
    readonly kind: RefusalKind,
    message: string,
    /** Epoch ms before which asking again is pointless (rate limits, retry-after); null when unknown. */
    readonly retryAt: number | null = null,
  ) {
    super(message);
    this.name = "CodeHostRefusal";
  }

  /** Whether asking again, later, may succeed. */
  get transient(): boolean {
    return this.kind === "rate_limited" || this.kind === "transient" || this.kind === "installation_suspended" || this.kind === "installation_removed";
  }
}
