import { createHash } from "node:crypto";
import type { Principal } from "../auth/tokens.js";
import type { RepoRef } from "../codehost/code-host.js";
import { CodeOwners } from "../domain/flaky/codeowners.js";
import { failureSignature, normalizeFailure } from "../domain/flaky/failures.js";
import { testCaseId } from "../domain/flaky/identity.js";
import { JUnitError, parseJUnit } from "../domain/flaky/junit.js";
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

/** One test's outcome in an upload, its repeats (reruns) merged. */
type Outcome = {
  /** What the id is derived from (the identity cache's key). */
  identity: string;
  id: string;
  /** The test case's key, when the identity cache knows it. */
  key: number | undefined;
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
function readReports(input: UploadInput, orgSlug: string, repoFullName: string, now: Date, known: Map<string, KnownTest>): Map<string, Outcome> {
  const outcomes = new Map<string, Outcome>();
  const variant = input.variant ?? "";
  input.junit_xml.forEach((xml, index) => {
    try {
      parseJUnit(xml, (c) => {
        const identity = `${c.file}\u0000${c.classname}\u0000${c.parent}\u0000${c.name}\u0000${c.explicitId}\u0000${variant}`;
        const seen = outcomes.get(identity);
        // A rerun of a test already in this upload (gotestsum writes every attempt).
        if (seen) return mergeAttempts(seen, c);
        const cached = known.get(identity);
        outcomes.set(identity, {
          identity,
          id: cached?.id ?? testCaseId(orgSlug, repoFullName, c, variant, c.explicitId),
          key: cached?.key,
          name: c.name,
          classname: c.classname,
          file: c.file,
          parent: c.parent,
          // A run's time is its suite's timestamp, else the upload's; never in the future.
          at: Math.min(c.at ?? now.getTime(), now.getTime()),
          failed: c.failed,
          passed: c.passed,
          message: c.message,
        });
      });
    } catch (error) {
      if (error instanceof JUnitError) {
        throw invalidArgument(`junit_xml[${index}]`, `is not a JUnit report: line ${error.line}, column ${error.column}: ${error.message}`);
      }
      throw error;
    }
  });
  // Two identities can name one id (an explicit id attribute); keep one outcome per id.
  const byId = new Map<string, Outcome>();
  for (const o of outcomes.values()) {
    const seen = byId.get(o.id);
    if (seen) mergeAttempts(seen, o);
    else byId.set(o.id, o);
  }
  return byId;
}

/** Folds another attempt of a test into its outcome: it failed if any attempt did, passed if any did. */
function mergeAttempts(outcome: Outcome, attempt: Pick<Outcome, "failed" | "passed" | "message">): void {
  outcome.failed ||= attempt.failed;
  outcome.passed ||= attempt.passed;
  outcome.message ??= attempt.message;
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
  const now = services.now();
  // Ids hash the repository's name as first registered, so a client's casing cannot split a test.
  const known = await repositoryInScope(services, principal, input);
  const name = known ?? input.repo;
  // Every report is read before anything is written (a new repository is registered only then).
  const outcomes = readReports(input, principal.organizationSlug, `${name.host}/${name.owner}/${name.name}`, now, known ? knownTestsOf(services.db, known.id) : new Map());
  const repository = known ?? (await services.db.transaction((tx) => claimRepository(services, tx, principal, input.repo)));
  const cache = knownTestsOf(services.db, repository.id);
  const owners = input.codeowners !== undefined ? new CodeOwners(input.codeowners) : await readCodeOwners(services, input.repo, input.commit_sha);

  const uploadId = services.newId();
  const list = [...outcomes.values()];
  const stored = await services.db.sqlTransaction((sql) => storeUpload(sql, { repositoryId: repository.id, uploadId, input, outcomes: list, owners, now }));
  // Keys are remembered only once their rows are committed.
  forgetIfFull(services.db, list.length);
  for (const o of list) cache.set(o.identity, { id: o.id, key: stored.keys.get(o.id)! });
  return { upload_id: uploadId, test_cases: outcomes.size, failures: stored.failures };
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

type Store = { repositoryId: string; uploadId: string; input: UploadInput; outcomes: Outcome[]; owners: CodeOwners | null; now: Date };

const TEST_CASE_COLUMNS = ["id", "repositoryId", "name", "file", "classname", "parent", "variant", "codeowners", "status", "statusReason", "statusAt", "quarantineSetting", "quarantined", "createdAt"];

async function storeUpload(sql: Sql, s: Store): Promise<{ failures: number; keys: Map<string, number> }> {
  const { repositoryId, input, outcomes, now } = s;
  const failed = outcomes.filter((o) => o.failed);
  const [upload] = await sql.all<{ key: unknown }>(
    `INSERT INTO "TestUpload" ("id", "repositoryId", "commitSha", "branch", "prNumber", "jobUrl", "variant", "createdAt", "testCases", "failures")
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING "key"`,
    [s.uploadId, repositoryId, input.commit_sha, input.branch, input.pr_number ?? null, input.job_url ?? null, input.variant ?? "", now, outcomes.length, failed.length],
  );
  const uploadKey = Number(upload!.key);

  // Test case keys: remembered, else looked up, else the test is new and inserted.
  const keys = new Map<string, number>();
  const unknown: string[] = [];
  for (const o of outcomes) {
    if (o.key === undefined) unknown.push(o.id);
    else keys.set(o.id, o.key);
  }
  if (unknown.length > 0) {
    const [inIds, idsParam] = sql.anyOf(`"id"`, unknown);
    for (const row of await sql.all<{ id: string; key: unknown }>(`SELECT "id", "key" FROM "TestCase" WHERE "repositoryId" = ? AND ${inIds}`, [repositoryId, idsParam])) {
      keys.set(row.id, Number(row.key));
    }
  }
  const ownersOf = (o: Outcome) => JSON.stringify(s.owners?.ownersOf(o.file) ?? []);
  const fresh = outcomes.filter((o) => !keys.has(o.id));
  const inserted = await sql.insertReturning<{ id: string; key: unknown }>(
    "TestCase",
    TEST_CASE_COLUMNS,
    fresh.map((o) => [o.id, repositoryId, o.name, o.file, o.classname, o.parent, input.variant ?? "", ownersOf(o), "healthy", "first seen", now, "auto", false, now]),
    `ON CONFLICT ("repositoryId", "id") DO NOTHING`,
    `"id", "key"`,
  );
  for (const row of inserted) keys.set(row.id, Number(row.key));
  if (inserted.length < fresh.length) {
    // Inserted meanwhile by a concurrent upload (PostgreSQL): read their keys.
    const [inLate, lateParam] = sql.anyOf(`"id"`, fresh.filter((o) => !keys.has(o.id)).map((o) => o.id));
    for (const row of await sql.all<{ id: string; key: unknown }>(`SELECT "id", "key" FROM "TestCase" WHERE "repositoryId" = ? AND ${inLate}`, [repositoryId, lateParam])) {
      keys.set(row.id, Number(row.key));
    }
  }
  if (s.owners) await refreshOwners(sql, s, outcomes, keys, new Set(inserted.map((r) => r.id)));

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

  // Detection, for the tests this upload can have changed: those that failed, those with new
  // pass-on-retry evidence, and those already flaky, broken or quarantined.
  const flakes = await findFlakes(sql, s, uploadKey, ran, keys);
  const ranKeys = new Set(ran.map((o) => keys.get(o.id)!));
  const watched = await sql.all<{ key: unknown }>(`SELECT "key" FROM "TestCase" WHERE "repositoryId" = ? AND ("status" <> 'healthy' OR "quarantined" = ?)`, [repositoryId, true]);
  const candidates = [...new Set([...failed.map((o) => keys.get(o.id)!), ...flakes.keys(), ...watched.map((r) => Number(r.key)).filter((k) => ranKeys.has(k))])];
  if (candidates.length > 0) {
    const [inKeys, keysParam] = sql.anyOf(`"key"`, candidates);
    const rows = await sql.all<Record<string, unknown>>(`SELECT ${STATUS_COLUMNS} FROM "TestCase" WHERE ${inKeys}`, [keysParam]);
    await applyDetection(sql, await loadFlakySettings(sql, repositoryId), rows.map(statusRow), flakes, now);
  }
  return { failures: failed.length, keys };
}

/**
 * Owners of new tests come with their insert. When the repository's CODEOWNERS differs from the
 * one owners were last computed from, every test in the upload is brought up to date.
 */
async function refreshOwners(sql: Sql, s: Store, outcomes: Outcome[], keys: Map<string, number>, inserted: Set<string>): Promise<void> {
  const hash = createHash("sha256").update(s.owners!.text).digest("hex");
  const [known] = await sql.all<{ hash: string }>(`SELECT "hash" FROM "CodeOwnersVersion" WHERE "repositoryId" = ?`, [s.repositoryId]);
  if (known?.hash === hash) return;
  const existing = outcomes.filter((o) => !inserted.has(o.id));
  if (existing.length > 0) {
    const [inKeys, keysParam] = sql.anyOf(`"key"`, existing.map((o) => keys.get(o.id)!));
    const current = new Map<number, string>();
    for (const row of await sql.all<{ key: unknown; codeowners: string }>(`SELECT "key", "codeowners" FROM "TestCase" WHERE ${inKeys}`, [keysParam])) {
      current.set(Number(row.key), row.codeowners);
    }
    for (const o of existing) {
      const key = keys.get(o.id)!;
      const owners = JSON.stringify(s.owners!.ownersOf(o.file));
      if (current.get(key) !== owners) await sql.run(`UPDATE "TestCase" SET "codeowners" = ? WHERE "key" = ?`, [owners, key]);
    }
  }
  await sql.run(
    `INSERT INTO "CodeOwnersVersion" ("repositoryId", "hash", "updatedAt") VALUES (?, ?, ?)
       ON CONFLICT ("repositoryId") DO UPDATE SET "hash" = excluded."hash", "updatedAt" = excluded."updatedAt"`,
    [s.repositoryId, hash, s.now],
  );
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
