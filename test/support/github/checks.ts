import { AppRegistration } from "./app-manifest.js";
import type { SimulatorCheckRun } from "./events.js";
import { APP_BOT } from "./model.js";
import type { RepoRequest } from "./request-log.js";
import type { CheckState } from "./rules.js";
import * as shape from "./shapes.js";
import type { CheckRunRecord, StatusRecord } from "./shapes.js";

const STATUS_STATES = ["error", "failure", "pending", "success"];
const CHECK_CONCLUSIONS = ["action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out"];

/** Commit statuses and check runs (Greenline's and a test's simulated CI), and their REST routes. */
export abstract class Checks extends AppRegistration {
  /** Commit statuses (Greenline's and a test's CI), in order. */
  readonly statuses: (StatusRecord & { repo: string; sha: string; context: string; state: string; description: string })[] = [];
  protected readonly checkRunsById = new Map<number, CheckRunRecord>();
  readonly #checkSuites = new Map<string, number>();

  /** CI posts a commit status (with its own token); returns the status id. */
  reportStatus(repo: string, sha: string, context: string, state: "error" | "failure" | "pending" | "success", description = "", creator = "ci-bot"): number {
    return this.#createStatus(repo, sha, { context, state, description, targetUrl: null, creator });
  }

  /** `reportStatus` under the name the webhook work uses. */
  setStatus(repo: string, sha: string, context: string, state: "pending" | "success" | "failure" | "error", sender = "ci-bot"): number {
    return this.reportStatus(repo, sha, context, state, "", sender);
  }

