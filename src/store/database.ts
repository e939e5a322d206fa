import { AsyncLocalStorage } from "node:async_hooks";
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import pg from "pg";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient as SqliteClient, type Prisma } from "../generated/sqlite/client.js";
import { PrismaClient as PostgresClient } from "../generated/postgres/client.js";
import { loadMigrations, type MigrationOutcome, migratePostgres, migrateSqlite } from "./migrate.js";
import { DEFAULT_POSTGRES_TIMEOUTS, type PostgresTimeouts } from "../config.js";
import { Mutex, MutexTimeoutError } from "./mutex.js";
import { postgresSql, sqliteSql, type Sql } from "./sql.js";

export type DatabaseKind = "sqlite" | "postgres";

/**
 * Both generated clients have the same models and methods; the code is written against the
 * SQLite client's types and the PostgreSQL client is used through them.
 */
export type Client = SqliteClient;
export type Tx = Prisma.TransactionClient;

/**
 * Limits PostgreSQL enforces on every connection of the service (GREENLINE_PG_* settings). A
 * statement running longer than `statementTimeoutMs` is cancelled; a session left idle inside
 * a transaction for `idleInTransactionTimeoutMs` is ended, which rolls the transaction back
 * and frees its locks, whatever the process holding it is doing.
 */
export { DEFAULT_POSTGRES_TIMEOUTS, type PostgresTimeouts } from "../config.js";

/** Thrown by a transaction asked for after `close` began. */
export class DatabaseClosingError extends Error {
  constructor() {
    super("the database is closing: no new transaction starts");
    this.name = "DatabaseClosingError";
  }
}

/** How a transaction of plain SQL waits. */
export type SqlTransactionOptions = {
  /**
   * A request's transaction: on PostgreSQL its waits for row locks are bounded by the
   * database's wait (GREENLINE_DB_WAIT_MS, lock_timeout), past which it fails busy (503 with
   * Retry-After) instead of waiting up to the statement timeout. SQLite: its wait for the
   * writer is bounded so already.
   */
  boundedLockWait?: boolean;
};

/** How long a transaction waits for its turn (SQLite's writer, a PostgreSQL connection) by default. */
export const DEFAULT_DATABASE_WAIT_MS = 5_000;

/**
 * Whether `error` says the database is too busy to take the work now, rather than that the work
 * is wrong: the wait for SQLite's writer or for a pooled PostgreSQL connection outlasted its
 * bound, PostgreSQL gave up waiting for a lock (lock_timeout, 55P03), cancelled a statement
 * (statement_timeout, 57014) or rolled back one of two transactions that waited for each other
 * (a deadlock, 40P01; a serialization failure, 40001), SQLite found the file locked. A request meeting it answers 503 with
 * Retry-After (src/api/errors.ts), never waits on.
 */
export function isDatabaseBusy(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Object && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof MutexTimeoutError) return true;
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (code === "P2028" || code === "55P03" || code === "57014" || code === "SQLITE_BUSY") return true;
    if (typeof message === "string" && /timeout exceeded when trying to connect|Unable to start a transaction in the given time|canceling statement due to (statement|lock) timeout|database is locked/.test(message))
      return true;
  }
  return false;
}

export function databaseKind(url: string): DatabaseKind {
  return url.startsWith("file:") ? "sqlite" : "postgres";
}

export function sqlitePath(url: string): string {
  return resolve(url.replace(/^file:/, "").replace(/\?.*$/, ""));
}

/**
 * The database, opened and migrated. Writes go through `transaction`; reads through `read`.
 *
 * SQLite: writes use one connection, and Prisma's interactive transactions yield between
 * queries, so a query issued meanwhile on that connection would run inside someone else's
 * transaction; every transaction therefore holds one mutex (SQLite allows one writer at a
 * time anyway). Reads use a second, read-only connection: in WAL mode they see the last
 * committed state and never wait for a writer.
 */
export class Database {
  readonly #serialize: Mutex | null;

