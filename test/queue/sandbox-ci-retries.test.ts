import { SandboxCodeHost } from "../../src/adapters/sandbox/code-host.js";
import type { RepoRef } from "../../src/ports/code-host.js";
import { Database } from "../../src/store/database.js";
import { BACKENDS } from "../support/backends.js";

const CI_MS = 60_000;

/**
 * The sandbox's re-run of a testing commit's failed CI job (issue 16's flake-aware retries): a
 * new job, due after `ciMs`, whose outcome is decided as any run's (a broken PR fails it again,
 * else it flakes at `flakeRate`); nothing is re-run while the latest job has not reported or
 * when it did not fail, so asking again is harmless.
 */
describe.each(BACKENDS)("re-running failed CI jobs on the sandbox, $name", (backend) => {
  let db: Database;
  let drop: () => Promise<void>;
  let now = new Date("2026-03-01T00:00:00Z");
  /** The rolls of simulated CI, in order (below flakeRate 0.5: a flake). */
  const rolls: number[] = [];
  let sandbox: SandboxCodeHost;

  beforeAll(async () => {
    const database = await backend.createDatabase();
    drop = database.drop;
    db = await Database.open(database.url);
    sandbox = new SandboxCodeHost(db, {
      ciMs: CI_MS,
      failureRate: 0,
      flakeRate: 0.5,
      random: () => {
        const roll = rolls.shift();
        if (roll === undefined) throw new Error("no CI roll scripted");
        return roll;
      },
      now: () => now,
    });
  });
  afterAll(async () => {
    await db?.close();
    await drop?.();
  });

  const repo = (name: string): RepoRef => ({ host: "sandbox", owner: "acme", name });

  /** CI's results due by now, delivered (as the worker applies them). */
  async function reported(): Promise<{ runId: string; outcome: string }[]> {
    const due = await sandbox.dueCiResults(now);
    for (const result of due) await db.transaction((tx) => sandbox.markDelivered(tx, result.id, now));
    return due.map(({ runId, outcome }) => ({ runId, outcome }));
  }
  const later = () => {
    now = new Date(now.getTime() + CI_MS);
  };

  /** A testing run of PR 1 (broken or not) on `name`'s main, its first CI roll scripted. */
  async function testingRun(name: string, options: { broken?: boolean; roll?: number } = {}) {
    await sandbox.openPullRequest(repo(name), { number: 1, targetBranch: "main", files: { "a.txt": name }, broken: options.broken ?? false });
    if (options.roll !== undefined) rolls.push(options.roll);
    const baseSha = await sandbox.getBranchHead(repo(name), "main");
    const start = await sandbox.startTestRun(repo(name), { queueId: `q-${name}`, runId: `run-${name}`, targetBranch: "main", baseSha, stack: [1], heads: {} });
    if (start.kind !== "started") throw new Error("conflict");
    return { queueId: `q-${name}`, runId: `run-${name}`, testBranch: start.testBranch, sha: start.sha, checkRunIds: [] };
  }

  test("a flaked job runs again after ciMs and reports anew; asking again while it runs starts nothing", async () => {
    const run = await testingRun("flaky", { roll: 0.1 });
    // Not reported yet: nothing has failed.
    expect(await sandbox.ciRetries.rerunFailedJobs(repo("flaky"), run)).toEqual({ rerun: 0 });
    later();
    expect(await reported()).toEqual([{ runId: "run-flaky", outcome: "failed" }]);

    rolls.push(0.9);
    expect(await sandbox.ciRetries.rerunFailedJobs(repo("flaky"), run)).toEqual({ rerun: 1 });
    expect(await sandbox.ciRetries.rerunFailedJobs(repo("flaky"), run)).toEqual({ rerun: 0 });
    expect(await reported()).toEqual([]);
    later();
    expect(await reported()).toEqual([{ runId: "run-flaky", outcome: "passed" }]);
    // It passed: nothing left to re-run.
    expect(await sandbox.ciRetries.rerunFailedJobs(repo("flaky"), run)).toEqual({ rerun: 0 });
  });

  test("a job holding a broken PR fails again when re-run (no flake roll)", async () => {
    const run = await testingRun("broken", { broken: true });
    later();
    expect(await reported()).toEqual([{ runId: "run-broken", outcome: "failed" }]);
    expect(await sandbox.ciRetries.rerunFailedJobs(repo("broken"), run)).toEqual({ rerun: 1 });
    later();
    expect(await reported()).toEqual([{ runId: "run-broken", outcome: "failed" }]);
    expect(rolls).toEqual([]);
  });

  test("a commit with no failed job, or no job at all, has nothing to re-run", async () => {
    const run = await testingRun("green", { roll: 0.9 });
    later();
    expect(await reported()).toEqual([{ runId: "run-green", outcome: "passed" }]);
    expect(await sandbox.ciRetries.rerunFailedJobs(repo("green"), run)).toEqual({ rerun: 0 });
    expect(await sandbox.ciRetries.rerunFailedJobs(repo("green"), { ...run, sha: "0".repeat(40) })).toEqual({ rerun: 0 });
  });

  test("a cancelled run's commit is not re-run", async () => {
    const run = await testingRun("cancelled", { roll: 0.1 });
    await sandbox.cancelTestRun(repo("cancelled"), run.testBranch);
    later();
    expect(await reported()).toEqual([]);
    expect(await sandbox.ciRetries.rerunFailedJobs(repo("cancelled"), run)).toEqual({ rerun: 0 });
  });
});
