import type { CiSnapshot, RepoRef, StatusCheck } from "../../ports/code-host.js";
import { checkRunState, type CheckReport, type CheckState, type RequiredChecks } from "../../domain/status-checks.js";
import type { GitHubClient, Octokit } from "./client.js";
import { refusalOf } from "./refusals.js";

/** How long the checks a branch requires are taken as read (rules change rarely; deliveries are many). */
export const REQUIRED_CHECKS_TTL_MS = 60_000;

/** What one of GitHub's two sources of required checks answered: contexts, or unreadable. */
type Part = string[] | "unreadable";

/**
 * CI results and the checks a branch requires, on GitHub (sources: docs/github.md, "Required
 * checks and CI results").
 */
export class GitHubChecks {
  readonly #required = new Map<string, { at: number; value: RequiredChecks }>();

  constructor(
    private readonly client: GitHubClient,
    private readonly now: () => number = Date.now,
  ) {}

  /** CI reports through commit statuses and check runs, each stored as it arrives. */
  statusChecksOf(run: { reported: Readonly<Record<string, CheckState>> }): StatusCheck[] {
    return Object.entries(run.reported).map(([context, state]) => ({ context, state }));
  }

  /**
   * The checks the branch requires: the `required_status_checks` rules of the rulesets active
   * on it (readable with metadata permission) merged with classic branch protection's, as
   * "Get a branch" shows them (readable with contents permission; the protection endpoint
   * itself needs administration). A part GitHub refuses to show is unreadable, never "none".
   * Cached per branch for REQUIRED_CHECKS_TTL_MS.
   */
  async requiredStatuses(repo: RepoRef, branch: string): Promise<RequiredChecks> {
    const key = `${repo.owner}/${repo.name}:${branch}`.toLowerCase();
    const cached = this.#required.get(key);
    if (cached && this.now() - cached.at < REQUIRED_CHECKS_TTL_MS) return cached.value;
    const value = await this.#readRequired(repo, branch);
    this.#required.set(key, { at: this.now(), value });
    return value;
  }

  async #readRequired(repo: RepoRef, branch: string): Promise<RequiredChecks> {
    let octokit: Octokit | null;
    try {
      octokit = await this.client.octokitOrNull(repo);
    } catch {
      return { contexts: [], source: "unknown" };
    }
    if (!octokit) return { contexts: [], source: "unknown" };
    const [rulesets, protection] = await Promise.all([this.#rulesetChecks(octokit, repo, branch), this.#protectionChecks(octokit, repo, branch)]);
    return combineRequired(rulesets, protection);
  }

  async #rulesetChecks(octokit: Octokit, repo: RepoRef, branch: string): Promise<Part> {
    try {
      const rules = await octokit.paginate(octokit.rest.repos.getBranchRules, { owner: repo.owner, repo: repo.name, branch, per_page: 100 });
      return rules.flatMap((rule) => (rule.type === "required_status_checks" ? (rule.parameters?.required_status_checks ?? []).map((c) => c.context) : []));
    } catch (error) {
      // A repository without rulesets answers []; 404 only when the plan has no rulesets at all.
      return refusalOf(error, "read").kind === "not_found" ? [] : "unreadable";
    }
  }

  async #protectionChecks(octokit: Octokit, repo: RepoRef, branch: string): Promise<Part> {
    try {
      const { data } = await octokit.rest.repos.getBranch({ owner: repo.owner, repo: repo.name, branch });
      const checks = data.protected ? data.protection?.required_status_checks : undefined;
      if (!checks || checks.enforcement_level === "off") return [];
      return [...(checks.contexts ?? []), ...(checks.checks ?? []).map((c) => c.context)];
    } catch (error) {
      // The branch does not exist (yet): nothing protects it.
      return refusalOf(error, "read").kind === "not_found" ? [] : "unreadable";
    }
  }

  /** Whether `ancestor` is `descendant` or one of its ancestors (compare: "behind" or "identical"). */
  async isAncestor(repo: RepoRef, ancestor: string, descendant: string): Promise<boolean> {
    const octokit = await this.client.octokit(repo);
    try {
      const { data } = await octokit.rest.repos.compareCommitsWithBasehead({ owner: repo.owner, repo: repo.name, basehead: `${descendant}...${ancestor}`, per_page: 1 });
      return data.status === "behind" || data.status === "identical";
    } catch (error) {
      throw refusalOf(error, "read");
    }
  }

  /**
   * The commit's CI as GitHub holds it: the latest commit status per context (combined
   * status), the latest check run per name, and whether every check suite with check runs
   * completed. Throws the classified refusal when GitHub does not answer.
   */
  async ciStatusOf(repo: RepoRef, sha: string): Promise<CiSnapshot> {
    const octokit = await this.client.octokit(repo);
    const params = { owner: repo.owner, repo: repo.name, ref: sha, per_page: 100 };
    try {
      const [combined, runs] = await Promise.all([octokit.rest.repos.getCombinedStatusForRef(params), octokit.paginate(octokit.rest.checks.listForRef, { ...params, filter: "latest" })]);
      const checks: CheckReport[] = [
        ...combined.data.statuses.map((s): CheckReport => ({ context: s.context, state: s.state as CheckState, kind: "status", id: s.id })),
        ...runs.map((r): CheckReport => ({ context: r.name, state: checkRunState(r.status, r.conclusion), kind: "check_run", id: r.id })),
      ];
      // Check suites are asked only when some check was seen and every one is done (a third call
      // per poll at most): with no check at all, nothing can be decided yet.
      if (checks.length === 0 || checks.some((c) => c.state === "pending")) return { checks, finished: false };
      const suites = await octokit.paginate(octokit.rest.checks.listSuitesForRef, params);
      // Suites without check runs are those of apps that never report on the commit: GitHub
      // leaves them queued for ever.
      const finished = suites.every((s) => s.status === "completed" || (s.latest_check_runs_count ?? 0) === 0);
      return { checks, finished };
    } catch (error) {
      throw refusalOf(error, "read");
    }
  }
}

/**
 * One answer from the two sources: both readable → their union ("none" when empty); one
 * unreadable → the other's contexts when it has some (the permissions allow no more),
 * otherwise unknown.
 */
export function combineRequired(rulesets: Part, protection: Part): RequiredChecks {
  if (rulesets === "unreadable" && protection === "unreadable") return { contexts: [], source: "unknown" };
  if (rulesets === "unreadable" || protection === "unreadable") {
    const known = rulesets === "unreadable" ? protection : rulesets;
    if (known === "unreadable" || known.length === 0) return { contexts: [], source: "unknown" };
    return { contexts: [...new Set(known)], source: rulesets === "unreadable" ? "branch_protection" : "rulesets" };
  }
  const contexts = [...new Set([...rulesets, ...protection])];
  if (rulesets.length > 0 && protection.length > 0) return { contexts, source: "rulesets_and_branch_protection" };
  if (rulesets.length > 0) return { contexts, source: "rulesets" };
  if (protection.length > 0) return { contexts, source: "branch_protection" };
  return { contexts: [], source: "none" };
}
