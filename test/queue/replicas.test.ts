import { Database } from "../../src/store/database.js";
import { createPostgresDatabase } from "../support/postgres.js";
import { ApiClient, repo } from "../support/harness.js";
import { expectQueueInvariants } from "../support/invariants.js";
import { freePort, ServiceProcess } from "../support/service-process.js";

/**
 * Three service processes on one PostgreSQL database work the same queues at once: requests
 * go to all of them, every worker delivers CI results, fires timers and executes effects.
 * One replica is killed halfway. The invariants hold and no PR merges twice.
 */
const TOKEN = "replica-test-token-0123456789";
const PRS = 45;
const describeOnPostgres = process.env.GREENLINE_TEST_POSTGRES === "1" ? describe : describe.skip;

describeOnPostgres("several replicas on one PostgreSQL database", () => {
  test("process the same queues concurrently without a duplicate merge", async () => {
    const database = await createPostgresDatabase();
    const env = {
      DATABASE_URL: database.url,
      GREENLINE_API_TOKEN: TOKEN,
      GREENLINE_ORG: "acme",
      GREENLINE_SANDBOX_CI_MS: "100",
      GREENLINE_SANDBOX_FAILURE_RATE: "0.05",
      GREENLINE_SANDBOX_FLAKE_RATE: "0.05",
      GREENLINE_WORKER_INTERVAL_MS: "15",
    };
    const replicas = await Promise.all([0, 1, 2].map(async () => new ServiceProcess(await freePort(), env)));
    const clients = replicas.map((r) => new ApiClient(r.url, TOKEN));
    try {
      // Replicas start together: their migrations and bootstrap tokens race and must not fail.
      await Promise.all(replicas.map((r) => r.start()));
      await clients[0]!.ok("createQueue", { repo: repo("shared"), targetBranch: "main", concurrency: 3, canOptimisticallyMerge: true, pendingFailureDepth: 1 });
      await clients[1]!.ok("createQueue", { repo: repo("batched"), targetBranch: "main", concurrency: 2, batch: true, batchingMinSize: 1, bisectionConcurrency: 2 });
      let live = clients;
      for (let n = 1; n <= PRS; n++) {
        await live[n % live.length]!.ok("submitPullRequest", { repo: repo("shared"), targetBranch: "main", pr: { number: n } });
        await live[(n + 1) % live.length]!.ok("submitPullRequest", { repo: repo("batched"), targetBranch: "main", pr: { number: n } });
        if (n === Math.floor(PRS / 2)) {
          await replicas[2]!.kill();
          live = clients.slice(0, 2);
        }
      }
      const deadline = Date.now() + 120_000;
      for (;;) {
        const queues = await Promise.all(["shared", "batched"].map((name) => clients[0]!.ok("getQueue", { repo: repo(name), targetBranch: "main" })));
        if (queues.every((q) => q.enqueuedPullRequests.length === 0)) break;
        if (Date.now() > deadline) throw new Error(`did not drain: ${JSON.stringify(queues.map((q) => q.enqueuedPullRequests.map((p: { prNumber: number; state: string }) => [p.prNumber, p.state])))}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
    }
    const db = await Database.open(database.url, { migrate: false });
    try {
      await expectQueueInvariants(db, "shared", PRS);
      await expectQueueInvariants(db, "batched", PRS);
      // Every CI result was applied once, by whichever replica got it first.
      const events = await db.read((tx) => tx.queueEvent.findMany({ where: { kind: "run_finished" } }));
      const runIds = events.map((e) => `${e.queueId}:${(JSON.parse(e.payload) as { runId: string }).runId}`);
      const jobs = await db.read((tx) => tx.sandboxCiJob.count({ where: { outcome: { in: ["passed", "failed", "flaked"] } } }));
      expect(new Set(runIds).size).toBeLessThanOrEqual(jobs);
    } finally {
      await db.close();
      await database.drop();
    }
  }, 240_000);
});
