import { Actions } from "./actions.js";
import type { Tree } from "./model.js";
import { NOT_ACCESSIBLE } from "./permissions.js";
import type { RepoRequest } from "./request-log.js";
import {
  type Bypass,
  type Change,
  type Protection,
  type ProtectionOptions,
  protectionViolations,
  type Rule,
  type Ruleset,
  type RulesetOptions,
  ruleOfType,
  rulesetApplies,
  rulesetViolations,
  rulesFrom,
  ruleViolationsMessage,
} from "./rules.js";
import * as shape from "./shapes.js";

const WORKFLOWS = ".github/workflows/";

/** A refusal of GitHub's (status and message), thrown by the rules and answered by the HTTP layer. */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Classic branch protection and rulesets, as the tests set them and GitHub enforces them on ref
 * updates (rules.ts judges a change), and their REST routes (branches, protection, rules, rulesets).
 */
export abstract class BranchRules extends Actions {
  readonly #protection = new Map<string, Protection>();
  readonly #rulesets = new Map<string, Ruleset[]>();
  /** Whether the rules route refuses the installation (403), so a branch's rules cannot be read. */
  rulesRefused = false;

  /**
   * Classic branch protection: `protect(repo, "main", ["build"])` (required checks) or with options
   * (`requiredChecks`, `strict`, `requiredReviews` — which also requires pull requests —,
   * `linearHistory`, `restrictPushes`, `appMayPush`, `allowForcePushes`).
   */
  protect(repo: string, branch: string, options: string[] | ProtectionOptions): void {
    const o: ProtectionOptions = Array.isArray(options) ? { requiredChecks: options } : options;
    this.#protection.set(`${repo.toLowerCase()}:${branch}`, {
      requiredChecks: o.requiredChecks ?? [],
      strict: o.strict ?? false,
      requiredReviews: o.requiredReviews,
      linearHistory: o.linearHistory ?? false,
      restrictPushes: o.restrictPushes ?? false,
      appMayPush: o.appMayPush ?? false,
      allowForcePushes: o.allowForcePushes ?? false,
    });
  }

  unprotect(repo: string, branch: string): void {
    this.#protection.delete(`${repo.toLowerCase()}:${branch}`);
  }

  /**
   * A repository ruleset (default: on the default branch, the App may not bypass it); returns its id.
   * Also `addRuleset(repo, branch, ["pull_request", "merge_queue", ...], bypass)`: rules by type, on one branch.
   */
  addRuleset(repo: string, options: RulesetOptions | string, ruleTypes: Rule["type"][] = [], bypass: Bypass = "never"): number {
    if (typeof options === "string") return this.addRuleset(repo, { branches: [options], rules: ruleTypes.map(ruleOfType), bypass });
    const id = ++this.ids;
    const list = this.#rulesets.get(repo.toLowerCase()) ?? [];
    list.push({
      id,
      name: options.name ?? `ruleset ${id}`,
      include: options.branches ?? ["~DEFAULT_BRANCH"],
      rules: rulesFrom(options),
      bypass: options.bypass ?? "never",
      enforcement: options.enforcement ?? "active",
    });
    this.#rulesets.set(repo.toLowerCase(), list);
    return id;
  }

  setRulesetBypass(repo: string, id: number, bypass: Bypass): void {
    const ruleset = this.#rulesets.get(repo.toLowerCase())?.find((r) => r.id === id);
    if (!ruleset) throw new Error(`no ruleset ${id}`);
    ruleset.bypass = bypass;
  }

  /** A ruleset on `branch` requiring these checks. */
  ruleset(repo: string, branch: string, contexts: string[]): number {
    return this.addRuleset(repo, { branches: [branch], requiredChecks: contexts });
  }

  /**
   * Requires pull requests on a branch, as classic protection does: a ref update answers 422
   * "Changes must be made through a pull request."; with `approvals`, merging a PR answers 405
   * until it has that many approving reviews.
   */
  requirePullRequests(repo: string, branch: string, options: { approvals?: number } = {}): void {
    const current = this.#protection.get(`${repo.toLowerCase()}:${branch}`);
    this.protect(repo, branch, { ...current, requiredReviews: options.approvals ?? 0 });
  }

  #rulesetsFor(repo: string, branch: string): Ruleset[] {
    return (this.#rulesets.get(repo.toLowerCase()) ?? []).filter((r) => rulesetApplies(r, branch, this.settings(repo).defaultBranch));
  }

  /**
   * Whether a branch may not be deleted: classic protection (its `allow_deletions` is off) or an
   * active ruleset with a `deletion` rule. GitHub does not delete such a head branch on merge
   * ("Branch protection rules and repository rules can also prevent branches being automatically
   * deleted", "Managing the automatic deletion of branches").
   */
  protected deletionProtected(repo: string, branch: string): boolean {
    return this.#protection.has(`${repo.toLowerCase()}:${branch}`) || this.#rulesetsFor(repo, branch).some((r) => r.rules.some((rule) => rule.type === "deletion"));
  }

  /** The first workflow file that differs between two trees. */
  protected workflowChange(before: Tree, after: Tree): string | undefined {
    return Object.keys(after).find((file) => file.startsWith(WORKFLOWS) && before[file] !== after[file]) ?? Object.keys(before).find((f) => f.startsWith(WORKFLOWS) && !(f in after));
  }

  protected workflowRefusal(file: string): string {
    return `refusing to allow a GitHub App to create or update workflow \`${file}\` without \`workflows\` permission`;
  }

  /** Refuses a ref update (git refs, merges API) as protection, rulesets and permissions would. */
  protected checkRefUpdate(repo: string, installation: number, branch: string, before: string | undefined, after: string): void {
    const tree = (sha: string | undefined) => (sha === undefined ? {} : (this.commits.get(sha)?.tree ?? {}));
    const workflow = this.workflowChange(tree(before), tree(after));
    if (workflow && this.installations.get(installation)?.permissions.workflows !== "write") throw new Refusal(422, this.workflowRefusal(workflow));
    const change: Change = {
      via: "push",
      branch,
      creating: before === undefined,
      fastForward: before === undefined || this.isAncestor(before, after),
      mergeCommit: this.newCommits(before, after).some((c) => c.parents.length > 1),
      check: (context) => this.checkState(repo, after, context),
      approvals: 0,
      behind: false,
    };
    this.checkRules(repo, change, 422);
  }

  protected checkRules(repo: string, change: Change, status: number): void {
    const protection = this.#protection.get(`${repo.toLowerCase()}:${change.branch}`);
    const classic = protection ? protectionViolations(protection, change) : [];
    if (classic.length > 0) throw new Refusal(status, classic.join(" "));
    const ruleViolations = rulesetViolations(this.#rulesetsFor(repo, change.branch), change);
    if (ruleViolations.length > 0) throw new Refusal(status, ruleViolationsMessage(ruleViolations));
  }

  protected answerRules({ method, rest, repoName, fullName, refKey, send, notFound }: RepoRequest): boolean {
    let match: RegExpExecArray | null;
    if ((match = /^\/branches\/(.+)\/protection\/required_status_checks$/.exec(rest)) && method === "GET") {
      const branch = match[1]!;
      if (!this.refs.has(refKey(branch))) return notFound("Branch not found");
      const p = this.#protection.get(refKey(branch));
      if (!p) return notFound("Branch not protected");
      return send(200, this.#statusCheckPolicy(fullName, branch, p));
    }
    if ((match = /^\/branches\/(.+)\/protection$/.exec(rest)) && method === "GET") {
      const branch = match[1]!;
      if (!this.refs.has(refKey(branch))) return notFound("Branch not found");
      const p = this.#protection.get(refKey(branch));
      if (!p) return notFound("Branch not protected");
      return send(200, this.#protectionAnswer(fullName, branch, p));
    }
    if ((match = /^\/branches\/(.+)$/.exec(rest)) && method === "GET") {
      const branch = match[1]!;
      const sha = this.refs.get(refKey(branch));
      if (sha === undefined) return notFound("Branch not found");
      const p = this.#protection.get(refKey(branch));
      const contexts = p?.requiredChecks ?? [];
      return send(200, {
        name: branch,
        commit: shape.commit(fullName, this.commits.get(sha)!),
        _links: { html: `https://github.com/${fullName}/tree/${branch}`, self: `https://api.github.com/repos/${fullName}/branches/${branch}` },
        protected: p !== undefined || this.#rulesetsFor(repoName, branch).length > 0,
        protection: {
          enabled: p !== undefined,
          required_status_checks: { enforcement_level: p ? "non_admins" : "off", contexts, checks: contexts.map((context) => ({ context, app_id: null })) },
        },
        protection_url: `https://api.github.com/repos/${fullName}/branches/${branch}/protection`,
      });
    }
    if ((match = /^\/rules\/branches\/(.+)$/.exec(rest)) && method === "GET") {
      if (this.rulesRefused) return send(403, { ...NOT_ACCESSIBLE, documentation_url: "https://docs.github.com/rest/repos/rules#get-rules-for-a-branch" });
      const rules = this.#rulesetsFor(repoName, match[1]!).flatMap((r) => r.rules.map((rule) => ({ ...rule, ruleset_source_type: "Repository", ruleset_source: fullName, ruleset_id: r.id })));
      return send(200, rules);
    }
    if (rest === "/rulesets" && method === "GET") {
      return send(
        200,
        (this.#rulesets.get(repoName) ?? []).map((r) => this.#rulesetAnswer(fullName, r, false)),
      );
    }
    if ((match = /^\/rulesets\/(\d+)$/.exec(rest)) && method === "GET") {
      const ruleset = (this.#rulesets.get(repoName) ?? []).find((r) => r.id === Number(match![1]));
      return ruleset ? send(200, this.#rulesetAnswer(fullName, ruleset, true)) : notFound();
    }

    return false;
  }

  #statusCheckPolicy(fullName: string, branch: string, p: Protection) {
    const url = `https://api.github.com/repos/${fullName}/branches/${branch}/protection/required_status_checks`;
    return { url, strict: p.strict, contexts: p.requiredChecks, contexts_url: `${url}/contexts`, checks: p.requiredChecks.map((context) => ({ context, app_id: null })) };
  }

  #protectionAnswer(fullName: string, branch: string, p: Protection) {
    const url = `https://api.github.com/repos/${fullName}/branches/${branch}/protection`;
    return {
      url,
      required_status_checks: { ...this.#statusCheckPolicy(fullName, branch, p), enforcement_level: "non_admins" },
      enforce_admins: { url: `${url}/enforce_admins`, enabled: false },
      ...(p.requiredReviews === undefined
        ? {}
        : {
            required_pull_request_reviews: {
              url: `${url}/required_pull_request_reviews`,
              dismiss_stale_reviews: false,
              require_code_owner_reviews: false,
              required_approving_review_count: p.requiredReviews,
              require_last_push_approval: false,
            },
          }),
      ...(p.restrictPushes
        ? {
            restrictions: {
              url: `${url}/restrictions`,
              users_url: `${url}/restrictions/users`,
              teams_url: `${url}/restrictions/teams`,
              apps_url: `${url}/restrictions/apps`,
              users: [],
              teams: [],
              apps: p.appMayPush ? [shape.app(Number(this.appId))] : [],
            },
          }
        : {}),
      required_linear_history: { enabled: p.linearHistory },
      allow_force_pushes: { enabled: p.allowForcePushes },
      allow_deletions: { enabled: false },
      block_creations: { enabled: false },
      required_conversation_resolution: { enabled: false },
      lock_branch: { enabled: false },
      allow_fork_syncing: { enabled: false },
      required_signatures: { url: `${url}/required_signatures`, enabled: false },
    };
  }

  #rulesetAnswer(fullName: string, r: Ruleset, detailed: boolean) {
    const url = `https://api.github.com/repos/${fullName}/rulesets/${r.id}`;
    return {
      id: r.id,
      name: r.name,
      target: "branch",
      source_type: "Repository",
      source: fullName,
      enforcement: r.enforcement,
      node_id: shape.nodeId("RepositoryRuleset", r.id),
      _links: { self: { href: url }, html: { href: `https://github.com/${fullName}/rules/${r.id}` } },
      created_at: "2026-01-01T00:00:00Z",
      updated_at: "2026-01-01T00:00:00Z",
      current_user_can_bypass: r.bypass,
      ...(detailed
        ? {
            conditions: { ref_name: { include: r.include.map((b) => (b.startsWith("~") ? b : `refs/heads/${b}`)), exclude: [] } },
            rules: r.rules,
          }
        : {}),
    };
  }
}
