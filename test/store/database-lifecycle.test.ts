import pg from "pg";
import { Database, DatabaseClosingError } from "../../src/store/database.js";
import { BACKENDS } from "../support/backends.js";
import { POSTGRES_ADMIN_URL } from "../support/postgres.js";

/** Resolves once `check` answers true, asking every 50 ms (server-side timeouts run on the server's clock). */
async function waitUntil(check: () => Promise<boolean>, what: string, limitMs = 20_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Settles with "settled", or with "hung" when `promise` has not settled within `limitMs`. */
function settlesWithin(promise: Promise<unknown>, limitMs: number): Promise<"settled" | "hung"> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<"hung">((resolve) => (timer = setTimeout(() => resolve("hung"), limitMs)));
  return Promise.race([
    promise.then(
      () => "settled" as const,
      () => "settled" as const,
    ),
    hung,
  ]).finally(() => clearTimeout(timer));
}

function databaseName(url: string): string {
  return new URL(url).pathname.slice(1);
}

/** The sessions of the test's database, seen from an administrative connection. */
async function sessions(url: string): Promise<{ state: string; query: string }[]> {
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ state: string; query: string }>("SELECT state, query FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [databaseName(url)]);
    return rows;
  } finally {
    await admin.end();
  }
}

describe.each(BACKENDS)("the database's lifecycle on $name", (backend) => {
  let database: { url: string; drop(): Promise<void> };
  beforeEach(async () => {
    database = await backend.createDatabase();
  });
  afterEach(() => database.drop());

  test("close lets the transactions already asked for finish, refuses new ones and leaves none open", async () => {
    // A small pool: most transactions are still waiting for a connection, or starting, when close begins.
    const db = await Database.open(database.url, { poolSize: 4 });
    let firstStarted!: () => void;
    const started = new Promise<void>((resolve) => (firstStarted = resolve));
    const work = Array.from({ length: 40 }, (_, i) =>
      db.transaction(async (tx) => {
        firstStarted();
        return (await tx.organization.count()) + i;
      }),
    );
    await started;
    const closed = db.close();
    await expect(db.transaction((tx) => tx.organization.count())).rejects.toBeInstanceOf(DatabaseClosingError);
    expect(await settlesWithin(closed, 20_000)).toBe("settled");
    const outcomes = await Promise.allSettled(work);
    expect(outcomes.filter((o) => o.status === "rejected")).toEqual([]);
    if (backend.name === "postgres") expect(await sessions(database.url)).toEqual([]);
  });

  test("the server's settings an operator should know of: autovacuum off on PostgreSQL, as the server says; nothing on SQLite", async () => {
    const db = await Database.open(database.url);
    try {
      const warnings = await db.serverWarnings();
      if (backend.name === "sqlite") expect(warnings).toEqual([]);
      else {
        const client = new pg.Client({ connectionString: database.url });
        await client.connect();
        const off = (await client.query<{ s: string }>("SELECT current_setting('autovacuum') AS s")).rows[0]!.s === "off";
        await client.end();
        expect(warnings.some((w) => w.includes("autovacuum = off"))).toBe(off);
        expect(warnings.length).toBe(off ? 1 : 0);
      }
    } finally {
      await db.close();
    }
  });

  test("a lock holder can open transactions while the pool has a single connection", async () => {
    const db = await Database.open(database.url, { poolSize: 1 });
    try {
      const answer = await db.tryWithLock("lifecycle-test", () => db.transaction((tx) => tx.organization.count()));
      expect(answer).toBe(0);
      // Within the process the lock is exclusive too.
      const nested = await db.tryWithLock("lifecycle-test", () => db.tryWithLock("lifecycle-test", async () => "inner"));
      expect(nested).toBeNull();
    } finally {
      await db.close();
    }
  });
});

const describeOnPostgres = BACKENDS.some((b) => b.name === "postgres") ? describe : describe.skip;

describeOnPostgres("PostgreSQL connection limits", () => {
  const postgres = BACKENDS.find((b) => b.name === "postgres")!;
  let database: { url: string; drop(): Promise<void> };
  beforeEach(async () => {
    database = await postgres.createDatabase();
  });
  afterEach(() => database.drop());

  test("every connection starts with the configured statement and idle-in-transaction timeouts", async () => {
    const db = await Database.open(database.url, { postgresTimeouts: { statementTimeoutMs: 45_000, idleInTransactionTimeoutMs: 12_000 } });
    try {
      const show = "SELECT current_setting('statement_timeout') AS statement, current_setting('idle_in_transaction_session_timeout') AS idle";
      const expected = [{ statement: "45s", idle: "12s" }];
      expect(await db.transaction((tx) => tx.$queryRawUnsafe(show))).toEqual(expected);
      expect(await db.sqlTransaction((sql) => sql.all(show))).toEqual(expected);
      expect(await db.sqlRead((sql) => sql.all(show))).toEqual(expected);
    } finally {
      await db.close();
    }
  });

  test("a transaction left idle is ended by PostgreSQL, and its connection leaves the pool", async () => {
    const db = await Database.open(database.url, { poolSize: 1, postgresTimeouts: { statementTimeoutMs: 60_000, idleInTransactionTimeoutMs: 300 } });
    try {
      let resume!: () => void;
      const resumed = new Promise<void>((resolve) => (resume = resolve));
      const stuck = db.sqlTransaction(async (sql) => {
        await sql.run(`INSERT INTO "Organization" ("id", "slug", "createdAt") VALUES ('o1', 'left-idle', ?)`, [new Date()]);
        await resumed; // the holder stalls: the transaction sits idle
        return sql.all("SELECT 1");
      });
      await waitUntil(async () => (await sessions(database.url)).some((s) => s.state === "idle in transaction"), "the transaction is idle");
      await waitUntil(async () => (await sessions(database.url)).length === 0, "PostgreSQL ends the idle session");
      resume();
      await expect(stuck).rejects.toThrow();
      // The pool's only slot is free again, and the stalled transaction's write was rolled back.
      expect(await db.sqlTransaction((sql) => sql.all(`SELECT "slug" FROM "Organization"`))).toEqual([]);
    } finally {
      await db.close();
    }
  });

  test("an idle pooled connection that PostgreSQL ends does not end the process, and the next query gets another", async () => {
    const db = await Database.open(database.url, { poolSize: 2 });
    try {
      await db.sqlRead((sql) => sql.all("SELECT 1")); // leaves an idle connection in the pool
      const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await admin.connect();
      try {
        await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [databaseName(database.url)]);
      } finally {
        await admin.end();
      }
      // Unheard, the pool's "error" event would be an uncaught exception failing this suite.
      await waitUntil(async () => (await sessions(database.url)).length === 0, "the sessions are gone");
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await db.sqlRead((sql) => sql.all("SELECT 1 AS one"))).toEqual([{ one: 1 }]);
    } finally {
      await db.close();
    }
  });

  test("replicas exclude each other through the advisory lock", async () => {
    const [a, b] = [await Database.open(database.url), await Database.open(database.url, { migrate: false })];
    try {
      const inner = await a.tryWithLock("lifecycle-replicas", () => b.tryWithLock("lifecycle-replicas", async () => "both"));
      expect(inner).toBeNull();
      expect(await b.tryWithLock("lifecycle-replicas", async () => "b alone")).toBe("b alone");
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
