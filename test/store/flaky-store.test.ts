import { Database } from "../../src/store/database.js";
import {
  addFailureSignatures,
  countPullRequestsImpacted,
  countRecentRuns,
  countRunsSince,
  findDetectionStates,
  findOtherUploadsOfCommit,
  findTestCaseById,
  findTestCaseKeys,
  findTestCaseOwners,
  findTestCases,
  findTestsFailedIn,
  findTestsPassedIn,
  insertTestCases,
  insertTestFailures,
  insertTestResults,
  insertUpload,
  listFailingTestKeys,
  listFailureSignatures,
  saveJudgment,
  setUploadTotals,
} from "../../src/store/flaky-store.js";
import { BACKENDS, seedAcmeRepository } from "../support/backends.js";

/**
 * The flaky store answers the domain's types on both backends: PostgreSQL returns bigint and
 * COUNT as strings and SQLite booleans as 0/1, and neither may leak past the store; a text
 * column holding a value the code does not know is refused where it is read.
 */
describe.each(BACKENDS)("flaky store on $name", (backend) => {
  let database: { url: string; drop(): Promise<void> };
  let db: Database;
  const now = new Date("2030-01-10T12:00:00.000Z");
  const at = now.getTime() - 60 * 60 * 1000;

  beforeAll(async () => {
    database = await backend.createDatabase();
    db = await Database.open(database.url);
    await db.transaction(async (tx) => {
      await seedAcmeRepository(tx);
    });
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
  });

  const upload = (id: string, commitSha: string, prNumber: number | null = 7) =>
    db.sqlTransaction((sql) =>
      insertUpload(sql, { id, repositoryId: "repo", commitSha, branch: prNumber === null ? "main" : "feature", prNumber, jobUrl: null, checkName: null, checkRunId: null, variant: "", createdAt: now, runId: null }),
    );
  const newTest = (id: string, codeowners: string[]) => ({ id, name: id, file: "src/a.test.ts", classname: "a", parent: "suite", variant: "", codeowners });

  test("a failing streak: the runs failed since the latest pass, and their commits, off pull requests; infrastructure failures left out", async () => {
    const uploads: number[] = [];
    // A pass, then nine failures on three commits (one of them in an upload judged infrastructure), and an earlier failure before the pass.
    const shas = ["s0", "s1", "s2", "s2", "s3", "s3", "s3", "s3", "s3", "s3", "s4"];
    for (const [i, sha] of shas.entries()) uploads.push(await upload(`streak-${i}`, sha, null));
    // A PR branched before the break passes in the middle of it: it says nothing of the code on main.
    const pullRequest = await upload("streak-pr", "old-base", 8);
    const [broke, flapping, flakedThenBroke] = (await db.sqlTransaction((sql) => insertTestCases(sql, "repo", [newTest("t-broke", []), newTest("t-flapping", []), newTest("t-flaked-then-broke", [])], now))) as number[];
    type Row = [number, number, number, boolean, boolean];
    await db.sqlTransaction(async (sql) => {
      await setUploadTotals(sql, uploads[10]!, { testCases: 3, failures: 3, infrastructureFailure: "out of disk" });
      await insertTestResults(sql, [
        [broke!, at - 11, uploads[0]!, true, false],
        [broke!, at - 10, uploads[1]!, false, true],
        ...[2, 3, 4, 5, 6, 7, 8, 9].map((i): Row => [broke!, at - 10 + i, uploads[i]!, true, false]),
        [broke!, at - 4, pullRequest, false, true],
        [broke!, at + 1, uploads[10]!, true, false],
        // Failed and passed within one run (a retry in the report): part of no streak, and it ends one.
        [flapping!, at - 11, uploads[0]!, false, true],
        ...[2, 3, 4, 5, 6, 7, 8].map((i): Row => [flapping!, at - 10 + i, uploads[i]!, true, false]),
        [flapping!, at, uploads[9]!, true, true],
        // Flaked (failed, then passed on a retry) and then broke: its every run has a failure, and it has a streak.
        [flakedThenBroke!, at - 10, uploads[1]!, true, true],
        ...[2, 3, 4, 5, 6, 7, 8, 9].map((i): Row => [flakedThenBroke!, at - 10 + i, uploads[i]!, true, false]),
      ]);
    });
    const runs = await db.sqlRead((sql) => countRunsSince(sql, [broke!, flapping!, flakedThenBroke!], at - 100));
    expect(Object.fromEntries(runs)).toEqual({
      [broke!]: { runs: 11, failures: 9, streak: 8, streakCommits: 2 },
      [flapping!]: { runs: 9, failures: 8, streak: 0, streakCommits: 0 },
      [flakedThenBroke!]: { runs: 9, failures: 9, streak: 8, streakCommits: 2 },
    });
  });

  test("a broken streak fixed (three passes in a row after it, wherever): runs and failures counted from the first; one pass is no fix; the last fixed streak of more than one commit", async () => {
    // Off pull requests: 2 passes, 9 failures on 3 commits (broken), 3 passes (the fix), 3 failures, 2 passes, 8 failures of one commit's retries (no streak), 1 pass.
    const plan: [string, boolean][] = [
      ["f0", true],
      ["f0", true],
      ...["f1", "f1", "f1", "f2", "f2", "f2", "f3", "f3", "f3"].map((sha): [string, boolean] => [sha, false]),
      ["f4", true],
      ["f4", true],
      ["f5", true],
      ["f6", false],
      ["f6", false],
      ["f6", false],
      ["f6b", true],
      ["f6b", true],
      ...Array.from({ length: 8 }, (): [string, boolean] => ["f7", false]),
      ["f8", true],
    ];
    const uploads: number[] = [];
    for (const [i, [sha]] of plan.entries()) uploads.push(await upload(`fixed-${i}`, sha, null));
    // A PR on an old base fails after the fix: it counts in the rate since the fix, and in no streak.
    const pullRequest = await upload("fixed-pr", "old-base", 9);
    const [fixed, passedOnce, fixedLater] = (await db.sqlTransaction((sql) => insertTestCases(sql, "repo", [newTest("t-fixed", []), newTest("t-passed-once", []), newTest("t-fixed-later", [])], now))) as number[];
    const base = at - 1000;
    await db.sqlTransaction((sql) =>
      insertTestResults(sql, [
        ...plan.map(([, passed], i): [number, number, number, boolean, boolean] => [fixed!, base + i, uploads[i]!, !passed, passed]),
        [fixed!, base + 13, pullRequest, true, false],
        // Broken, then one pass, then failing again: a test failing most runs passes now and then; that is no fix.
        ...[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13].map((i): [number, number, number, boolean, boolean] => [passedOnce!, base + i, uploads[i]!, i >= 2 && i !== 11, i < 2 || i === 11]),
        // Broken, a pass, a failure, then three passes in a row: fixed at the first of the three.
        ...[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15].map((i): [number, number, number, boolean, boolean] => {
          const passed = i < 2 || i === 11 || i >= 13;
          return [fixedLater!, base + i, uploads[i]!, !passed, passed];
        }),
      ]),
    );
    const runs = await db.sqlRead((sql) => countRunsSince(sql, [fixed!, passedOnce!, fixedLater!], base - 100));
    // From the fix (index 11, at base + 11): 17 runs off PRs and the PR's, 12 of them failed.
    expect(Object.fromEntries(runs)).toEqual({
      [fixed!]: { runs: 18, failures: 12, streak: 0, streakCommits: 0, fixedAt: base + 11, fixedAfter: 9 },
      [passedOnce!]: { runs: 14, failures: 11, streak: 0, streakCommits: 0 },
      [fixedLater!]: { runs: 3, failures: 0, streak: 0, streakCommits: 0, fixedAt: base + 13, fixedAfter: 9 },
    });
  });

  test("what an upload writes reads back as numbers, booleans, lists and dates", async () => {
    const first = await upload("u1", "abc");
    const second = await upload("u2", "abc");
    expect([typeof first, typeof second]).toEqual(["number", "number"]);
    const [flaky, steady] = (await db.sqlTransaction((sql) => insertTestCases(sql, "repo", [newTest("t-flaky", ["@acme/web"]), newTest("t-steady", [])], now))) as number[];
    await db.sqlTransaction(async (sql) => {
      await insertTestResults(sql, [
        [flaky!, at, first, true, false],
        [flaky!, at, second, false, true],
        [steady!, at, first, false, true],
      ]);
      await insertTestFailures(sql, [["repo", at, flaky!, first, 7, "sig"]]);
      await addFailureSignatures(sql, [{ testCaseKey: flaky!, signature: "sig", summary: "boom", count: 1, firstAt: at, lastAt: at, shape: "shape", lastText: "boom\n  at a.test.ts:3", lastUploadKey: first }]);
      await addFailureSignatures(sql, [{ testCaseKey: flaky!, signature: "sig", summary: "boom", count: 2, firstAt: at + 1, lastAt: at + 1, shape: "shape", lastText: "boom again", lastUploadKey: second }]);
      // An older occurrence uploaded late: counted, and the latest text stays.
      await addFailureSignatures(sql, [{ testCaseKey: flaky!, signature: "sig", summary: "boom", count: 1, firstAt: at - 5, lastAt: at - 5, shape: "shape", lastText: "older", lastUploadKey: first }]);
      await saveJudgment(sql, flaky!, { flakeAt: at, flakeReason: "failed and passed on the same commit", quarantined: true, status: { value: "flaky", reason: "retried", at: now }, quarantinedAt: now });
    });

    const reads = await db.sqlRead(async (sql) => ({
      keys: Object.fromEntries(await findTestCaseKeys(sql, "repo", ["t-flaky", "t-steady", "t-unknown"])),
      owners: await findTestCaseOwners(sql, [flaky!]),
      others: await findOtherUploadsOfCommit(sql, "repo", "abc", second),
      passed: await findTestsPassedIn(sql, [flaky!, steady!], [second]),
      failed: await findTestsFailedIn(sql, [first]),
      states: await findDetectionStates(sql, [flaky!, steady!]),
      runs: Object.fromEntries(await countRunsSince(sql, [flaky!, steady!], at)),
      recent: await countRecentRuns(sql, [flaky!], { weekAgo: at - 1, dayAgo: at - 1, now: now.getTime() }),
      prs: await countPullRequestsImpacted(sql, [flaky!], at, now.getTime()),
      signatures: await listFailureSignatures(sql, [flaky!]),
      failing: await listFailingTestKeys(sql, "repo", new Date(at), now),
    }));
    expect(reads).toEqual({
      keys: { "t-flaky": flaky, "t-steady": steady },
      owners: [{ key: flaky, codeowners: ["@acme/web"] }],
      others: [first],
      passed: [flaky],
      failed: [flaky],
      states: expect.arrayContaining([
        { key: flaky, status: "flaky", flakeAt: at, flakeReason: "failed and passed on the same commit", quarantineSetting: "auto", quarantined: true },
        { key: steady, status: "healthy", flakeAt: null, flakeReason: null, quarantineSetting: "auto", quarantined: false },
      ]),
      runs: { [flaky!]: { runs: 2, failures: 1, streak: 0, streakCommits: 0 }, [steady!]: { runs: 1, failures: 0, streak: 0, streakCommits: 0 } },
      recent: [{ testCaseKey: flaky, runs7: 2, fails7: 1, runs24: 2, fails24: 1 }],
      prs: [{ testCaseKey: flaky, pullRequests: 1 }],
      signatures: [{ testCaseKey: flaky, summary: "boom", count: 4, lastAt: at + 1, lastText: "boom again", lastJobUrl: null }],
      failing: [flaky],
    });
    // A signature's first time is the earliest told, its shape set once.
    type Kept = { firstAt: unknown; shape: string | null };
    const kept = async (key: number, signature: string) =>
      (await db.sqlRead((sql) => sql.all<Kept>(`SELECT "firstAt", "shape" FROM "FailureSignature" WHERE "testCaseKey" = ? AND "signature" = ?`, [key, signature])))[0]!;
    expect(await kept(flaky!, "sig")).toEqual({ firstAt: backend.name === "postgres" ? String(at - 5) : at - 5, shape: "shape" });
    // One stored before first times and shapes were kept (migration 0021) keeps no first time, and gets its shape.
    await db.sqlTransaction(async (sql) => {
      await sql.run(`INSERT INTO "FailureSignature" ("testCaseKey", "signature", "summary", "count", "lastAt") VALUES (?, ?, ?, ?, ?)`, [steady!, "old", "old", 1, at - 100]);
      await addFailureSignatures(sql, [{ testCaseKey: steady!, signature: "old", summary: "old", count: 1, firstAt: at, lastAt: at, shape: "its shape", lastText: null, lastUploadKey: first }]);
    });
    expect(await kept(steady!, "old")).toEqual({ firstAt: null, shape: "its shape" });
    await db.sqlTransaction((sql) => sql.run(`DELETE FROM "FailureSignature" WHERE "testCaseKey" = ?`, [steady!]));

    const stored = await db.read((tx) => findTestCases(tx, [steady!, flaky!]));
    expect(stored.map((t) => t.key)).toEqual([flaky, steady]);
    expect(stored[0]).toMatchObject({ id: "t-flaky", codeowners: ["@acme/web"], status: "flaky", quarantined: true, quarantinedAt: now, statusAt: now, ticketUrl: null });
    expect(await db.read((tx) => findTestCaseById(tx, "repo", "t-steady"))).toMatchObject({ key: steady, codeowners: [], status: "healthy", quarantinedAt: null });
  });

  test("a status or quarantine setting the code does not know is refused where it is read, naming the column", async () => {
    const [odd] = (await db.sqlTransaction((sql) => insertTestCases(sql, "repo", [newTest("t-odd", [])], now))) as number[];
    await db.sqlTransaction((sql) => sql.run(`UPDATE "TestCase" SET "status" = 'wobbly' WHERE "key" = ?`, [odd]));
    await expect(db.sqlRead((sql) => findDetectionStates(sql, [odd!]))).rejects.toThrow(/TestCase\.status holds "wobbly", not one of healthy, flaky, broken/);
    await expect(db.read((tx) => findTestCases(tx, [odd!]))).rejects.toThrow(/TestCase\.status/);
    await db.sqlTransaction((sql) => sql.run(`UPDATE "TestCase" SET "status" = 'healthy', "quarantineSetting" = 'sometimes' WHERE "key" = ?`, [odd]));
    await expect(db.sqlRead((sql) => findDetectionStates(sql, [odd!]))).rejects.toThrow(/TestCase\.quarantineSetting holds "sometimes"/);
  });
});
