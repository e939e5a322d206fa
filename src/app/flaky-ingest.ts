import type { Principal } from "../auth/tokens.js";
import type { RepoRef } from "../codehost/code-host.js";
import { CodeOwners } from "../domain/flaky/codeowners.js";
import { failureSignature, normalizeFailure } from "../domain/flaky/failures.js";
import { testCaseId } from "../domain/flaky/identity.js";
import { JUnitError, parseJUnit } from "../domain/flaky/junit.js";
import type { Sql } from "../store/sql.js";
import { invalidArgument, notFound } from "./errors.js";
import { applyDetection, loadFlakySettings, STATUS_COLUMNS, statusRow, type Flake } from "./flaky-status.js";
import { claimRepository, findRepository, repoNotFound, repositoryKey } from "./repositories.js";
import type { Services } from "./services.js";

export type UploadInput = {
  repo: RepoRef;
  org_url_slug: string;
  commit_sha: string;
  branch: string;
  pr_number?: number | undefined;
  job_url?: string | undefined;
  variant?: string | undefined;
  junit_xml: string[];
  codeowners?: string | undefined;
};

/** One test's outcome in an upload, its repeats (reruns) merged. */
type Outcome = {
  id: string;
  name: string;
  classname: string;
  file: string;
  parent: string;
  at: number;
  failed: boolean;
  passed: boolean;
  message: string | null;
};

/** Where GitHub looks for CODEOWNERS, in its order. */
const CODEOWNERS_PATHS = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

/**
 * Reads every report of the upload into one outcome per test. Malformed XML is refused naming
 * the file's index and the line and column; nothing has been written at that point.
 */
function readReports(input: UploadInput, orgSlug: string, repoFullName: string, now: Date): { outcomes: Map<string, Outcome> } {
  const outcomes = new Map<string, Outcome>();
  const variant = input.variant ?? "";
  input.junit_xml.forEach((xml, index) => {
    try {
      parseJUnit(xml, (c) => {
        const id = testCaseId(orgSlug, repoFullName, c, variant, c.explicitId);
        // A run's time is its suite's timestamp, else the upload's; never in the future.
        const at = Math.min(c.at ?? now.getTime(), now.getTime());
        const seen = outcomes.get(id);
        if (seen) {
          seen.failed ||= c.failed;
          seen.passed ||= c.passed;
          seen.message ??= c.message;
          return;
        }
        if (!c.failed && !c.passed) {
          // Skipped: the test exists, but the run says nothing of it.
          outcomes.set(id, { id, name: c.name, classname: c.classname, file: c.file, parent: c.parent, at, failed: false, passed: false, message: null });
          return;
        }
        outcomes.set(id, { id, name: c.name, classname: c.classname, file: c.file, parent: c.parent, at, failed: c.failed, passed: c.passed, message: c.message });
      });
    } catch (error) {
      if (error instanceof JUnitError) {
        throw invalidArgument(`junit_xml[${index}]`, `is not a JUnit report: line ${error.line}, column ${error.column}: ${error.message}`);
      }
      throw error;
    }
  });
  return { outcomes };
}

async function readCodeOwners(services: Services, repo: RepoRef, sha: string): Promise<CodeOwners | null> {
  for (const path of CODEOWNERS_PATHS) {
    try {
      const text = await services.codeHost.readFile(repo, path, sha);
      if (text !== null) return new CodeOwners(text);
    } catch (error) {
      services.log?.warn({ err: error, repo: repositoryKey(repo), path }, "could not read CODEOWNERS; tests get no owners from it");
      return null;
    }
  }
  return null;
}

/**
 * Stores an upload of JUnit results atomically and re-judges the tests it touched: every
 * report is parsed before anything is written, and everything is written in one transaction.
 */
