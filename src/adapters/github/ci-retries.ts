import { CodeHostRefusal, type CiJob, type CiRetries, type FailedJobsRequest, type FailedJobsRerun, type RepoRef } from "../../ports/code-host.js";
import type { GitHubClient, OctokitError } from "./client.js";

/**
 * GitHub Actions' jobs behind a testing commit's failed checks (docs/github.md, "Re-running
 * failed jobs"). A check run of GitHub Actions is a job with the same id: `GET
 * /repos/{owner}/{repo}/actions/jobs/{job_id}` answers its workflow run and its steps (another
 * app's check run answers 404: no job). Its failed jobs run again through `POST
 * /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs` (the App's `actions: write`),
 * once the workflow run completed (GitHub refuses before); each re-run job reports under a new
 * check run id, the workflow run keeps its id.
 */
export class GitHubCiRetries implements CiRetries {
  constructor(private readonly client: GitHubClient) {}

  async jobOf(repo: RepoRef, checkRunId: number): Promise<CiJob | null> {
    const octokit = await this.client.octokitOrNull(repo);
    if (!octokit) return null;
    try {
      const { data } = await octokit.rest.actions.getJobForWorkflowRun({ owner: repo.owner, repo: repo.name, job_id: checkRunId });
      const steps = data.steps ?? [];
      const first = steps.findIndex((s) => s.conclusion === "failure" || s.conclusion === "timed_out");
      return {
        workflowRunId: String(data.run_id),
        attempt: data.run_attempt ?? 1,
        completed: data.status === "completed",
        failedSteps: steps.filter((s) => s.conclusion === "failure" || s.conclusion === "timed_out").length,
        // A step after the failure that did not run (skipped, cancelled, never completed): what the failure kept from running.
        skippedAfterFailure: first < 0 ? 0 : steps.slice(first + 1).filter((s) => s.status !== "completed" || s.conclusion === "skipped" || s.conclusion === "cancelled").length,
      };
    } catch (error) {
      if ((error as OctokitError).status === 404) return null;
      throw error;
    }
  }

  async rerunFailedJobs(repo: RepoRef, request: FailedJobsRequest): Promise<FailedJobsRerun> {
    const octokit = await this.client.octokitOrNull(repo);
    if (!octokit) return { rerun: 0 };
    // Only the workflow runs behind the judged checks: another workflow's failure is not this verdict's to re-run.
    const jobs = new Map<string, number>();
    for (const id of request.checkRunIds) {
      const job = await this.jobOf(repo, id);
      if (job) jobs.set(job.workflowRunId, Math.max(jobs.get(job.workflowRunId) ?? 0, job.attempt));
    }
    let rerun = 0;
    for (const [runId, attempt] of jobs) {
      const { data: run } = await octokit.rest.actions.getWorkflowRun({ owner: repo.owner, repo: repo.name, run_id: Number(runId) });
      // Another commit's or branch's run (the same commit run elsewhere) is not the queue's to re-run.
      if (run.head_sha !== request.sha || run.head_branch !== request.testBranch) continue;
      // A later attempt than the judged jobs': their re-run was asked already (a repeated effect).
      if ((run.run_attempt ?? 1) > attempt) {
        rerun += 1;
        continue;
      }
      // Its other jobs still run: GitHub re-runs failed jobs of a completed run only. Asked again later.
      if (run.status !== "completed") throw new CodeHostRefusal("transient", `workflow run ${runId} is still ${run.status}: its failed jobs are re-run once it completes`);
      try {
        await octokit.rest.actions.reRunWorkflowFailedJobs({ owner: repo.owner, repo: repo.name, run_id: run.id });
      } catch (error) {
        // Started again already (a repeated effect): it counts as re-run.
        if (!isAlreadyRunning(error)) throw error;
      }
      rerun += 1;
    }
    return { rerun };
  }
}

/** GitHub's 403 for a run whose jobs run (again) already. */
function isAlreadyRunning(error: unknown): boolean {
  const e = error as OctokitError & { response?: { data?: { message?: unknown } } };
  return e.status === 403 && typeof e.response?.data?.message === "string" && /already running/i.test(e.response.data.message);
}
