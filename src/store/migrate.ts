import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import type pg from "pg";
import { projectRoot } from "../paths.js";
import type { DatabaseKind } from "./database.js";

export type Migration = { id: string; sql: string; checksum: string };

/** The migrations of one backend, in order (prisma/migrations/<kind>/NNNN_name/migration.sql). */
export function loadMigrations(kind: DatabaseKind): Migration[] {
  const dir = join(projectRoot, "prisma", "migrations", kind);
  return readdirSync(dir)
    .filter((name) => /^\d{4}_/.test(name))
    .sort()
    .map((id) => {
      const sql = readFileSync(join(dir, id, "migration.sql"), "utf8");
      return { id, sql, checksum: createHash("sha256").update(sql).digest("hex") };
    });
}

const LEDGER = `CREATE TABLE IF NOT EXISTS "_greenline_migrations" (
  "id" TEXT PRIMARY KEY, "checksum" TEXT NOT NULL, "applied_at" TEXT NOT NULL)`;

/**
 * A contract migration's floor: `-- greenline:requires <migration id>` names the oldest migration
 * a replica must know to run on the schema once it is applied (the last of the release whose code
 * stopped using what it drops). Recorded in the ledger with the migration, so a replica of any
 * age that does not know the floor refuses to start on that schema instead of failing on its
 * queries (expand/contract keeps one release back working, not two: docs/operations.md).
 */
export function floorOf(sql: string): string | null {
  return /^--\s*greenline:requires\s+(\d{4}_[A-Za-z0-9_]+)\s*$/m.exec(sql)?.[1] ?? null;
}

/**
 * What a start did to the schema: the migrations it applied, and those the database has that
 * this version does not know (a newer release migrated it: this replica is older than the
 * schema, which is fine while migrations only add — docs/operations.md, "Upgrades").
 */
export type MigrationOutcome = { applied: string[]; newer: string[] };

/**
 * The migrations to apply. A database ahead of the code (migrations it does not know) is left
 * as it is: an older replica still running, or restarting, during a rolling upgrade keeps
 * working on the expanded schema and never tries to "fix" it. Such a database must then lack
 * none of the migrations this version ships: one that has unknown migrations and lacks known
 * ones was migrated on another line of history, and applying ours out of order could do
 * anything.
 */
function planMigrations(all: Migration[], applied: Map<string, { checksum: string; requires: string | null }>): { pending: Migration[]; newer: string[] } {
  const newer: string[] = [];
  for (const [id, { checksum, requires }] of applied) {
    const known = all.find((m) => m.id === id);
    if (!known) newer.push(id);
    else if (known.checksum !== checksum) throw new Error(`migration ${id} was changed after it was applied`);
    if (requires !== null && !all.some((m) => m.id === requires)) {
      throw new Error(`database was contracted by migration ${id}, which needs a release that knows migration ${requires}: this version of Greenline is too old for it; start a newer release`);
    }
  }
  newer.sort();
  const pending = all.filter((m) => !applied.has(m.id));
  if (newer.length > 0 && pending.length > 0) {
    throw new Error(
      `database has migrations this version of Greenline does not know (${newer.join(", ")}) and lacks ${pending.map((m) => m.id).join(", ")}, which it ships: they come from different lines of history; start the release that migrated it`,
    );
  }
  return { pending, newer };
}

/** Applies pending migrations in one transaction; concurrent starters wait for each other. */
export function migrateSqlite(db: BetterSqlite3.Database, migrations = loadMigrations("sqlite")): MigrationOutcome {
  db.exec("BEGIN IMMEDIATE");
  try {
    db.exec(LEDGER);
    const columns = db.prepare(`SELECT "name" FROM pragma_table_info('_greenline_migrations')`).all() as { name: string }[];
    if (!columns.some((c) => c.name === "requires")) db.exec(`ALTER TABLE "_greenline_migrations" ADD COLUMN "requires" TEXT`);
    const rows = db.prepare(`SELECT "id", "checksum", "requires" FROM "_greenline_migrations"`).all() as { id: string; checksum: string; requires: string | null }[];
    const { pending, newer } = planMigrations(migrations, new Map(rows.map((r) => [r.id, r])));
    const record = db.prepare(`INSERT INTO "_greenline_migrations" ("id", "checksum", "applied_at", "requires") VALUES (?, ?, ?, ?)`);
    for (const migration of pending) {
      db.exec(migration.sql);
      record.run(migration.id, migration.checksum, new Date().toISOString(), floorOf(migration.sql));
    }
    db.exec("COMMIT");
    return { applied: pending.map((m) => m.id), newer };
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  }
}

/** Key of the advisory lock that serializes migrations between replicas. */
const MIGRATION_LOCK_KEY = 7_364_001;

export async function migratePostgres(client: pg.ClientBase, migrations = loadMigrations("postgres")): Promise<MigrationOutcome> {
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK_KEY]);
    await client.query(LEDGER);
    await client.query(`ALTER TABLE "_greenline_migrations" ADD COLUMN IF NOT EXISTS "requires" TEXT`);
    const { rows } = await client.query<{ id: string; checksum: string; requires: string | null }>(`SELECT "id", "checksum", "requires" FROM "_greenline_migrations"`);
    const { pending, newer } = planMigrations(migrations, new Map(rows.map((r) => [r.id, r])));
    for (const migration of pending) {
      await client.query(migration.sql);
      await client.query(`INSERT INTO "_greenline_migrations" ("id", "checksum", "applied_at", "requires") VALUES ($1, $2, $3, $4)`, [migration.id, migration.checksum, new Date().toISOString(), floorOf(migration.sql)]);
    }
    await client.query("COMMIT");
    return { applied: pending.map((m) => m.id), newer };
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  }
}
