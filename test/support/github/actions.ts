import { Checks } from "./checks.js";
import type { RepoRequest } from "./request-log.js";
import * as shape from "./shapes.js";
import type { CheckRunRecord, WorkflowRunRecord } from "./shapes.js";

/** GitHub Actions: workflow runs, their jobs (check runs), re-running failed jobs, and their REST routes. */
export abstract class Actions extends Checks {
  #workflowRunIds = 7_000_000_000;

  /**
   * A workflow run starts in `repo` for a commit (GitHub Actions; returns its id). A fork PR's
   * `pull_request` run belongs to the PR's base repository, with the fork as `headRepo`.
   */
  startWorkflowRun(repo: string, run: { name: string; event: string; headSha: string; headBranch: string; headRepo?: string; status?: "queued" | "in_progress"; actor?: string }): number {
    const id = ++this.#workflowRunIds;
    const runNumber = [...this.workflowRuns.values()].filter((r) => r.repo.toLowerCase() === repo.toLowerCase()).length + 1;
    const path = `.github/workflows/${run.name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}.yml`;
    this.workflowRuns.set(id, {
      id,
      repo,
      name: run.name,
      path,
      event: run.event,
      status: run.status ?? "in_progress",
      conclusion: null,
      headSha: run.headSha,
      headBranch: run.headBranch,
      headRepo: run.headRepo ?? repo,
      runNumber,
      actor: run.actor ?? "octocat",
      attempt: 1,
      createdAt: this.clock(),
      jobs: [],
    });
    return id;
  }

  /** A workflow run finishes (a run without jobs; a run with jobs finishes with its last job). */
  completeWorkflowRun(id: number, conclusion: "success" | "failure" | "cancelled" | "timed_out" = "success"): void {
    const run = this.workflowRuns.get(id);
    if (!run) throw new Error(`no workflow run ${id}`);
    run.status = "completed";
    run.conclusion = conclusion;
  }

  /**
   * A job of a workflow run starts: GitHub Actions reports each job as a check run on the run's
   * commit (the job's id is its check run's). Returns the check run id.
   */
  startJob(workflowRunId: number, name: string, status: "queued" | "in_progress" = "in_progress"): number {
    const run = this.workflowRuns.get(workflowRunId);
    if (!run) throw new Error(`no workflow run ${workflowRunId}`);
    const job = this.addCheckRun(run.repo, run.headSha, name, status, null, null, "github-actions[bot]", workflowRunId);
    run.jobs.push(job.id);
    run.status = "in_progress";
    run.conclusion = null;
    return job.id;
  }

  /** The steps a job (check run) recorded, for `GET …/actions/jobs/{job_id}` (default: one step concluding as the job). */
  setJobSteps(checkRunId: number, steps: NonNullable<CheckRunRecord["steps"]>): void {
    const job = this.checkRunsById.get(checkRunId);
    if (!job) throw new Error(`no check run ${checkRunId}`);
    job.steps = steps;
  }

  /** The jobs (check runs) of a workflow run's latest attempt. */
  jobsOf(workflowRunId: number): CheckRunRecord[] {
    return (this.workflowRuns.get(workflowRunId)?.jobs ?? []).map((id) => this.checkRunsById.get(id)!);
  }

  /**
   * Called when the failed jobs of a workflow run start again (`POST …/rerun-failed-jobs`), with
   * the new check run of each: the test's CI (github-ci.ts) decides what they conclude.
   */
  onJobsRerun: ((workflowRunId: number, jobs: CheckRunRecord[]) => void) | null = null;

  /** A run whose latest jobs are all done concludes: its worst job's conclusion. */
  protected concludeWorkflowRun(id: number): void {
    const run = this.workflowRuns.get(id);
    const jobs = this.jobsOf(id);
    if (!run || jobs.length === 0 || jobs.some((job) => job.status !== "completed")) return;
    run.status = "completed";
    run.conclusion = ["failure", "timed_out", "cancelled"].find((c) => jobs.some((job) => job.conclusion === c)) ?? "success";
  }