export async function uploadTestResults(services: Services, principal: Principal, input: UploadInput) {
  if (input.org_url_slug.toLowerCase() !== principal.organizationSlug) throw notFound(`organization "${input.org_url_slug}" not found`);
  const now = services.now();
  // Ids hash the repository's name as first registered, so a client's casing cannot split a test.
  const known = await services.db.read(async (tx) => {
    const owned = await findRepository(tx, principal, input.repo);
    if (!owned && (await tx.repository.findUnique({ where: { key: repositoryKey(input.repo) }, select: { id: true } }))) throw repoNotFound(input.repo);
    return owned;
  });
  const name = known ?? input.repo;
  const { outcomes } = readReports(input, principal.organizationSlug, `${name.host}/${name.owner}/${name.name}`, now);
  const repository = known ?? (await services.db.transaction((tx) => claimRepository(services, tx, principal, input.repo)));
  const owners = input.codeowners !== undefined ? new CodeOwners(input.codeowners) : await readCodeOwners(services, input.repo, input.commit_sha);

  const uploadId = services.newId();
  const stored = await services.db.sqlTransaction((sql) =>
    storeUpload(sql, { repositoryId: repository.id, uploadId, input, outcomes: [...outcomes.values()], owners, now }),
  );
  return { upload_id: uploadId, test_cases: outcomes.size, failures: stored.failures };
}

type Store = { repositoryId: string; uploadId: string; input: UploadInput; outcomes: Outcome[]; owners: CodeOwners | null; now: Date };

async function storeUpload(sql: Sql, s: Store): Promise<{ failures: number }> {
  const { repositoryId, input, outcomes, now } = s;
  const failed = outcomes.filter((o) => o.failed);
  const [upload] = await sql.all<{ key: unknown }>(
    `INSERT INTO "TestUpload" ("id", "repositoryId", "commitSha", "branch", "prNumber", "jobUrl", "variant", "createdAt", "testCases", "failures")
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING "key"`,
    [s.uploadId, repositoryId, input.commit_sha, input.branch, input.pr_number ?? null, input.job_url ?? null, input.variant ?? "", now, outcomes.length, failed.length],
  );
  const uploadKey = Number(upload!.key);

  // Test cases: existing ones by id, new ones inserted; owners refreshed when CODEOWNERS says otherwise.
  const ids = outcomes.map((o) => o.id);
  const [inIds, idsParam] = sql.anyOf(`"id"`, ids);
  const existing = new Map<string, Record<string, unknown>>();
  for (const row of await sql.all<Record<string, unknown>>(`SELECT "id", "codeowners", ${STATUS_COLUMNS} FROM "TestCase" WHERE "repositoryId" = ? AND ${inIds}`, [repositoryId, idsParam])) {
    existing.set(row.id as string, row);
  }
  const ownersOf = (o: Outcome) => JSON.stringify(s.owners?.ownersOf(o.file) ?? []);
  const fresh = outcomes.filter((o) => !existing.has(o.id));
  await sql.insert(
    "TestCase",
    ["id", "repositoryId", "name", "file", "classname", "parent", "variant", "codeowners", "status", "statusReason", "statusAt", "quarantineSetting", "quarantined", "createdAt"],
    fresh.map((o) => [o.id, repositoryId, o.name, o.file, o.classname, o.parent, input.variant ?? "", ownersOf(o), "healthy", "first seen", now, "auto", false, now]),
  );
  if (s.owners) {
    for (const o of outcomes) {
      const row = existing.get(o.id);
      const owners = ownersOf(o);
      if (row && row.codeowners !== owners) await sql.run(`UPDATE "TestCase" SET "codeowners" = ? WHERE "key" = ?`, [owners, Number(row.key)]);
    }
  }
  const keys = new Map<string, number>();
  for (const [id, row] of existing) keys.set(id, Number(row.key));
  if (fresh.length > 0) {
    const [inFresh, freshParam] = sql.anyOf(`"id"`, fresh.map((o) => o.id));
    for (const row of await sql.all<{ id: string; key: unknown }>(`SELECT "id", "key" FROM "TestCase" WHERE "repositoryId" = ? AND ${inFresh}`, [repositoryId, freshParam])) {
      keys.set(row.id, Number(row.key));
    }
  }

  // Results (skipped tests have none), failures, and failure signatures.
  const ran = outcomes.filter((o) => o.failed || o.passed);
  await sql.insert(
    "TestResult",
    ["testCaseKey", "at", "uploadKey", "failed", "passed"],
    ran.map((o) => [keys.get(o.id)!, o.at, uploadKey, o.failed, o.passed]),
  );
  const signatures = new Map<string, { key: number; signature: string; summary: string; count: number; lastAt: number }>();
  const failureRows = failed.map((o) => {
    const key = keys.get(o.id)!;
    const summary = normalizeFailure(o.message ?? "") || "(no failure message)";
    const signature = failureSignature(summary);
    const group = signatures.get(`${key} ${signature}`);
    if (group) {
      group.count++;
      group.lastAt = Math.max(group.lastAt, o.at);
    } else {
      signatures.set(`${key} ${signature}`, { key, signature, summary, count: 1, lastAt: o.at });
    }
    return [repositoryId, o.at, key, uploadKey, input.pr_number ?? null, signature];
  });
  await sql.insert("TestFailure", ["repositoryId", "at", "testCaseKey", "uploadKey", "prNumber", "signature"], failureRows);
  await sql.insert(
    "FailureSignature",
    ["testCaseKey", "signature", "summary", "count", "lastAt"],
    [...signatures.values()].map((g) => [g.key, g.signature, g.summary, g.count, g.lastAt]),
    `ON CONFLICT ("testCaseKey", "signature") DO UPDATE SET "count" = "FailureSignature"."count" + excluded."count",
       "lastAt" = CASE WHEN excluded."lastAt" > "FailureSignature"."lastAt" THEN excluded."lastAt" ELSE "FailureSignature"."lastAt" END`,
  );

  // Detection, for the tests this upload can have changed: those that failed, those already
  // flaky or broken, and those with new pass-on-retry evidence.
  const flakes = await findFlakes(sql, s, uploadKey, ran, keys);
  const candidates = new Set<number>([...failed.map((o) => keys.get(o.id)!), ...flakes.keys()]);
  const rows = ran
    .map((o) => {
      const row = existing.get(o.id);
      const key = keys.get(o.id)!;
      if (!row) return candidates.has(key) ? statusRow({ key, status: "healthy", flakeAt: null, flakeReason: null, quarantineSetting: "auto", quarantined: false }) : null;
      const status = statusRow(row);
      return candidates.has(key) || status.status !== "healthy" || status.quarantined ? status : null;
    })
    .filter((r) => r !== null);
  await applyDetection(sql, await loadFlakySettings(sql, repositoryId), rows, flakes, now);
  return { failures: failed.length };
}

