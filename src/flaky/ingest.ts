import { createHash } from "node:crypto";
import type { Principal } from "../auth/tokens.js";
import type { RepoRef } from "../ports/code-host.js";
import { addTestCase, FAILED, PASSED, RESULT } from "../domain/flaky/attempts.js";
import { CodeOwners } from "../domain/flaky/codeowners.js";
import { failureSignature, normalizeFailure } from "../domain/flaky/failures.js";
import { testCaseId } from "../domain/flaky/identity.js";
import { JUnitError, JUnitReader, type JUnitCase } from "../formats/junit.js";
import type { Sql } from "../store/sql.js";
import { invalidArgument } from "../app/errors.js";
import { applyDetection, loadFlakySettings, lockRepositoryTests, STATUS_COLUMNS, statusRow, watchedTests, type Flake } from "./status.js";
import { repositoryInScope } from "./queries.js";
import { claimRepository, repositoryKey } from "../app/repositories.js";
import type { Services } from "../app/services.js";

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

/** Testcases identified and written together. */
const BATCH = 4096;

/**
 * The testcases of every report of the upload, a batch at a time. Malformed XML is refused
 * naming the file's index and the line and column.
 */
function* reportBatches(input: UploadInput): Generator<JUnitCase[]> {
  for (const [index, xml] of input.junit_xml.entries()) {
    const reader = new JUnitReader(xml);
    for (;;) {
      let batch: JUnitCase[];
      try {
        batch = reader.read(BATCH);
      } catch (error) {
        if (error instanceof JUnitError) {
          throw invalidArgument(`junit_xml[${index}]`, `is not a JUnit report: line ${error.line}, column ${error.column}: ${error.message}`);
        }
        throw error;
      }
      if (batch.length === 0) break;
      yield batch;
    }
  }
}

/**
 * CODEOWNERS at a commit, read through the code host. A commit's files never change, so what
 * was read (or found missing) is remembered per code host for the latest commits: a CI run's
 * many jobs uploading for one commit cost one read, not one per job. A failed read is not
 * remembered.
 */
async function readCodeOwners(services: Services, repo: RepoRef, sha: string): Promise<CodeOwners | null> {
  let read = codeOwnersRead.get(services.codeHost);
  if (!read) codeOwnersRead.set(services.codeHost, (read = new Map()));
  const key = `${repositoryKey(repo)}@${sha}`;
  const known = read.get(key);
  if (known !== undefined) return known;
  for (const path of CODEOWNERS_PATHS) {
    let text: string | null;
    try {
      text = await services.codeHost.readFile(repo, path, sha);
    } catch (error) {
      services.log?.warn({ err: error, repo: repositoryKey(repo), path }, "could not read CODEOWNERS; tests get no owners from it");
      return null;
    }
    if (text !== null) return remember(read, key, new CodeOwners(text));
  }
  return remember(read, key, null);
}

const CODEOWNERS_COMMITS_REMEMBERED = 256;
const codeOwnersRead = new WeakMap<object, Map<string, CodeOwners | null>>();

function remember(read: Map<string, CodeOwners | null>, key: string, owners: CodeOwners | null): CodeOwners | null {
  if (read.size >= CODEOWNERS_COMMITS_REMEMBERED) read.delete(read.keys().next().value!);
  read.set(key, owners);
  return owners;
}

/**
 * Stores an upload of JUnit results atomically and re-judges the tests it touched. The reports
 * are read as a stream and written a batch at a time, all in one transaction: a malformed
 * report rolls everything back, and what is held is a batch of testcases and a few bytes per
 * test, not the upload's test cases.
 */
