import pg from "pg";
import { Database } from "../../src/store/database.js";
import { loadMigrations } from "../../src/store/migrate.js";
import { ApiClient, repo } from "../support/harness.js";
import { expectQueueInvariants } from "../support/invariants.js";
import { createPostgresDatabase } from "../support/postgres.js";
import { buildPreviousRelease, type PreviousRelease } from "../support/previous-release.js";
import { freePort, ServiceProcess } from "../support/service-process.js";

/**
 * A rolling upgrade, as docs/operations.md ("Upgrades") tells an operator to do it: replicas of
 * the previous release (release/previous, built from git history) run on one PostgreSQL
 * database; a replica of this code starts beside them and applies its migrations while they
 * keep serving and deciding; the new code is rolled back once (its replica stopped, the
 * expanded schema kept) and the old replica goes on alone; then the roll completes and the old
 * replica stops. PRs are submitted through whichever replicas run, and every one must merge
 * exactly once. Last, this code plays the old replica in turn: it restarts on a database that
 * a release after it has expanded, and keeps merging.
 */
const TOKEN = "upgrade-test-token-0123456789";
const QUEUES = ["shared", "batched"] as const;
const describeOnPostgres = process.env.GREENLINE_TEST_POSTGRES === "1" ? describe : describe.skip;

/** The previous release answers in its own documented schemas, not necessarily this code's: its answers are not checked against them. */
class PreviousReleaseClient {
  constructor(readonly baseUrl: string) {}

  async ok<T = any>(operation: string, body: unknown): Promise<T> {
    const response = await fetch(`${this.baseUrl}/v1/${operation}`, { method: "POST", headers: { "content-type": "application/json", "x-api-token": TOKEN }, body: JSON.stringify(body) });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`the previous release answered ${operation} with ${response.status}: ${text}`);
    return JSON.parse(text) as T;
  }
}

type Client = Pick<ApiClient, "ok">;

async function submit(client: Client, pr: number): Promise<void> {
  for (const name of QUEUES) await client.ok("submitPullRequest", { repo: repo(name), targetBranch: "main", pr: { number: pr } });
}

async function states(client: Client, prs: number[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const name of QUEUES) {
    for (const pr of prs) {
      const record = await client.ok<{ state: string }>("getSubmittedPullRequest", { repo: repo(name), targetBranch: "main", pr: { number: pr } });
      found.set(`${name}#${pr}`, record.state);
    }
  }
  return found;
}

