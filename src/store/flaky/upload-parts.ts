import type { Sql } from "../sql.js";
import { integer } from "./rows.js";

/** What the store keeps of an upload sent in parts (src/flaky/upload-parts.ts). */

export type PartSetKey = { organizationId: string; repositoryKey: string; setId: string };

export type PartSet = PartSetKey & { count: number; tokenId: string; firstAt: Date; uploadId: string; answer: string | null };

const KEY = `"organizationId" = ? AND "repositoryKey" = ? AND "setId" = ?`;
const keyParams = (k: PartSetKey) => [k.organizationId, k.repositoryKey, k.setId];

function partSet(row: Record<string, unknown>): PartSet {
  return {
    organizationId: row.organizationId as string,
    repositoryKey: row.repositoryKey as string,
    setId: row.setId as string,
    count: integer(row.count),
    tokenId: row.tokenId as string,
    firstAt: new Date(row.firstAt as string | number | Date),
    uploadId: row.uploadId as string,
    answer: (row.answer as string | null) ?? null,
  };
}

/**
 * The set of parts `key`, begun now if it is new, and locked for the rest of the caller's
 * transaction (PostgreSQL: its row, FOR UPDATE; SQLite runs one writer at a time): the parts of a
 * set are counted, and its last part found, one request at a time.
 */
export async function lockPartSet(sql: Sql, key: PartSetKey, begin: { count: number; tokenId: string; uploadId: string; now: Date }): Promise<PartSet> {
  await sql.run(`INSERT INTO "TestUploadPartSet" ("organizationId", "repositoryKey", "setId", "count", "tokenId", "firstAt", "uploadId") VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, [
    ...keyParams(key),
    begin.count,
    begin.tokenId,
    begin.now,
    begin.uploadId,
  ]);
  const [row] = await sql.all<Record<string, unknown>>(`SELECT * FROM "TestUploadPartSet" WHERE ${KEY}${sql.kind === "postgres" ? " FOR UPDATE" : ""}`, keyParams(key));
  return partSet(row!);
}

export async function findPartSet(sql: Sql, key: PartSetKey): Promise<PartSet | null> {
  const [row] = await sql.all<Record<string, unknown>>(`SELECT * FROM "TestUploadPartSet" WHERE ${KEY}`, keyParams(key));
  return row ? partSet(row) : null;
}

/** The set's parts received: index, the request's other fields and the reports' digest (not the reports). */
export async function listParts(sql: Sql, key: PartSetKey): Promise<{ index: number; meta: string; digest: string }[]> {
  const rows = await sql.all<{ index: unknown; meta: string; digest: string }>(`SELECT "index", "meta", "digest" FROM "TestUploadPart" WHERE ${KEY} ORDER BY "index"`, keyParams(key));
  return rows.map((row) => ({ index: integer(row.index), meta: row.meta, digest: row.digest }));
}

export async function insertPart(sql: Sql, key: PartSetKey, part: { index: number; meta: string; digest: string; reports: string; now: Date }): Promise<void> {
  await sql.run(`INSERT INTO "TestUploadPart" ("organizationId", "repositoryKey", "setId", "index", "meta", "digest", "reports", "receivedAt") VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, [
    ...keyParams(key),
    part.index,
    part.meta,
    part.digest,
    part.reports,
    part.now,
  ]);
}

/** The set's parts with their reports, in order. */
export async function loadParts(sql: Sql, key: PartSetKey): Promise<{ index: number; meta: string; reports: string }[]> {
  const rows = await sql.all<{ index: unknown; meta: string; reports: string }>(`SELECT "index", "meta", "reports" FROM "TestUploadPart" WHERE ${KEY} ORDER BY "index"`, keyParams(key));
  return rows.map((row) => ({ index: integer(row.index), meta: row.meta, reports: row.reports }));
}

/**
 * The set stored as one upload: its answer kept (a part sent again gets it), its parts' reports
 * dropped (their fields and digests kept: a part sent again is still told from another).
 */
export async function completePartSet(sql: Sql, key: PartSetKey, answer: string, now: Date): Promise<void> {
  await sql.run(`UPDATE "TestUploadPartSet" SET "answer" = ?, "completedAt" = ? WHERE ${KEY}`, [answer, now, ...keyParams(key)]);
  await sql.run(`UPDATE "TestUploadPart" SET "reports" = '' WHERE ${KEY}`, keyParams(key));
}

/** Sets still awaiting parts that began before `before`, or whose every part is in (a completion a crash interrupted). */
export async function findDuePartSets(sql: Sql, before: Date, limit: number): Promise<PartSet[]> {
  const rows = await sql.all<Record<string, unknown>>(
    `SELECT s.* FROM "TestUploadPartSet" s WHERE s."completedAt" IS NULL
        AND (s."firstAt" < ? OR (SELECT COUNT(*) FROM "TestUploadPart" p WHERE p."organizationId" = s."organizationId" AND p."repositoryKey" = s."repositoryKey" AND p."setId" = s."setId") >= s."count")
      ORDER BY s."firstAt" LIMIT ?`,
    [before, limit],
  );
  return rows.map(partSet);
}

/** Forgets sets stored before `before` (a part sent again after that begins a new set). */
export async function pruneCompletedPartSets(sql: Sql, before: Date): Promise<number> {
  await sql.run(
    `DELETE FROM "TestUploadPart" WHERE EXISTS (SELECT 1 FROM "TestUploadPartSet" s WHERE s."organizationId" = "TestUploadPart"."organizationId" AND s."repositoryKey" = "TestUploadPart"."repositoryKey"
        AND s."setId" = "TestUploadPart"."setId" AND s."completedAt" IS NOT NULL AND s."completedAt" < ?)`,
    [before],
  );
  return sql.run(`DELETE FROM "TestUploadPartSet" WHERE "completedAt" IS NOT NULL AND "completedAt" < ?`, [before]);
}
