import type { GitHubSimulator, SimulatorEvent } from "./github-simulator.js";

/**
 * CI as a repository's workflows give it: each workflow runs for the events it is triggered by
 * (`on: push` to branches with a prefix, `on: pull_request` into base branches with a prefix),
 * once per triggering event, and reports a commit status or a check run named after it. Runs
 * wait until the test calls `finish()`, so a test decides when CI answers. `runs` counts every
 * run triggered (what CI costs); a workflow that no event triggers never reports, as on GitHub.
 */
export type Workflow = {
  name: string;
  on: ("push" | "pull_request")[];
  /** Pushed branch (`push`) or base branch (`pull_request`) prefix; any branch when absent. */
  branches?: string;
  report: "status" | "check_run";
  /**
   * The verdict from the files of the commit tested and the attempt (1, then 2… for each re-run
   * of its failed jobs; default: green). A flaky workflow: `(files, attempt) => attempt === 1`.
   */
  fails?: (files: Record<string, string>, attempt: number) => boolean;
  /** How a failed job concludes (default `failure`; `timed_out` for a job that hit its time limit). */
  failsAs?: "failure" | "timed_out";
};

export type CiRun = {
  workflow: string;
  repo: string;
  sha: string;
  trigger: "push" | "pull_request";
  branch: string;
  state: "queued" | "passed" | "failed";
  /**
   * The GitHub Actions run of a `pull_request` trigger (`GET /actions/runs/{id}` answers it): in
   * the PR's repository, for the PR's head, from the fork for a fork PR; in progress until
   * `finish()`.
   */
  workflowRunId?: number;
  /** 1, then one more per re-run of the failed jobs (`POST …/rerun-failed-jobs`). */
  attempt: number;
  /** A re-run's job: the check run GitHub created for it when the re-run was asked for. */
  checkRunId?: number;
};

export class SimulatedCi {
  readonly runs: CiRun[] = [];
  readonly #gh: GitHubSimulator;
  readonly #workflows: Workflow[];

  constructor(gh: GitHubSimulator, workflows: Workflow[]) {
    this.#gh = gh;
    this.#workflows = workflows;
  }

  /** Listens to the simulator's events (before any deliverer attached later) and to re-runs of failed jobs. */
  attach(): this {
    const previous = this.#gh.onEvent;
    this.#gh.onEvent = (event) => {
      previous?.(event);
      this.#trigger(event);
    };
    const previousRerun = this.#gh.onJobsRerun;
    this.#gh.onJobsRerun = (workflowRunId, jobs) => {
      previousRerun?.(workflowRunId, jobs);
      const first = this.runs.find((run) => run.workflowRunId === workflowRunId);
      if (!first) return;
      const attempt = Math.max(...this.runs.filter((run) => run.workflowRunId === workflowRunId).map((run) => run.attempt)) + 1;
      for (const job of jobs) this.runs.push({ ...first, state: "queued", attempt, checkRunId: job.id });
    };
    return this;
  }

  /** The runs triggered and not yet finished. */
  queued(): CiRun[] {
    return this.runs.filter((run) => run.state === "queued");
  }

  /** Finishes every queued run: its status or check run is reported on the commit it ran for. */
  finish(): void {
    for (const run of this.queued()) {
      // The workflow that ran (two workflows may report the same context, e.g. one `on: push`, one `on: pull_request`).
      const workflow = this.#workflows.find((w) => w.name === run.workflow && w.on.includes(run.trigger) && run.branch.startsWith(w.branches ?? ""))!;
      const failed = workflow.fails?.(this.#gh.filesAt(run.sha), run.attempt) ?? false;
      const conclusion = failed ? (workflow.failsAs ?? "failure") : "success";
      run.state = failed ? "failed" : "passed";
      if (workflow.report === "status") {
        if (run.workflowRunId !== undefined) this.#gh.completeWorkflowRun(run.workflowRunId, conclusion);
        this.#gh.setStatus(run.repo, run.sha, workflow.name, failed ? "failure" : "success");
        continue;
      }
      // GitHub Actions: the run's job is a check run (its run concludes with its last job).
      const job =
        run.checkRunId ?? (run.workflowRunId !== undefined ? this.#gh.startJob(run.workflowRunId, workflow.name) : this.#gh.createCheckRun(run.repo, { name: workflow.name, headSha: run.sha, status: "in_progress" }));
      this.#gh.completeCheckRun(run.repo, job, conclusion);
    }
  }

  #trigger(event: SimulatorEvent): void {
    let trigger: { kind: "push" | "pull_request"; repo: string; sha: string; branch: string } | null = null;
    if (event.kind === "push" && !event.deleted) trigger = { kind: "push", repo: event.repo, sha: event.after, branch: event.branch };
    const pr = event.kind === "pull_request" && ["opened", "synchronize", "reopened"].includes(event.action) ? event.pr : null;
    if (pr && event.kind === "pull_request") trigger = { kind: "pull_request", repo: event.repo, sha: pr.headSha, branch: pr.base };
    if (!trigger) return;
    for (const workflow of this.#workflows) {
      if (!workflow.on.includes(trigger.kind) || !trigger.branch.startsWith(workflow.branches ?? "")) continue;
      // A PR's run: head_sha is the PR's head (GITHUB_SHA, the merge commit, is not), and a fork
      // PR's run has the fork as head_repository.
      // A workflow reporting check runs is GitHub Actions': each run is a workflow run whose job
      // reports the check. A push's run has the pushed branch as head_branch.
      const workflowRunId = pr
        ? this.#gh.startWorkflowRun(trigger.repo, { name: workflow.name, event: "pull_request", headSha: pr.headSha, headBranch: pr.headRef, headRepo: pr.headRepo, actor: pr.author })
        : workflow.report === "check_run"
          ? this.#gh.startWorkflowRun(trigger.repo, { name: workflow.name, event: "push", headSha: trigger.sha, headBranch: trigger.branch, status: "queued" })
          : undefined;
      this.runs.push({
        workflow: workflow.name,
        repo: trigger.repo,
        sha: trigger.sha,
        trigger: trigger.kind,
        branch: trigger.branch,
        state: "queued",
        attempt: 1,
        ...(workflowRunId !== undefined ? { workflowRunId } : {}),
      });
    }
  }
}