  private constructor(
    readonly kind: DatabaseKind,
    readonly client: Client,
    private readonly closeDriver: () => Promise<void>,
    private readonly reader: Client,
    private readonly pool: pg.Pool | null,
    /** SQLite: the file, for the bulk writer's connection (opened on first use). */
    private readonly sqliteFile: string | null,
    /** SQLite: the read-only driver connection `lookup` and `sqlRead` use. */
    private readonly sqliteReader: BetterSqlite3.Database | null,
    /** PostgreSQL: the connection that holds advisory locks, outside the pool. */
    private readonly locks: AdvisoryLockConnection | null = null,
    /** How long a transaction waits for its turn before failing with a busy error (isDatabaseBusy). */
    private readonly waitMs: number = DEFAULT_DATABASE_WAIT_MS,
    /** SQLite: the connection Prisma's client writes on (its transactions' BEGIN is run there). */
    private readonly prismaDriver: { connection: BetterSqlite3.Database | null } | null = null,
  ) {
    this.#serialize = kind === "sqlite" ? new Mutex() : null;
  }

  static async open(url: string, options: { migrate?: boolean; poolSize?: number; postgresTimeouts?: PostgresTimeouts; waitMs?: number } = {}): Promise<Database> {
    const migrate = options.migrate ?? true;
    const waitMs = options.waitMs ?? DEFAULT_DATABASE_WAIT_MS;
    if (databaseKind(url) === "sqlite") {
      const path = sqlitePath(url);
      mkdirSync(dirname(path), { recursive: true });
      const setup = new BetterSqlite3(path, { timeout: 10_000 });
      let migrated: MigrationOutcome | null = null;
      try {
        setup.pragma("journal_mode = WAL");
        if (migrate) migrated = migrateSqlite(setup);
      } finally {
        setup.close();
      }
      // Prisma's own connection is kept (see capturingSqlite): plain SQL in a Prisma transaction runs on it.
      const driver: { connection: BetterSqlite3.Database | null } = { connection: null };
      const client = new SqliteClient({ adapter: capturingSqlite(new PrismaBetterSQLite3({ url: `file:${path}`, timeout: 10_000 }), driver) });
      // Per-connection settings: enforce foreign keys (cascading deletes rely on them);
      // FULL makes every commit durable, even against power loss.
      await client.$executeRawUnsafe("PRAGMA foreign_keys = ON");
      await client.$executeRawUnsafe("PRAGMA synchronous = FULL");
      const reader = new SqliteClient({ adapter: new PrismaBetterSQLite3({ url: `file:${path}`, readonly: true, timeout: 10_000 }) });
      const lookupConnection = new BetterSqlite3(path, { readonly: true, timeout: 10_000 });
      let database: Database | null = null;
      database = new Database(
        "sqlite",
        client,
        async () => {
          database?.closeBulkWriter();
          lookupConnection.close();
          await reader.$disconnect();
          await client.$disconnect();
        },
        reader,
        null,
        path,
        lookupConnection,
        null,
        waitMs,
        driver,
      );
      database.migrated = migrated;
      return database;
    }
    let migrated: MigrationOutcome | null = null;
    if (migrate) {
      const connection = new pg.Client({ connectionString: url });
      await connection.connect();
      try {
        migrated = await migratePostgres(connection);
      } finally {
        await connection.end();
      }
    }
    const sessionOptions = postgresSessionOptions(options.postgresTimeouts ?? DEFAULT_POSTGRES_TIMEOUTS);
    // A bounded wait for a connection: an exhausted pool fails requests (503) instead of hanging them.
    const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 20, connectionTimeoutMillis: waitMs, options: sessionOptions });
    // An idle pooled connection that the server ends (a restart, a terminated session) is
    // reported as an "error" on the pool, which would end the process unheard. The pool has
    // already discarded it; the next query opens another.
    pool.on("error", () => {});
    const client = new PostgresClient({ adapter: new PrismaPg(capturingPool(pool)) }) as unknown as Client;
    const locks = new AdvisoryLockConnection(() => new pg.Client({ connectionString: url, options: sessionOptions }));
    const database = new Database(
      "postgres",
      client,
      async () => {
        await client.$disconnect();
        await Promise.all([pool.end(), locks.close()]);
      },
      client,
      pool,
      null,
      null,
      locks,
      waitMs,
    );
    database.migrated = migrated;
    return database;
  }

  /**
   * What opening did to the schema (null when opened without migrating): the migrations it
   * applied, and those the database has that this version does not know (a newer release's).
   */
  migrated: MigrationOutcome | null = null;

  #closing: Promise<void> | null = null;
  readonly #inFlight = new Set<Promise<unknown>>();

  /**
   * Runs database work that `close` must wait for. Closing the driver under a transaction
   * that is still starting abandons its connection inside the transaction (Prisma's
   * disconnect forgets it, the pool then waits for it forever: docs/decisions.md), so close
   * lets every transaction asked for finish first, and refuses new ones.
   */
  #track<T>(work: () => Promise<T>): Promise<T> {
    if (this.#closing) return Promise.reject(new DatabaseClosingError());
    const result = work();
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.#inFlight.add(settled);
    void settled.then(() => this.#inFlight.delete(settled));
    return result;
  }

  /**
   * Runs `fn` in one transaction: all of its writes happen, or none. `sqlOf(tx)` gives plain SQL
   * in the same transaction (the store's hot paths: a Prisma query costs ~0.1–0.3 ms of client
   * work for a query of a few microseconds, docs/benchmarks.md).
   */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const options = { maxWait: this.waitMs, timeout: 30_000 };
    let opened: Tx | null = null;
    const run = this.pool
      ? () => {
          const slot: TransactionSlot = { connection: null };
          return transactionSlot.run(slot, () =>
            this.client.$transaction((tx) => {
              if (!slot.connection) throw new Error("database: the transaction's connection was not seen");
              plainSql.set(tx, postgresSql(slot.connection));
              commitHooks.set(tx, []);
              opened = tx;
              return fn(tx);
            }, options),
          );
        }
      : () =>
          this.client.$transaction((tx) => {
            plainSql.set(tx, this.#prismaWriterSql());
            commitHooks.set(tx, []);
            opened = tx;
            return fn(tx);
          }, options);
    const committed = async () => {
      const result = await run();
      // Committed: what the transaction left for after its commit (an in-memory copy of what it wrote).
      const hooks = opened ? commitHooks.get(opened) : undefined;
      if (opened) commitHooks.delete(opened);
      for (const hook of hooks ?? []) hook();
      return result;
    };
    return this.#track(() => (this.#serialize ? this.#serialize.run(committed, this.waitMs) : committed()));
  }

  #prismaSql: Sql | null = null;
  #prismaConnection: BetterSqlite3.Database | null = null;

  /** SQLite: plain SQL on Prisma's own connection (which holds the write lock in a transaction). */
  #prismaWriterSql(): Sql {
    const connection = this.prismaDriver?.connection;
    if (!connection) throw new Error("database: Prisma's SQLite connection is not open");
    if (connection !== this.#prismaConnection) {
      this.#prismaConnection = connection;
      this.#prismaSql = sqliteSql(connection);
    }
    return this.#prismaSql!;
  }

  /**
   * Runs `fn`, which makes one write statement, outside an explicit transaction: a statement is
   * atomic on its own, and BEGIN and COMMIT would be two more round trips (the worker marks
   * every effect done this way). Prisma still wraps its own updateMany in a transaction; plain
   * SQL (`$executeRaw`) goes alone. On SQLite it holds the same mutex as `transaction`.
   */
  write<T>(fn: (db: Tx) => Promise<T>): Promise<T> {
    plainSql.set(this.client, this.pool ? (this.#poolSql ??= postgresSql(this.pool)) : this.#prismaWriterSql());
    const run = () => fn(this.client as unknown as Tx);
    return this.#track(() => (this.#serialize ? this.#serialize.run(run, this.waitMs) : run()));
  }

  /** Runs read-only queries on the last committed state. */
  read<T>(fn: (db: Tx) => Promise<T>): Promise<T> {
    if (!plainSql.has(this.reader)) plainSql.set(this.reader, this.#readSql());
    return fn(this.reader as unknown as Tx);
  }

  /** Answers whether the database answers a query (the health check). */
  async ping(): Promise<void> {
    await this.read((tx) => tx.$queryRawUnsafe("SELECT 1"));
  }

  /**
   * The connection pool now (service metrics): connections open, in use, and requests waiting
   * for one. SQLite: one connection, and the writers waiting for its lock.
   */
  poolStats(): { size: number; inUse: number; waiting: number } {
    if (this.pool) return { size: this.pool.totalCount, inUse: this.pool.totalCount - this.pool.idleCount, waiting: this.pool.waitingCount };
    return { size: 1, inUse: this.#serialize?.busy ? 1 : 0, waiting: this.#serialize?.waiting ?? 0 };
  }

  /**
   * The migrations this version ships that the database has not applied (readiness: a replica
   * must not serve a schema older than its code), by id; none when it is up to date. A database
   * ahead of the code (a newer release migrated it) is fine while migrations only add; once a
   * newer release's contract migration set a floor this code does not reach (migrate.ts,
   * floorOf), the floor is reported missing too: the schema is no longer this code's.
   */
  async missingMigrations(): Promise<string[]> {
    const rows = await this.read((tx) => tx.$queryRawUnsafe<{ id: string; requires?: string | null }[]>(`SELECT * FROM "_greenline_migrations"`));
    const applied = new Set(rows.map((r) => r.id));
    this.#shipped ??= loadMigrations(this.kind).map((m) => m.id);
    const shipped = new Set(this.#shipped);
    const floors = rows.filter((r) => typeof r.requires === "string" && !shipped.has(r.requires)).map((r) => `${r.requires} (required by ${r.id})`);
    return [...this.#shipped.filter((id) => !applied.has(id)), ...floors];
  }
  #shipped: string[] | null = null;

  /**
   * What an operator should know of the server's settings, in sentences (none on SQLite). On
   * PostgreSQL, autovacuum off: the rows Greenline updates and deletes on every decision (the
   * queue's change notes, its runs) are never cleaned up, and a decision's statements read more
   * dead rows every minute (docs/benchmarks.md, "Flat with history": 1.55× slower after 6,000 PRs).
   */
  async serverWarnings(): Promise<string[]> {
    if (!this.pool) return [];
    const rows = await this.read((tx) => tx.$queryRawUnsafe<{ autovacuum: string }[]>("SELECT current_setting('autovacuum') AS autovacuum"));
    return rows[0]?.autovacuum === "off"
      ? [
          "PostgreSQL runs with autovacuum = off: the rows Greenline updates and deletes on every decision are never vacuumed, and decisions slow down as they pile up; turn it on (the default), or VACUUM the database regularly",
        ]
      : [];
  }

  readonly #lookups = new Map<string, BetterSqlite3.Statement>();

  /**
   * The first row a prepared statement answers on the last committed state, for the lookups
   * every API request makes (its token; the version of the queue it reads): through Prisma
   * each costs ~0.15 ms of client overhead for a ~0.01 ms query (docs/benchmarks.md).
   * `statement.text` numbers its placeholders ($1, $2…); on PostgreSQL it is prepared once per
   * connection under `statement.name`.
   */
  async lookup<T>(statement: { name: string; text: string }, values: readonly unknown[]): Promise<T | undefined> {
    if (this.#closing) throw new DatabaseClosingError();
    if (this.pool) {
      const { rows } = await this.pool.query({ name: statement.name, text: statement.text, values: [...values] });
      return rows[0] as T | undefined;
    }
    let prepared = this.#lookups.get(statement.name);
    if (!prepared) {
      prepared = this.sqliteReader!.prepare(statement.text.replace(/\$\d+/g, "?"));
      this.#lookups.set(statement.name, prepared);
    }
    return prepared.get(...values) as T | undefined;
  }

  #bulkWriter: BetterSqlite3.Database | null = null;
  #writerSql: Sql | null = null;
  #readerSql: Sql | null = null;

  /**
   * Runs `fn` in one transaction of plain SQL on the driver (see sql.ts): all of its writes
   * happen, or none. On SQLite it holds the same mutex as `transaction`, on a connection of its
   * own with the same settings.
   */
  sqlTransaction<T>(fn: (sql: Sql) => Promise<T>, options: SqlTransactionOptions = {}): Promise<T> {
    const lockWaitMs = options.boundedLockWait ? this.waitMs : null;
    return this.#track(() => (this.pool ? postgresTransaction(this.pool, fn, lockWaitMs) : this.#sqliteTransaction(fn)));
  }

  #sqliteTransaction<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.#serialize!.run(async () => {
      if (!this.#bulkWriter) {
        const writer = new BetterSqlite3(this.sqliteFile!, { timeout: 10_000 });
        writer.pragma("foreign_keys = ON");
        writer.pragma("synchronous = FULL");
        this.#bulkWriter = writer;
        this.#writerSql = sqliteSql(writer);
      }
      const writer = this.#bulkWriter;
      writer.exec("BEGIN IMMEDIATE");
      try {
        const result = await fn(this.#writerSql!);
        writer.exec("COMMIT");
        return result;
      } catch (error) {
        if (writer.inTransaction) writer.exec("ROLLBACK");
        throw error;
      }
    }, this.waitMs);
  }

  private closeBulkWriter(): void {
    this.#bulkWriter?.close();
    this.#bulkWriter = null;
    this.#snapshotReader?.close();
    this.#snapshotReader = null;
  }

  #snapshotReader: BetterSqlite3.Database | null = null;
  readonly #snapshots = new Mutex();

  /**
   * Runs read-only plain SQL (`sqlOf(tx)`; the Tx carries no Prisma client) on one consistent
   * state: every statement of `fn` sees the database as of the same commit, however many
   * transactions commit meanwhile. `read` runs each statement on the latest commit, so a
   * reading of several statements can mix two states (a queue's runs before a decision, its
   * PRs after it). PostgreSQL: a REPEATABLE READ, READ ONLY transaction on a pooled connection.
   * SQLite: a read transaction on a read-only connection of its own (the lookups' connection
   * must see every commit at once), one snapshot at a time.
   */
  snapshot<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const tx = {} as Tx;
    if (this.pool) {
      const pool = this.pool;
      return this.#track(async () => {
        const connection = await pool.connect();
        let broken = false;
        try {
          await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
          plainSql.set(tx, postgresSql(connection));
          const result = await fn(tx);
          await connection.query("COMMIT");
          return result;
        } catch (error) {
          await connection.query("ROLLBACK").catch(() => {
            broken = true;
          });
          throw error;
        } finally {
          connection.release(broken);
        }
      });
    }
    return this.#track(() =>
      this.#snapshots.run(async () => {
        if (!this.#snapshotReader) this.#snapshotReader = new BetterSqlite3(this.sqliteFile!, { readonly: true, timeout: 10_000 });
        const reader = this.#snapshotReader;
        reader.exec("BEGIN");
        try {
          plainSql.set(tx, sqliteSql(reader));
          return await fn(tx);
        } finally {
          if (reader.inTransaction) reader.exec("COMMIT");
        }
      }),
    );
  }

  /** Runs read-only plain SQL on the last committed state. */
  sqlRead<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return fn(this.#readSql());
  }

  #poolSql: Sql | null = null;

  #readSql(): Sql {
    this.#readerSql ??= this.pool ? (this.#poolSql ??= postgresSql(this.pool)) : sqliteSql(this.sqliteReader!);
    return this.#readerSql;
  }

  readonly #held = new Set<string>();

  /**
   * Runs `fn` holding an exclusive lock named `name`, or answers null at once when another
   * holder has it. Within the process the lock is a set of names. On PostgreSQL it is also a
   * session advisory lock, so replicas exclude each other; if the process dies, PostgreSQL
   * releases it with the connection, so no lease has to expire before another replica takes
   * over. The lock connection is one of its own, outside the pool: a holder never keeps a pool
   * connection while `fn` waits for others (with the pool busy, that wait ended only in the
   * pool's timeout, failing the effects it ran).
   */
  tryWithLock<T>(name: string, fn: () => Promise<T>): Promise<T | null> {
    return this.#track(async () => {
      if (this.#held.has(name)) return null;
      this.#held.add(name);
      try {
        if (!this.locks) return await fn();
        if (!(await this.locks.tryLock(name))) return null;
        try {
          return await fn();
        } finally {
          await this.locks.unlock(name);
        }
      } finally {
        this.#held.delete(name);
      }
    });
  }

  /**
   * Refuses new transactions, waits for those already asked for (each is bounded: Prisma's
   * transaction timeout, the connection timeouts above), then closes the connections.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.all(this.#inFlight);
      await this.closeDriver();
    })();
    return this.#closing;
  }
}

/** Plain SQL for each Tx handed out (a transaction's, `read`'s, `write`'s): see sqlOf. */
const plainSql = new WeakMap<object, Sql>();

