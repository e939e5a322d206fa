import { DAY_MS } from "../../domain/time.js";
import type { QuarantineSetting, TestStatus } from "../../domain/flaky/detection.js";
import type { KnownFailure } from "../../domain/flaky/verdict.js";
import type { TestCase } from "../../domain/flaky/test-case.js";
import type { TestCase as TestCaseRow } from "../../generated/sqlite/client.js";
import type { Tx } from "../database.js";
import type { Sql } from "../sql.js";
import { integer, owners, quarantineSetting, testStatus } from "./rows.js";

/** What the flaky-test API reads: test cases, and the figures computed from their results. */

function testCaseOf(row: TestCaseRow): TestCase {
  return {
    key: row.key,
    id: row.id,
    name: row.name,
    file: row.file,
    classname: row.classname,
    parent: row.parent,
    variant: row.variant,
    codeowners: owners(row.codeowners),
    status: testStatus(row.status),
    statusReason: row.statusReason,
    statusAt: row.statusAt,
    quarantineSetting: quarantineSetting(row.quarantineSetting),
    quarantined: row.quarantined,
    quarantinedAt: row.quarantinedAt,
    quarantineReason: row.quarantineReason,
    ticketUrl: row.ticketUrl,
  };
}

/** The test cases with the keys, by ascending key (keys of no test are left out). */
export async function findTestCases(tx: Tx, keys: readonly number[]): Promise<TestCase[]> {
  return (await tx.testCase.findMany({ where: { key: { in: [...keys] } }, orderBy: { key: "asc" } })).map(testCaseOf);
}

export async function findTestCaseById(tx: Tx, repositoryId: string, id: string): Promise<TestCase | null> {
  const row = await tx.testCase.findUnique({ where: { repositoryId_id: { repositoryId, id } } });
  return row && testCaseOf(row);
}

export async function setTicketUrl(tx: Tx, key: number, ticketUrl: string | null): Promise<void> {
  await tx.testCase.update({ where: { key }, data: { ticketUrl } });
}

/** The keys of the repository's quarantined tests, ascending. */
export async function listQuarantinedTestKeys(tx: Tx, repositoryId: string): Promise<number[]> {
  const rows = await tx.testCase.findMany({ where: { repositoryId, quarantined: true }, select: { key: true }, orderBy: { key: "asc" } });
  return rows.map((row) => row.key);
}

/** The keys of the repository's tests whose status is one of `statuses`, in key order. */
export async function listTestKeysByStatus(tx: Tx, repositoryId: string, statuses: readonly TestStatus[]): Promise<number[]> {
  const rows = await tx.testCase.findMany({ where: { repositoryId, status: { in: [...statuses] } }, select: { key: true }, orderBy: { key: "asc" } });
  return rows.map((row) => row.key);
}

/** Which of the ids name quarantined tests of the repository. */
export async function findQuarantinedTestIds(tx: Tx, repositoryId: string, ids: readonly string[]): Promise<string[]> {
  const rows = await tx.testCase.findMany({ where: { repositoryId, id: { in: [...ids] }, quarantined: true }, select: { id: true } });
  return rows.map((row) => row.id);
}

/**
 * The repository's quarantined tests among `ids`, each with who quarantined it, since when, and
 * the ways it is known to have failed (verdict.ts KnownFailure).
 */
export async function findQuarantinedTests(tx: Tx, repositoryId: string, ids: readonly string[]): Promise<{ id: string; quarantineSetting: QuarantineSetting; quarantinedAt: Date | null; known: KnownFailure[] }[]> {
  const rows = await tx.testCase.findMany({
    where: { repositoryId, id: { in: [...ids] }, quarantined: true },
    select: { id: true, quarantineSetting: true, quarantinedAt: true, signatures: { select: { signature: true, shape: true, firstAt: true } } },
  });
  return rows.map((row) => ({
    id: row.id,
    quarantineSetting: quarantineSetting(row.quarantineSetting),
    quarantinedAt: row.quarantinedAt,
    known: row.signatures.map((k) => ({ signature: k.signature, shape: k.shape, firstAt: k.firstAt === null ? null : Number(k.firstAt) })),
  }));
}

/** The keys of the repository's tests that failed in [start, end), unordered. */
export async function listFailingTestKeys(sql: Sql, repositoryId: string, start: Date, end: Date): Promise<number[]> {
  const rows = await sql.all<{ k: unknown }>(`SELECT DISTINCT "testCaseKey" AS k FROM "TestFailure" WHERE "repositoryId" = ? AND "at" >= ? AND "at" < ?`, [repositoryId, start.getTime(), end.getTime()]);
  return rows.map((row) => integer(row.k));
}

/** A test's runs and failed runs in the last 7 days and the last 24 hours (runs up to `now`). */
export type RunCounts = { testCaseKey: number; runs7: number; fails7: number; runs24: number; fails24: number };

