import { setImmediate as turn } from "node:timers/promises";
import type BetterSqlite3 from "better-sqlite3";
import pg from "pg";
import type { DatabaseKind } from "./database.js";

/**
 * Plain SQL on the database driver, for the bulk paths where Prisma's per-row cost would
 * dominate (ingesting test results, aggregating them). Placeholders are `?` on both backends.
 * Dates are written in the representation Prisma uses for DateTime columns, so rows written
 * here read back through Prisma; integers come back as numbers on SQLite and may come back as
 * strings (bigint, count) on PostgreSQL, so callers wrap them in Number().
 */
/** Whether a store function's target is plain SQL (else a Prisma transaction): writers that take either branch on it. */
export const isSql = (target: object): target is Sql => typeof (target as Sql).anyOf === "function" && typeof (target as Sql).insert === "function";

export interface Sql {
  readonly kind: DatabaseKind;
  all<T>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs a statement; answers the number of rows it changed. */
  run(text: string, params?: readonly unknown[]): Promise<number>;
  /** Inserts rows in as few statements as the driver allows; `suffix` follows VALUES (e.g. ON CONFLICT …). */
  insert(table: string, columns: readonly string[], rows: readonly (readonly unknown[])[], suffix?: string): Promise<void>;
  /**
   * Inserts rows and answers the `returning` columns of those actually inserted (rows a
   * conflict skipped answer nothing); `suffix` is typically ON CONFLICT … DO NOTHING.
   */
  insertReturning<T>(table: string, columns: readonly string[], rows: readonly (readonly unknown[])[], suffix: string, returning: string): Promise<T[]>;
  /**
   * Inserts rows into a table whose integer primary key `key` the database assigns, skipping
   * rows a unique constraint rejects (`ON CONFLICT (conflict) DO NOTHING`), and answers each
   * row's new key in row order (undefined for a skipped row). `idColumn` names a column unique
   * among the rows, which PostgreSQL's RETURNING is matched back by.
   */
  insertKeys(table: string, columns: readonly string[], rows: readonly (readonly unknown[])[], conflict: readonly string[], idColumn: string): Promise<(number | undefined)[]>;
  /** `column IN values` as one parameter: `anyOf('"id"', ids)` gives the SQL and its parameter. */
  anyOf(column: string, values: readonly (string | number)[]): [string, unknown];
}

const quote = (name: string) => `"${name}"`;

let lastTime = NaN;
let lastDateText = "";

function sqliteValue(value: unknown): unknown {
  if (value instanceof Date) {
    // Bulk rows repeat one timestamp (an upload's); it is formatted once.
    const time = value.getTime();
    if (time !== lastTime) {
      lastDateText = value.toISOString().replace("Z", "+00:00");
      lastTime = time;
    }
    return lastDateText;
  }
  if (typeof value === "boolean") return value ? 1 : 0;
  return value === undefined ? null : value;
}

/**
 * better-sqlite3 runs each statement on the calling thread, so a bulk path (an upload's
 * thousands of rows, batch after batch) would hold every other request until it ends, its
 * awaits notwithstanding (they resolve at once). Once statements have held the thread this
 * long, the next one first lets other work run (issue 22).
 */
const SQLITE_HOLD_MS = 10;
/** Rows inserted between looks at the clock. */
const ROWS_BETWEEN_LOOKS = 512;

/**
 * When the stretch of work holding the thread began: the first look since the event loop last
 * turned starts it, and a callback the loop runs on its next turn ends it.
 */
let stretchStart = 0;
let inStretch = false;
const endStretch = () => {
  inStretch = false;
};

async function letOthersRun(): Promise<void> {
  const now = performance.now();
  if (!inStretch) {
    inStretch = true;
    stretchStart = now;
    setImmediate(endStretch);
    return;
  }
  if (now - stretchStart >= SQLITE_HOLD_MS) await turn();
}

export function sqliteSql(db: BetterSqlite3.Database): Sql {
  const statements = new Map<string, BetterSqlite3.Statement>();
  const prepare = (text: string) => {
    let statement = statements.get(text);
    if (!statement) {
      statement = db.prepare(text);
      // Numbers, whatever the connection's default (Prisma's own connection answers BigInts).
      if (statement.reader) statement.safeIntegers(false);
      statements.set(text, statement);
    }
    return statement;
  };
  return {
    kind: "sqlite",
    async all<T>(text: string, params: readonly unknown[] = []) {
      await letOthersRun();
      return prepare(text).all(...params.map(sqliteValue)) as T[];
    },
    async run(text, params = []) {
      await letOthersRun();
      return prepare(text).run(...params.map(sqliteValue)).changes;
    },
    async insert(table, columns, rows, suffix = "") {
      // One prepared statement per row is SQLite's fastest way in: no parsing, no round trip.
      const statement = prepare(`INSERT INTO ${quote(table)} (${columns.map(quote).join(", ")}) VALUES (${columns.map(() => "?").join(", ")}) ${suffix}`);
      const values = new Array<unknown>(columns.length);
      for (let r = 0; r < rows.length; r++) {
        if (r % ROWS_BETWEEN_LOOKS === 0) await letOthersRun();
        const row = rows[r]!;
        for (let i = 0; i < values.length; i++) values[i] = sqliteValue(row[i]);
        statement.run(values);
      }
    },
    async insertReturning<T>(table: string, columns: readonly string[], rows: readonly (readonly unknown[])[], suffix: string, returning: string) {
      const statement = prepare(`INSERT INTO ${quote(table)} (${columns.map(quote).join(", ")}) VALUES (${columns.map(() => "?").join(", ")}) ${suffix} RETURNING ${returning}`);
      const values = new Array<unknown>(columns.length);
      const out: T[] = [];
      for (let r = 0; r < rows.length; r++) {
        if (r % ROWS_BETWEEN_LOOKS === 0) await letOthersRun();
        const row = rows[r]!;
        for (let i = 0; i < values.length; i++) values[i] = sqliteValue(row[i]);
        const inserted = statement.get(values) as T | undefined;
        if (inserted) out.push(inserted);
      }
      return out;
    },
    async insertKeys(table, columns, rows, conflict) {
      // `key` is the rowid: an insert's lastInsertRowid, with no RETURNING row to build.
      const statement = prepare(`INSERT INTO ${quote(table)} (${columns.map(quote).join(", ")}) VALUES (${columns.map(() => "?").join(", ")}) ON CONFLICT (${conflict.map(quote).join(", ")}) DO NOTHING`);
      const values = new Array<unknown>(columns.length);
      const keys = new Array<number | undefined>(rows.length);
      for (let r = 0; r < rows.length; r++) {
        if (r % ROWS_BETWEEN_LOOKS === 0) await letOthersRun();
        const row = rows[r]!;
        for (let i = 0; i < values.length; i++) values[i] = sqliteValue(row[i]);
        const result = statement.run(values);
        keys[r] = result.changes === 1 ? Number(result.lastInsertRowid) : undefined;
      }
      return keys;
    },
    anyOf: (column, values) => [`${column} IN (SELECT value FROM json_each(?))`, JSON.stringify(values)],
  };
}

