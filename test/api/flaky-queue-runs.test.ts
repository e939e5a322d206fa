import { markQueueDue } from "../../src/store/due-queues.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { testCaseId } from "../../src/domain/flaky/identity.js";
import { projectRoot } from "../../src/paths.js";
import { testResultsOfRun } from "../../src/store/flaky-store.js";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * Test results of merge-queue runs: uploads for a testing branch's commit are linked to the run
 * (whichever arrives first), a test that failed in one run and passed in another run of the
 * same tree is flaky, and an upload that reads as an infrastructure failure mints no flaky test
 * and marks its run. Real server, real database, the sandbox's queue.
 */

type Case = { name: string; fail?: string; file?: string };
type Answer = {
  upload_id: string;
  failures: number;
  infrastructure_failure: boolean;
  infrastructure_failure_reason?: string;
  run?: { id: string; number: number; queue: string };
};

const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

function report(at: Date, cases: Case[]): string {
  const body = cases
    .map((c) => {
      const attrs = `classname="${c.file ?? "pkg.Tests"}" name="${c.name}"${c.file ? ` file="${c.file}"` : ""}`;
      return c.fail === undefined ? `<testcase ${attrs}/>` : `<testcase ${attrs}><failure message="${escape(c.fail)}">trace</failure></testcase>`;
    })
    .join("\n");
  return `<?xml version="1.0"?>\n<testsuites><testsuite name="suite" timestamp="${at.toISOString()}">\n${body}\n</testsuite></testsuites>`;
}

const passing = (n: number, prefix = "t") => Array.from({ length: n }, (_, i) => ({ name: `${prefix}${i}` }));

