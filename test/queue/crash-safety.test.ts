import { ApiClient, repo } from "../support/harness.js";
import { BACKENDS } from "../support/backends.js";
import { Database } from "../../src/store/database.js";
import { expectQueueInvariants } from "../support/invariants.js";
import { freePort, ServiceProcess } from "../support/service-process.js";

/**
 * Kills the service with SIGKILL at random instants (up to 12 times) while it processes 180 PRs on the
 * sandbox (simulated CI with real failures and flakes), restarting it each time on the same
 * database. Afterwards every PR has reached a terminal state with a reason, none merged twice,
 * no broken PR landed, and the target branch holds exactly the merged PRs' changes.
 */

const TOKEN = "crash-test-token-0123456789";
const PRS_PER_QUEUE = 60;
const MAX_KILLS = 12;
const QUEUES = [
  { name: "chain", settings: { concurrency: 4, canOptimisticallyMerge: true, pendingFailureDepth: 1 } },
  { name: "batches", settings: { concurrency: 2, batch: true, batchingMinSize: 1, bisectionConcurrency: 2, optimizationMode: "bisection_skip_redundant_tests" } },
  { name: "lanes", settings: { mode: "parallel", concurrency: 4, batch: true, batchingMinSize: 1, bisectionConcurrency: 2, canOptimisticallyMerge: true, pendingFailureDepth: 1 } },
];
/** Parallel mode: each PR impacts one or two of five targets (lanes overlap now and then). */
const targetsOf = (n: number) => (n % 3 === 0 ? [`//t${n % 5}`, `//t${(n + 1) % 5}`] : [`//t${n % 5}`]);

// A seeded generator: the kill schedule is random but repeatable.
function seeded(seed: number) {
  return () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

describe.each(BACKENDS)("crash safety on $name", (backend) => {
  test("SIGKILL at random points loses nothing and breaks no invariant", async () => {
    const database = await backend.createDatabase();
    const service = new ServiceProcess(await freePort(), {
      DATABASE_URL: database.url,
      GREENLINE_API_TOKEN: TOKEN,
      GREENLINE_ORG: "acme",
      GREENLINE_SANDBOX_CI_MS: "150",
      GREENLINE_SANDBOX_FAILURE_RATE: "0.05",
      GREENLINE_SANDBOX_FLAKE_RATE: "0.05",
      GREENLINE_WORKER_INTERVAL_MS: "20",
    });
    const random = seeded(backend.name === "sqlite" ? 7 : 11);
    const api = new ApiClient(service.url, TOKEN);
    /** Calls until the service answers (it may be down, or die mid-request). */
    const call = async (op: string, body: unknown) => {
      // Bounded by time, not attempts: a restart takes seconds of CPU, slow on a loaded machine.
      const giveUpAt = Date.now() + 90_000;
      for (;;) {
        try {
          return await api.call(op, body);
        } catch (error) {
          if (Date.now() > giveUpAt) throw error;
          await new Promise((r) => setTimeout(r, 25));
        }
      }
    };
    let kills = 0;
    let stopKilling = false;
    /**
     * Lets the service run for `cpuMs` of its own CPU time (or twice that of wall time where
     * /proc cannot tell): a loaded machine stretches the wall time between kills, not the work
     * the service does between them, so it never spends its life restarting.
     */
    const serviceRuns = async (cpuMs: number) => {
      const from = service.cpuMs();
      if (from === null) return new Promise((r) => setTimeout(r, 2 * cpuMs));
      for (;;) {
        const now = service.cpuMs();
        if (stopKilling || now === null || now - from >= cpuMs) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const killLoop = async () => {
      // A bounded number of kills: each restart costs seconds of start-up (docs/benchmarks.md,
      // "Crash-safety suite time"), and unbounded kills would leave the service little time to work.
      while (!stopKilling && kills < MAX_KILLS) {
        await serviceRuns(100 + random() * 600);
        if (stopKilling) break;
        await service.kill();
        kills++;
        await service.start();
      }
    };
    let killer: Promise<void> = Promise.resolve();

    try {
      // The first start is not raced by a kill: its bound covers one start, not a series of them.
      await service.start();
      killer = killLoop();
      for (const q of QUEUES) {
        const created = await call("createQueue", { repo: repo(q.name), targetBranch: "main", ...q.settings });
        expect([200, 409]).toContain(created.status);
      }
      for (let n = 1; n <= PRS_PER_QUEUE; n++) {
        for (const q of QUEUES) {
          const address = { repo: repo(q.name), targetBranch: "main", pr: { number: n } };
          if (q.settings.mode === "parallel") {
            for (;;) if ((await call("setImpactedTargets", { ...address, impactedTargets: targetsOf(n) })).status === 200) break;
          }
          // A submission whose answer was lost may have happened: submit only if it did not.
          for (;;) {
            const existing = await call("getSubmittedPullRequest", address);
            if (existing.status === 200) break;
            const submitted = await call("submitPullRequest", address);
            if (submitted.status === 200) break;
          }
        }
      }
      // Keep killing for a while after the last submission, then let it finish.
      await new Promise((r) => setTimeout(r, 3000));
      stopKilling = true;
      await killer;

      const deadline = Date.now() + 90_000;
      for (;;) {
        const queues = await Promise.all(QUEUES.map((q) => call("getQueue", { repo: repo(q.name), targetBranch: "main" })));
        if (queues.every((r) => r.status === 200 && r.body.enqueuedPullRequests.length === 0)) break;
        if (Date.now() > deadline) throw new Error(`the queues did not drain: ${JSON.stringify(queues.map((r) => r.body.enqueuedPullRequests?.map((p: { prNumber: number; state: string }) => [p.prNumber, p.state])))}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(kills).toBeGreaterThanOrEqual(3);
    } finally {
      stopKilling = true;
      await killer.catch(() => undefined);
      await service.stop();
    }

    const db = await Database.open(database.url, { migrate: false });
    try {
      for (const q of QUEUES) await expectQueueInvariants(db, q.name, PRS_PER_QUEUE);
    } finally {
      await db.close();
      await database.drop();
    }
  }, 420_000);
});
