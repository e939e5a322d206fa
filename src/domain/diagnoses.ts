/**
 * Diagnoses: what Greenline can tell about a run or a queue that is waiting on something that
 * may never come, long before a timeout says nothing more than "timed out" (docs/diagnoses.md).
 * Observations only: nothing here changes what the engine decides.
 */

/**
 * Why required checks never appeared on a testing branch:
 * - no_checks_started: no check of any kind appeared (CI does not run on testing branches);
 * - check_names_mismatch: other checks appeared, not these (the names do not match);
 * - path_filter_likely: these checks appeared on earlier testing branches of the queue, not on
 *   this one (a workflow skipped by its path filters, say).
 */
export const RUN_DIAGNOSIS_CODES = ["no_checks_started", "check_names_mismatch", "path_filter_likely"] as const;
export type RunDiagnosisCode = (typeof RUN_DIAGNOSIS_CODES)[number];

export type RunDiagnosis = {
  code: RunDiagnosisCode;
  message: string;
  /** Required checks with no report at all on the testing branch. */
  missingChecks: string[];
  /** The checks that did appear on it. */
  seenChecks: string[];
  /** Per missing check, the seen names it may have been meant as (case, spacing, a typo). */
  suggestions: Record<string, string[]>;
  /** When the diagnosis was made (ISO 8601). */
  at: string;
};

/** The testing branches' pattern, as a CI trigger would name it. */
export const TESTING_BRANCH_PATTERN = "greenline/**";

/** Levenshtein distance, bounded (answers limit + 1 past it). */
export function editDistance(a: string, b: string, limit = 3): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      current.push(value);
      best = Math.min(best, value);
    }
    if (best > limit) return limit + 1;
    previous = current;
  }
  return previous[b.length]!;
}

const normalized = (name: string) => name.toLowerCase().replace(/[\s_\-/:.()]+/g, "");

/**
 * The names among `candidates` that `wanted` may have been meant as: equal but for case,
 * spacing and punctuation, one holding the other (a job name inside "workflow / job"), or a
 * few edits apart. Closest first, at most three.
 */
export function closeNames(wanted: string, candidates: readonly string[]): string[] {
  const w = normalized(wanted);
  const scored: { name: string; score: number }[] = [];
  for (const name of candidates) {
    if (name === wanted) continue;
    const n = normalized(name);
    if (n === w) scored.push({ name, score: 0 });
    else if (w.length >= 3 && n.length >= 3 && (n.includes(w) || w.includes(n))) scored.push({ name, score: 1 });
    else {
      const limit = Math.max(1, Math.min(3, Math.floor(w.length / 4)));
      const distance = editDistance(w, n, limit);
      if (distance <= limit) scored.push({ name, score: 1 + distance });
    }
  }
  return scored
    .sort((a, b) => a.score - b.score || a.name.localeCompare(b.name))
    .slice(0, 3)
    .map((s) => s.name);
}

const list = (names: readonly string[]) => names.map((n) => `"${n}"`).join(", ");

/**
 * What to say of a run whose required checks have not all appeared on its testing branch by
 * the checks-start timeout, or null when every required check appeared (pending counts).
 * `seen`: the checks reported on this testing branch; `seenBefore`: those reported on the
 * queue's earlier testing branches.
 */
export function diagnoseRun(input: { required: readonly string[]; seen: readonly string[]; seenBefore: ReadonlySet<string>; targetBranch: string; minutes: number; at: Date }): RunDiagnosis | null {
  const seen = [...new Set(input.seen)].sort();
  const missing = input.required.filter((name) => !seen.includes(name));
  if (missing.length === 0) return null;
  const neverBefore = missing.filter((name) => !input.seenBefore.has(name));
  const after = `${input.minutes} minute${input.minutes === 1 ? "" : "s"}`;
  const suggestions: Record<string, string[]> = {};
  const candidates = [...new Set([...seen, ...input.seenBefore])];
  for (const name of missing) {
    const close = closeNames(name, candidates);
    if (close.length > 0) suggestions[name] = close;
  }
  const base = { missingChecks: missing, seenChecks: seen, suggestions, at: input.at.toISOString() };
  if (neverBefore.length === 0) {
    return {
      ...base,
      code: "path_filter_likely",
      message: `Required check${missing.length === 1 ? "" : "s"} ${list(missing)} did not appear on this testing branch within ${after}, though ${missing.length === 1 ? "it" : "they"} appeared on earlier testing branches of this queue: likely a path filter (paths / paths-ignore) or a condition skips the workflow for these changes. A skipped required check never reports, so the run waits until the testing timeout.`,
    };
  }
  if (seen.length === 0) {
    return {
      ...base,
      code: "no_checks_started",
      message: `No check of any kind appeared on the testing branch within ${after} (required: ${list(missing)}): no workflow runs on the testing branch. Check that your CI triggers on pushes to the branch pattern ${TESTING_BRANCH_PATTERN} (testing branches are greenline/${input.targetBranch}/<run>).`,
    };
  }
  const hints = neverBefore
    .filter((name) => suggestions[name])
    .map((name) => `"${name}" may be ${suggestions[name]!.map((s) => `"${s}"`).join(" or ")}`)
    .join("; ");
  return {
    ...base,
    code: "check_names_mismatch",
    message: `The required check names don't match what CI reports: seen ${list(seen)}; required ${list(missing)}, never seen${hints ? ` (${hints})` : ""}. Fix the queue's requiredStatuses (or the branch's required checks) or the check names in CI.`,
  };
}

/**
 * Why a queue merges nothing while pull requests wait (getQueue's blockedReason, the
 * greenline_queue_blocked metric): the App's installation on the account suspended or
 * uninstalled, paused, draining, frozen (a merge freeze: only hotfixes merge), an effect failing (the code host refusing: rate_limited,
 * permission_missing; anything else effect_failing), required checks never started on a
 * testing branch.
 */
export const BLOCKED_REASON_CODES = ["installation_suspended", "installation_removed", "paused", "draining", "frozen", "rate_limited", "permission_missing", "effect_failing", "checks_not_started"] as const;
export type BlockedReasonCode = (typeof BLOCKED_REASON_CODES)[number];

export type BlockedReason = { code: BlockedReasonCode; message: string; since: string | null; evidence: Record<string, unknown> };
