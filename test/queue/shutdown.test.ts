import pg from "pg";
import { BACKENDS } from "../support/backends.js";
import { ApiClient, repo } from "../support/harness.js";
import { freePort, ServiceProcess } from "../support/service-process.js";

/**
 * SIGTERM stops the service as a process: it stops taking requests, answers those in flight,
 * and exits — within GREENLINE_SHUTDOWN_TIMEOUT_MS even when work in flight cannot finish.
 */
const TOKEN = "shutdown-test-token-0123456789";

/** The exit code, or "still running" when the process has not exited within `limitMs` (a generous bound, not a measurement). */
function exitWithin(exit: Promise<number | null>, limitMs: number): Promise<number | null | "still running"> {
  let timer: NodeJS.Timeout | undefined;
  const running = new Promise<"still running">((resolve) => (timer = setTimeout(() => resolve("still running"), limitMs)));
  return Promise.race([exit, running]).finally(() => clearTimeout(timer));
}

describe.each(BACKENDS)("shutting down on $name", (backend) => {
  let database: { url: string; drop(): Promise<void> };
  let service: ServiceProcess;
  beforeEach(async () => {
    database = await backend.createDatabase();
  });
  afterEach(async () => {
    await service.kill();
    await database.drop();
  });

  async function start(env: Record<string, string> = {}): Promise<ApiClient> {
    service = new ServiceProcess(await freePort(), { DATABASE_URL: database.url, GREENLINE_API_TOKEN: TOKEN, GREENLINE_ORG: "acme", ...env });
    await service.start();
    const api = new ApiClient(service.url, TOKEN);
    await api.ok("createQueue", { repo: repo(), targetBranch: "main" });
    return api;
  }

  test("clients sending on kept-alive connections get their answers, and the process exits", async () => {
    const api = await start();
    let next = 1;
    let sending = true;
    const answers: number[] = [];
    // Like bench:api's seeding: eight clients in a loop, each on its kept-alive connection.
    const clients = Array.from({ length: 8 }, async () => {
      while (sending) {
        const status = await api.call("submitPullRequest", { repo: repo(), targetBranch: "main", pr: { number: next++ } }).then(
          (r) => r.status,
          () => 0,
        );
        if (status === 0) return; // the connection is closed: the service has stopped
        answers.push(status);
      }
    });
    while (answers.length < 16) await new Promise((resolve) => setTimeout(resolve, 20));
    const exit = service.terminate();
    expect(await exitWithin(exit, 30_000)).toBe(0);
    sending = false;
    await Promise.all(clients);
    expect(answers.filter((status) => status !== 200)).toEqual([]);
  });
});

const postgres = BACKENDS.find((b) => b.name === "postgres");
const describeOnPostgres = postgres ? describe : describe.skip;

describeOnPostgres("shutting down on postgres with a transaction stuck", () => {
  test("the process exits once the shutdown timeout has passed, and PostgreSQL rolls the transaction back", async () => {
    const database = await postgres!.createDatabase();
    const service = new ServiceProcess(await freePort(), { DATABASE_URL: database.url, GREENLINE_API_TOKEN: TOKEN, GREENLINE_ORG: "acme", GREENLINE_SHUTDOWN_TIMEOUT_MS: "1000" });
    const blocker = new pg.Client({ connectionString: database.url });
    try {
      await service.start();
      const api = new ApiClient(service.url, TOKEN);
      await api.ok("createQueue", { repo: repo(), targetBranch: "main" });
      // Another session holds the queue's row: the service's submit waits on it, inside its transaction.
      await blocker.connect();
      await blocker.query(`BEGIN`);
      await blocker.query(`SELECT 1 FROM "Queue" FOR UPDATE`);
      const inFlight = api.call("submitPullRequest", { repo: repo(), targetBranch: "main", pr: { number: 1 } }).catch(() => "connection closed");
      for (;;) {
        const { rows } = await blocker.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
        if (rows[0].n > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(await exitWithin(service.terminate(), 30_000)).toBe(1);
      expect(service.output).toContain("shutdown timed out");
      expect(await inFlight).toBe("connection closed");
      // Once the row is free, the waiting session finds its client gone and ends: nothing was written.
      await blocker.query("ROLLBACK");
      for (;;) {
        const { rows } = await blocker.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
        if (rows[0].n === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const { rows } = await blocker.query(`SELECT count(*)::int AS n FROM "QueueEntry"`);
      expect(rows[0].n).toBe(0);
    } finally {
      await blocker.end().catch(() => undefined);
      await service.kill();
      await database.drop();
    }
  });
});
