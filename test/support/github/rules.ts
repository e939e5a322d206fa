/**
 * Classic branch protection and repository rulesets as the simulator enforces them: given what
 * an update or a merge would do, the refusals GitHub gives, with its texts (sources in
 * docs/github.md, "The simulator and its sources").
 */
export type Protection = {
  requiredChecks: string[];
  /** "Require branches to be up to date before merging". */
  strict: boolean;
  /** Approving reviews a PR needs; undefined when pull requests are not required. */
  requiredReviews: number | undefined;
  linearHistory: boolean;
  /** Only listed actors may push; the App may when `appMayPush`. */
  restrictPushes: boolean;
  appMayPush: boolean;
  allowForcePushes: boolean;
};
export type ProtectionOptions = Partial<Protection>;

export type MergeMethod = "merge" | "squash" | "rebase";
export type Rule =
  | { type: "required_status_checks"; parameters: { required_status_checks: { context: string; integration_id?: number }[]; strict_required_status_checks_policy: boolean } }
  | {
      type: "pull_request";
      parameters: {
        required_approving_review_count: number;
        dismiss_stale_reviews_on_push: boolean;
        require_code_owner_review: boolean;
        require_last_push_approval: boolean;
        required_review_thread_resolution: boolean;
        allowed_merge_methods?: MergeMethod[];
      };
    }
  | { type: "required_linear_history" }
  | { type: "non_fast_forward" }
  | { type: "deletion" }
  | { type: "creation" }
  | { type: "update"; parameters?: { update_allows_fetch_and_merge: boolean } }
  | {
      type: "merge_queue";
      parameters: {
        check_response_timeout_minutes: number;
        grouping_strategy: "ALLGREEN" | "HEADGREEN";
        max_entries_to_build: number;
        max_entries_to_merge: number;
        merge_method: "MERGE" | "SQUASH" | "REBASE";
        min_entries_to_merge: number;
        min_entries_to_merge_wait_minutes: number;
      };
    };

/** Whether the App may bypass a ruleset: always, only when merging a PR, or never. */
export type Bypass = "always" | "pull_requests_only" | "never";
export type Ruleset = { id: number; name: string; include: string[]; rules: Rule[]; bypass: Bypass; enforcement: "active" | "evaluate" | "disabled" };

/** Builds rules from short options (a test's `addRuleset(repo, {requiredChecks: ["build"], ...})`). */
export type RulesetOptions = {
  name?: string;
  /** Branch names or fnmatch patterns; "~DEFAULT_BRANCH" and "~ALL" as on GitHub. Default: the default branch. */
  branches?: string[];
  requiredChecks?: string[];
  strict?: boolean;
  requiredReviews?: number;
  allowedMergeMethods?: MergeMethod[];
  linearHistory?: boolean;
  nonFastForward?: boolean;
  mergeQueue?: boolean;
  restrictUpdates?: boolean;
  restrictCreations?: boolean;
  rules?: Rule[];
  bypass?: Bypass;
  enforcement?: Ruleset["enforcement"];
};

export function rulesFrom(options: RulesetOptions): Rule[] {
  const rules: Rule[] = [...(options.rules ?? [])];
  if (options.requiredChecks)
    rules.push({
      type: "required_status_checks",
      parameters: { required_status_checks: options.requiredChecks.map((context) => ({ context })), strict_required_status_checks_policy: options.strict ?? false },
    });
  if (options.requiredReviews !== undefined || options.allowedMergeMethods)
    rules.push({
      type: "pull_request",
      parameters: {
        required_approving_review_count: options.requiredReviews ?? 0,
        dismiss_stale_reviews_on_push: false,
        require_code_owner_review: false,
        require_last_push_approval: false,
        required_review_thread_resolution: false,
        allowed_merge_methods: options.allowedMergeMethods ?? ["merge", "squash", "rebase"],
      },
    });
  if (options.linearHistory) rules.push({ type: "required_linear_history" });
  if (options.nonFastForward) rules.push({ type: "non_fast_forward" });
  if (options.restrictUpdates) rules.push({ type: "update", parameters: { update_allows_fetch_and_merge: false } });
  if (options.restrictCreations) rules.push({ type: "creation" });
  if (options.mergeQueue)
    rules.push({
      type: "merge_queue",
      parameters: {
        check_response_timeout_minutes: 60,
        grouping_strategy: "ALLGREEN",
        max_entries_to_build: 5,
        max_entries_to_merge: 5,
        merge_method: "MERGE",
        min_entries_to_merge: 1,
        min_entries_to_merge_wait_minutes: 5,
      },
    });
  return rules;
}

/** A rule of a type with GitHub's default parameters. */
export function ruleOfType(type: Rule["type"]): Rule {
  switch (type) {
    case "required_status_checks":
      return rulesFrom({ requiredChecks: [] })[0]!;
    case "pull_request":
      return rulesFrom({ requiredReviews: 0 })[0]!;
    case "merge_queue":
      return rulesFrom({ mergeQueue: true })[0]!;
    case "update":
      return { type, parameters: { update_allows_fetch_and_merge: false } };
    default:
      return { type };
  }
}