  #createStatus(repo: string, sha: string, s: { context: string; state: string; description: string; targetUrl: string | null; creator: string }): number {
    const id = ++this.ids;
    this.statuses.push({ id, repo: repo.toLowerCase(), sha, ...s });
    const start = `${repo.toLowerCase()}:`;
    const branches = [...this.refs].filter(([k, head]) => k.startsWith(start) && head === sha).map(([k, head]) => ({ name: k.slice(start.length), sha: head }));
    this.emit({
      kind: "status",
      repo,
      id,
      sha,
      context: s.context,
      state: s.state,
      description: s.description === "" ? null : s.description,
      targetUrl: s.targetUrl,
      commit: this.describeCommit(sha),
      branches: branches.slice(0, 10),
      sender: s.creator,
    });
    return id;
  }

  /** Another App (a CLA or DCO bot) reports a finished check run on a commit; returns its id. */
  appCheckRun(repo: string, sha: string, name: string, appSlug: string, conclusion: NonNullable<SimulatorCheckRun["conclusion"]> = "success"): number {
    const run = this.addCheckRun(repo, sha, name, "in_progress", null, null, `${appSlug}[bot]`);
    this.#finishCheckRun(run, conclusion, `${appSlug}[bot]`);
    return run.id;
  }

  /**
   * CI (another App, such as GitHub Actions) creates a check run on a commit; returns its id.
   * `createCheckRun(repo, sha, name, status?)` or `createCheckRun(repo, { name, headSha, status? })`.
   */
  createCheckRun(repo: string, shaOrRun: string | { name: string; headSha: string; status?: "queued" | "in_progress" }, name?: string, status?: "queued" | "in_progress"): number {
    const run = typeof shaOrRun === "string" ? { headSha: shaOrRun, name: name!, status: status ?? "in_progress" } : { status: "queued" as const, ...shaOrRun };
    return this.addCheckRun(repo, run.headSha, run.name, run.status, null, null, "github-actions[bot]").id;
  }

  /** CI completes a check run: `completeCheckRun(id, conclusion)` or `completeCheckRun(repo, id, conclusion)`. */
  completeCheckRun(idOrRepo: number | string, idOrConclusion: number | NonNullable<SimulatorCheckRun["conclusion"]>, conclusion?: NonNullable<SimulatorCheckRun["conclusion"]>): void {
    const id = typeof idOrRepo === "number" ? idOrRepo : (idOrConclusion as number);
    const outcome = typeof idOrRepo === "number" ? (idOrConclusion as NonNullable<SimulatorCheckRun["conclusion"]>) : conclusion!;
    const run = this.checkRunsById.get(id);
    if (!run) throw new Error(`no check run ${id}`);
    this.#finishCheckRun(run, outcome, "github-actions[bot]");
  }

  #finishCheckRun(run: CheckRunRecord, conclusion: string, sender: string): void {
    run.status = "completed";
    run.conclusion = conclusion;
    const repo = run.displayRepo ?? run.repo;
    this.emit({ kind: "check_run", action: "completed", repo, checkRun: this.#checkRunEvent(run), branch: run.headBranch, sender });
    if (run.workflowRunId !== undefined) this.concludeWorkflowRun(run.workflowRunId);
    const suite = [...this.checkRunsById.values()].filter((r) => r.suiteId === run.suiteId);
    if (suite.every((r) => r.status === "completed")) {
      const failed = suite.some((r) => !["success", "neutral", "skipped"].includes(r.conclusion ?? ""));
      this.emit({ kind: "check_suite", action: "completed", repo, suiteId: run.suiteId, headSha: run.sha, branch: run.headBranch, conclusion: failed ? "failure" : "success", runs: suite.length, sender });
    }
  }

  /** A status set by CI, answered with the fields a `status` webhook payload needs. */
  ciStatus(repo: string, sha: string, context: string, state: "pending" | "success" | "failure" | "error") {
    const id = this.reportStatus(repo, sha, context, state);
    const at = new Date().toISOString();
    return { id, sha, context, state, updated_at: at, created_at: at };
  }

  /** CI creates a check run (`id` omitted) or updates one; answered with a `check_run` webhook payload's fields. */
  checkRun(repo: string, sha: string, name: string, status: "queued" | "in_progress" | "completed", conclusion: string | null = null, id?: number) {
    let run = id === undefined ? undefined : this.checkRunsById.get(id);
    if (!run) run = this.addCheckRun(repo, sha, name, status, conclusion, null, "github-actions[bot]");
    else if (status === "completed") this.#finishCheckRun(run, conclusion ?? "success", "github-actions[bot]");
    else run.status = status;
    return { id: run.id, name, head_sha: sha, status: run.status, conclusion: run.conclusion };
  }

  /** The check runs on a commit. */
  checkRuns(repo: string, sha: string): CheckRunRecord[] {
    return [...this.checkRunsById.values()].filter((r) => r.repo === repo.toLowerCase() && r.sha === sha);
  }

  #checkRunEvent(run: CheckRunRecord): SimulatorCheckRun {
    return { id: run.id, name: run.name, headSha: run.sha, status: run.status, conclusion: run.conclusion as SimulatorCheckRun["conclusion"], suiteId: run.suiteId };
  }

  protected addCheckRun(repo: string, sha: string, name: string, status: CheckRunRecord["status"], conclusion: string | null, detailsUrl: string | null, sender: string, workflowRunId?: number): CheckRunRecord {
    const id = ++this.ids;
    const repoKey = repo.toLowerCase();
    const suiteKey = `${repoKey}:${sha}`;
    if (!this.#checkSuites.has(suiteKey)) this.#checkSuites.set(suiteKey, ++this.ids);
    const headBranch = [...this.refs].find(([k, v]) => k.startsWith(`${repoKey}:`) && v === sha)?.[0].slice(repoKey.length + 1) ?? null;
    const run: CheckRunRecord = {
      id,
      repo: repoKey,
      displayRepo: repo,
      sha,
      name,
      status,
      conclusion: null,
      suiteId: this.#checkSuites.get(suiteKey)!,
      headBranch,
      detailsUrl,
      appSlug: sender.replace(/\[bot\]$/, ""),
      ...(workflowRunId !== undefined ? { workflowRunId, attempt: this.workflowRuns.get(workflowRunId)?.attempt ?? 1 } : {}),
    };
    this.checkRunsById.set(id, run);
    this.emit({ kind: "check_run", action: "created", repo, checkRun: this.#checkRunEvent(run), branch: headBranch, sender });
    if (status === "completed") this.#finishCheckRun(run, conclusion ?? "success", sender);
    return run;
  }

  /** A check's state on a commit: its latest check run, else its latest status. */
  checkState(repo: string, sha: string, context: string): CheckState {
    const status = this.statuses.filter((s) => s.repo === repo.toLowerCase() && s.sha === sha && s.context === context).at(-1);
    const run = [...this.checkRunsById.values()].filter((r) => r.repo === repo.toLowerCase() && r.sha === sha && r.name === context).at(-1);
    if (run?.status === "completed") return ["success", "neutral", "skipped"].includes(run.conclusion ?? "") ? "success" : "failure";
    if (status) return status.state === "success" ? "success" : status.state === "pending" ? "pending" : "failure";
    return run ? "pending" : "missing";
  }

  /** A workflow run whose jobs (check runs) may all be done concludes (GitHub Actions, actions.ts). */
  protected abstract concludeWorkflowRun(id: number): void;

  protected answerChecks({ method, rest, query, body, repoName, fullName, settings, resolveRef, send, error, notFound }: RepoRequest): boolean {
    let match: RegExpExecArray | null;
    const appId = Number(this.appId);
    if ((match = /^\/statuses\/([^/]+)$/.exec(rest)) && method === "POST") {
      const sha = match[1]!;
      if (!STATUS_STATES.includes(body.state)) {
        return send(422, {
          message: "Validation Failed",
          errors: [{ resource: "Status", field: "state", code: "custom", message: `state is not included in the list` }],
          documentation_url: "https://docs.github.com/rest/commits/statuses#create-a-commit-status",
          status: "422",
        });
      }
      if (!this.commits.has(sha)) return error(422, `No commit found for SHA: ${sha}`);
      const description = body.description === undefined || body.description === null ? "" : String(body.description);
      if (description.length > 140) {
        return send(422, {
          message: "Validation Failed",
          errors: [{ resource: "Status", field: "description", code: "custom", message: "description is too long (maximum is 140 characters)" }],
          documentation_url: "https://docs.github.com/rest/commits/statuses#create-a-commit-status",
          status: "422",
        });
      }
      const context = body.context === undefined ? "default" : String(body.context);
      // "There is a limit of 1000 statuses per sha and context within a repository" ("Create a commit status").
      if (this.statuses.filter((s) => s.repo === repoName && s.sha === sha && s.context === context).length >= 1000) {
        return send(422, {
          message: "Validation Failed",
          errors: [{ resource: "Status", code: "custom", message: "This SHA and context has reached the maximum number of statuses." }],
          documentation_url: "https://docs.github.com/rest/commits/statuses#create-a-commit-status",
          status: "422",
        });
      }
      const targetUrl = typeof body.target_url === "string" ? body.target_url : null;
      const id = this.#createStatus(repoName, sha, { context, state: String(body.state), description, targetUrl, creator: APP_BOT });
      return send(201, shape.status(this.statuses.find((s) => s.id === id)!));
    }
    if ((match = /^\/commits\/(.+)\/status$/.exec(rest)) && method === "GET") {
      const sha = resolveRef(match[1]!);
      if (sha === undefined) return error(422, `No commit found for SHA: ${match[1]}`);
      const latest = new Map<string, StatusRecord>();
      for (const s of this.statuses) if (s.repo === repoName && s.sha === sha) latest.set(s.context, s);
      const states = [...latest.values()].map((s) => s.state);
      const state = states.some((s) => s === "failure" || s === "error") ? "failure" : states.length === 0 || states.includes("pending") ? "pending" : "success";
      return send(200, {
        state,
        sha,
        total_count: latest.size,
        statuses: [...latest.values()].reverse().map((s) => shape.status(s)),
        repository: shape.minimalRepository(fullName),
        commit_url: `https://api.github.com/repos/${fullName}/commits/${sha}`,
        url: `https://api.github.com/repos/${fullName}/commits/${sha}/status`,
      });
    }
    if ((match = /^\/commits\/(.+)\/statuses$/.exec(rest)) && method === "GET") {
      // "List commit statuses for a reference": every status, newest first (not only the latest per context).
      const sha = resolveRef(match[1]!);
      if (sha === undefined) return send(200, []);
      const perPage = Math.min(100, Number(query.get("per_page") ?? 30) || 30);
      return send(
        200,
        this.statuses
          .filter((s) => s.repo === repoName && s.sha === sha)
          .reverse()
          .slice(0, perPage)
          .map((s) => shape.status(s)),
      );
    }
    if ((match = /^\/commits\/(.+)\/check-runs$/.exec(rest)) && method === "GET") {
      const sha = resolveRef(match[1]!);
      if (sha === undefined) return error(422, `No commit found for SHA: ${match[1]}`);
      const name = query.get("check_name");
      const runs = this.checkRuns(repoName, sha).filter((r) => name === null || r.name === name);
      return send(200, { total_count: runs.length, check_runs: runs.map((r) => shape.checkRun(appId, { ...r, repo: fullName })) });
    }
    if ((match = /^\/commits\/(.+)\/check-suites$/.exec(rest)) && method === "GET") {
      const sha = resolveRef(match[1]!);
      if (sha === undefined) return error(422, `No commit found for SHA: ${match[1]}`);
      const suiteId = this.#checkSuites.get(`${repoName}:${sha}`);
      const runs = this.checkRuns(repoName, sha);
      const suites = suiteId === undefined ? [] : [shape.checkSuite(appId, fullName, settings, { id: suiteId, sha, headBranch: runs[0]?.headBranch ?? null, runs })];
      return send(200, { total_count: suites.length, check_suites: suites });
    }
    if (rest === "/check-runs" && method === "POST") {
      const invalid = (field: string) => send(422, { message: "Invalid request.", errors: [`${field} is invalid`], documentation_url: "https://docs.github.com/rest/checks/runs#create-a-check-run", status: "422" });
      if (typeof body.name !== "string" || body.name === "") return invalid("name");
      if (typeof body.head_sha !== "string" || !this.commits.has(body.head_sha)) return error(422, `No commit found for SHA: ${String(body.head_sha)}`);
      const status = body.conclusion !== undefined ? "completed" : (body.status ?? "queued");
      if (!["queued", "in_progress", "completed"].includes(status)) return invalid("status");
      if (status === "completed" && !CHECK_CONCLUSIONS.includes(body.conclusion)) return invalid("conclusion");
      const run = this.addCheckRun(repoName, body.head_sha, body.name, status, status === "completed" ? body.conclusion : null, body.details_url ?? null, APP_BOT);
      return send(201, shape.checkRun(appId, { ...run, repo: fullName }));
    }
    if ((match = /^\/check-runs\/(\d+)$/.exec(rest)) && (method === "PATCH" || method === "GET")) {
      const run = this.checkRunsById.get(Number(match[1]));
      if (!run || run.repo !== repoName) return notFound();
      if (method === "PATCH") {
        const status = body.conclusion !== undefined ? "completed" : (body.status ?? run.status);
        if (!["queued", "in_progress", "completed"].includes(status) || (status === "completed" && !CHECK_CONCLUSIONS.includes(body.conclusion ?? ""))) {
          return send(422, { message: "Invalid request.", errors: ["conclusion is invalid"], documentation_url: "https://docs.github.com/rest/checks/runs#update-a-check-run", status: "422" });
        }
        if (status === "completed") this.#finishCheckRun(run, body.conclusion, APP_BOT);
        else run.status = status;
      }
      return send(200, shape.checkRun(appId, { ...run, repo: fullName }));
    }

    return false;
  }
}