describe.each(BACKENDS)("test results of queue runs on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock(Date.parse("2026-11-22T12:00:00Z"));
  let sha = 0;
  const otherSha = () => (++sha).toString(16).padStart(40, "c");

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: 3_600_000 } });
  });
  afterAll(() => server?.close());

  const worker = () => server.greenline.worker;
  const upload = (name: string, commit_sha: string, branch: string, cases: Case[]) =>
    server.api.ok<Answer>("flaky-tests/upload", { repo: repo(name), org_url_slug: "acme", commit_sha, branch, junit_xml: [report(clock.now(), cases)] });
  const details = (name: string, pr: number) => server.api.ok<{ testRunId: string; testBranch: string; testBranchSha: string }>("getMergeQueueTestingDetails", prOf(pr, name));
  /** A test's details, by its name (and file, which is also its classname here). */
  const testNamed = async (name: string, test: string, file = "") => {
    const id = testCaseId("acme", `github.com/acme/${name}`, { file, classname: file || "pkg.Tests", parent: "suite", name: test });
    return (await server.api.ok<{ test: { status: { value: string; reason: string } } }>("flaky-tests/get-test-details", { repo: repo(name), org_url_slug: "acme", test_id: id })).test;
  };
  const runRow = (id: string) => server.greenline.services.db.read((tx) => tx.testRun.findUnique({ where: { id } }));
  /** A queue with PR 1 in testing: its run's row id, testing branch and commit. */
  async function testing(name: string) {
    await server.api.ok("createQueue", queueOf(name));
    await server.api.ok("submitPullRequest", prOf(1, name));
    await worker().drain();
    return details(name, 1);
  }

  test("an upload for a testing branch's commit is linked to its run; the run lists its results", async () => {
    const run = await testing("linked");
    expect(run.testBranch).toBe("greenline/main/run-1");
    const answer = await upload("linked", run.testBranchSha, run.testBranch, [...passing(3), { name: "boom", fail: "expected true" }]);
    expect(answer).toMatchObject({ infrastructure_failure: false, run: { id: run.testRunId, number: 1, queue: "main" } });
    const results = await server.greenline.services.db.read((tx) => testResultsOfRun(tx, run.testRunId));
    expect(results.uploads).toEqual([{ id: answer.upload_id, testCases: 4, failures: 1, infrastructureFailure: null }]);
    expect(results.failed).toEqual([
      expect.objectContaining({ test: expect.objectContaining({ name: "boom", status: "broken", quarantined: false }), passedOnRetry: false, signatures: [{ signature: expect.any(String), summary: "expected true" }] }),
    ]);
  });

  test("an upload not matching a run's testing branch and commit stays unlinked", async () => {
    const run = await testing("unlinked");
    expect(await upload("unlinked", run.testBranchSha, "main", passing(2))).not.toHaveProperty("run");
    expect(await upload("unlinked", otherSha(), run.testBranch, passing(2))).not.toHaveProperty("run");
    expect((await server.greenline.services.db.read((tx) => testResultsOfRun(tx, run.testRunId))).uploads).toEqual([]);
  });

  test("an upload that arrives before its run's testing branch is recorded is linked when it is", async () => {
    const run = await testing("early");
    // The testing branch was pushed and CI uploaded, but recording it did not happen yet (a
    // crash between the two: the queue's claim is left to its lease, the queue still due): the
    // worker executes the start again and records it then.
    const { db } = server.greenline.services;
    await db.transaction(async (tx) => {
      await tx.testRun.update({ where: { id: run.testRunId }, data: { testBranch: null, testBranchSha: null } });
      await tx.effect.updateMany({ where: { kind: "start_run", queue: { repository: { name: "early" } } }, data: { doneAt: null } });
      const queue = await tx.queue.findFirstOrThrow({ where: { repository: { name: "early" } }, select: { id: true } });
      await markQueueDue(tx, queue.id, new Date(0));
    });
    const answer = await upload("early", run.testBranchSha, `refs/heads/${run.testBranch}`, passing(2));
    expect(answer).not.toHaveProperty("run");
    await worker().drain();
    expect(await details("early", 1)).toMatchObject({ testRunId: run.testRunId, testBranchSha: run.testBranchSha });
    expect((await db.read((tx) => testResultsOfRun(tx, run.testRunId))).uploads.map((u) => u.id)).toEqual([answer.upload_id]);
  });

  test("a test that failed in one queue run and passed in another run of the same tree is flaky", async () => {
    const first = await testing("tree");
    await upload("tree", first.testBranchSha, first.testBranch, [...passing(3), { name: "racy", fail: "timed out" }]);
    // Its only run failed: broken until a pass (issue 22, item 9; it read "healthy").
    expect((await testNamed("tree", "racy")).status.value).toBe("broken");
    await server.api.ok("restartTestsOnPullRequest", prOf(1, "tree"));
    await worker().drain();
    const second = await details("tree", 1);
    expect(second.testRunId).not.toBe(first.testRunId);
    expect(second.testBranchSha).not.toBe(first.testBranchSha);
    expect((await runRow(second.testRunId))!.treeKey).toBe((await runRow(first.testRunId))!.treeKey);
    await upload("tree", second.testBranchSha, second.testBranch, [...passing(3), { name: "racy" }]);
    expect(await testNamed("tree", "racy")).toMatchObject({ status: { value: "flaky", reason: "failed and passed on the same tree in queue runs of main (run-2 and run-1)" } });
    expect((await testNamed("tree", "t0")).status.value).toBe("healthy");
  });

  test("an upload where 80% of the tests failed is an infrastructure failure: no test turns flaky, the run is marked", async () => {
    const run = await testing("infra");
    const storm = [...passing(2), ...Array.from({ length: 8 }, (_, i) => ({ name: `f${i}`, fail: `case ${i} went wrong` }))];
    const answer = await upload("infra", run.testBranchSha, run.testBranch, storm);
    expect(answer).toMatchObject({ failures: 8, infrastructure_failure: true, infrastructure_failure_reason: expect.stringContaining("8 of 10 tests failed") });
    // The same tests passing on the same commit would otherwise be pass-on-retry evidence.
    await upload("infra", run.testBranchSha, run.testBranch, passing(10, "f"));
    expect((await testNamed("infra", "f0")).status.value).toBe("healthy");
    expect((await runRow(run.testRunId))!.infrastructureFailure).toContain("8 of 10 tests failed");
  });

  test("one failure shared by unrelated tests across files is an infrastructure failure", async () => {
    const files = ["src/a.test.ts", "src/b.test.ts", "src/c.test.ts"];
    const cases = [...passing(20), ...Array.from({ length: 6 }, (_, i) => ({ name: `db${i}`, file: files[i % 3]!, fail: `connect ECONNREFUSED 10.0.0.${i}:5432` }))];
    const commit = otherSha();
    const answer = await upload("signature", commit, "feature", cases);
    expect(answer).toMatchObject({ failures: 6, infrastructure_failure: true, infrastructure_failure_reason: expect.stringMatching(/^6 tests in 3 files failed with one failure/) });
    await upload("signature", commit, "feature", [...passing(20), ...Array.from({ length: 6 }, (_, i) => ({ name: `db${i}`, file: files[i % 3]! }))]);
    expect((await testNamed("signature", "db0", files[0])).status.value).toBe("healthy");
  });

  test("a regression's real report (jest-junit: six failures in three files, every message starting expect(received).toBe(expected)) is evidence: its failures are the tests', each with its own signature", async () => {
    const run = await testing("regression");
    const jest = readFileSync(join(projectRoot, "test/fixtures/junit/failures/jest-junit.xml"), "utf8");
    const send = (xml: string) => server.api.ok<Answer>("flaky-tests/upload", { repo: repo("regression"), org_url_slug: "acme", commit_sha: run.testBranchSha, branch: run.testBranch, junit_xml: [xml] });
    const answer = await send(jest);
    expect(answer).toMatchObject({ failures: 11, infrastructure_failure: false, run: { id: run.testRunId } });
    expect(answer).not.toHaveProperty("infrastructure_failure_reason");
    expect((await runRow(run.testRunId))!.infrastructureFailure).toBeNull();
    const results = await server.greenline.services.db.read((tx) => testResultsOfRun(tx, run.testRunId));
    const summaries = Object.fromEntries(results.failed.map((f) => [f.test.name, f.signatures.map((s) => s.summary)]));
    expect(summaries["Cart totals with tax"]).toEqual(["Error: expect(received).toBe(expected) // Object.is equality | Expected: 108 | Received: 107.99 (at cart.test.ts:31)"]);
    expect(summaries["shipping charges express"]).toEqual(["Error: expect(received).toBe(expected) // Object.is equality | Expected: 14.95 | Received: 9.95 (at shipping.test.ts:15)"]);
    expect(new Set(results.failed.flatMap((f) => f.signatures.map((s) => s.signature))).size).toBe(9);
    // Detection saw the failures: the same tests passing on the same commit (a re-run of the job) are flaky.
    await send(jest.replace(/<(failure|error)>[\s\S]*?<\/\1>/g, ""));
    const test = (name: string, suite: string) =>
      server.api.ok<{ test: { status: { value: string; reason: string }; most_common_failures: { summary: string }[] } }>("flaky-tests/get-test-details", {
        repo: repo("regression"),
        org_url_slug: "acme",
        test_id: testCaseId("acme", "github.com/acme/regression", { file: "", classname: name, parent: suite, name }),
      });
    const cart = (await test("Cart totals with tax", "Cart")).test;
    expect(cart.status.value).toBe("flaky");
    expect(cart.most_common_failures.map((f) => f.summary)).toEqual(["Error: expect(received).toBe(expected) // Object.is equality | Expected: 108 | Received: 107.99 (at cart.test.ts:31)"]);
    expect((await test("repository saves a cart", "repository")).test.status.value).toBe("flaky");
  });

  test("a normal failing upload is no infrastructure failure, and a retry's pass on the same commit still makes the test flaky", async () => {
    const commit = otherSha();
    expect(await upload("normal", commit, "feature", [...passing(9), { name: "shaky", fail: "expected 1 to be 2" }])).toMatchObject({ infrastructure_failure: false, failures: 1 });
    await upload("normal", commit, "feature", [...passing(9), { name: "shaky" }]);
    expect((await testNamed("normal", "shaky")).status.value).toBe("flaky");
  });
});
