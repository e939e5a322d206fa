export type CheckState = "pending" | "success" | "failure" | "error";

/**
 * What the statuses reported on a testing branch say of its run: failed as soon as a required
 * status fails, passed once every required status succeeded, otherwise not yet. Without
 * required statuses (none set on the queue, none in branch protection) every status reported
 * counts, and the run passes once all reported are green: set requiredStatuses or protect the
 * branch so a fast check cannot pass a run before the slow ones report.
 */
export function verdictOf(required: readonly string[], checks: Readonly<Record<string, CheckState>>): "passed" | "failed" | null {
  const contexts = required.length > 0 ? required : Object.keys(checks);
  if (contexts.some((c) => checks[c] === "failure" || checks[c] === "error")) return "failed";
  if (contexts.length > 0 && contexts.every((c) => checks[c] === "success")) return "passed";
  return null;
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
