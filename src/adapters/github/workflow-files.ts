import type { CheckReporter } from "../../domain/preflight/checks.js";
import { CodeHostRefusal, FileTooLargeError, WORKFLOW_FILES_READ, type RepoRef, type WorkflowFiles } from "../../ports/code-host.js";
import type { GitHubClient, OctokitError } from "./client.js";

/** A workflow file larger than this is named, not read (GitHub's own limit for workflow files is 512 KiB). */
const WORKFLOW_FILE_BYTES = 512 * 1024;
/** Workflow files asked for at once. */
const FILES_AT_ONCE = 4;
/** Pull requests whose heads are read for who reported their checks. */
const RECENT_PULL_REQUESTS = 5;

/**
 * What a queue's preflight reads on GitHub: the workflow files of a branch
 * (`GET /repos/{owner}/{repo}/contents/.github/workflows?ref=`, then each file), and who
 * reported checks on the heads of recent pull requests into it (`GET /pulls`, then each head's
 * `check-runs` and `statuses`). Sources: docs/preflight.md.
 */
export class GitHubWorkflowFiles {
  /** `readFile`: the adapter's own file read (pull-requests.ts), size limit and large files included. */
  constructor(
    private readonly client: GitHubClient,
    private readonly readFile: (repo: RepoRef, path: string, ref: string, maxBytes: number) => Promise<string | null>,
  ) {}

  async workflowFiles(repo: RepoRef, ref: string): Promise<WorkflowFiles> {
    const octokit = await this.client.octokit(repo);
    let listing: unknown;
    try {
      ({ data: listing } = await octokit.rest.repos.getContent({ owner: repo.owner, repo: repo.name, path: ".github/workflows", ref }));
    } catch (error) {
      if ((error as OctokitError).status !== 404) throw error;
      // No workflow folder, or no such branch or repository: GitHub answers 404 to all three.
      try {
        await octokit.rest.repos.getBranch({ owner: repo.owner, repo: repo.name, branch: ref });
      } catch (missing) {
        if ((missing as OctokitError).status === 404) throw new CodeHostRefusal("not_found", `branch ${ref} of ${repo.owner}/${repo.name} not found`);
        throw missing;
      }
      return { files: [], left: [] };
    }
    if (!Array.isArray(listing)) return { files: [], left: [] };
    const entries = (listing as { type: string; name: string; path: string; size: number }[]).filter((e) => e.type === "file" && /\.ya?ml$/i.test(e.name)).sort((a, b) => a.path.localeCompare(b.path));
    const read = entries.slice(0, WORKFLOW_FILES_READ);
    const states = await this.#workflowStates(octokit, repo);
    const readOne = async (entry: (typeof read)[number]) => {
      if (entry.size > WORKFLOW_FILE_BYTES) return { path: entry.path, text: null, error: `larger than ${WORKFLOW_FILE_BYTES / 1024} KiB` };
      // A workflow turned off in GitHub runs on nothing, whatever its triggers say.
      const state = states.get(entry.path);
      if (state !== undefined && state !== "active") return { path: entry.path, text: null, error: `turned off in GitHub (${state})` };
      try {
        const text = await this.readFile(repo, entry.path, ref, WORKFLOW_FILE_BYTES);
        return text === null ? { path: entry.path, text: null, error: "gone since it was listed" } : { path: entry.path, text, error: null };
      } catch (error) {
        if (error instanceof FileTooLargeError) return { path: entry.path, text: null, error: `larger than ${WORKFLOW_FILE_BYTES / 1024} KiB` };
        // One file GitHub would not send is named; the others are still judged.
        return { path: entry.path, text: null, error: `GitHub refused to send it (${(error as OctokitError).status ?? "no answer"})` };
      }
    };
    // A few at a time: a repository's fifty workflow files are not fifty requests at once.
    const files: { path: string; text: string | null; error: string | null }[] = [];
    for (let i = 0; i < read.length; i += FILES_AT_ONCE) files.push(...(await Promise.all(read.slice(i, i + FILES_AT_ONCE).map(readOne))));
    return { files, left: entries.slice(WORKFLOW_FILES_READ).map((e) => e.path) };
  }

  /**
   * Each workflow's state (`active`, `disabled_manually`, `disabled_inactivity`…) by path
   * ("List repository workflows", `actions: read`); empty when GitHub will not say.
   */
  async #workflowStates(octokit: Awaited<ReturnType<GitHubClient["octokit"]>>, repo: RepoRef): Promise<Map<string, string>> {
    try {
      const { data } = await octokit.rest.actions.listRepoWorkflows({ owner: repo.owner, repo: repo.name, per_page: 100 });
      return new Map(data.workflows.map((w) => [w.path, w.state]));
    } catch {
      return new Map();
    }
  }

  async recentCheckReporters(repo: RepoRef, branch: string): Promise<CheckReporter[]> {
    const octokit = await this.client.octokit(repo);
    const params = { owner: repo.owner, repo: repo.name };
    const { data: pulls } = await octokit.rest.pulls.list({ ...params, base: branch, state: "all", sort: "updated", direction: "desc", per_page: RECENT_PULL_REQUESTS });
    const seen = new Map<string, CheckReporter>();
    for (const sha of new Set(pulls.map((p) => p.head.sha))) {
      const [runs, status] = await Promise.all([octokit.rest.checks.listForRef({ ...params, ref: sha, per_page: 100 }), octokit.rest.repos.listCommitStatusesForRef({ ...params, ref: sha, per_page: 100 })]);
      for (const run of runs.data.check_runs) if (!seen.has(run.name)) seen.set(run.name, { context: run.name, reporter: run.app?.slug ?? null, kind: "check_run" });
      for (const s of status.data) if (!seen.has(s.context)) seen.set(s.context, { context: s.context, reporter: s.creator?.login ?? null, kind: "status" });
    }
    return [...seen.values()];
  }
}