export async function uploadTestResults(services: Services, principal: Principal, input: UploadInput) {
  const now = services.now();
  let repository = await repositoryInScope(services, principal, input);
  const newRepository = !repository;
  if (!repository) {
    // A repository is registered only for a well-formed upload: every report is read once first.
    for (const _batch of reportBatches(input));
    repository = await services.db.transaction((tx) => claimRepository(services, tx, principal, input.repo));
  }
  const owners = input.codeowners !== undefined ? new CodeOwners(input.codeowners) : await readCodeOwners(services, input.repo, input.commit_sha);
  const known = knownTestsOf(services.db, repository.id);
  const upload: Upload = {
    repositoryId: repository.id,
    // Ids hash the repository's name as first registered, so a client's casing cannot split a test.
    repoFullName: `${repository.host}/${repository.owner}/${repository.name}`,
    orgSlug: principal.organizationSlug,
    uploadId: services.newId(),
    input,
    owners,
    now,
    known,
    newRepository,
  };
  const stored = await services.db.sqlTransaction((sql) => ingest(sql, upload));
  // Tests are remembered only once their rows are committed.
  forgetIfFull(services.db, stored.learned.size);
  known.absorb(stored.learned);
  return { upload_id: upload.uploadId, test_cases: stored.testCases, failures: stored.failures, unnamed_test_cases: stored.unnamed };
}

/**
 * A testcase with neither a name nor a classname names no test that could be followed from run
 * to run (reporters write them for failed hooks and setup): it is not stored, only counted.
 */
const isUnnamed = (c: JUnitCase) => c.name === "" && c.classname === "";

/** What a test's identity is made of besides its name (and the upload's variant); a suite's testcases share it. */
type Group = Pick<JUnitCase, "file" | "classname" | "parent" | "explicitId">;

const groupKey = (c: Group, variant: string) => `${c.file}\u0000${c.classname}\u0000${c.parent}\u0000${c.explicitId}\u0000${variant}`;

/** A copy of `text` that shares no memory with the string it was cut from (a report). */
const detach = (text: string) => ` ${text}`.slice(1);

/**
 * Test case keys by identity, held as groups of names: consecutive testcases of a report share
 * their group, so a lookup is mostly a comparison with the previous testcase's group and one
 * lookup by name, and each remembered test costs about its name.
 */
class TestKeys {
  readonly #groups = new Map<string, Map<string, number>>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  clear(): void {
    this.#groups.clear();
    this.#size = 0;
  }

  /** Looks testcases up, remembering the last one's group (a batch's lookup, dropped with it). */
  lookup(variant: string): (c: JUnitCase) => number | undefined {
    let last: Group | null = null;
    let names: Map<string, number> | undefined;
    return (c) => {
      if (last === null || c.file !== last.file || c.classname !== last.classname || c.parent !== last.parent || c.explicitId !== last.explicitId) {
        names = this.#groups.get(groupKey(c, variant));
        last = c;
      }
      return names?.get(c.name);
    };
  }

  set(c: Group & { name: string }, variant: string, key: number): void {
    const group = groupKey(c, variant);
    let names = this.#groups.get(group);
    if (!names) this.#groups.set(group, (names = new Map()));
    const name = detach(c.name);
    if (!names.has(name)) this.#size++;
    names.set(name, key);
  }

  absorb(other: TestKeys): void {
    for (const [group, names] of other.#groups) {
      let mine = this.#groups.get(group);
      if (!mine) this.#groups.set(group, (mine = new Map()));
      for (const [name, key] of names) {
        if (!mine.has(name)) this.#size++;
        mine.set(name, key);
      }
    }
  }
}

/**
 * Tests already stored, by repository: a test's key never changes once assigned (rows go only
 * with their repository), so each process remembers the tests it has stored, and a repeated
 * upload of known tests neither hashes their ids nor looks up their keys. Bounded: past the
 * limit (all repositories together) the memory starts over.
 */
const KNOWN_TESTS_LIMIT = 200_000;
const knownTests = new WeakMap<object, Map<string, TestKeys>>();

function forgetIfFull(db: object, adding: number): void {
  const byRepository = knownTests.get(db);
  let size = adding;
  for (const known of byRepository?.values() ?? []) size += known.size;
  if (size > KNOWN_TESTS_LIMIT) for (const known of byRepository?.values() ?? []) known.clear();
}