/** Waits until every PR of `prs` is merged in both queues, as `client` answers; fails naming those that are not after two minutes. */
async function expectAllMerged(client: Client, prs: number[]): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const found = await states(client, prs);
    const notMerged = [...found].filter(([, state]) => state !== "merged");
    if (notMerged.length === 0) return;
    if (notMerged.some(([, state]) => state === "failed" || state === "cancelled") || Date.now() > deadline) throw new Error(`not merged: ${JSON.stringify(notMerged)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

async function withPostgres<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The migrations the database has applied, and every table's columns ("Table.column"). */
function schemaOf(url: string): Promise<{ migrations: string[]; columns: Set<string> }> {
  return withPostgres(url, async (client) => {
    const migrations = (await client.query<{ id: string }>(`SELECT "id" FROM "_greenline_migrations" ORDER BY "id"`)).rows.map((r) => r.id);
    const columns = await client.query<{ t: string; c: string }>(`SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = current_schema()`);
    return { migrations, columns: new Set(columns.rows.map((r) => `${r.t}.${r.c}`)) };
  });
}

async function readyz(url: string): Promise<{ status: number; body: { checks: { migrations: string } } }> {
  const response = await fetch(`${url}/readyz`);
  return { status: response.status, body: (await response.json()) as { checks: { migrations: string } } };
}

describeOnPostgres("an upgrade with replicas running", () => {
  let previous: PreviousRelease;
  beforeAll(() => {
    // Built once per machine and commit (kept in the temporary folder): ~20 s of CPU the first time.
    previous = buildPreviousRelease();
  }, 300_000);
  // Dropped whether the test passed or not (its processes stopped first).
  let dropDatabase: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await dropDatabase?.();
    dropDatabase = null;
  });

  test("the previous release runs beside this code on one PostgreSQL while this code migrates, and no PR is lost or merged twice", async () => {
    const shipped = loadMigrations("postgres").map((m) => m.id);
    // A release's migrations are never edited away: the previous release's are where this code's start.
    expect(shipped.slice(0, previous.migrations.length)).toEqual(previous.migrations);
    const added = shipped.slice(previous.migrations.length);
    // Else the upgrade would cross no migration, and this test would prove nothing about one (release/previous says which release to name).
    expect(added.length).toBeGreaterThan(0);

    const database = await createPostgresDatabase();
    dropDatabase = database.drop;
    const env = {
      DATABASE_URL: database.url,
      GREENLINE_API_TOKEN: TOKEN,
      GREENLINE_ORG: "acme",
      GREENLINE_SANDBOX_CI_MS: "100",
      GREENLINE_WORKER_INTERVAL_MS: "15",
    };
    const old = new ServiceProcess(await freePort(), env, { root: previous.root });
    const current = new ServiceProcess(await freePort(), env);
    const oldApi = new PreviousReleaseClient(old.url);
    const currentApi = new ApiClient(current.url, TOKEN);
    let submitted = 0;
    /** Submits the next PR (to both queues) through `client`, and answers its number. */
    const submitNext = async (client: Client) => {
      const pr = ++submitted;
      await submit(client, pr);
      return pr;
    };
    try {
      // 1. The previous release alone, on the schema it migrated.
      await old.start();
      const before = await schemaOf(database.url);
      expect(before.migrations).toEqual(previous.migrations);
      await oldApi.ok("createQueue", { repo: repo("shared"), targetBranch: "main", concurrency: 3, canOptimisticallyMerge: true });
      await oldApi.ok("createQueue", { repo: repo("batched"), targetBranch: "main", concurrency: 2, batch: true, batchingMinSize: 1 });
      for (let i = 0; i < 6; i++) await submitNext(oldApi);

      // 2. This code starts beside it and applies its migrations under it, while PRs keep coming
      //    through the old replica: expand only, so every column the old replica knows is still there.
      let starting = true;
      const started = current.start().finally(() => {
        starting = false;
      });
      // (At most 12: on a loaded machine a start takes many seconds, and every PR must then drain.)
      const duringStart = (async () => {
        for (let i = 0; starting && i < 12; i++) {
          await submitNext(oldApi);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      await Promise.all([started, duringStart]);
      const after = await schemaOf(database.url);
      expect(after.migrations).toEqual(shipped);
      const gained = [...after.columns].filter((column) => !before.columns.has(column));
      expect(gained.length).toBeGreaterThan(0);
      // With release/previous as it is (before 0027), a table the old replica works on gains a column under it.
      if (!previous.migrations.includes("0027_stacked_prs")) expect(gained).toContain("QueueEntry.stackBelowPr");
      expect([...before.columns].filter((column) => !after.columns.has(column))).toEqual([]);
      expect(await readyz(current.url)).toMatchObject({ status: 200, body: { checks: { migrations: "ok" } } });
      // Both take requests and decide; each answers for the PRs the other took.
      const throughCurrent = await submitNext(currentApi);
      const throughOld = await submitNext(oldApi);
      for (let i = 0; i < 8; i++) await submitNext(i % 2 === 0 ? currentApi : oldApi);
      await states(oldApi, [throughCurrent]);
      await states(currentApi, [throughOld]);

      // 3. This code is rolled back: its replica stops, the expanded schema stays. The previous
      //    release alone takes PRs on it and merges every PR so far, these entirely.
      expect(await current.terminate()).toBe(0);
      for (let i = 0; i < 6; i++) await submitNext(oldApi);
      await expectAllMerged(oldApi, range(1, submitted));
      expect((await schemaOf(database.url)).columns).toEqual(after.columns);

      // 4. The roll completes: this code again, then the old replica stops (cleanly: it never failed).
      await current.start();
      expect(await old.terminate()).toBe(0);
      for (let i = 0; i < 8; i++) await submitNext(currentApi);
      await expectAllMerged(currentApi, range(1, submitted));

      // 5. This code is the previous release of the next one: a replica of it restarting on a
      //    database the next release expanded starts, is ready, and merges.
      expect(await current.terminate()).toBe(0);
      await withPostgres(database.url, async (client) => {
        await client.query(`ALTER TABLE "QueueEntry" ADD COLUMN "fromTheNextRelease" TEXT`);
        await client.query(`INSERT INTO "_greenline_migrations" ("id", "checksum", "applied_at") VALUES ('9999_next_release', $1, $2)`, ["0".repeat(64), new Date().toISOString()]);
      });
      current.output = "";
      await current.start();
      expect(await readyz(current.url)).toMatchObject({ status: 200, body: { checks: { migrations: "ok" } } });
      const last = await submitNext(currentApi);
      await expectAllMerged(currentApi, [last]);
      expect(current.output).toContain("the database has migrations this version does not know");
      expect((await schemaOf(database.url)).migrations).toEqual([...shipped, "9999_next_release"]);
    } finally {
      await Promise.all([old.stop(), current.stop()]);
    }

    const db = await Database.open(database.url, { migrate: false });
    try {
      for (const name of QUEUES) {
        // Every PR terminal, none merged twice, the branch holding each merged PR's change once.
        const { merged } = await expectQueueInvariants(db, name, submitted);
        expect(merged).toEqual(range(1, submitted));
      }
    } finally {
      await db.close();
    }
  }, 300_000);
});
