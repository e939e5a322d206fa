import type { ImpactedTargets as TargetsRow } from "../generated/sqlite/client.js";
import type { Targets } from "../domain/engine/types.js";
import { jsonStrings } from "./columns.js";
import { sqlOf, type Tx } from "./database.js";

/** The targets a PR's head impacts, as uploaded for the commit `sha`. */
export type ImpactedTargets = { prNumber: number; sha: string; targets: Targets };

export function toImpactedTargets(row: Pick<TargetsRow, "prNumber" | "sha" | "kind" | "targets">): ImpactedTargets {
  return { prNumber: row.prNumber, sha: row.sha, targets: row.kind === "all" ? "ALL" : jsonStrings(row.targets, "ImpactedTargets.targets") };
}

/** The commit the PR's impacted targets were uploaded for, or null when none were. */
export async function impactedTargetsShaOf(tx: Tx, queueId: string, prNumber: number): Promise<string | null> {
  return (await impactedTargetsOf(tx, queueId, prNumber))?.sha ?? null;
}

export async function impactedTargetsOf(tx: Tx, queueId: string, prNumber: number): Promise<ImpactedTargets | null> {
  // Plain SQL (sqlOf): every upload of a PR's targets and every submission of a parallel queue reads them.
  const [row] = await sqlOf(tx).all<Pick<TargetsRow, "prNumber" | "sha" | "kind" | "targets">>(`SELECT "prNumber", "sha", "kind", "targets" FROM "ImpactedTargets" WHERE "queueId" = ? AND "prNumber" = ?`, [
    queueId,
    prNumber,
  ]);
  return row ? toImpactedTargets({ ...row, prNumber: Number(row.prNumber) }) : null;
}

/** Records the PR's impacted targets for the commit `sha`, replacing earlier ones. */
export async function upsertImpactedTargets(tx: Tx, queueId: string, prNumber: number, sha: string, targets: Targets): Promise<void> {
  const all = targets === "ALL";
  const data = { sha, kind: all ? "all" : "list", targets: all ? "[]" : JSON.stringify(targets), count: all ? 0 : targets.length };
  // Plain SQL (sqlOf); `updatedAt` as Prisma's @updatedAt writes it: the time of the write.
  await sqlOf(tx).insert(
    "ImpactedTargets",
    ["queueId", "prNumber", "sha", "kind", "targets", "count", "updatedAt"],
    [[queueId, prNumber, data.sha, data.kind, data.targets, data.count, new Date()]],
    `ON CONFLICT ("queueId", "prNumber") DO UPDATE SET "sha" = excluded."sha", "kind" = excluded."kind", "targets" = excluded."targets", "count" = excluded."count", "updatedAt" = excluded."updatedAt"`,
  );
}