  /**
   * `POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs`, as GitHub answers it
   * (docs/github.md, "Re-running failed jobs"): 403 while the run is not completed or when it
   * is over 30 days old; otherwise each failed (or cancelled, or timed out) job of the latest
   * attempt starts again as a new check run, the run becomes the next attempt, queued, and the
   * answer is 201 with an empty object.
   */
  #rerunFailedJobs(run: WorkflowRunRecord): { status: number; message?: string } {
    if (run.status !== "completed") return { status: 403, message: "This workflow is already running" };
    if (this.clock() - run.createdAt > 30 * 24 * 3600_000) return { status: 403, message: "Unable to retry this workflow run because it was created over a month ago" };
    const failed = this.jobsOf(run.id).filter((job) => ["failure", "timed_out", "cancelled"].includes(job.conclusion ?? ""));
    if (failed.length === 0) return { status: 403, message: "This workflow run cannot be retried" };
    run.attempt += 1;
    run.status = "queued";
    run.conclusion = null;
    const started = failed.map((job) => this.addCheckRun(run.repo, run.headSha, job.name, "queued", null, null, "github-actions[bot]", run.id));
    run.jobs = run.jobs.map((id) => started[failed.findIndex((job) => job.id === id)]?.id ?? id);
    this.onJobsRerun?.(run.id, started);
    return { status: 201 };
  }

  workflowRun(id: number): WorkflowRunRecord | undefined {
    return this.workflowRuns.get(id);
  }

  /**
   * A run's `pull_requests`: the repository's open PRs whose head is the run's, from the
   * repository itself. A run from a fork lists none (github/docs#22501).
   */
  #workflowRunPulls(run: WorkflowRunRecord) {
    if (run.headRepo.toLowerCase() !== run.repo.toLowerCase()) return [];
    return [...this.pulls.entries()]
      .filter(([key, pr]) => key.startsWith(`${run.repo.toLowerCase()}#`) && pr.state === "open" && pr.headSha === run.headSha && pr.headRepo.toLowerCase() === run.repo.toLowerCase())
      .map(([, pr]) => shape.pullRequestMinimal(run.repo, pr));
  }

  /** Workflows turned off (by path, per repository): "List repository workflows" answers their state. */
  readonly #workflowStates = new Map<string, "disabled_manually" | "disabled_inactivity">();

  /** A person turns a workflow off in GitHub's UI (`state` null: on again). */
  setWorkflowState(repo: string, path: string, state: "disabled_manually" | "disabled_inactivity" | null): void {
    const key = `${repo.toLowerCase()}:${path}`;
    if (state === null) this.#workflowStates.delete(key);
    else this.#workflowStates.set(key, state);
  }

  protected answerActions({ method, rest, query, repoName, fullName, settings, resolveRef, send, error, notFound }: RepoRequest): boolean {
    let match: RegExpExecArray | null;
    if (rest === "/actions/workflows" && method === "GET") {
      // "List repository workflows": the workflow files of the default branch, each with its state.
      const head = resolveRef(settings.defaultBranch);
      const tree = head === undefined ? {} : (this.commits.get(head)?.tree ?? {});
      const paths = Object.keys(tree)
        .filter((path) => /^\.github\/workflows\/[^/]+\.ya?ml$/.test(path))
        .sort();
      const workflows = paths.map((path) => {
        const id = 100_000 + [...`${repoName}:${path}`].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 9_000_000, 7);
        const name = /^name:\s*["']?([^"'\n]+?)["']?\s*$/m.exec(tree[path]!)?.[1] ?? path;
        return shape.workflow(fullName, { id, name, path, state: this.#workflowStates.get(`${repoName}:${path}`) ?? "active" });
      });
      return send(200, { total_count: workflows.length, workflows });
    }
    if (rest === "/actions/runs" && method === "GET") {
      // Newest first, filtered as GitHub filters (`head_sha`, `branch` = head_branch, `status`).
      const page = Math.max(1, Number(query.get("page") ?? 1) || 1);
      const perPage = Math.min(100, Math.max(1, Number(query.get("per_page") ?? 30) || 30));
      const headSha = query.get("head_sha");
      const branch = query.get("branch");
      const status = query.get("status");
      const runs = [...this.workflowRuns.values()]
        .filter((r) => r.repo.toLowerCase() === repoName && (headSha === null || r.headSha === headSha) && (branch === null || r.headBranch === branch))
        .filter((r) => status === null || r.status === status || r.conclusion === status)
        .sort((a, b) => b.id - a.id);
      const pulls = query.get("exclude_pull_requests") === "true";
      return send(200, { total_count: runs.length, workflow_runs: runs.slice((page - 1) * perPage, page * perPage).map((r) => shape.workflowRun(r, pulls ? [] : this.#workflowRunPulls(r))) });
    }
    if ((match = /^\/actions\/runs\/(\d+)\/rerun-failed-jobs$/.exec(rest)) && method === "POST") {
      const run = this.workflowRuns.get(Number(match[1]));
      if (!run || run.repo.toLowerCase() !== repoName) return notFound();
      const answer = this.#rerunFailedJobs(run);
      if (answer.message !== undefined) return error(answer.status, answer.message, "https://docs.github.com/rest/actions/workflow-runs#re-run-failed-jobs-from-a-workflow-run");
      return send(201, {});
    }
    if ((match = /^\/actions\/jobs\/(\d+)$/.exec(rest)) && method === "GET") {
      // A check run of GitHub Actions is a job with the same id; another app's check run is no job.
      const checkRun = this.checkRunsById.get(Number(match[1]));
      const run = checkRun?.workflowRunId === undefined ? undefined : this.workflowRuns.get(checkRun.workflowRunId);
      if (!checkRun || !run || run.repo.toLowerCase() !== repoName) return notFound();
      return send(200, shape.job({ ...checkRun, workflowRunId: run.id, repo: run.repo }, { runAttempt: checkRun.attempt ?? 1, name: run.name }));
    }
    if ((match = /^\/actions\/runs\/(\d+)$/.exec(rest)) && method === "GET") {
      const run = this.workflowRuns.get(Number(match[1]));
      // Another repository's run is not found here.
      if (!run || run.repo.toLowerCase() !== repoName) return notFound();
      return send(200, shape.workflowRun(run, this.#workflowRunPulls(run)));
    }

    return false;
  }
}
