import type { RepoRef, TargetCheck } from "../../ports/code-host.js";
import type { GitHubClient } from "./client.js";
import { refusalOf } from "./refusals.js";

type BranchRule = { type: string; ruleset_id?: number; ruleset_source?: string };

/**
 * Whether Greenline can merge into a branch on GitHub, from the rules that apply to it
 * (`GET /rules/branches/{branch}`, Metadata read: rulesets of the repository and of its
 * organization). Classic branch protection is not read here: its restrictions need the
 * Administration permission, which the App does not ask for (docs/github.md, "Permissions").
 */
export class GitHubTargets {
  constructor(private readonly client: GitHubClient) {}

  async checkTarget(repo: RepoRef, branch: string): Promise<TargetCheck> {
    // Not installed: the repository's ownership check refuses the queue, with its own reason.
    const octokit = await this.client.octokitOrNull(repo);
    if (!octokit) return { ok: true };
    const params = { owner: repo.owner, repo: repo.name };
    const rules = await unlessUnreadable(async () => (await octokit.rest.repos.getBranchRules({ ...params, branch, per_page: 100 })).data as BranchRule[]);
    // Rules Greenline may not read refuse nothing now: a refused merge says why later.
    if (rules === null) return { ok: true };
    const source = (rule: BranchRule) => `ruleset ${rule.ruleset_id ?? "?"}${rule.ruleset_source ? ` of ${rule.ruleset_source}` : ""}`;
    const mergeQueue = rules.find((rule) => rule.type === "merge_queue");
    if (mergeQueue) {
      return {
        ok: false,
        reason:
          `branch "${branch}" requires GitHub's merge queue (rule "Require merge queue" of ${source(mergeQueue)}): GitHub merges into it only through its own queue, ` +
          "so Greenline could never merge. Remove that rule (or exclude this branch from the ruleset), then create the queue again.",
      };
    }
    // "Restrict updates": only the ruleset's bypass list may move the branch, by push or by
    // merging a pull request. Greenline does both; it must be on the list.
    for (const rule of rules.filter((r) => r.type === "update" && r.ruleset_id !== undefined)) {
      const ruleset = await unlessUnreadable(async () => (await octokit.rest.repos.getRepoRuleset({ ...params, ruleset_id: rule.ruleset_id!, includes_parents: true })).data);
      const bypass = (ruleset as { current_user_can_bypass?: string } | null)?.current_user_can_bypass;
      if (bypass === "never") {
        return {
          ok: false,
          reason:
            `branch "${branch}" is restricted to the bypass list of ${source(rule)} ("Restrict updates"), and the Greenline App is not on it: ` +
            "it could neither push nor merge pull requests. Add the App to the ruleset's bypass list (always), or remove the rule, then create the queue again.",
        };
      }
    }
    return { ok: true };
  }
}

/** The answer, or null when GitHub will not show it to the App (403, 404); other failures are thrown, classified. */
async function unlessUnreadable<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (error) {
    const refusal = refusalOf(error, "read");
    if (refusal.kind === "not_found" || refusal.kind === "permission_missing") return null;
    const status = (error as { status?: number }).status;
    if (status === 403) return null;
    throw refusal;
  }
}
