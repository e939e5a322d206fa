import type { ReplayRun, ReplayTest } from "../../domain/flaky/backtest.js";
import type { Sql } from "../sql.js";
import { boolean, integer, quarantineSetting } from "./rows.js";

/**
 * What a policy's backtest replays (domain/flaky/backtest.ts): the repository's tests that failed
 * in [from, end] (not in an upload read as an infrastructure failure) or that a person
 * quarantined or released, each with its runs in [from, end] oldest first (infrastructure
 * failures left out, as detection leaves them out), the shape of each failure, and when it first
 * failed each way.
 */
export async function loadReplayTests(sql: Sql, repositoryId: string, from: number, end: number): Promise<ReplayTest[]> {
  const tests = await sql.all<{ key: unknown; id: string; name: string; variant: string; quarantineSetting: unknown }>(
    // A union, so each half is served by its index (an OR would read every test case).
    `SELECT t."key", t."id", t."name", t."variant", t."quarantineSetting" FROM "TestCase" t
      WHERE t."key" IN (SELECT f."testCaseKey" FROM "TestFailure" f JOIN "TestUpload" u ON u."key" = f."uploadKey"
                         WHERE f."repositoryId" = ? AND f."at" >= ? AND f."at" <= ? AND u."infrastructureFailure" IS NULL)
     UNION
     SELECT t."key", t."id", t."name", t."variant", t."quarantineSetting" FROM "TestCase" t WHERE t."repositoryId" = ? AND t."quarantineSetting" <> 'auto'
     ORDER BY 1`,
    [repositoryId, from, end, repositoryId],
  );
  if (tests.length === 0) return [];
  const keys = tests.map((t) => integer(t.key));
  const [inKeys, keysParam] = sql.anyOf(`r."testCaseKey"`, keys);
  const rows = await sql.all<Record<string, unknown>>(
    `SELECT r."testCaseKey" AS k, r."at" AS at, r."failed" AS failed, r."passed" AS passed, u."commitSha" AS sha, u."prNumber" AS pr, u."runId" AS "queueRun", q."treeKey" AS tree, s."shape" AS shape, u."createdAt" AS "receivedAt"
       FROM "TestResult" r JOIN "TestUpload" u ON u."key" = r."uploadKey"
       LEFT JOIN "TestRun" q ON q."id" = u."runId"
       LEFT JOIN "TestFailure" f ON r."failed" AND f."repositoryId" = u."repositoryId" AND f."at" = r."at" AND f."testCaseKey" = r."testCaseKey" AND f."uploadKey" = r."uploadKey"
       LEFT JOIN "FailureSignature" s ON s."testCaseKey" = f."testCaseKey" AND s."signature" = f."signature"
      WHERE ${inKeys} AND r."at" >= ? AND r."at" <= ? AND u."infrastructureFailure" IS NULL
      ORDER BY r."testCaseKey", r."at", r."uploadKey"`,
    [keysParam, from, end],
  );
  const runsOf = new Map<number, ReplayRun[]>(keys.map((k) => [k, []]));
  for (const row of rows) {
    runsOf.get(integer(row.k))!.push({
      at: integer(row.at),
      sha: row.sha as string,
      tree: (row.tree as string | null) ?? null,
      pr: row.pr !== null && row.pr !== undefined,
      failed: boolean(row.failed),
      passed: boolean(row.passed),
      queueRun: (row.queueRun as string | null) ?? null,
      shape: (row.shape as string | null) ?? null,
      receivedAt: new Date(row.receivedAt as string | number | Date).getTime(),
    });
  }
  const [inSigKeys, sigKeysParam] = sql.anyOf(`"testCaseKey"`, keys);
  const shapes = await sql.all<{ k: unknown; shape: string | null; firstAt: unknown }>(
    `SELECT "testCaseKey" AS k, "shape", MIN(COALESCE("firstAt", 0)) AS "firstAt" FROM "FailureSignature" WHERE ${inSigKeys} GROUP BY "testCaseKey", "shape"`,
    [sigKeysParam],
  );
  const firstAtOf = new Map<number, Map<string, number>>();
  // A failure mode stored before shapes were kept gives every failure of its test the benefit of the doubt (verdict.ts isNewSinceQuarantine).
  const unshaped = new Set<number>();
  for (const row of shapes) {
    const k = integer(row.k);
    if (row.shape === null) {
      unshaped.add(k);
      continue;
    }
    if (!firstAtOf.has(k)) firstAtOf.set(k, new Map());
    firstAtOf.get(k)!.set(row.shape, integer(row.firstAt));
  }
  return tests.map((t) => {
    const key = integer(t.key);
    return {
      key,
      id: t.id,
      name: t.name,
      variant: t.variant,
      setting: quarantineSetting(t.quarantineSetting),
      runs: runsOf.get(key)!,
      shapeFirstAt: firstAtOf.get(key) ?? new Map(),
      ...(unshaped.has(key) ? { unshapedFailures: true } : {}),
    };
  });
}