export function rulesetApplies(ruleset: Ruleset, branch: string, defaultBranch: string): boolean {
  if (ruleset.enforcement !== "active") return false;
  return ruleset.include.some((pattern) => {
    if (pattern === "~ALL") return true;
    if (pattern === "~DEFAULT_BRANCH") return branch === defaultBranch;
    const name = pattern.replace(/^refs\/heads\//, "");
    const escaped = name.split("**").map((part) => part.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*"));
    const regex = new RegExp(`^${escaped.join(".*")}$`);
    return regex.test(branch);
  });
}

/** The state of a required check on a commit. */
export type CheckState = "success" | "failure" | "pending" | "missing";

/** What an update or merge would do, as the rules need to know it. */
export type Change = {
  /** "push": a ref update (git refs, merges API); "pull_request": a PR merge. */
  via: "push" | "pull_request";
  branch: string;
  creating: boolean;
  fastForward: boolean;
  /** The new commits include a merge commit. */
  mergeCommit: boolean;
  /** The state of each check on the commit the rules look at (the new head; the PR head for a merge). */
  check: (context: string) => CheckState;
  approvals: number;
  /** The PR head does not contain the base branch's head (strict policies). */
  behind: boolean;
  method?: MergeMethod;
};

export function checksMessage(required: string[], check: (context: string) => CheckState): string | undefined {
  const unmet = required.filter((context) => check(context) !== "success");
  if (unmet.length === 0) return undefined;
  if (required.length === 1) return `Required status check "${unmet[0]}" is ${check(unmet[0]!) === "failure" ? "failing" : "expected"}.`;
  return `${unmet.length} of ${required.length} required status checks ${unmet.length === 1 ? "is" : "are"} expected.`;
}

const reviewsMessage = (n: number) => `At least ${n} approving review${n === 1 ? " is" : "s are"} required by reviewers with write access.`;
const PR_REQUIRED = "Changes must be made through a pull request.";
const NOT_AUTHORIZED = "You're not authorized to push to this branch.";
const NO_FORCE = "Cannot force-push to this branch";
const NO_MERGE_COMMITS = "This branch must not contain merge commits.";
const BEHIND = "Head branch is out of date. Review and try the merge again.";

/** The refusals of classic protection (GitHub joins them into one message). */
export function protectionViolations(p: Protection, change: Change): string[] {
  const out: string[] = [];
  if (change.via === "push" && p.requiredReviews !== undefined) out.push(PR_REQUIRED);
  if (p.restrictPushes && !p.appMayPush) out.push(NOT_AUTHORIZED);
  if (change.via === "push" && !change.fastForward && !change.creating && !p.allowForcePushes) out.push(NO_FORCE);
  const checks = checksMessage(p.requiredChecks, change.check);
  if (checks) out.push(checks);
  if (change.via === "pull_request" && p.strict && p.requiredChecks.length > 0 && change.behind) out.push(BEHIND);
  if (change.via === "pull_request" && (p.requiredReviews ?? 0) > change.approvals) out.push(reviewsMessage(p.requiredReviews!));
  if (p.linearHistory && (change.via === "push" ? change.mergeCommit : change.method === "merge")) out.push(NO_MERGE_COMMITS);
  return out;
}

/** The refusals of the rulesets that apply and that the App may not bypass for this change. */
export function rulesetViolations(rulesets: Ruleset[], change: Change): string[] {
  const out: string[] = [];
  for (const ruleset of rulesets) {
    if (ruleset.bypass === "always" || (ruleset.bypass === "pull_requests_only" && change.via === "pull_request")) continue;
    for (const rule of ruleset.rules) {
      const message = ruleViolation(rule, change);
      if (message && !out.includes(message)) out.push(message);
    }
  }
  return out;
}

function ruleViolation(rule: Rule, change: Change): string | undefined {
  switch (rule.type) {
    case "pull_request":
      if (change.via === "push") return PR_REQUIRED;
      if (rule.parameters.allowed_merge_methods && change.method && !rule.parameters.allowed_merge_methods.includes(change.method))
        return `Merge method ${change.method} is not allowed. Allowed merge methods: ${rule.parameters.allowed_merge_methods.join(", ")}.`;
      return rule.parameters.required_approving_review_count > change.approvals ? reviewsMessage(rule.parameters.required_approving_review_count) : undefined;
    case "required_status_checks": {
      const message = checksMessage(
        rule.parameters.required_status_checks.map((c) => c.context),
        change.check,
      );
      if (message) return message;
      return change.via === "pull_request" && rule.parameters.strict_required_status_checks_policy && change.behind ? BEHIND : undefined;
    }
    case "merge_queue":
      return "Changes must be made through the merge queue";
    case "update":
      return change.creating ? undefined : "Cannot update this protected ref.";
    case "creation":
      return change.creating ? "Cannot create ref due to creations being restricted." : undefined;
    case "non_fast_forward":
      return change.via === "push" && !change.fastForward && !change.creating ? NO_FORCE : undefined;
    case "required_linear_history":
      return (change.via === "push" ? change.mergeCommit : change.method === "merge") ? NO_MERGE_COMMITS : undefined;
    case "deletion":
      return undefined;
  }
}

/** GitHub's text for a ruleset refusal. */
export const ruleViolationsMessage = (violations: string[]) => `Repository rule violations found\n\n${violations.join("\n\n")}\n\n`;