/** Work to do once a transaction has committed, by its Tx (none registered for a rolled-back one runs). */
const commitHooks = new WeakMap<object, (() => void)[]>();

/**
 * Runs `hook` once `tx` has committed, and never if it rolls back. Answers false (and keeps
 * nothing) when `tx` is no transaction of Database.transaction (the shared client of `write`,
 * the reader), where nothing waits for a commit.
 */
export function afterCommit(tx: Tx, hook: () => void): boolean {
  const hooks = commitHooks.get(tx);
  if (!hooks) return false;
  hooks.push(hook);
  return true;
}

/**
 * Plain SQL (sql.ts) in the same transaction, or on the same connection, as `tx`: the store's
 * hot paths use it where Prisma's client cost would dominate. Every Tx the Database hands out has one.
 */
export function sqlOf(tx: Tx): Sql {
  const sql = plainSql.get(tx);
  if (!sql) throw new Error("database: no plain SQL for this Tx (not one the Database handed out)");
  return sql;
}

/** PostgreSQL: the pooled connection Prisma takes for the transaction being started in this async context. */
type TransactionSlot = { connection: pg.PoolClient | null };
const transactionSlot = new AsyncLocalStorage<TransactionSlot>();

/**
 * The pool as Prisma's adapter sees it: a connection it takes while a transaction is being
 * started (the adapter's startTransaction, in `Database.transaction`'s async context) is noted
 * in that transaction's slot, so plain SQL can run in the same transaction.
 */
