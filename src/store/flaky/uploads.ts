import type { NewTestCase } from "../../domain/flaky/test-case.js";
import type { Sql } from "../sql.js";
import { integer, owners } from "./rows.js";

/**
 * What an upload writes: the upload, new test cases, their results, failures and failure
 * signatures, and the CODEOWNERS version owners were computed from. Rows go in bulk, as
 * tuples in column order, and each insert is one statement per batch (sql.ts).
 */

export type NewUpload = {
  id: string;
  repositoryId: string;
  commitSha: string;
  branch: string;
  prNumber: number | null;
  jobUrl: string | null;
  /** The CI check the results come from, as the uploader named it (name; check run id), when it did. */
  checkName: string | null;
  checkRunId: number | null;
  variant: string;
  createdAt: Date;
  /** The queue run that tested the commit (store/flaky/runs.ts), when known. */
  runId: string | null;
};

/** Stores an upload with no test cases counted yet; answers its key. */
export async function insertUpload(sql: Sql, upload: NewUpload): Promise<number> {
  const [row] = await sql.all<{ key: unknown }>(
    `INSERT INTO "TestUpload" ("id", "repositoryId", "commitSha", "branch", "prNumber", "jobUrl", "checkName", "checkRunId", "variant", "createdAt", "testCases", "failures", "runId")
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?) RETURNING "key"`,
    [upload.id, upload.repositoryId, upload.commitSha, upload.branch, upload.prNumber, upload.jobUrl, upload.checkName, upload.checkRunId, upload.variant, upload.createdAt, upload.runId],
  );
  return integer(row!.key);
}

/** Whether an upload with this id is stored (a bundle sent again is stored once). */
export async function uploadExists(sql: Sql, id: string): Promise<boolean> {
  const rows = await sql.all<{ key: unknown }>(`SELECT "key" FROM "TestUpload" WHERE "id" = ?`, [id]);
  return rows.length > 0;
}

/** An upload's totals by its id (null: no such upload). */
export async function uploadTotals(sql: Sql, id: string): Promise<{ testCases: number; failures: number; infrastructureFailure: string | null } | null> {
  const [row] = await sql.all<{ testCases: unknown; failures: unknown; infrastructureFailure: string | null }>(`SELECT "testCases", "failures", "infrastructureFailure" FROM "TestUpload" WHERE "id" = ?`, [id]);
  return row ? { testCases: integer(row.testCases), failures: integer(row.failures), infrastructureFailure: row.infrastructureFailure ?? null } : null;
}

/** The upload's totals, and why it is an infrastructure failure (null: it is not). */
export async function setUploadTotals(sql: Sql, uploadKey: number, totals: { testCases: number; failures: number; infrastructureFailure: string | null }): Promise<void> {
  await sql.run(`UPDATE "TestUpload" SET "testCases" = ?, "failures" = ?, "infrastructureFailure" = ? WHERE "key" = ?`, [totals.testCases, totals.failures, totals.infrastructureFailure, uploadKey]);
}

/** The keys of the repository's test cases among `ids`, by id. */
export async function findTestCaseKeys(sql: Sql, repositoryId: string, ids: readonly string[]): Promise<Map<string, number>> {
  const [inIds, idsParam] = sql.anyOf(`"id"`, ids);
  const rows = await sql.all<{ id: string; key: unknown }>(`SELECT "id", "key" FROM "TestCase" WHERE "repositoryId" = ? AND ${inIds}`, [repositoryId, idsParam]);
  return new Map(rows.map((row) => [row.id, integer(row.key)]));
}

const TEST_CASE_COLUMNS = ["id", "repositoryId", "name", "file", "classname", "parent", "variant", "codeowners", "status", "statusReason", "statusAt", "quarantineSetting", "quarantined", "createdAt"];

/**
 * Stores new test cases, healthy and automatically quarantined, first seen `now`; answers each
 * one's key in order, or undefined for one a concurrent upload stored first.
 */
export function insertTestCases(sql: Sql, repositoryId: string, tests: readonly NewTestCase[], now: Date): Promise<(number | undefined)[]> {
  const rows = tests.map((t) => [t.id, repositoryId, t.name, t.file, t.classname, t.parent, t.variant, JSON.stringify(t.codeowners), "healthy", "first seen", now, "auto", false, now]);
  return sql.insertKeys("TestCase", TEST_CASE_COLUMNS, rows, ["repositoryId", "id"], "id");
}

/** One test's result in one upload: some attempt failed, some attempt passed. */
export type ResultRow = [testCaseKey: number, at: number, uploadKey: number, failed: boolean, passed: boolean];

const RESULT_COLUMNS = ["testCaseKey", "at", "uploadKey", "failed", "passed"];

export function insertTestResults(sql: Sql, rows: readonly ResultRow[]): Promise<void> {
  return sql.insert("TestResult", RESULT_COLUMNS, rows);
}

/** Changes the result stored for a test in an upload (a repeated testcase changed it). */
export async function updateTestResult(sql: Sql, [testCaseKey, at, uploadKey, failed, passed]: ResultRow): Promise<void> {
  await sql.run(`UPDATE "TestResult" SET "failed" = ?, "passed" = ? WHERE "testCaseKey" = ? AND "at" = ? AND "uploadKey" = ?`, [failed, passed, testCaseKey, at, uploadKey]);
}

export type FailureRow = [repositoryId: string, at: number, testCaseKey: number, uploadKey: number, prNumber: number | null, signature: string];

export function insertTestFailures(sql: Sql, rows: readonly FailureRow[]): Promise<void> {
  return sql.insert("TestFailure", ["repositoryId", "at", "testCaseKey", "uploadKey", "prNumber", "signature"], rows);
}

