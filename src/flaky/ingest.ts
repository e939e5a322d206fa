import { runNumberOf } from "../domain/engine/run-ids.js";
import { createHash } from "node:crypto";
import { setImmediate as turn } from "node:timers/promises";
import type { Principal } from "../auth/tokens.js";
import type { RepoRef } from "../ports/code-host.js";
import { addTestCase, FAILED, PASSED, RESULT } from "../domain/flaky/attempts.js";
import { CodeOwners } from "../domain/flaky/codeowners.js";
import { failureSignature, readFailure } from "../domain/flaky/failures.js";
import { infrastructureFailure, NO_FAILURE_MESSAGE, uploadFailure, type UploadFailure } from "../domain/flaky/infrastructure.js";
import { flakesAgainst } from "../domain/flaky/queue-evidence.js";
import { JUnitError, JUnitReader, type JUnitCase } from "../formats/junit.js";
import {
  addFailureSignatures,
  findCodeOwnersHash,
  findDetectionStates,
  findOtherUploadsOfCommit,
  findRunTestedAt,
  findTestCaseOwners,
  findUploadsOfSameTree,
  findTestsFailedIn,
  findTestsPassedIn,
  findWatchedTests,
  insertTestFailures,
  insertTestResults,
  insertUpload,
  lockRepositoryTests,
  markRunInfrastructureFailure,
  saveCodeOwnersHash,
  setTestCaseOwners,
  setUploadTotals,
  updateTestResult,
  type FailureRow,
  type LinkedRun,
  type ResultRow,
  type SignatureCount,
} from "../store/flaky-store.js";
import type { Sql } from "../store/sql.js";
import { invalidArgument } from "../app/errors.js";
import { forgetIfFull, identify, knownTestsOf, TestKeys, type TestScope } from "./keys.js";
import { applyDetection, loadFlakySettings, type Flake } from "./status.js";
import { repositoryInScope } from "./queries.js";
import { Runs } from "./runs.js";
import { claimRepository, repositoryKey } from "../app/repositories.js";
import type { Services } from "../app/services.js";

export type UploadInput = {
  repo: RepoRef;
  org_url_slug: string;
  commit_sha: string;
  branch: string;
  pr_number?: number | undefined;
  job_url?: string | undefined;
  check_name?: string | undefined;
  check_run_id?: number | undefined;
  variant?: string | undefined;
  junit_xml: string[];
  codeowners?: string | undefined;
};

/** Where GitHub looks for CODEOWNERS, in its order. */
const CODEOWNERS_PATHS = [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];

/** Testcases identified and written together. */
const BATCH = 4096;

/**
 * The most testcases an upload may hold, counted across its reports (repeats, skips and
 * unnamed ones included: each is read). A 20 MiB body of realistic reports holds ~100,000
 * (docs/benchmarks.md); without a bound, a 589 KB bundle of 1.3 million one-line testcases
 * held the service for 64 s (issue 22).
 */
export const MAX_TEST_CASES = 200_000;

export const tooManyTestCases = () => invalidArgument("junit_xml", `holds more than the limit of ${MAX_TEST_CASES.toLocaleString("en-US")} test cases per upload (counted across its reports)`);

/**
 * The testcases of every report of the upload, a batch at a time, other requests served
 * between batches (the database work of a batch on SQLite, and the scanning, hold the thread).
 * Malformed XML is refused naming the file's index and the line and column; more testcases
 * than MAX_TEST_CASES, as soon as the one too many is read.
 */
async function* reportBatches(input: UploadInput): AsyncGenerator<JUnitCase[]> {
  let count = 0;
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
      count += batch.length;
      if (count > MAX_TEST_CASES) throw tooManyTestCases();
      yield batch;
      await turn();
    }
  }
}

/**
 * Refuses an upload of more than MAX_TEST_CASES testcases before anything is written. Every
 * testcase starts with `<testcase`, so counting those (a native search, milliseconds for 20 MB)
 * bounds the testcases from above; only an upload near the limit by that count is read to
 * count them exactly (they may sit in comments or CDATA), and the reading stops at the limit.
 */