function capturingPool(pool: pg.Pool): pg.Pool {
  const connect = async () => {
    const connection = await pool.connect();
    const slot = transactionSlot.getStore();
    if (slot && !slot.connection) slot.connection = connection;
    return connection;
  };
  return new Proxy(pool, {
    get(target, property) {
      if (property === "connect") return connect;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Prisma's SQLite adapter factory, noting the connection it opens (its `client`) in `driver`. */
function capturingSqlite(factory: PrismaBetterSQLite3, driver: { connection: BetterSqlite3.Database | null }): PrismaBetterSQLite3 {
  const connect = factory.connect.bind(factory);
  return Object.assign(Object.create(factory) as PrismaBetterSQLite3, {
    provider: factory.provider,
    adapterName: factory.adapterName,
    connect: async () => {
      const adapter = (await connect()) as unknown as { client: BetterSqlite3.Database };
      driver.connection = adapter.client;
      adapter.client = withStatementCache(adapter.client);
      return adapter as unknown as Awaited<ReturnType<PrismaBetterSQLite3["connect"]>>;
    },
    connectToShadowDb: factory.connectToShadowDb.bind(factory),
  });
}

/** How many of Prisma's SQLite statements stay prepared (the most recently used). */
const PRISMA_STATEMENTS_KEPT = 500;

/**
 * Prisma's SQLite adapter prepares every statement it runs, BEGIN and COMMIT included, and
 * binds it once (`prepare(sql).bind(args)`): preparing was about a sixth of the decision path's
 * CPU (docs/benchmarks.md, "Store path"). Its connection is handed to it behind this view, which
 * keeps the statements it prepared (least recently used dropped past PRISMA_STATEMENTS_KEPT) and
 * answers each `prepare` with a statement of the same shape bound to the call's arguments, so
 * one statement serves every call. better-sqlite3 runs one statement at a time on the calling
 * thread, so sharing a statement between calls is safe; the adapter never iterates.
 */
function withStatementCache(connection: BetterSqlite3.Database): BetterSqlite3.Database {
  const kept = new Map<string, BetterSqlite3.Statement>();
  const prepared = (text: string): BetterSqlite3.Statement => {
    const found = kept.get(text);
    if (found) {
      kept.delete(text);
      kept.set(text, found);
      return found;
    }
    const statement = connection.prepare(text);
    kept.set(text, statement);
    if (kept.size > PRISMA_STATEMENTS_KEPT) kept.delete(kept.keys().next().value!);
    return statement;
  };
  const bound = (statement: BetterSqlite3.Statement, args: unknown[]) => ({
    reader: statement.reader,
    run: () => statement.run(args),
    columns: () => statement.columns(),
    raw: () => ({ all: () => statement.raw(true).all(args) }),
  });
  const prepare = (text: string) => {
    const statement = prepared(text);
    return { reader: statement.reader, bind: (args: unknown[]) => bound(statement, args), run: () => statement.run(), columns: () => statement.columns() };
  };
  return new Proxy(connection, {
    get(target, property) {
      if (property === "prepare") return prepare;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Session settings every PostgreSQL connection of the service starts with. */
/**
 * Every session's settings: the timeouts, and no JIT compilation — PostgreSQL compiles a query
 * whose estimated cost passes jit_above_cost, which cost 150–180 ms of a 200 ms metrics scrape
 * with 1,000 queues (docs/benchmarks.md); the service runs short queries, where it never pays.
 */
function postgresSessionOptions(timeouts: PostgresTimeouts): string {
  return `-c statement_timeout=${timeouts.statementTimeoutMs} -c idle_in_transaction_session_timeout=${timeouts.idleInTransactionTimeoutMs} -c jit=off`;
}

/**
 * One transaction of plain SQL on a pooled connection. A connection that failed (PostgreSQL
 * ended the session, say after the idle-in-transaction timeout) leaves the pool instead of
 * going back to it, and its error event is handled: unhandled, it would end the process.
 * (pg-pool also drops a released client whose connection has ended.)
 */
async function postgresTransaction<T>(pool: pg.Pool, fn: (sql: Sql) => Promise<T>, lockWaitMs: number | null): Promise<T> {
  const connection = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => (broken = error);
  connection.on("error", onError);
  try {
    await connection.query("BEGIN");
    try {
      // A request's wait for a row lock is bounded like its wait for a connection: past it, 55P03 (busy, 503).
      if (lockWaitMs !== null) await connection.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockWaitMs))}`);
      const result = await fn(postgresSql(connection));
      await connection.query("COMMIT");
      return result;
    } catch (error) {
      await connection.query("ROLLBACK").catch((rollbackError: Error) => (broken ??= rollbackError));
      throw error;
    }
  } finally {
    connection.removeListener("error", onError);
    connection.release(broken);
  }
}

/**
 * The connection advisory locks are held on, opened on first use and again after it fails
 * (PostgreSQL released its locks then). Its statements are serialized: one client runs one
 * query at a time.
 */
class AdvisoryLockConnection {
  #client: pg.Client | null = null;
  readonly #mutex = new Mutex();

  constructor(private readonly connect: () => pg.Client) {}

  tryLock(name: string): Promise<boolean> {
    return this.#query(async (client) => {
      const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS locked", [name]);
      return rows[0]?.locked === true;
    });
  }

  async unlock(name: string): Promise<void> {
    // A failed connection has released the lock already.
    await this.#query((client) => client.query("SELECT pg_advisory_unlock(hashtext($1))", [name])).catch(() => undefined);
  }

  close(): Promise<void> {
    return this.#mutex.run(async () => {
      const client = this.#client;
      this.#client = null;
      await client?.end().catch(() => undefined);
    });
  }

  #query<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
    return this.#mutex.run(async () => {
      if (!this.#client) {
        const client = this.connect();
        const forget = () => {
          if (this.#client === client) this.#client = null;
        };
        client.on("error", forget);
        client.on("end", forget);
        await client.connect();
        this.#client = client;
      }
      return fn(this.#client);
    });
  }
}
