import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import pg from "pg";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient as SqliteClient, type Prisma } from "../generated/sqlite/client.js";
import { PrismaClient as PostgresClient } from "../generated/postgres/client.js";
import { migratePostgres, migrateSqlite } from "./migrate.js";
import { Mutex } from "./mutex.js";
import { postgresSql, sqliteSql, type Sql } from "./sql.js";

export type DatabaseKind = "sqlite" | "postgres";

/**
 * Both generated clients have the same models and methods; the code is written against the
 * SQLite client's types and the PostgreSQL client is used through them.
 */
export type Client = SqliteClient;
export type Tx = Prisma.TransactionClient;

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
  ) {
    this.#serialize = kind === "sqlite" ? new Mutex() : null;
  }

  static async open(url: string, options: { migrate?: boolean; poolSize?: number } = {}): Promise<Database> {
    const migrate = options.migrate ?? true;
    if (databaseKind(url) === "sqlite") {
      const path = sqlitePath(url);
      mkdirSync(dirname(path), { recursive: true });
      const setup = new BetterSqlite3(path, { timeout: 10_000 });
      try {
        setup.pragma("journal_mode = WAL");
        if (migrate) migrateSqlite(setup);
      } finally {
        setup.close();
      }
      const client = new SqliteClient({ adapter: new PrismaBetterSQLite3({ url: `file:${path}`, timeout: 10_000 }) });
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
      );
      return database;
    }
    if (migrate) {
      const connection = new pg.Client({ connectionString: url });
      await connection.connect();
      try {
        await migratePostgres(connection);
      } finally {
        await connection.end();
      }
    }
    // A bounded wait for a connection: an exhausted pool fails requests instead of hanging them.
    const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 20, connectionTimeoutMillis: 10_000 });
    const client = new PostgresClient({ adapter: new PrismaPg(pool) }) as unknown as Client;
    return new Database(
      "postgres",
      client,
      async () => {
        await client.$disconnect();
        await pool.end();
      },
      client,
      pool,
      null,
      null,
    );
  }

  /** Runs `fn` in one transaction: all of its writes happen, or none. */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const run = () => this.client.$transaction(fn, { maxWait: 10_000, timeout: 30_000 });
    return this.#serialize ? this.#serialize.run(run) : run();
  }

  /** Runs read-only queries on the last committed state. */
  read<T>(fn: (db: Tx) => Promise<T>): Promise<T> {
    return fn(this.reader as unknown as Tx);
  }

  /** Answers whether the database answers a query (the health check). */
  async ping(): Promise<void> {
    await this.read((tx) => tx.$queryRawUnsafe("SELECT 1"));
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
  async sqlTransaction<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    if (this.pool) {
      const connection = await this.pool.connect();
      try {
        await connection.query("BEGIN");
        try {
          const result = await fn(postgresSql(connection));
          await connection.query("COMMIT");
          return result;
        } catch (error) {
          await connection.query("ROLLBACK");
          throw error;
        }
      } finally {
        connection.release();
      }
    }
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
    });
  }

  private closeBulkWriter(): void {
    this.#bulkWriter?.close();
    this.#bulkWriter = null;
  }

  /** Runs read-only plain SQL on the last committed state. */
  sqlRead<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    this.#readerSql ??= this.pool ? postgresSql(this.pool) : sqliteSql(this.sqliteReader!);
    return fn(this.#readerSql);
  }

  readonly #held = new Set<string>();

  /**
   * Runs `fn` holding an exclusive lock named `name`, or answers null at once when another
   * holder has it. On PostgreSQL it is a session advisory lock, held by a connection of its
   * own: if the process dies, PostgreSQL releases it with the connection, so no lease has to
   * expire before another replica takes over. SQLite serves one process; the lock is local.
   */
  async tryWithLock<T>(name: string, fn: () => Promise<T>): Promise<T | null> {
    if (!this.pool) {
      if (this.#held.has(name)) return null;
      this.#held.add(name);
      try {
        return await fn();
      } finally {
        this.#held.delete(name);
      }
    }
    const connection = await this.pool.connect();
    try {
      const { rows } = await connection.query<{ locked: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS locked", [name]);
      if (!rows[0]?.locked) return null;
      try {
        return await fn();
      } finally {
        await connection.query("SELECT pg_advisory_unlock(hashtext($1))", [name]);
      }
    } finally {
      connection.release();
    }
  }

  close(): Promise<void> {
    return this.closeDriver();
  }
}