function postgresValue(value: unknown): unknown {
  // TIMESTAMP(3) columns hold UTC without a zone, as Prisma writes them.
  if (value instanceof Date) return value.toISOString().replace("T", " ").replace("Z", "");
  return value === undefined ? null : value;
}

/**
 * TIMESTAMP(3) columns hold UTC without a zone (as Prisma writes them): read as UTC, where
 * pg's default would read them in the process's local time zone.
 */
const TIMESTAMP_OID = 1114;
const pgTypes = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => (oid === TIMESTAMP_OID ? (text: string) => new Date(`${text.replace(" ", "T")}Z`) : pg.types.getTypeParser(oid, format))) as typeof pg.types.getTypeParser,
};

function numbered(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}

/**
 * Statements sent by name, so that each connection parses and plans them once (pg prepares a
 * named statement on a connection the first time it runs there): the hot paths send the same
 * few dozen texts for every decision. A text gets the next name the first time it is seen, up
 * to PREPARED_TEXTS_KEPT texts per process (each connection keeps those it ran); texts past
 * that, and those answering `*`, go unnamed, as every statement did before. Its numbered form is
 * kept with it.
 */
const PREPARED_TEXTS_KEPT = 1_000;
const preparedTexts = new Map<string, { name: string; text: string }>();

function statementOf(text: string, params: readonly unknown[]): pg.QueryConfig {
  let prepared = preparedTexts.get(text);
  // A statement answering `*` is never named: after a migration adds a column (a newer replica
  // starting), PostgreSQL refuses a prepared statement whose result's columns changed ("cached
  // plan must not change result type") until the connection forgets it.
  if (!prepared && preparedTexts.size < PREPARED_TEXTS_KEPT && !text.includes("*")) {
    prepared = { name: `greenline_${preparedTexts.size + 1}`, text: numbered(text) };
    preparedTexts.set(text, prepared);
  }
  const values = params.map(postgresValue);
  return prepared ? { name: prepared.name, text: prepared.text, values, types: pgTypes } : { text: numbered(text), values, types: pgTypes };
}

/** PostgreSQL allows 65,535 parameters per statement. */
const MAX_PARAMS = 65_000;

export function postgresSql(client: pg.ClientBase | pg.Pool): Sql {
  return {
    kind: "postgres",
    async all<T>(text: string, params: readonly unknown[] = []) {
      const result = await client.query(statementOf(text, params));
      return result.rows as T[];
    },
    async run(text, params = []) {
      const result = await client.query(statementOf(text, params));
      return result.rowCount ?? 0;
    },
    async insert(table, columns, rows, suffix = "") {
      await this.insertReturning(table, columns, rows, suffix, "");
    },
    async insertReturning<T>(table: string, columns: readonly string[], rows: readonly (readonly unknown[])[], suffix: string, returning: string) {
      const out: T[] = [];
      const perStatement = Math.max(1, Math.min(5000, Math.floor(MAX_PARAMS / columns.length)));
      const head = `INSERT INTO ${quote(table)} (${columns.map(quote).join(", ")}) VALUES `;
      for (let start = 0; start < rows.length; start += perStatement) {
        const chunk = rows.slice(start, start + perStatement);
        const values: unknown[] = [];
        const tuples: string[] = [];
        for (const row of chunk) {
          const slots: string[] = [];
          for (const value of row) {
            values.push(postgresValue(value));
            slots.push(`$${values.length}`);
          }
          tuples.push(`(${slots.join(", ")})`);
        }
        const result = await client.query(`${head}${tuples.join(", ")} ${suffix}${returning ? ` RETURNING ${returning}` : ""}`, values);
        if (returning) out.push(...(result.rows as T[]));
      }
      return out;
    },
    async insertKeys(table, columns, rows, conflict, idColumn) {
      const id = columns.indexOf(idColumn);
      const inserted = await this.insertReturning<{ id: unknown; key: unknown }>(table, columns, rows, `ON CONFLICT (${conflict.map(quote).join(", ")}) DO NOTHING`, `${quote(idColumn)} AS id, "key"`);
      const keys = new Map(inserted.map((row) => [row.id, Number(row.key)]));
      return rows.map((row) => keys.get(row[id]));
    },
    anyOf: (column, values) => [`${column} = ANY(?)`, values],
  };
}