async function checkTestCaseCount(input: UploadInput): Promise<void> {
  let tags = 0;
  for (const xml of input.junit_xml) {
    for (let at = xml.indexOf("<testcase"); at !== -1 && tags <= MAX_TEST_CASES; at = xml.indexOf("<testcase", at + 9)) tags++;
  }
  if (tags <= MAX_TEST_CASES) return;
  for await (const _batch of reportBatches(input));
}

/**
 * Reads every report of an upload without storing anything: a malformed one, or more testcases
 * than MAX_TEST_CASES, refused as the upload refuses them. Answers the testcases read and how
 * many of them failed (a part of an upload is checked so before it is kept: upload-parts.ts).
 */
export async function checkReports(input: Pick<UploadInput, "junit_xml">): Promise<{ testCases: number; failures: number }> {
  await checkTestCaseCount(input as UploadInput);
  let testCases = 0;
  let failures = 0;
  for await (const batch of reportBatches(input as UploadInput)) {
    testCases += batch.length;
    for (const c of batch) if (c.failed) failures++;
  }
  return { testCases, failures };
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
      text = await services.codeHost.readFile(repo, path, sha, CODEOWNERS_MAX_BYTES);
    } catch (error) {
      services.log?.warn({ err: error, repo: repositoryKey(repo), path }, "could not read CODEOWNERS; tests get no owners from it");
      return null;
    }
    if (text !== null) return remember(read, key, new CodeOwners(text));
  }
  return remember(read, key, null);
}

