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
  /** The verdict from the files of the commit tested (default: green). */
  fails?: (files: Record<string, string>) => boolean;
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
};

export class SimulatedCi {
  readonly runs: CiRun[] = [];
  readonly #gh: GitHubSimulator;
  readonly #workflows: Workflow[];

  constructor(gh: GitHubSimulator, workflows: Workflow[]) {
    this.#gh = gh;
    this.#workflows = workflows;
  }

  /** Listens to the simulator's events (before any deliverer attached later). */
  attach(): this {
    const previous = this.#gh.onEvent;
    this.#gh.onEvent = (event) => {
      previous?.(event);
      this.#trigger(event);
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
      const failed = workflow.fails?.(this.#gh.filesAt(run.sha)) ?? false;
      run.state = failed ? "failed" : "passed";
      if (run.workflowRunId !== undefined) this.#gh.completeWorkflowRun(run.workflowRunId, failed ? "failure" : "success");
      if (workflow.report === "status") this.#gh.setStatus(run.repo, run.sha, workflow.name, failed ? "failure" : "success");
      else this.#gh.completeCheckRun(run.repo, this.#gh.createCheckRun(run.repo, { name: workflow.name, headSha: run.sha, status: "in_progress" }), failed ? "failure" : "success");
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
      const workflowRunId = pr ? this.#gh.startWorkflowRun(trigger.repo, { name: workflow.name, event: "pull_request", headSha: pr.headSha, headBranch: pr.headRef, headRepo: pr.headRepo, actor: pr.author }) : undefined;
      this.runs.push({ workflow: workflow.name, repo: trigger.repo, sha: trigger.sha, trigger: trigger.kind, branch: trigger.branch, state: "queued", ...(workflowRunId !== undefined ? { workflowRunId } : {}) });
    }
  }
}