/**
 * Pass-on-retry evidence in this upload: a test that failed and passed within the run (its
 * retries), or that failed here and passed in another upload of the same commit, or the reverse.
 */
async function findFlakes(sql: Sql, s: Store, uploadKey: number, ran: Outcome[], keys: Map<string, number>): Promise<Map<number, Flake>> {
  const sha = s.input.commit_sha.slice(0, 12);
  const flakes = new Map<number, Flake>();
  for (const o of ran) {
    if (o.failed && o.passed) flakes.set(keys.get(o.id)!, { at: o.at, reason: `failed, then passed on a retry within one run on commit ${sha}` });
  }
  const others = await sql.all<{ key: unknown }>(`SELECT "key" FROM "TestUpload" WHERE "repositoryId" = ? AND "commitSha" = ? AND "key" <> ?`, [
    s.repositoryId,
    s.input.commit_sha,
    uploadKey,
  ]);
  if (others.length === 0) return flakes;
  const [inUploads, uploadsParam] = sql.anyOf(`"uploadKey"`, others.map((u) => Number(u.key)));
  const failedHere = ran.filter((o) => o.failed && !o.passed).map((o) => keys.get(o.id)!);
  if (failedHere.length > 0) {
    const [inKeys, keysParam] = sql.anyOf(`"testCaseKey"`, failedHere);
    const passedThere = await sql.all<{ k: unknown }>(`SELECT DISTINCT "testCaseKey" AS k FROM "TestResult" WHERE ${inKeys} AND ${inUploads} AND "passed" = ?`, [keysParam, uploadsParam, true]);
    for (const row of passedThere) flakes.set(Number(row.k), { at: s.now.getTime(), reason: `failed and passed on the same commit ${sha}` });
  }
  const passedHere = new Set(ran.filter((o) => o.passed && !o.failed).map((o) => keys.get(o.id)!));
  const failedThere = await sql.all<{ k: unknown }>(`SELECT DISTINCT "testCaseKey" AS k FROM "TestFailure" WHERE ${inUploads}`, [uploadsParam]);
  for (const row of failedThere) {
    const key = Number(row.k);
    if (passedHere.has(key)) flakes.set(key, { at: s.now.getTime(), reason: `failed and passed on the same commit ${sha}` });
  }
  return flakes;
}