const CODEOWNERS_COMMITS_REMEMBERED = 256;
/** GitHub ignores a CODEOWNERS file larger than 3 MB ("About code owners"); so does Greenline. */
const CODEOWNERS_MAX_BYTES = 3 * 1024 * 1024;
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
export async function uploadTestResults(services: Services, principal: Principal, input: UploadInput, options: { uploadId?: string } = {}) {
  const now = services.now();
  await checkTestCaseCount(input);
  let repository = await repositoryInScope(services, principal, input);
  const newRepository = !repository;
  if (!repository) {
    // A repository is registered only for a well-formed upload: every report is read once first.
    for await (const _batch of reportBatches(input));
    repository = await services.db.transaction((tx) => claimRepository(services, tx, principal, input.repo));
  }
  const owners = input.codeowners !== undefined ? new CodeOwners(input.codeowners) : await readCodeOwners(services, input.repo, input.commit_sha);
  const known = knownTestsOf(services.db, repository.id);
  const upload: Upload = {
    repositoryId: repository.id,
    // Ids hash the repository's name as first registered, so a client's casing cannot split a test.
    repoFullName: `${repository.host}/${repository.owner}/${repository.name}`,
    orgSlug: principal.organizationSlug,
    variant: input.variant ?? "",
    uploadId: options.uploadId ?? services.newId(),
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
  const run = stored.run && { id: stored.run.id, number: runNumberOf(stored.run.runId), queue: stored.run.targetBranch };
  return {
    upload_id: upload.uploadId,
    test_cases: stored.testCases,
    failures: stored.failures,
    unnamed_test_cases: stored.unnamed,
    infrastructure_failure: stored.infrastructureFailure !== null,
    ...(stored.infrastructureFailure !== null && { infrastructure_failure_reason: stored.infrastructureFailure }),
    ...(run && { run }),
  };
}

/** The number of an engine run id ("run-<n>"). */

/**
 * A testcase with neither a name nor a classname names no test that could be followed from run
 * to run (reporters write them for failed hooks and setup): it is not stored, only counted.
 */
const isUnnamed = (c: JUnitCase) => c.name === "" && c.classname === "";

type Upload = TestScope & { uploadId: string; input: UploadInput };

type Stored = { testCases: number; failures: number; unnamed: number; learned: TestKeys; run: LinkedRun | null; infrastructureFailure: string | null };

async function ingest(sql: Sql, u: Upload): Promise<Stored> {
  const { repositoryId, input, now } = u;
  // Before any read: what this upload judges must not interleave with another judgment (nor
  // with a run's testing branch being recorded: one of the two links them, store/flaky/runs.ts).
  await lockRepositoryTests(sql, repositoryId);
  const run = await findRunTestedAt(sql, repositoryId, input.commit_sha, input.branch);
  const uploadKey = await insertUpload(sql, {
    id: u.uploadId,
    repositoryId,
    commitSha: input.commit_sha,
    branch: input.branch,
    prNumber: input.pr_number ?? null,
    jobUrl: input.job_url ?? null,
    checkName: input.check_name ?? null,
    checkRunId: input.check_run_id ?? null,
    variant: u.variant,
    createdAt: now,
    runId: run?.id ?? null,
  });
  const ownersChanged = u.owners !== null && (await codeOwnersChanged(sql, u));
  const runs = new Runs();
  const signatures = new Map<string, SignatureCount>();
  const learned = new TestKeys();
  /** Each failed test's file (its classname when the report names none) and failure: what tells an infrastructure failure. */
  const failed: UploadFailure[] = [];
  /** …and each one's slot in `runs`, to tell those that passed on a retry within the upload. */
  const failedSlots: number[] = [];
  let failures = 0;
  let unnamed = 0;

  for await (let batch of reportBatches(input)) {
    if (batch.some(isUnnamed)) {
      const named = batch.filter((c) => !isUnnamed(c));
      unnamed += batch.length - named.length;
      batch = named;
    }
    const { keys, inserted } = await identify(sql, u, batch, learned);
    if (ownersChanged) await refreshOwners(sql, u, batch, keys, inserted);
    const results: ResultRow[] = [];
    /** Tests of earlier testcases whose result this batch's repeats change: slot → flags before this batch. */
    const rerun = new Map<number, number>();
    const failureRows: FailureRow[] = [];
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
        const failure = readFailure({ message: c.message, type: c.failureType, text: c.failureText, file: c.file, classname: c.classname });
        const summary = failure.summary || NO_FAILURE_MESSAGE;
        const signature = failure.summary === "" ? failureSignatureOfNothing : failure.signature;
        failed.push(uploadFailure(c, failure));
        failedSlots.push(slot);
        const group = signatures.get(`${key} ${signature}`);
        const text = failureTextOf(c);
        if (group) {
          group.count++;
          if (at >= group.lastAt) group.lastText = text;
          group.lastAt = Math.max(group.lastAt, at);
        } else {
          // First seen: when Greenline received it (the server's clock, as a quarantine's time is), not the report's own time.
          signatures.set(`${key} ${signature}`, { testCaseKey: key, signature, shape: failure.shape, summary, count: 1, firstAt: now.getTime(), lastAt: at, lastText: text, lastUploadKey: uploadKey });
        }
        failureRows.push([repositoryId, at, key, uploadKey, input.pr_number ?? null, signature]);
      }
    });
    // Skipped tests have no result; a repeat can change its test's result (inserted before, or in this batch).
    await insertTestResults(sql, results);
    await writeReruns(sql, runs, rerun, uploadKey);
    await insertTestFailures(sql, failureRows);
  }
  failed.forEach((f, i) => {
    f.passedOnRetry = (runs.flags[failedSlots[i]!]! & RESULT) === (FAILED | PASSED);
  });
  // An infrastructure failure is no evidence about its tests: their failure modes and statuses stay as they were.
  const infrastructure = infrastructureFailure(runs.size, failed);
  await setUploadTotals(sql, uploadKey, { testCases: runs.size, failures, infrastructureFailure: infrastructure });
  if (infrastructure !== null) {
    if (run) await markRunInfrastructureFailure(sql, run.id, infrastructure);
  } else {
    await addFailureSignatures(sql, [...signatures.values()]);
    await detect(sql, u, uploadKey, runs, run);
  }
  return { testCases: runs.size, failures, unnamed, learned, run, infrastructureFailure: infrastructure };
}

/** The signature of a failure that says nothing (no message, no text): what it always was. */
const failureSignatureOfNothing = failureSignature(NO_FAILURE_MESSAGE);