function knownTestsOf(db: object, repositoryId: string): TestKeys {
  let byRepository = knownTests.get(db);
  if (!byRepository) knownTests.set(db, (byRepository = new Map()));
  let known = byRepository.get(repositoryId);
  if (!known) byRepository.set(repositoryId, (known = new TestKeys()));
  return known;
}

type Upload = {
  repositoryId: string;
  repoFullName: string;
  orgSlug: string;
  uploadId: string;
  input: UploadInput;
  owners: CodeOwners | null;
  now: Date;
  known: TestKeys;
  /** The repository was registered by this upload: none of its tests can be stored yet. */
  newRepository: boolean;
};

/**
 * What the upload did to each test so far, its testcases merged (attempts.ts: retries and
 * variants; two ids attributes can name one test): a slot per test, in typed arrays, so that holding an
 * upload's 100,000 tests costs a megabyte or two and no objects.
 */
class Runs {
  keys = new Float64Array(1024);
  at = new Float64Array(1024);
  flags = new Uint8Array(1024);
  size = 0;
  /** Slot + 1 by key, open addressing (0 is empty): test case keys are 32-bit integers. */
  #table = new Int32Array(2048);

  /** The test's slot, or -1 if this upload has not seen it. */
  find(key: number): number {
    const table = this.#table;
    const mask = table.length - 1;
    for (let i = Math.imul(key, 0x9e3779b1) & mask; table[i] !== 0; i = (i + 1) & mask) {
      if (this.keys[table[i]! - 1] === key) return table[i]! - 1;
    }
    return -1;
  }

  /** The test's slot (a new one, the next, if the test is new to this upload). */
  slotOf(key: number, at: number): number {
    const found = this.find(key);
    if (found !== -1) return found;
    const added = this.size++;
    if (added === this.keys.length) this.#grow();
    this.keys[added] = key;
    this.at[added] = at;
    this.#place(added);
    return added;
  }

  #place(slot: number): void {
    const table = this.#table;
    const mask = table.length - 1;
    let i = Math.imul(this.keys[slot]!, 0x9e3779b1) & mask;
    while (table[i] !== 0) i = (i + 1) & mask;
    table[i] = slot + 1;
  }

  /** Twice the room; the table stays at most half full. */
  #grow(): void {
    const grow = <T extends Float64Array | Uint8Array>(a: T): T => {
      const bigger = new (a.constructor as new (n: number) => T)(a.length * 2);
      bigger.set(a);
      return bigger;
    };
    this.keys = grow(this.keys);
    this.at = grow(this.at);
    this.flags = grow(this.flags);
    this.#table = new Int32Array(this.keys.length * 2);
    for (let slot = 0; slot < this.size - 1; slot++) this.#place(slot);
  }
}

const TEST_CASE_COLUMNS = ["id", "repositoryId", "name", "file", "classname", "parent", "variant", "codeowners", "status", "statusReason", "statusAt", "quarantineSetting", "quarantined", "createdAt"];

const RESULT_COLUMNS = ["testCaseKey", "at", "uploadKey", "failed", "passed"];

type Signature = { key: number; signature: string; summary: string; count: number; lastAt: number };

