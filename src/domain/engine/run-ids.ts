/**
 * A queue's runs are numbered from 1 (the queue's nextRunNumber) and named `run-<n>`: the id the
 * API, testing branches and timelines show. The one place that writes and reads that form.
 */
export function runIdOf(runNumber: number): string {
  return `run-${runNumber}`;
}

/** The number of a run id (`run-12` → 12): runs sort by it, in the order they were started. */
export function runNumberOf(runId: string): number {
  return Number(runId.slice(runId.lastIndexOf("-") + 1));
}
