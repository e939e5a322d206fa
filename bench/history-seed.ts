import type { Database } from "../src/store/database.js";
import { orderedId } from "../src/store/ids.js";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * A history of concluded PRs written straight into the database, spread over the organization's
 * queues (every queue in the database, in turn): per PR its entry and the transitions the engine
 * leaves (submitted → testing → tests passed → merged, or → failed for one in ten), each with the
 * durations the store records (domain/durations.ts). The last `lastHour` PRs concluded in the last
 * hour, the others over the `days` before it. 500 PRs per transaction. For benchmarks only.
 */
export async function seedHistory(db: Database, backend: "sqlite" | "postgres", options: { prs: number; lastHour: number; days?: number; now?: number }): Promise<void> {
  const { prs, lastHour } = options;
  const days = options.days ?? 30;
  const now = options.now ?? Date.now();
  const queueIds = await db.sqlRead((sql) => sql.all<{ id: string }>(`SELECT "id" FROM "Queue" ORDER BY "id"`, []));
  if (queueIds.length === 0) throw new Error("seedHistory: no queue to write a history into");
  for (let from = 0; from < prs; from += 500) {
    const entries: unknown[][] = [];
    const transitions: unknown[][] = [];
    for (let k = from; k < Math.min(from + 500, prs); k++) {
      const queueId = queueIds[k % queueIds.length]!.id;
      const concludedAt = k >= prs - lastHour ? now - ((k - (prs - lastHour)) / Math.max(1, lastHour)) * (HOUR_MS - 60_000) - 30_000 : now - HOUR_MS - (k / prs) * days * DAY_MS;
      const merged = k % 10 !== 0;
      const state = merged ? "merged" : "failed";
      const at = (msBefore: number) => new Date(concludedAt - msBefore);
      const entryId = orderedId();
      entries.push([
        entryId,
        queueId,
        100_000 + k,
        `Change ${k}: ${k % 3 === 0 ? "fix flaky login test" : k % 3 === 1 ? "bump dependencies" : "refactor the billing module"}`,
        "a".repeat(40),
        "main",
        `dev-${k % 50}`,
        state,
        at(0),
        merged ? "merged" : "tests_failed",
        100,
        "medium",
        false,
        false,
        "mergeable",
        at(2_400_000),
        4,
      ]);
      const path: [string | null, string, string, number][] = [
        [null, "pending", "submitted", 2_400_000],
        ["pending", "testing", "run_started", 1_800_000 - (k % 7) * 60_000],
        ["testing", merged ? "tests_passed" : "failed", merged ? "tests_passed" : "tests_failed", merged ? 60_000 : 0],
        ...(merged ? [["tests_passed", "merged", "merged", 0] as [string, string, string, number]] : []),
      ];
      path.forEach(([fromState, toState, reason, before], i) => {
        const stateMs = i === 0 ? null : path[i - 1]![3] - before;
        const queuedMs = toState === "merged" || toState === "failed" ? 2_400_000 - before : null;
        transitions.push([orderedId(), entryId, queueId, fromState, toState, reason, at(before), "{}", stateMs, queuedMs]);
      });
    }
    await db.sqlTransaction(async (sql) => {
      await sql.insert(
        "QueueEntry",
        [
          "id",
          "queueId",
          "prNumber",
          "prTitle",
          "prSha",
          "prBaseBranch",
          "prAuthor",
          "state",
          "stateChangedAt",
          "stateReason",
          "priorityValue",
          "priorityName",
          "noBatch",
          "isCurrentlySubmitted",
          "mergeability",
          "submittedAt",
          "timelineCount",
        ],
        entries,
      );
      await sql.insert("Transition", ["id", "entryId", "queueId", "fromState", "toState", "reason", "at", "evidence", "stateMs", "queuedMs"], transitions);
    });
  }
  if (backend === "postgres") await db.sqlRead((sql) => sql.all(`ANALYZE`, []));
}