async function ingest(sql: Sql, u: Upload): Promise<{ testCases: number; failures: number; unnamed: number; learned: TestKeys }> {
  const { repositoryId, input, now } = u;
  // Before any read: what this upload judges must not interleave with another judgment.
  await lockRepositoryTests(sql, repositoryId);
  const [row] = await sql.all<{ key: unknown }>(
    `INSERT INTO "TestUpload" ("id", "repositoryId", "commitSha", "branch", "prNumber", "jobUrl", "variant", "createdAt", "testCases", "failures")
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0) RETURNING "key"`,
    [u.uploadId, repositoryId, input.commit_sha, input.branch, input.pr_number ?? null, input.job_url ?? null, input.variant ?? "", now],
  );
  const uploadKey = Number(row!.key);
  const ownersChanged = u.owners !== null && (await codeOwnersChanged(sql, u));
  const runs = new Runs();
  const signatures = new Map<string, Signature>();
  const learned = new TestKeys();
  let failures = 0;
  let unnamed = 0;

  for (let batch of reportBatches(input)) {
    if (batch.some(isUnnamed)) {
      const named = batch.filter((c) => !isUnnamed(c));
      unnamed += batch.length - named.length;
      batch = named;
    }
    const keys = await identify(sql, u, batch, learned, ownersChanged);
    const results: unknown[][] = [];
    /** Tests of earlier testcases whose result this batch's repeats change: slot → flags before this batch. */
    const rerun = new Map<number, number>();
    const failureRows: unknown[][] = [];
    batch.forEach((c, i) => {
      const key = keys[i]!;
      // A run's time is its suite's timestamp, else the upload's; never in the future.
      const known = runs.size;
      const slot = runs.slotOf(key, Math.min(c.at ?? now.getTime(), now.getTime()));
      const first = runs.size > known;
      const before = runs.flags[slot]!;
      const after = addTestCase(before, c);
      runs.flags[slot] = after;
      const at = runs.at[slot]!;
      if (first && after !== 0) results.push([key, at, uploadKey, (after & FAILED) !== 0, (after & PASSED) !== 0]);
      else if (!first && (after & RESULT) !== (before & RESULT) && !rerun.has(slot)) rerun.set(slot, before);
      if (c.failed && !(before & FAILED)) {
        failures++;
        const summary = normalizeFailure(c.message ?? "") || "(no failure message)";
        const signature = failureSignature(summary);
        const group = signatures.get(`${key} ${signature}`);
        if (group) {
          group.count++;
          group.lastAt = Math.max(group.lastAt, at);
        } else {
          signatures.set(`${key} ${signature}`, { key, signature, summary, count: 1, lastAt: at });
        }
        failureRows.push([repositoryId, at, key, uploadKey, input.pr_number ?? null, signature]);
      }
    });
    // Skipped tests have no result; a repeat can change its test's result (inserted before, or in this batch).
    await sql.insert("TestResult", RESULT_COLUMNS, results);
    await writeReruns(sql, runs, rerun, uploadKey);
    await sql.insert("TestFailure", ["repositoryId", "at", "testCaseKey", "uploadKey", "prNumber", "signature"], failureRows);
  }
  await sql.insert(
    "FailureSignature",
    ["testCaseKey", "signature", "summary", "count", "lastAt"],
    [...signatures.values()].map((g) => [g.key, g.signature, g.summary, g.count, g.lastAt]),
    `ON CONFLICT ("testCaseKey", "signature") DO UPDATE SET "count" = "FailureSignature"."count" + excluded."count",
       "lastAt" = CASE WHEN excluded."lastAt" > "FailureSignature"."lastAt" THEN excluded."lastAt" ELSE "FailureSignature"."lastAt" END`,
  );
  await sql.run(`UPDATE "TestUpload" SET "testCases" = ?, "failures" = ? WHERE "key" = ?`, [runs.size, failures, uploadKey]);
  await detect(sql, u, uploadKey, runs);
  return { testCases: runs.size, failures, unnamed, learned };
}

/** Writes the results that repeats changed: inserted if every earlier testcase was skipped, else updated. */
async function writeReruns(sql: Sql, runs: Runs, rerun: Map<number, number>, uploadKey: number): Promise<void> {
  for (const [slot, before] of rerun) {
    const flags = runs.flags[slot]!;
    const [key, at, failed, passed] = [runs.keys[slot]!, runs.at[slot]!, (flags & FAILED) !== 0, (flags & PASSED) !== 0];
    if ((before & RESULT) === 0) await sql.insert("TestResult", RESULT_COLUMNS, [[key, at, uploadKey, failed, passed]]);
    else await sql.run(`UPDATE "TestResult" SET "failed" = ?, "passed" = ? WHERE "testCaseKey" = ? AND "at" = ? AND "uploadKey" = ?`, [failed, passed, key, at, uploadKey]);
  }
}

