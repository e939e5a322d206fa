import type { FlakeRule } from "./flaky/verdict.js";

/**
 * Every reason code a PR's transition can carry, with the one sentence users read for it. The
 * API's timeline (`message`), the PR's commit status on the code host and the queue's comment
 * on the PR all use `sentenceOf`, so they say the same thing in the same words. The codes are
 * stable: they are stored with every transition and documented in docs/reasons.md.
 */
export const REASONS = {
  submitted: "Submitted to the merge queue.",
  resubmitted: "Submitted to the merge queue again.",
  readiness_met: "Ready: waiting in line to be tested.",
  readiness_lost: "Not ready: the pull request cannot be tested until its readiness is met again.",
  stack_below_not_ready: "Not ready: the pull request it is stacked on is not ready, and it is never tested without it.",
  testing: "Testing on top of the pull requests ahead of it.",
  testing_bisection: "Testing again in a smaller group, to find which pull request broke its batch.",
  tests_passed: "Tests passed.",
  tests_failed: "Tests failed.",
  timeout: "Tests did not finish within the queue's testing timeout.",
  merge_conflict: "The pull request does not apply cleanly on top of the pull requests ahead of it.",
  start_refused: "The code host refused to build or start the testing branch.",
  restarted_prs_ahead_changed: "The pull requests ahead of it changed: tested again.",
  bisecting_failed_batch: "Its batch failed: it is tested again in smaller groups to find the culprit.",
  bisection_passed: "Proven innocent by the bisection of its failed batch: back in line.",
  retrying_failed_run: "Tests failed with nothing behind it to clear it: tested once more before failing.",
  restart_requested: "Tests restarted on request.",
  flaky_failures_excused: "A required check failed only on quarantined tests, in a job that stopped at them alone: the failure does not count.",
  flaky_retry: "A required check failed on known-flaky tests: its failed jobs are run again.",
  infrastructure_retry: "A required check failed by infrastructure (an outage, or one error across unrelated tests): its failed jobs are run again once.",
  flaky_retry_new_run: "The code host could not run the failed jobs again: the run is started again on its own.",
  no_checks_started: "Still testing: no check of any kind has started on the testing branch (does CI run on greenline/** branches?).",
  check_names_mismatch: "Still testing: checks started on the testing branch, but not the required ones (do the names match?).",
  path_filter_likely: "Still testing: required checks seen on earlier testing branches have not started on this one (a path filter?).",
  merging: "Tests passed: merging.",
  merging_by_later_run: "Passed with a pull request behind it: merging.",
  direct_merge: "Up to date and green on its own checks: merged directly, without a queue run.",
  merged: "Merged.",
  merged_by_later_run: "Merged: a pull request behind it passed on a tree holding it.",
  merged_after_target_moved: "Merged, but a commit from outside the queue landed just before it, so the target's result was not tested as such.",
  target_moved_during_merge: "A PR merged ahead of it landed on a commit from outside the queue: not merged, tested again on the new head.",
  pr_ahead_not_merged: "A pull request ahead of it, tested together with it, was not merged: tested again without it.",
  merge_failed_target_moved: "The target branch moved before the merge: tested again on the new head.",
  merge_refused: "The code host refused to merge it.",
  cancelled_by_user: "Cancelled on request.",
  stack_below_left: "The pull request it is stacked on left the queue unmerged, so it left too (it cannot merge without it).",
  pr_closed: "The pull request was closed.",
  merged_outside_queue: "The pull request was merged into the queue's branch outside the queue: it left the queue.",
  pr_updated: "New commits were pushed to the pull request: it left the queue (submit it again to test its new head).",
  base_branch_changed: "The pull request's base branch changed: it left the queue.",
  merged_into_other_branch: "The pull request's base branch changed as it was merged: it was merged into that branch, not the queue's, and left the queue.",
} as const satisfies Record<string, string>;

export type ReasonCode = keyof typeof REASONS;

/**
 * The sentence for each rule a verdict on a run's test results applied (domain/flaky/verdict.ts,
 * docs/flaky-queue.md): what the dashboard shows in place of the rule's code.
 */
