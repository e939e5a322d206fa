import { isInLine } from "./order.js";
import type { Effect, EngineQueue } from "./types.js";

/**
 * The runs a decision leaves behind for good: finished, and either cancelled or testing no PR
 * still in line (or waiting for readiness). The engine never looks at them again, so they are
 * archived; a testing branch one of them had is deleted — `cancel_run` does that, idempotently —
 * unless the decision already cancels that run. A run archived before (the store loads none) is
 * named again; only the newly archived ones with a branch are cleaned up (the store loads a run's
 * `hasTestBranch` only while it is not archived).
 */
export function settledRuns(q: EngineQueue, effects: readonly Effect[]): { archived: string[]; cleanups: Effect[] } {
  const inLine = new Set(q.entries.filter((e) => isInLine(e.state) || e.state === "not_ready").map((e) => e.prNumber));
  const cancelling = new Set(effects.flatMap((e) => (e.kind === "cancel_run" ? [e.runId] : [])));
  const archived: string[] = [];
  const cleanups: Effect[] = [];
  for (const run of q.runs) {
    if (run.status === "running") continue;
    if (run.status !== "cancelled" && run.tested.some((pr) => inLine.has(pr))) continue;
    archived.push(run.id);
    if (run.hasTestBranch && !cancelling.has(run.id)) cleanups.push({ kind: "cancel_run", runId: run.id });
  }
  return { archived, cleanups };
}
