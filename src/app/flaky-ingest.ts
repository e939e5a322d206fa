import { createHash } from "node:crypto";
import type { Principal } from "../auth/tokens.js";
import type { RepoRef } from "../codehost/code-host.js";
import { CodeOwners } from "../domain/flaky/codeowners.js";
import { failureSignature, normalizeFailure } from "../domain/flaky/failures.js";
import { testCaseId } from "../domain/flaky/identity.js";
import { JUnitError, readJUnit, type JUnitCase } from "../domain/flaky/junit.js";
import type { Sql } from "../store/sql.js";
import { invalidArgument } from "./errors.js";
import { applyDetection, loadFlakySettings, STATUS_COLUMNS, statusRow, type Flake } from "./flaky-status.js";
import { repositoryInScope } from "./flaky-tests.js";
import { claimRepository, repositoryKey } from "./repositories.js";
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

/** Where GitHub looks for CODEOWNERS, in its order. */
const CODEOWNERS_PATHS = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

/**
 * Each report's testcases in batches (one per megabyte of XML). A malformed report throws the
 * client's error naming the file's index, line and column.
 */
function* reportBatches(input: UploadInput): Generator<JUnitCase[]> {
  for (const [index, xml] of input.junit_xml.entries()) {
    try {
      yield* readJUnit(xml);
    } catch (error) {
      if (error instanceof JUnitError) {
        throw invalidArgument(`junit_xml[${index}]`, `is not a JUnit report: line ${error.line}, column ${error.column}: ${error.message}`);
      }
      throw error;
    }
  }
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
 * Stores an upload of JUnit results atomically and re-judges the tests it touched. The reports
 * are read as a stream and written in batches, all in one transaction: a malformed report rolls
 * everything back, and only a batch of test cases is held at a time.
 */
export async function uploadTestResults(services: Services, principal: Principal, input: UploadInput) {
  const now = services.now();
  // Ids hash the repository's name as first registered, so a client's casing cannot split a test.
  let repository = await repositoryInScope(services, principal, input);
  if (!repository) {
    // A repository is registered only for a well-formed upload: read every report once first.
    for (const _batch of reportBatches(input)) {
      // read only
    }
    repository = await services.db.transaction((tx) => claimRepository(services, tx, principal, input.repo));
  }
  const owners = input.codeowners !== undefined ? new CodeOwners(input.codeowners) : await readCodeOwners(services, input.repo, input.commit_sha);
  const known = knownTestsOf(services.db, repository.id);
  const context: Ingest = {
    repositoryId: repository.id,
    repoFullName: `${repository.host}/${repository.owner}/${repository.name}`,
    orgSlug: principal.organizationSlug,
    uploadId: services.newId(),
    input,
    owners,
    now,
    known,
  };
  const stored = await services.db.sqlTransaction((sql) => ingest(sql, context));
  // Tests are remembered only once their rows are committed.
  forgetIfFull(services.db, stored.learned.length);
  for (const [identity, test] of stored.learned) known.set(identity, test);
  return { upload_id: context.uploadId, test_cases: stored.testCases, failures: stored.failures };
}

type KnownTest = { id: string; key: number };

/**
 * Tests already stored, by repository and identity: a test's id and key never change once
 * assigned (rows go only with their repository), so each process remembers the tests it has
 * stored, and a repeated upload of known tests neither hashes their ids nor looks up their keys.
 * Bounded: past the limit (all repositories together) the memory starts over.
 */
const KNOWN_TESTS_LIMIT = 200_000;
const knownTests = new WeakMap<object, Map<string, Map<string, KnownTest>>>();

function forgetIfFull(db: object, adding: number): void {
  const byRepository = knownTests.get(db);
  let size = adding;
  for (const known of byRepository?.values() ?? []) size += known.size;
  if (size > KNOWN_TESTS_LIMIT) for (const known of byRepository?.values() ?? []) known.clear();
}

function knownTestsOf(db: object, repositoryId: string): Map<string, KnownTest> {
  let byRepository = knownTests.get(db);
  if (!byRepository) knownTests.set(db, (byRepository = new Map()));
  let known = byRepository.get(repositoryId);
  if (!known) byRepository.set(repositoryId, (known = new Map()));
  return known;
}

type Ingest = {
  repositoryId: string;
  repoFullName: string;
  orgSlug: string;
  uploadId: string;
  input: UploadInput;
  owners: CodeOwners | null;
  now: Date;
  known: Map<string, KnownTest>;
};

/** One test's outcome in this upload so far (its reruns merged), by test case key. */
type Seen = { at: number; failed: boolean; passed: boolean };

/** A testcase of the current batch, with its test's id and key. */
type Case = JUnitCase & { identity: string; id: string; key: number; at: number };

const TEST_CASE_COLUMNS = ["id", "repositoryId", "name", "file", "classname", "parent", "variant", "codeowners", "status", "statusReason", "statusAt", "quarantineSetting", "quarantined", "createdAt"];

async function ingest(sql: Sql, c: Ingest): Promise<{ testCases: number; failures: number; learned: [string, KnownTest][] }> {
  const { repositoryId, input, now } = c;
  const [upload] = await sql.all<{ key: unknown }>(
    `INSERT INTO "TestUpload" ("id", "repositoryId", "commitSha", "branch", "prNumber", "jobUrl", "variant", "createdAt", "testCases", "failures")
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0) RETURNING "key"`,
    [c.uploadId, repositoryId, input.commit_sha, input.branch, input.pr_number ?? null, input.job_url ?? null, input.variant ?? "", now],
  );
  const uploadKey = Number(upload!.key);
  const ownersChanged = c.owners !== null && (await codeOwnersChanged(sql, c));
  const seen = new Map<number, Seen>();
  const signatures = new Map<string, { key: number; signature: string; summary: string; count: number; lastAt: number }>();
  const learned: [string, KnownTest][] = [];

  for (const batch of reportBatches(input)) {
    const cases = await identify(sql, c, batch, learned, ownersChanged);
    const results: unknown[][] = [];
    const failures: unknown[][] = [];
    for (const t of cases) {
      const before = seen.get(t.key);
      const merged = { at: before?.at ?? t.at, failed: (before?.failed ?? false) || t.failed, passed: (before?.passed ?? false) || t.passed };
      if (!before) {
        seen.set(t.key, merged);
        if (t.failed || t.passed) results.push([t.key, merged.at, uploadKey, t.failed, t.passed]);
      } else if (merged.failed !== before.failed || merged.passed !== before.passed) {
        // A rerun of a test already in this upload (gotestsum writes every attempt).
        seen.set(t.key, merged);
        if (before.failed || before.passed) {
          await sql.run(`UPDATE "TestResult" SET "failed" = ?, "passed" = ? WHERE "testCaseKey" = ? AND "at" = ? AND "uploadKey" = ?`, [merged.failed, merged.passed, t.key, merged.at, uploadKey]);
        } else {
          results.push([t.key, merged.at, uploadKey, merged.failed, merged.passed]);
        }
      }
      if (t.failed && !before?.failed) {
        const summary = normalizeFailure(t.message ?? "") || "(no failure message)";
        const signature = failureSignature(summary);
        failures.push([repositoryId, merged.at, t.key, uploadKey, input.pr_number ?? null, signature]);
        const group = signatures.get(`${t.key} ${signature}`);
        if (group) group.count++;
        else signatures.set(`${t.key} ${signature}`, { key: t.key, signature, summary, count: 1, lastAt: merged.at });
      }
    }
    await sql.insert("TestResult", ["testCaseKey", "at", "uploadKey", "failed", "passed"], results);
    await sql.insert("TestFailure", ["repositoryId", "at", "testCaseKey", "uploadKey", "prNumber", "signature"], failures);
  }
  await sql.insert(
    "FailureSignature",
    ["testCaseKey", "signature", "summary", "count", "lastAt"],
    [...signatures.values()].map((g) => [g.key, g.signature, g.summary, g.count, g.lastAt]),
    `ON CONFLICT ("testCaseKey", "signature") DO UPDATE SET "count" = "FailureSignature"."count" + excluded."count",
       "lastAt" = CASE WHEN excluded."lastAt" > "FailureSignature"."lastAt" THEN excluded."lastAt" ELSE "FailureSignature"."lastAt" END`,
  );
  let failed = 0;
  for (const s of seen.values()) if (s.failed) failed++;
  await sql.run(`UPDATE "TestUpload" SET "testCases" = ?, "failures" = ? WHERE "key" = ?`, [seen.size, failed, uploadKey]);
  if (ownersChanged) await recordCodeOwners(sql, c);

  // Detection, for the tests this upload can have changed: those that failed, those with new
  // pass-on-retry evidence, and those already flaky, broken or quarantined.
  const flakes = await findFlakes(sql, c, uploadKey, seen);
  const watched = await sql.all<{ key: unknown }>(`SELECT "key" FROM "TestCase" WHERE "repositoryId" = ? AND ("status" <> 'healthy' OR "quarantined" = ?)`, [repositoryId, true]);
  const candidates = new Set<number>(flakes.keys());
  for (const [key, s] of seen) if (s.failed) candidates.add(key);
  for (const row of watched) {
    const s = seen.get(Number(row.key));
    if (s && (s.failed || s.passed)) candidates.add(Number(row.key));
  }
  if (candidates.size > 0) {
    const [inKeys, keysParam] = sql.anyOf(`"key"`, [...candidates]);
    const rows = await sql.all<Record<string, unknown>>(`SELECT ${STATUS_COLUMNS} FROM "TestCase" WHERE ${inKeys}`, [keysParam]);
    await applyDetection(sql, await loadFlakySettings(sql, repositoryId), rows.map(statusRow), flakes, now);
  }
  return { testCases: seen.size, failures: failed, learned };
}

/**
 * Gives each testcase of a batch its test's id and key: remembered, else looked up, else the
 * test is new and inserted (with its owners). When CODEOWNERS changed, known tests' owners are
 * brought up to date as they are met.
 */
async function identify(sql: Sql, c: Ingest, batch: JUnitCase[], learned: [string, KnownTest][], ownersChanged: boolean): Promise<Case[]> {
  const variant = c.input.variant ?? "";
  const nowMs = c.now.getTime();
  const cases: Case[] = [];
  const unknown = new Map<string, Case[]>();
  for (const t of batch) {
    const identity = `${t.file}\u0000${t.classname}\u0000${t.parent}\u0000${t.name}\u0000${t.explicitId}\u0000${variant}`;
    const remembered = c.known.get(identity);
    // A run's time is its suite's timestamp, else the upload's; never in the future.
    const testCase: Case = { ...t, identity, id: remembered?.id ?? testCaseId(c.orgSlug, c.repoFullName, t, variant, t.explicitId), key: remembered?.key ?? 0, at: Math.min(t.at ?? nowMs, nowMs) };
    cases.push(testCase);
    if (!remembered) unknown.set(testCase.id, [...(unknown.get(testCase.id) ?? []), testCase]);
  }
  if (unknown.size === 0 && !ownersChanged) return cases;

  const keys = new Map<string, number>();
  const lookUp = async (ids: string[]) => {
    if (ids.length === 0) return;
    const [inIds, idsParam] = sql.anyOf(`"id"`, ids);
    for (const row of await sql.all<{ id: string; key: unknown }>(`SELECT "id", "key" FROM "TestCase" WHERE "repositoryId" = ? AND ${inIds}`, [c.repositoryId, idsParam])) {
      keys.set(row.id, Number(row.key));
    }
  };
  await lookUp([...unknown.keys()]);
  const ownersOf = (t: JUnitCase) => JSON.stringify(c.owners?.ownersOf(t.file) ?? []);
  const fresh = [...unknown.entries()].filter(([id]) => !keys.has(id)).map(([, [first]]) => first!);
  const inserted = await sql.insertReturning<{ id: string; key: unknown }>(
    "TestCase",
    TEST_CASE_COLUMNS,
    fresh.map((t) => [t.id, c.repositoryId, t.name, t.file, t.classname, t.parent, c.input.variant ?? "", ownersOf(t), "healthy", "first seen", c.now, "auto", false, c.now]),
    `ON CONFLICT ("repositoryId", "id") DO NOTHING`,
    `"id", "key"`,
  );
  for (const row of inserted) keys.set(row.id, Number(row.key));
  // Inserted meanwhile by a concurrent upload (PostgreSQL): read their keys.
  await lookUp(fresh.filter((t) => !keys.has(t.id)).map((t) => t.id));
  for (const [id, list] of unknown) {
    for (const t of list) {
      t.key = keys.get(id)!;
      learned.push([t.identity, { id, key: t.key }]);
    }
  }
  if (ownersChanged) {
    const insertedIds = new Set(inserted.map((r) => r.id));
    await refreshOwners(sql, cases.filter((t) => !insertedIds.has(t.id)), ownersOf);
  }
  return cases;
}

/** Whether the CODEOWNERS of this upload differs from the one owners were last computed from. */
async function codeOwnersChanged(sql: Sql, c: Ingest): Promise<boolean> {
  const [known] = await sql.all<{ hash: string }>(`SELECT "hash" FROM "CodeOwnersVersion" WHERE "repositoryId" = ?`, [c.repositoryId]);
  return known?.hash !== hashOf(c.owners!.text);
}

async function recordCodeOwners(sql: Sql, c: Ingest): Promise<void> {
  await sql.run(
    `INSERT INTO "CodeOwnersVersion" ("repositoryId", "hash", "updatedAt") VALUES (?, ?, ?)
       ON CONFLICT ("repositoryId") DO UPDATE SET "hash" = excluded."hash", "updatedAt" = excluded."updatedAt"`,
    [c.repositoryId, hashOf(c.owners!.text), c.now],
  );
}

const hashOf = (text: string) => createHash("sha256").update(text).digest("hex");

/** Brings known tests' owners up to date with a changed CODEOWNERS. */
async function refreshOwners(sql: Sql, cases: Case[], ownersOf: (t: JUnitCase) => string): Promise<void> {
  if (cases.length === 0) return;
  const [inKeys, keysParam] = sql.anyOf(`"key"`, cases.map((t) => t.key));
  const current = new Map<number, string>();
  for (const row of await sql.all<{ key: unknown; codeowners: string }>(`SELECT "key", "codeowners" FROM "TestCase" WHERE ${inKeys}`, [keysParam])) {
    current.set(Number(row.key), row.codeowners);
  }
  for (const t of cases) {
    const owners = ownersOf(t);
    if (current.get(t.key) !== owners) {
      await sql.run(`UPDATE "TestCase" SET "codeowners" = ? WHERE "key" = ?`, [owners, t.key]);
      current.set(t.key, owners);
    }
  }
}

/**
 * Pass-on-retry evidence in this upload: a test that failed and passed within the run (its
 * retries), or that failed here and passed in another upload of the same commit, or the reverse.
 */
async function findFlakes(sql: Sql, c: Ingest, uploadKey: number, seen: Map<number, Seen>): Promise<Map<number, Flake>> {
  const sha = c.input.commit_sha.slice(0, 12);
  const flakes = new Map<number, Flake>();
  for (const [key, s] of seen) {
    if (s.failed && s.passed) flakes.set(key, { at: s.at, reason: `failed, then passed on a retry within one run on commit ${sha}` });
  }
  const others = await sql.all<{ key: unknown }>(`SELECT "key" FROM "TestUpload" WHERE "repositoryId" = ? AND "commitSha" = ? AND "key" <> ?`, [
    c.repositoryId,
    c.input.commit_sha,
    uploadKey,
  ]);
  if (others.length === 0) return flakes;
  const sameCommit = (key: number) => flakes.set(key, { at: seen.get(key)!.at, reason: `failed and passed on the same commit ${sha}` });
  const [inUploads, uploadsParam] = sql.anyOf(`"uploadKey"`, others.map((u) => Number(u.key)));
  const failedHere = [...seen].filter(([, s]) => s.failed && !s.passed).map(([key]) => key);
  if (failedHere.length > 0) {
    const [inKeys, keysParam] = sql.anyOf(`"testCaseKey"`, failedHere);
    const passedThere = await sql.all<{ k: unknown }>(`SELECT DISTINCT "testCaseKey" AS k FROM "TestResult" WHERE ${inKeys} AND ${inUploads} AND "passed" = ?`, [keysParam, uploadsParam, true]);
    for (const row of passedThere) sameCommit(Number(row.k));
  }
  const failedThere = await sql.all<{ k: unknown }>(`SELECT DISTINCT "testCaseKey" AS k FROM "TestFailure" WHERE ${inUploads}`, [uploadsParam]);
  for (const row of failedThere) {
    const s = seen.get(Number(row.k));
    if (s?.passed && !s.failed) sameCommit(Number(row.k));
  }
  return flakes;
}