/** Failures of a test with one signature, seen `count` times, the earliest at `firstAt` and the latest at `lastAt` (ms). */
export type SignatureCount = {
  testCaseKey: number;
  signature: string;
  shape: string;
  summary: string;
  count: number;
  firstAt: number;
  lastAt: number;
  /** The latest failure's text (bounded) and its upload. */
  lastText: string | null;
  lastUploadKey: number;
};

/**
 * Adds failures to their tests' signatures: counts add up, the latest time wins, and the first
 * time stays the earliest known (a signature recorded before first times were kept keeps none:
 * it is older than any quarantine that reads it); a signature's shape is set once; the latest
 * failure's text and upload go with the latest time.
 */
export function addFailureSignatures(sql: Sql, signatures: readonly SignatureCount[]): Promise<void> {
  return sql.insert(
    "FailureSignature",
    ["testCaseKey", "signature", "shape", "summary", "count", "firstAt", "lastAt", "lastText", "lastUploadKey"],
    signatures.map((s) => [s.testCaseKey, s.signature, s.shape, s.summary, s.count, s.firstAt, s.lastAt, s.lastText, s.lastUploadKey]),
    `ON CONFLICT ("testCaseKey", "signature") DO UPDATE SET "count" = "FailureSignature"."count" + excluded."count",
       "lastText" = CASE WHEN excluded."lastAt" >= "FailureSignature"."lastAt" THEN excluded."lastText" ELSE "FailureSignature"."lastText" END,
       "lastUploadKey" = CASE WHEN excluded."lastAt" >= "FailureSignature"."lastAt" THEN excluded."lastUploadKey" ELSE "FailureSignature"."lastUploadKey" END,
       "lastAt" = CASE WHEN excluded."lastAt" > "FailureSignature"."lastAt" THEN excluded."lastAt" ELSE "FailureSignature"."lastAt" END,
       "firstAt" = CASE WHEN "FailureSignature"."firstAt" IS NULL OR excluded."firstAt" >= "FailureSignature"."firstAt" THEN "FailureSignature"."firstAt" ELSE excluded."firstAt" END,
       "shape" = COALESCE("FailureSignature"."shape", excluded."shape")`,
  );
}

/** The hash of the CODEOWNERS file the repository's test owners were last computed from. */
export async function findCodeOwnersHash(sql: Sql, repositoryId: string): Promise<string | null> {
  const [row] = await sql.all<{ hash: string }>(`SELECT "hash" FROM "CodeOwnersVersion" WHERE "repositoryId" = ?`, [repositoryId]);
  return row?.hash ?? null;
}

export async function saveCodeOwnersHash(sql: Sql, repositoryId: string, hash: string, now: Date): Promise<void> {
  await sql.run(
    `INSERT INTO "CodeOwnersVersion" ("repositoryId", "hash", "updatedAt") VALUES (?, ?, ?)
       ON CONFLICT ("repositoryId") DO UPDATE SET "hash" = excluded."hash", "updatedAt" = excluded."updatedAt"`,
    [repositoryId, hash, now],
  );
}

export async function findTestCaseOwners(sql: Sql, keys: readonly number[]): Promise<{ key: number; codeowners: string[] }[]> {
  const [inKeys, keysParam] = sql.anyOf(`"key"`, keys);
  const rows = await sql.all<{ key: unknown; codeowners: string }>(`SELECT "key", "codeowners" FROM "TestCase" WHERE ${inKeys}`, [keysParam]);
  return rows.map((row) => ({ key: integer(row.key), codeowners: owners(row.codeowners) }));
}

export async function setTestCaseOwners(sql: Sql, key: number, codeowners: readonly string[]): Promise<void> {
  await sql.run(`UPDATE "TestCase" SET "codeowners" = ? WHERE "key" = ?`, [JSON.stringify(codeowners), key]);
}

/** The repository's other uploads for the commit, infrastructure failures left out: their keys. */
export async function findOtherUploadsOfCommit(sql: Sql, repositoryId: string, commitSha: string, uploadKey: number): Promise<number[]> {
  const rows = await sql.all<{ key: unknown }>(`SELECT "key" FROM "TestUpload" WHERE "repositoryId" = ? AND "commitSha" = ? AND "key" <> ? AND "infrastructureFailure" IS NULL`, [repositoryId, commitSha, uploadKey]);
  return rows.map((row) => integer(row.key));
}

/** Which of the tests passed in some of the uploads. */
export async function findTestsPassedIn(sql: Sql, testCaseKeys: readonly number[], uploadKeys: readonly number[]): Promise<number[]> {
  const [inKeys, keysParam] = sql.anyOf(`"testCaseKey"`, testCaseKeys);
  const [inUploads, uploadsParam] = sql.anyOf(`"uploadKey"`, uploadKeys);
  const rows = await sql.all<{ k: unknown }>(`SELECT DISTINCT "testCaseKey" AS k FROM "TestResult" WHERE ${inKeys} AND ${inUploads} AND "passed" = ?`, [keysParam, uploadsParam, true]);
  return rows.map((row) => integer(row.k));
}

/** The tests that failed in some of the uploads. */
export async function findTestsFailedIn(sql: Sql, uploadKeys: readonly number[]): Promise<number[]> {
  const [inUploads, uploadsParam] = sql.anyOf(`"uploadKey"`, uploadKeys);
  const rows = await sql.all<{ k: unknown }>(`SELECT DISTINCT "testCaseKey" AS k FROM "TestFailure" WHERE ${inUploads}`, [uploadsParam]);
  return rows.map((row) => integer(row.k));
}
