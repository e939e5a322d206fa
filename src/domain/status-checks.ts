export type CheckState = "pending" | "success" | "failure" | "error";

/**
 * Where the checks a testing branch must pass come from:
 * - queue: the queue's own requiredStatuses (they win over the code host's);
 * - rulesets / branch_protection / rulesets_and_branch_protection: the target branch's rules
 *   on the code host;
 * - none: the code host was read and requires no check: every check reported counts, and the
 *   run passes only once CI has finished on the testing commit;
 * - unknown: the code host could not be read (yet): the run waits, it never passes on it.
 */
export const REQUIRED_CHECKS_SOURCES = ["queue", "rulesets", "branch_protection", "rulesets_and_branch_protection", "none", "unknown"] as const;
export type RequiredChecksSource = (typeof REQUIRED_CHECKS_SOURCES)[number];
export type RequiredChecks = { contexts: string[]; source: RequiredChecksSource };

/** The API's name of a source (the first two are Trunk's). */
export function requiredStatusesSourceOf(source: RequiredChecksSource) {
  if (source === "queue") return "merge_instance" as const;
  if (source === "branch_protection") return "repo_provider_branch_protection" as const;
  return source;
}

/** What to tell the user about a queue's required checks, or null when all is well. */
export function requiredChecksWarning(required: RequiredChecks, branch: string): string | null {
  if (required.source === "none") {
    return `Branch "${branch}" requires no status check (no ruleset or branch protection rule does): a testing branch passes once every check reported on it has finished green. Set requiredStatuses on the queue, or require checks on the branch, so a check that never starts cannot go unnoticed.`;
  }
  if (required.source === "unknown") {
    return `The checks branch "${branch}" requires could not be read from the code host (rulesets, branch protection): testing branches wait until they can be read. Set requiredStatuses on the queue, or check the App's permissions.`;
  }
  return null;
}

/**
 * One check of a testing commit as Greenline knows it: its state and, when the code host
 * gives one, its identity (a check run's id, a commit status's id). Ids grow with time on
 * GitHub, so they order reports whatever order the deliveries came in.
 */
export type ReportedCheck = { state: CheckState; kind: "status" | "check_run"; id: number | null };

/** A report of a check: `rerun` when CI was asked to run it again (it may go back to pending). */
export type CheckReport = ReportedCheck & { context: string; rerun?: boolean };

/**
 * The check after a report: an older report (a smaller id: an earlier status, a superseded
 * check run) arriving late changes nothing, and a check run that completed never goes back
 * to pending unless it is re-run. Reports without an id are taken in the order they arrive.
 */
export function withReport(previous: ReportedCheck | undefined, report: CheckReport): ReportedCheck {
  const next: ReportedCheck = { state: report.state, kind: report.kind, id: report.id };
  if (!previous || previous.id === null || report.id === null || previous.kind !== report.kind) return next;
  if (report.id < previous.id) return previous;
  if (report.id === previous.id && previous.state !== "pending" && report.state === "pending" && !report.rerun) return previous;
  return next;
}

/** The checks after a series of reports. */
export function withReports(checks: Readonly<Record<string, ReportedCheck>>, reports: readonly CheckReport[]): Record<string, ReportedCheck> {
  const out = { ...checks };
  for (const report of reports) out[report.context] = withReport(out[report.context], report);
  return out;
}

/** The state of each check. */
export function statesOf(checks: Readonly<Record<string, ReportedCheck>>): Record<string, CheckState> {
  return Object.fromEntries(Object.entries(checks).map(([context, check]) => [context, check.state]));
}

/** Whether a check's state is a failure (a failed check run, a failing or erroring status). */
export const isFailedState = (state: CheckState | undefined) => state === "failure" || state === "error";

/**
 * What the checks reported on a testing branch say of its run:
 * - with required contexts: failed as soon as one fails, passed once every one succeeded;
 * - with none required (source "none"): every reported check counts; failed as soon as one
 *   fails, passed only once the code host confirms CI finished on the commit (`finished`:
 *   every check suite completed, no status pending) and every check reported succeeded —
 *   never on the first green one;
 * - unknown requirements: not yet, whatever was reported (the requirements are read again).
 * `finished` is null when nobody asked the code host.
 */
export function verdictOf(required: RequiredChecks, checks: Readonly<Record<string, ReportedCheck>>, finished: boolean | null): "passed" | "failed" | null {
  if (required.source === "unknown") return null;
  const states = statesOf(checks);
  if (required.contexts.length > 0) {
    if (required.contexts.some((c) => isFailedState(states[c]))) return "failed";
    if (required.contexts.every((c) => states[c] === "success")) return "passed";
    return null;
  }
  const all = Object.values(states);
  if (all.some(isFailedState)) return "failed";
  if (finished === true && all.length > 0 && all.every((s) => s === "success")) return "passed";
  return null;
}

/**
 * Whether a run without required checks would pass if CI has finished: every check reported
 * is green, so the code host is worth asking whether CI finished.
 */
export function awaitsConfirmation(required: RequiredChecks, checks: Readonly<Record<string, ReportedCheck>>): boolean {
  if (required.source === "unknown" || required.contexts.length > 0) return false;
  const all = Object.values(checks);
  return all.length > 0 && all.every((c) => c.state === "success");
}

/** A GitHub check run's status and conclusion, as a status state. */
export function checkRunState(status: string, conclusion: string | null): CheckState {
  if (status !== "completed") return "pending";
  switch (conclusion) {
    case "success":
    case "neutral":
    case "skipped":
      return "success";
    default:
      return "failure";
  }
}

/**
 * When a run in flight is next asked for its CI results: `firstMs` after it started, then at
 * doubling intervals (the time since the start at the last poll) up to `maxMs`. A lost
 * delivery costs at most one interval; a long run costs a handful of polls.
 */
export function nextCiPollAt(startedAt: number, polledAt: number | null, poll: { firstMs: number; maxMs: number }): number {
  if (polledAt === null) return startedAt + poll.firstMs;
  return polledAt + Math.min(poll.maxMs, Math.max(poll.firstMs, polledAt - startedAt));
}
