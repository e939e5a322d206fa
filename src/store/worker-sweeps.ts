import { sqlOf, type Tx } from "./database.js";

/**
 * The worker's periodic sweeps, shared by the replicas (issue 23, goal 3): each replica's tick
 * claims the sweeps due and does only those, so a sweep is done once per interval however many
 * replicas run, instead of once per replica. Before, three replicas read every run in flight,
 * every queue with PRs waiting and (on a polling code host) every target head three times as
 * often as one did, and their decisions per CPU-second were 0.5–0.6 of one replica's.
 *
 * On PostgreSQL one statement claims them: an upsert that makes a missing row (a new sweep, or
 * a row lost with the UNLOGGED table after a crash) and moves a due one to `until`; a replica
 * racing it waits for the row and then finds it no longer due. SQLite serves one process (its
 * lock admits one writer): nothing to share, and a write per tick would cost a commit (an fsync)
 * four times a second for nothing, so every sweep is due at every tick.
 */
export async function claimDueSweeps(tx: Tx, names: readonly string[], now: Date, until: Date): Promise<Set<string>> {
  const sql = sqlOf(tx);
  if (sql.kind === "sqlite" || names.length === 0) return new Set(names);
  const rows = await sql.all<{ name: string }>(
    `INSERT INTO "WorkerSweep" ("name", "dueAt") VALUES ${names.map(() => "(?, ?)").join(", ")}
      ON CONFLICT ("name") DO UPDATE SET "dueAt" = EXCLUDED."dueAt" WHERE "WorkerSweep"."dueAt" <= ? RETURNING "name"`,
    [...names.flatMap((name) => [name, until]), now],
  );
  return new Set(rows.map((row) => row.name));
}