/** The longest failure text kept (a failure's latest occurrence, shown on the test's page). */
const FAILURE_TEXT_KEPT = 4_000;

/** A failure as its report gave it, for people: its message, then its text (a trace, output) when that does not start with the message; null when it said nothing. */
function failureTextOf(c: JUnitCase): string | null {
  const message = c.message?.trim() ?? "";
  const text = c.failureText?.trim() ?? "";
  const whole = text === "" ? message : message === "" || text.startsWith(message) ? text : `${message}\n${text}`;
  return whole === "" ? null : whole.slice(0, FAILURE_TEXT_KEPT);
}

/** Writes the results that repeats changed: inserted if every earlier testcase was skipped, else updated. */
async function writeReruns(sql: Sql, runs: Runs, rerun: Map<number, number>, uploadKey: number): Promise<void> {
  for (const [slot, before] of rerun) {
    const flags = runs.flags[slot]!;
    const result: ResultRow = [runs.keys[slot]!, runs.at[slot]!, uploadKey, (flags & FAILED) !== 0, (flags & PASSED) !== 0];
    if ((before & RESULT) === 0) await insertTestResults(sql, [result]);
    else await updateTestResult(sql, result);
  }
}

/** Whether the repository's CODEOWNERS differs from the one owners were last computed from (recording the new one). */
async function codeOwnersChanged(sql: Sql, u: Upload): Promise<boolean> {
  const hash = createHash("sha256").update(u.owners!.text).digest("hex");
  if ((await findCodeOwnersHash(sql, u.repositoryId)) === hash) return false;
  await saveCodeOwnersHash(sql, u.repositoryId, hash, u.now);
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
  for (const test of await findTestCaseOwners(sql, [...files.keys()])) {
    const owners = u.owners!.ownersOf(files.get(test.key)!);
    if (!sameList(test.codeowners, owners)) await setTestCaseOwners(sql, test.key, owners);
  }
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((item, i) => item === b[i]);

/**
 * Re-judges the tests this upload can have changed: those that failed, those with new
 * pass-on-retry evidence (within the run, against other uploads of the same commit, or against
 * the uploads of the queue's other runs of the same tree), and those already flaky, broken or
 * quarantined.
 */
async function detect(sql: Sql, u: Upload, uploadKey: number, runs: Runs, run: LinkedRun | null): Promise<void> {
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
  const others = await findOtherUploadsOfCommit(sql, u.repositoryId, u.input.commit_sha, uploadKey);
  if (others.length > 0) {
    const sameCommit = { at: u.now.getTime(), reason: `failed and passed on the same commit ${sha}` };
    const passed = failedOnly.length > 0 ? await findTestsPassedIn(sql, failedOnly, others) : [];
    for (const key of flakesAgainst(flagsOf, failedOnly, passed, await findTestsFailedIn(sql, others))) flakes.set(key, sameCommit);
  }
  // A queue run is one more run of its tree: a test that failed in one and passed in another is flaky.
  const sameTree = run ? await findUploadsOfSameTree(sql, run) : [];
  if (run && sameTree.length > 0) {
    const keys = sameTree.map((s) => s.uploadKey);
    const runIds = [...new Set(sameTree.map((s) => s.runId))].sort();
    const reason = `failed and passed on the same tree in queue runs of ${run.targetBranch} (${run.runId} and ${runIds.join(", ")})`;
    const passed = failedOnly.length > 0 ? await findTestsPassedIn(sql, failedOnly, keys) : [];
    for (const key of flakesAgainst(flagsOf, failedOnly, passed, await findTestsFailedIn(sql, keys))) if (!flakes.has(key)) flakes.set(key, { at: u.now.getTime(), reason });
  }
  for (const key of flakes.keys()) candidates.add(key);
  for (const { key } of await findWatchedTests(sql, u.repositoryId)) if (flagsOf(key) !== 0) candidates.add(key);
  if (candidates.size === 0) return;
  const tests = await findDetectionStates(sql, [...candidates]);
  await applyDetection(sql, await loadFlakySettings(sql, u.repositoryId), tests, flakes, u.now, u.repositoryId, new Set(failedOnly));
}