/** Run counts of the tests that ran in the week up to `now` (ms); tests without runs are absent. */
export async function countRecentRuns(sql: Sql, keys: readonly number[], window: { weekAgo: number; dayAgo: number; now: number }): Promise<RunCounts[]> {
  const [inKeys, keysParam] = sql.anyOf(`"testCaseKey"`, keys);
  const rows = await sql.all<Record<string, unknown>>(
    `SELECT "testCaseKey" AS k, COUNT(*) AS runs7, SUM(CASE WHEN "failed" THEN 1 ELSE 0 END) AS fails7,
            SUM(CASE WHEN "at" >= ? THEN 1 ELSE 0 END) AS runs24, SUM(CASE WHEN "at" >= ? AND "failed" THEN 1 ELSE 0 END) AS fails24
       FROM "TestResult" WHERE ${inKeys} AND "at" >= ? AND "at" <= ? GROUP BY "testCaseKey"`,
    [window.dayAgo, window.dayAgo, keysParam, window.weekAgo, window.now],
  );
  return rows.map((r) => ({ testCaseKey: integer(r.k), runs7: integer(r.runs7), fails7: integer(r.fails7), runs24: integer(r.runs24), fails24: integer(r.fails24) }));
}

/** How many distinct pull requests each test failed on in [since, until] (ms); tests without any are absent. */
export async function countPullRequestsImpacted(sql: Sql, keys: readonly number[], since: number, until: number): Promise<{ testCaseKey: number; pullRequests: number }[]> {
  const [inKeys, keysParam] = sql.anyOf(`"testCaseKey"`, keys);
  const rows = await sql.all<{ k: unknown; n: unknown }>(
    `SELECT "testCaseKey" AS k, COUNT(DISTINCT "prNumber") AS n FROM "TestFailure"
       WHERE ${inKeys} AND "at" >= ? AND "at" <= ? AND "prNumber" IS NOT NULL GROUP BY "testCaseKey"`,
    [keysParam, since, until],
  );
  return rows.map((row) => ({ testCaseKey: integer(row.k), pullRequests: integer(row.n) }));
}

/** A test's runs and failed runs per UTC day in [since, until] (ms), by day; days without runs are absent. */
export async function countRunsPerDay(sql: Sql, key: number, since: number, until: number): Promise<{ day: number; runs: number; failures: number }[]> {
  const rows = await sql.all<Record<string, unknown>>(
    `SELECT "at" / ${DAY_MS} AS d, COUNT(*) AS runs, SUM(CASE WHEN "failed" THEN 1 ELSE 0 END) AS failures
       FROM "TestResult" WHERE "testCaseKey" = ? AND "at" >= ? AND "at" <= ? GROUP BY "at" / ${DAY_MS} ORDER BY d`,
    [key, since, until],
  );
  return rows.map((r) => ({ day: integer(r.d) * DAY_MS, runs: integer(r.runs), failures: integer(r.failures) }));
}

/** The pull requests a test failed on in [since, until] (ms), most recent failure first, at most `limit`. */
export async function listPullRequestsImpacted(sql: Sql, key: number, since: number, until: number, limit: number): Promise<{ prNumber: number; failures: number; lastAt: number }[]> {
  const rows = await sql.all<Record<string, unknown>>(
    `SELECT "prNumber" AS pr, COUNT(*) AS n, MAX("at") AS last FROM "TestFailure"
       WHERE "testCaseKey" = ? AND "at" >= ? AND "at" <= ? AND "prNumber" IS NOT NULL GROUP BY "prNumber" ORDER BY last DESC, pr DESC LIMIT ?`,
    [key, since, until, limit],
  );
  return rows.map((r) => ({ prNumber: integer(r.pr), failures: integer(r.n), lastAt: integer(r.last) }));
}

/**
 * Each test's failures grouped by signature, by test, most frequent first, then most recent: with
 * the latest one's text and the CI job of its upload (null when not kept, or its upload is gone).
 */
export async function listFailureSignatures(sql: Sql, keys: readonly number[]): Promise<{ testCaseKey: number; summary: string; count: number; lastAt: number; lastText: string | null; lastJobUrl: string | null }[]> {
  const [inKeys, keysParam] = sql.anyOf(`s."testCaseKey"`, keys);
  const rows = await sql.all<{ k: unknown; summary: string; count: unknown; lastAt: unknown; lastText: string | null; jobUrl: string | null }>(
    `SELECT s."testCaseKey" AS k, s."summary", s."count", s."lastAt", s."lastText", u."jobUrl"
       FROM "FailureSignature" s LEFT JOIN "TestUpload" u ON u."key" = s."lastUploadKey" WHERE ${inKeys}
       ORDER BY s."testCaseKey", s."count" DESC, s."lastAt" DESC`,
    [keysParam],
  );
  return rows.map((row) => ({
    testCaseKey: integer(row.k),
    summary: row.summary,
    count: integer(row.count),
    lastAt: integer(row.lastAt),
    lastText: row.lastText ?? null,
    lastJobUrl: row.jobUrl ?? null,
  }));
}