/**
 * The test case key of each testcase of a batch: remembered (the identity cache, or earlier in
 * this upload), else looked up, else the test is new and inserted with its owners. When the
 * repository's CODEOWNERS changed, existing tests' owners are brought up to date.
 */
async function identify(sql: Sql, u: Upload, batch: JUnitCase[], learned: TestKeys, ownersChanged: boolean): Promise<number[]> {
  const variant = u.input.variant ?? "";
  const keys = new Array<number>(batch.length);
  const unknown = new Map<string, { id: string; cases: number[]; test: JUnitCase }>();
  const known = u.known.lookup(variant);
  const learnedEarlier = learned.lookup(variant);
  batch.forEach((c, i) => {
    const key = known(c) ?? learnedEarlier(c);
    if (key !== undefined) {
      keys[i] = key;
      return;
    }
    const id = testCaseId(u.orgSlug, u.repoFullName, c, variant, c.explicitId);
    const seen = unknown.get(id);
    if (seen) seen.cases.push(i);
    else unknown.set(id, { id, cases: [i], test: c });
  });
  const inserted = new Set<number>();
  if (unknown.size > 0) {
    const found = new Map<string, number>();
    const lookUp = async (ids: string[]) => {
      const [inIds, idsParam] = sql.anyOf(`"id"`, ids);
      for (const row of await sql.all<{ id: string; key: unknown }>(`SELECT "id", "key" FROM "TestCase" WHERE "repositoryId" = ? AND ${inIds}`, [u.repositoryId, idsParam])) {
        found.set(row.id, Number(row.key));
      }
    };
    if (!u.newRepository) await lookUp([...unknown.keys()]);
    const fresh = [...unknown.values()].filter((t) => !found.has(t.id));
    const newKeys = await sql.insertKeys(
      "TestCase",
      TEST_CASE_COLUMNS,
      fresh.map(({ id, test: c }) => [id, u.repositoryId, c.name, c.file, c.classname, c.parent, variant, JSON.stringify(u.owners?.ownersOf(c.file) ?? []), "healthy", "first seen", u.now, "auto", false, u.now]),
      ["repositoryId", "id"],
      "id",
    );
    fresh.forEach((t, i) => {
      const key = newKeys[i];
      if (key === undefined) return;
      found.set(t.id, key);
      inserted.add(key);
    });
    // Inserted meanwhile by a concurrent upload (PostgreSQL): read their keys.
    const late = fresh.filter((t) => !found.has(t.id)).map((t) => t.id);
    if (late.length > 0) await lookUp(late);
    for (const t of unknown.values()) {
      const key = found.get(t.id)!;
      for (const i of t.cases) {
        keys[i] = key;
        learned.set(batch[i]!, variant, key);
      }
    }
  }
  if (ownersChanged) await refreshOwners(sql, u, batch, keys, inserted);
  return keys;
}

/** Whether the repository's CODEOWNERS differs from the one owners were last computed from (recording the new one). */
async function codeOwnersChanged(sql: Sql, u: Upload): Promise<boolean> {
  const hash = createHash("sha256").update(u.owners!.text).digest("hex");
  const [known] = await sql.all<{ hash: string }>(`SELECT "hash" FROM "CodeOwnersVersion" WHERE "repositoryId" = ?`, [u.repositoryId]);
  if (known?.hash === hash) return false;
  await sql.run(
    `INSERT INTO "CodeOwnersVersion" ("repositoryId", "hash", "updatedAt") VALUES (?, ?, ?)
       ON CONFLICT ("repositoryId") DO UPDATE SET "hash" = excluded."hash", "updatedAt" = excluded."updatedAt"`,
    [u.repositoryId, hash, u.now],
  );
  return true;
}

/**
 * Owners of new tests come with their insert; the batch's other tests get the current
 * CODEOWNERS' owners where theirs differ.
 */
