import type { RunTestResults } from "../../domain/flaky/queue-evidence.js";
import { isNewSinceQuarantine, type KnownFailure, type VerdictTest, type VerdictUpload } from "../../domain/flaky/verdict.js";
import type { Tx } from "../database.js";
import type { Sql } from "../sql.js";
import { findTestCases } from "./queries.js";
import { integer } from "./rows.js";
import { lockRepositoryTests } from "./tests.js";

/**
 * Test results and the queue runs that tested them. An upload for a testing branch's commit
 * (branch and commit sha as the run's testing branch) is linked to the run, on whichever side
 * arrives second: the upload, if the run's testing branch is recorded; else the run, as its
 * testing branch is recorded. Both sides take the repository's test lock first, so neither
 * misses the other.
 */

/** A queue run test results are linked to. */
export type LinkedRun = { id: string; runId: string; queueId: string; targetBranch: string; treeKey: string | null };

/** The branches an upload may name a testing branch by (uploaders send the ref, or its name). */
const branchNames = (branch: string) => [branch, `refs/heads/${branch}`];

/** The repository's queue run whose testing branch `branch` is at `commitSha`, the latest started, or null. */
export async function findRunTestedAt(sql: Sql, repositoryId: string, commitSha: string, branch: string): Promise<LinkedRun | null> {
  const name = branch.replace(/^refs\/heads\//, "");
  const [row] = await sql.all<{ id: string; runId: string; queueId: string; branch: string; treeKey: string | null }>(
    `SELECT r."id", r."runId", r."queueId", q."branch", r."treeKey" FROM "TestRun" r JOIN "Queue" q ON q."id" = r."queueId"
      WHERE r."testBranchSha" = ? AND r."testBranch" = ? AND q."repositoryId" = ? ORDER BY r."startedAt" DESC LIMIT 1`,
    [commitSha, name, repositoryId],
  );
  return row ? { id: row.id, runId: row.runId, queueId: row.queueId, targetBranch: row.branch, treeKey: row.treeKey } : null;
}

/** The queue run an upload is linked to, or null. */
export async function findRunOfUpload(sql: Sql, uploadId: string): Promise<LinkedRun | null> {
  const [row] = await sql.all<{ id: string; runId: string; queueId: string; branch: string; treeKey: string | null }>(
    `SELECT r."id", r."runId", r."queueId", q."branch", r."treeKey" FROM "TestUpload" u JOIN "TestRun" r ON r."id" = u."runId"
       JOIN "Queue" q ON q."id" = r."queueId" WHERE u."id" = ?`,
    [uploadId],
  );
  return row ? { id: row.id, runId: row.runId, queueId: row.queueId, targetBranch: row.branch, treeKey: row.treeKey } : null;
}

/**
 * Records the testing branch the code host built for a run and the tree it tests, and links the
 * uploads that arrived for its commit before it was recorded; the run is marked an
 * infrastructure failure if one of them is.
 */
export async function recordTestBranchAndLinkUploads(sql: Sql, id: string, testBranch: string, sha: string, treeKey: string): Promise<void> {
  const [run] = await sql.all<{ repositoryId: string }>(`SELECT q."repositoryId" FROM "TestRun" r JOIN "Queue" q ON q."id" = r."queueId" WHERE r."id" = ?`, [id]);
  if (!run) return;
  await lockRepositoryTests(sql, run.repositoryId);
  await sql.run(`UPDATE "TestRun" SET "testBranch" = ?, "testBranchSha" = ?, "treeKey" = ? WHERE "id" = ?`, [testBranch, sha, treeKey, id]);
  const [branch, ref] = branchNames(testBranch);
  await sql.run(`UPDATE "TestUpload" SET "runId" = ? WHERE "repositoryId" = ? AND "commitSha" = ? AND "branch" IN (?, ?) AND "runId" IS NULL`, [id, run.repositoryId, sha, branch, ref]);
  const [infra] = await sql.all<{ reason: string }>(`SELECT "infrastructureFailure" AS reason FROM "TestUpload" WHERE "runId" = ? AND "infrastructureFailure" IS NOT NULL LIMIT 1`, [id]);
  if (infra) await markRunInfrastructureFailure(sql, id, infra.reason);
}

/** Marks a run failed by infrastructure (its first reason stays): the engine retries its job rather than ejecting. */
export async function markRunInfrastructureFailure(sql: Sql, id: string, reason: string): Promise<void> {
  await sql.run(`UPDATE "TestRun" SET "infrastructureFailure" = ? WHERE "id" = ? AND "infrastructureFailure" IS NULL`, [reason, id]);
}

/** The uploads (not infrastructure failures) of the queue's other runs that tested the same tree as `run`: their keys, with their run's engine id. */
export async function findUploadsOfSameTree(sql: Sql, run: LinkedRun): Promise<{ uploadKey: number; runId: string }[]> {
  if (run.treeKey === null) return [];
  const rows = await sql.all<{ key: unknown; runId: string }>(
    `SELECT u."key", r."runId" FROM "TestRun" r JOIN "TestUpload" u ON u."runId" = r."id"
      WHERE r."queueId" = ? AND r."treeKey" = ? AND r."id" <> ? AND u."infrastructureFailure" IS NULL`,
    [run.queueId, run.treeKey, run.id],
  );
  return rows.map((row) => ({ uploadKey: integer(row.key), runId: row.runId }));
}

/**
 * The test results linked to a run (its row id), for the engine's verdict on a failed run: the
 * uploads, and each test that failed in one of them with its status, quarantine, whether it
 * passed on a retry within the run, and its failures' signatures. Passing tests are counted
 * per upload, not listed (results are not indexed by upload; uploads hold their totals).
 */
export async function testResultsOfRun(tx: Tx, runId: string): Promise<RunTestResults> {
  const uploads = await tx.testUpload.findMany({ where: { runId }, orderBy: { key: "asc" } });
  const uploadKeys = uploads.map((u) => u.key);
  const failures = uploadKeys.length === 0 ? [] : await tx.testFailure.findMany({ where: { uploadKey: { in: uploadKeys } }, select: { testCaseKey: true, signature: true } });
  const keys = [...new Set(failures.map((f) => f.testCaseKey))];
  const results = keys.length === 0 ? [] : await tx.testResult.findMany({ where: { testCaseKey: { in: keys }, uploadKey: { in: uploadKeys }, passed: true }, select: { testCaseKey: true } });
  const passedOnRetry = new Set(results.map((r) => r.testCaseKey));
  const summaries = keys.length === 0 ? [] : await tx.failureSignature.findMany({ where: { testCaseKey: { in: keys } }, select: { testCaseKey: true, signature: true, summary: true } });
  const summaryOf = new Map(summaries.map((s) => [`${s.testCaseKey} ${s.signature}`, s.summary]));
  const signaturesOf = new Map<number, Map<string, string | null>>();
  for (const f of failures) {
    let signatures = signaturesOf.get(f.testCaseKey);
    if (!signatures) signaturesOf.set(f.testCaseKey, (signatures = new Map()));
    signatures.set(f.signature, summaryOf.get(`${f.testCaseKey} ${f.signature}`) ?? null);
  }
  return {
    uploads: uploads.map((u) => ({ id: u.id, testCases: u.testCases, failures: u.failures, infrastructureFailure: u.infrastructureFailure })),
    failed: (await findTestCases(tx, keys)).map((test) => ({
      test,
      passedOnRetry: passedOnRetry.has(test.key),
      signatures: [...signaturesOf.get(test.key)!].map(([signature, summary]) => ({ signature, summary })),
    })),
  };
}

/**
 * The evidence a failed run's verdict reads (domain/flaky/verdict.ts): its uploads, each with
 * the tests that failed in it without passing in it and those of them that passed in it, and
 * each such test with its status and quarantine, whether it passed in another queue run of the
 * same tree, and whether its failures' signatures were seen before this run.
 */
export async function runEvidence(tx: Tx, run: { id: string; queueId: string; treeKey: string | null }): Promise<{ uploads: VerdictUpload[]; tests: VerdictTest[] }> {
  const uploads = await tx.testUpload.findMany({ where: { runId: run.id }, orderBy: { key: "asc" } });
  const uploadKeys = uploads.map((u) => u.key);
  if (uploadKeys.length === 0) return { uploads: [], tests: [] };
  const results = await tx.testResult.findMany({ where: { uploadKey: { in: uploadKeys }, failed: true }, select: { testCaseKey: true, uploadKey: true, passed: true } });
  const failedOnly = new Map<number, number[]>();
  for (const r of results) if (!r.passed) failedOnly.set(r.uploadKey, [...(failedOnly.get(r.uploadKey) ?? []), r.testCaseKey]);
  const keys = [...new Set(results.filter((r) => !r.passed).map((r) => r.testCaseKey))];
  const passedIn = new Map<number, number[]>();
  const passes = keys.length === 0 ? [] : await tx.testResult.findMany({ where: { testCaseKey: { in: keys }, uploadKey: { in: uploadKeys }, passed: true }, select: { testCaseKey: true, uploadKey: true } });
  for (const r of passes) passedIn.set(r.uploadKey, [...(passedIn.get(r.uploadKey) ?? []), r.testCaseKey]);
  const sameTree =
    run.treeKey === null || keys.length === 0
      ? []
      : (await tx.testUpload.findMany({ where: { run: { queueId: run.queueId, treeKey: run.treeKey, id: { not: run.id } }, infrastructureFailure: null }, select: { key: true } })).map((u) => u.key);
  const passedOnSameTree = new Set(
    sameTree.length === 0 ? [] : (await tx.testResult.findMany({ where: { testCaseKey: { in: keys }, uploadKey: { in: sameTree }, passed: true }, select: { testCaseKey: true } })).map((r) => r.testCaseKey),
  );
  const failures = keys.length === 0 ? [] : await tx.testFailure.findMany({ where: { testCaseKey: { in: keys }, uploadKey: { in: uploadKeys } }, select: { testCaseKey: true, signature: true } });
  const before =
    keys.length === 0
      ? []
      : await tx.testFailure.findMany({ where: { testCaseKey: { in: keys }, uploadKey: { notIn: uploadKeys } }, select: { testCaseKey: true, signature: true }, distinct: ["testCaseKey", "signature"] });
  const seen = new Set(before.map((f) => `${f.testCaseKey} ${f.signature}`));
  const summaries = keys.length === 0 ? [] : await tx.failureSignature.findMany({ where: { testCaseKey: { in: keys } }, select: { testCaseKey: true, signature: true, summary: true, firstAt: true, shape: true } });
  const summaryOf = new Map(summaries.map((s) => [`${s.testCaseKey} ${s.signature}`, s.summary]));
  const knownOf = new Map<number, KnownFailure[]>();
  for (const s of summaries) knownOf.set(s.testCaseKey, [...(knownOf.get(s.testCaseKey) ?? []), { signature: s.signature, shape: s.shape, firstAt: s.firstAt === null ? null : Number(s.firstAt) }]);
  const signaturesOf = new Map<number, Set<string>>();
  for (const f of failures) signaturesOf.set(f.testCaseKey, (signaturesOf.get(f.testCaseKey) ?? new Set()).add(f.signature));
  return {
    uploads: uploads.map((u) => ({
      id: u.id,
      checkName: u.checkName,
      checkRunId: u.checkRunId === null ? null : Number(u.checkRunId),
      testCases: u.testCases,
      infrastructureFailure: u.infrastructureFailure,
      failed: failedOnly.get(u.key) ?? [],
      passed: passedIn.get(u.key) ?? [],
    })),
    tests: (await findTestCases(tx, keys)).map((test) => ({
      key: test.key,
      id: test.id,
      name: test.name,
      file: test.file,
      status: test.status,
      quarantined: test.quarantined,
      quarantineSetting: test.quarantineSetting,
      passedOnSameTree: passedOnSameTree.has(test.key),
      signatures: [...(signaturesOf.get(test.key) ?? [])].map((signature) => ({
        signature,
        summary: summaryOf.get(`${test.key} ${signature}`) ?? null,
        seenBefore: seen.has(`${test.key} ${signature}`),
        newSinceQuarantine: isNewSinceQuarantine(knownOf.get(test.key)?.find((k) => k.signature === signature)?.shape ?? null, knownOf.get(test.key) ?? [], test.quarantinedAt),
      })),
    })),
  };
}