export const FLAKE_RULE_SENTENCES = {
  quarantined_job_incomplete: "Only quarantined tests failed, but the job stopped at them (or the code host cannot say it ran to the end): its failed jobs run again.",
  no_test_results: "No test results were uploaded for the failed check: nothing shows a test failed, so the failure counts.",
  no_failing_tests: "The test results uploaded for the failed check hold no failing test: it failed elsewhere (a build step, a gate), and it counts.",
  real_failure: "Tests failed that are not known to be flaky: the failure counts.",
  known_flaky_not_quarantined: "Only known-flaky tests failed, but they are not quarantined and the queue does not re-run flaky failures: it counts.",
  flaky_retries_exhausted: "Known-flaky tests failed again after every re-run the queue allows: the failure counts.",
  infrastructure_failure_again: "The test results read as an infrastructure failure again after a re-run: the failure counts.",
  failures_excused: "Only quarantined tests failed: the failure does not count.",
  flaky_retry: "Only known-flaky tests failed: the failed jobs run again.",
  infrastructure_retry: "The test results read as an infrastructure failure (an outage, not the code): the failed jobs run again once.",
} as const satisfies Record<FlakeRule, string>;

/** A verdict rule's sentence; an unknown rule (a record older than this list) reads as its words. */
export function flakeRuleSentence(rule: string): string {
  return Object.hasOwn(FLAKE_RULE_SENTENCES, rule) ? FLAKE_RULE_SENTENCES[rule as FlakeRule] : `${rule.replaceAll("_", " ")}.`;
}

export function isReasonCode(code: string): code is ReasonCode {
  return Object.hasOwn(REASONS, code);
}

/**
 * The sentence for a transition: the reason's own, with the code host's words after it when it
 * refused something. An unknown code (a row older than this list) reads as itself.
 */
export function sentenceOf(reason: string, hostMessage?: string | null): string {
  const base = isReasonCode(reason) ? REASONS[reason] : `${reason.replaceAll("_", " ")}.`;
  return hostMessage ? `${base} ${hostMessage}` : base;
}

/** GitHub's limit for a commit status description. */
export const STATUS_DESCRIPTION_MAX = 140;

/** Cuts `text` to `max` characters, ending with "…" when it was cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** 1st, 2nd, 3rd, 4th, 11th, 21st… */
export function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${suffix}`;
}

/**
 * The minutes an estimate is rounded to (the nearest, by ratio), below 90 minutes; whole hours
 * above. Coarse on purpose: a status shows the bucket, so an estimate drifting by a minute or
 * two does not rewrite the PR's status on the code host.
 */
export const ESTIMATE_MINUTES = [1, 2, 3, 5, 10, 15, 20, 30, 45, 60, 75, 90] as const;

/** An estimate as people read it: "~1 min", "~15 min", "~3 h". */
export function estimateText(seconds: number): string {
  if (seconds >= 5400) return `~${Math.round(seconds / 3600)} h`;
  const minutes = Math.max(1, seconds / 60);
  let best: number = ESTIMATE_MINUTES[0];
  for (const bucket of ESTIMATE_MINUTES) if (Math.abs(Math.log(minutes / bucket)) < Math.abs(Math.log(minutes / best))) best = bucket;
  return `~${best} min`;
}

/** A place in line and an estimate, as the PR's status shows them: "3rd in line, ~10 min". */
export function placeOf(position: { index: number } | null, estimatedSeconds: number | null): string {
  const parts: string[] = [];
  if (position) parts.push(`${ordinal(position.index)} in line`);
  if (estimatedSeconds !== null) parts.push(estimateText(estimatedSeconds));
  return parts.join(", ");
}

/**
 * The PR status description for a transition: the same sentence as the API's
 * timeline, with the place in line while waiting, within GitHub's 140 characters.
 */
export function statusDescriptionOf(reason: string, hostMessage?: string | null, place?: string): string {
  const sentence = sentenceOf(reason, hostMessage);
  const text = place ? `${sentence.replace(/\.$/, "")} (${place}).` : sentence;
  return clip(text, STATUS_DESCRIPTION_MAX);
}