async function refreshOwners(sql: Sql, u: Upload, batch: JUnitCase[], keys: number[], inserted: Set<number>): Promise<void> {
  const files = new Map<number, string>();
  batch.forEach((c, i) => inserted.has(keys[i]!) || files.set(keys[i]!, c.file));
  if (files.size === 0) return;
  const [inKeys, keysParam] = sql.anyOf(`"key"`, [...files.keys()]);
  for (const row of await sql.all<{ key: unknown; codeowners: string }>(`SELECT "key", "codeowners" FROM "TestCase" WHERE ${inKeys}`, [keysParam])) {
    const key = Number(row.key);
    const owners = JSON.stringify(u.owners!.ownersOf(files.get(key)!));
    if (row.codeowners !== owners) await sql.run(`UPDATE "TestCase" SET "codeowners" = ? WHERE "key" = ?`, [owners, key]);
  }
}

/**
 * Re-judges the tests this upload can have changed: those that failed, those with new
 * pass-on-retry evidence (within the run, or against other uploads of the same commit), and
 * those already flaky, broken or quarantined.
 */
async function detect(sql: Sql, u: Upload, uploadKey: number, runs: Runs): Promise<void> {
  const sha = u.input.commit_sha.slice(0, 12);
  const flakes = new Map<number, Flake>();
  const candidates = new Set<number>();
  const flagsOf = (key: number) => {
    const slot = runs.find(key);
    return slot === -1 ? 0 : runs.flags[slot]! & RESULT;
  };
  const failedOnly: number[] = [];
  for (let slot = 0; slot < runs.size; slot++) {
    const flags = runs.flags[slot]! & RESULT;
    const key = runs.keys[slot]!;
    if (flags & FAILED) candidates.add(key);
    if (flags === (FAILED | PASSED)) flakes.set(key, { at: runs.at[slot]!, reason: `failed, then passed on a retry within one run on commit ${sha}` });
    else if (flags === FAILED) failedOnly.push(key);
  }
  const others = await sql.all<{ key: unknown }>(`SELECT "key" FROM "TestUpload" WHERE "repositoryId" = ? AND "commitSha" = ? AND "key" <> ?`, [u.repositoryId, u.input.commit_sha, uploadKey]);
  if (others.length > 0) {
    const sameCommit = { at: u.now.getTime(), reason: `failed and passed on the same commit ${sha}` };
    const [inUploads, uploadsParam] = sql.anyOf(`"uploadKey"`, others.map((o) => Number(o.key)));
    if (failedOnly.length > 0) {
      const [inKeys, keysParam] = sql.anyOf(`"testCaseKey"`, failedOnly);
      const passedThere = await sql.all<{ k: unknown }>(`SELECT DISTINCT "testCaseKey" AS k FROM "TestResult" WHERE ${inKeys} AND ${inUploads} AND "passed" = ?`, [keysParam, uploadsParam, true]);
      for (const r of passedThere) flakes.set(Number(r.k), sameCommit);
    }
    const failedThere = await sql.all<{ k: unknown }>(`SELECT DISTINCT "testCaseKey" AS k FROM "TestFailure" WHERE ${inUploads}`, [uploadsParam]);
    for (const r of failedThere) if (flagsOf(Number(r.k)) === PASSED) flakes.set(Number(r.k), sameCommit);
  }
  for (const key of flakes.keys()) candidates.add(key);
  for (const { key } of await watchedTests(sql, u.repositoryId)) if (flagsOf(key) !== 0) candidates.add(key);
  if (candidates.size === 0) return;
  const [inKeys, keysParam] = sql.anyOf(`"key"`, [...candidates]);
  const rows = await sql.all<Record<string, unknown>>(`SELECT ${STATUS_COLUMNS} FROM "TestCase" WHERE ${inKeys}`, [keysParam]);
  await applyDetection(sql, await loadFlakySettings(sql, u.repositoryId), rows.map(statusRow), flakes, u.now);
}
