import type { CiRetries, FailedJobsRequest, FailedJobsRerun, RepoRef } from "../../ports/code-host.js";
import type { GitHubClient, OctokitError } from "./client.js";

/**
 * The conclusions of a finished workflow run whose failed jobs are worth running again: a job
 * that failed or hit its time limit (a hung flaky test). Not `cancelled` (a person or a newer
 * push stopped it on purpose), `startup_failure` (the workflow file is wrong: it fails again
 * the same way) nor `action_required` (it waits for an approval). docs/github.md, "Re-running
 * failed jobs".
 */
const RERUNNABLE_CONCLUSIONS = new Set(["failure", "timed_out"]);

/** One page is plenty: a testing commit has one run per workflow triggered on its branch. */
const RUNS_PER_PAGE = 100;

/**
 * GitHub Actions re-runs the failed jobs of a testing commit's workflow runs
 * (`POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs`, the App's
 * `actions: write`). Each re-run job reports under a new check run id; the run keeps its id.
 */
export class GitHubCiRetries implements CiRetries {
  constructor(private readonly client: GitHubClient) {}

  async rerunFailedJobs(repo: RepoRef, request: FailedJobsRequest): Promise<FailedJobsRerun> {
    const octokit = await this.client.octokitOrNull(repo);
    if (!octokit) return { rerun: 0 };
    // The runs of the testing branch at that commit: `branch` leaves out runs of the same
    // commit elsewhere (its target, once merged), which are not the queue's to re-run.
    const { data } = await octokit.rest.actions.listWorkflowRunsForRepo({
      owner: repo.owner,
      repo: repo.name,
      head_sha: request.sha,
      branch: request.testBranch,
      exclude_pull_requests: true,
      per_page: RUNS_PER_PAGE,
    });
    let rerun = 0;
    for (const run of data.workflow_runs) {
      // A run still going (its failed jobs already re-running, say) has nothing to re-run yet.
      if (run.head_sha !== request.sha || run.status !== "completed" || !RERUNNABLE_CONCLUSIONS.has(run.conclusion ?? "")) continue;
      try {
        await octokit.rest.actions.reRunWorkflowFailedJobs({ owner: repo.owner, repo: repo.name, run_id: run.id });
        rerun += 1;
      } catch (error) {
        // Started again between the listing and this call (a repeated effect): nothing to do.
        if (isAlreadyRunning(error)) continue;
        throw error;
      }
    }
    return { rerun };
  }
}

/** GitHub's 403 for a run whose jobs run (again) already. */
function isAlreadyRunning(error: unknown): boolean {
  const e = error as OctokitError & { response?: { data?: { message?: unknown } } };
  return e.status === 403 && typeof e.response?.data?.message === "string" && /already running/i.test(e.response.data.message);
}
