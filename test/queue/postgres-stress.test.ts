import pg from "pg";
import { BACKENDS } from "../support/backends.js";
import { ApiClient, repo } from "../support/harness.js";
import { freePort, ServiceProcess } from "../support/service-process.js";

/**
 * bench:api's seeding on PostgreSQL with the worker running (simulated CI reporting, effects
 * executing): eight clients submit PRs to one queue in parallel, and SIGTERM arrives while
 * they are still sending (as when bench:api stopped the service after a failed request).
 * Watched from the server's side, no session of the service sits idle inside a transaction and
 * no transaction stays open past the interactive transaction timeout; every request is
 * answered, every answered PR is stored, and the process exits with nothing left open.
 */
const TOKEN = "stress-test-token-0123456789";
/** SIGTERM once this many PRs are answered; the clients go on sending until the service stops answering. */
const STOP_AFTER = 120;
/** Far more than the service gets to answer: the clients keep their connections busy. */
const PRS = 1_000;
const CLIENTS = 8;
/** Idle inside a transaction means the process does something else meanwhile: never for long. */
const IDLE_IN_TRANSACTION_BOUND_MS = 5_000;
/** Prisma's interactive transaction timeout (database.ts); waiting on the queue's row lock counts. */
const TRANSACTION_BOUND_MS = 30_000;

type Session = { pid: number; state: string | null; query: string; xact_ms: number | null; state_ms: number };

const postgres = BACKENDS.find((b) => b.name === "postgres");
const describeOnPostgres = postgres ? describe : describe.skip;

describeOnPostgres("the seeding pattern of bench:api on PostgreSQL, worker running", () => {
  test("leaves no transaction open past its bound and answers every request", async () => {
    const database = await postgres!.createDatabase();
    const service = new ServiceProcess(await freePort(), {
      DATABASE_URL: database.url,
      GREENLINE_API_TOKEN: TOKEN,
      GREENLINE_ORG: "acme",
      GREENLINE_SANDBOX_CI_MS: "100",
      GREENLINE_WORKER_INTERVAL_MS: "20",
    });
    const monitor = new pg.Client({ connectionString: database.url });
    const offenders: Session[] = [];
    let watching = true;
    const sessions = async () =>
      (
        await monitor.query<Session>(
          `SELECT pid, state, left(query, 200) AS query,
                  (extract(epoch FROM now() - xact_start) * 1000)::int AS xact_ms,
                  (extract(epoch FROM now() - state_change) * 1000)::int AS state_ms
             FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
        )
      ).rows;
    try {
      await monitor.connect();
      await service.start();
      const watch = (async () => {
        while (watching) {
          for (const s of await sessions()) {
            // A backend still starting (or a background worker) has no state yet.
            const idleTooLong = (s.state ?? "").startsWith("idle in transaction") && s.state_ms > IDLE_IN_TRANSACTION_BOUND_MS;
            if (idleTooLong || (s.xact_ms ?? 0) > TRANSACTION_BOUND_MS) offenders.push(s);
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();
      const api = new ApiClient(service.url, TOKEN);
      await api.ok("createQueue", { repo: repo(), targetBranch: "main" });
      let next = 1;
      let answered = 0;
      const failures: string[] = [];
      let exit: Promise<number | null> | null = null;
      const client = async () => {
        while (next <= PRS) {
          const number = next++;
          const body = { repo: repo(), targetBranch: "main", pr: { number }, priority: number % 4 === 0 ? "high" : undefined };
          const response = await api.call("submitPullRequest", body).catch(() => null);
          if (!response) return; // the service has stopped: its connection is closed
          if (response.status !== 200) failures.push(`#${number}: ${response.status} ${response.text}`);
          if (++answered === STOP_AFTER) exit = service.terminate();
        }
      };
      const clients = Promise.all(Array.from({ length: CLIENTS }, client));
      while (!exit) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await exitWithin(exit, 30_000)).toBe(0);
      await clients;
      watching = false;
      await watch;
      expect(failures).toEqual([]);
      expect(offenders).toEqual([]);
      // The process is gone; PostgreSQL ends its sessions as it notices the closed sockets.
      for (let polls = 0; polls < 100 && (await sessions()).length > 0; polls++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await sessions()).toEqual([]);
      expect(await storedCount(monitor)).toBe(answered);
    } finally {
      watching = false;
      await monitor.end().catch(() => undefined);
      await service.kill();
      await database.drop();
    }
    // Generous: starting the service compiles src/ with tsx, slow on a loaded machine. The
    // assertions are about transactions and answers, never about how long this took.
  }, 240_000);
});

/** The exit code, or "still running" when the process has not exited within `limitMs` (a generous bound, not a measurement). */
function exitWithin(exit: Promise<number | null>, limitMs: number): Promise<number | null | "still running"> {
  let timer: NodeJS.Timeout | undefined;
  const running = new Promise<"still running">((resolve) => (timer = setTimeout(() => resolve("still running"), limitMs)));
  return Promise.race([exit, running]).finally(() => clearTimeout(timer));
}

async function storedCount(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM "QueueEntry"`);
  return rows[0]!.n;
}
