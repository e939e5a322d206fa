import { chmodSync, existsSync } from "node:fs";
import BetterSqlite3 from "better-sqlite3";
import { databaseKind, sqlitePath } from "./database.js";

/** Why a backup was not made (the CLI prints it and exits 1). */
export class BackupRefused extends Error {}

/**
 * Copies a SQLite database to `to` with SQLite's online backup API, while the service runs: a
 * consistent copy of the last committed state, in one step under one read snapshot (in WAL mode
 * the service's writers go on meanwhile; copied a few pages at a time, the backup would start
 * over at every write of the service's, another process, and never end on a busy database). The
 * copy is readable by its owner only (it holds webhook secrets). Refuses a PostgreSQL URL
 * (pg_dump does that: docs/operations.md) and an existing `to`.
 */
export async function backupSqlite(url: string, to: string): Promise<{ pages: number }> {
  if (databaseKind(url) !== "sqlite") {
    throw new BackupRefused(
      'DATABASE_URL is PostgreSQL: back it up with pg_dump (pg_dump --format=custom --file=greenline.dump "$DATABASE_URL"; restore with pg_restore --clean --if-exists --no-owner --dbname="$DATABASE_URL" greenline.dump), see docs/operations.md',
    );
  }
  if (existsSync(to)) throw new BackupRefused(`${to} exists: name a new file (a backup never overwrites one)`);
  const path = sqlitePath(url);
  if (!existsSync(path)) throw new BackupRefused(`there is no database at ${path} (DATABASE_URL ${url})`);
  const source = new BetterSqlite3(path, { readonly: true, fileMustExist: true, timeout: 10_000 });
  try {
    const { totalPages } = await source.backup(to, { progress: () => 0x7fffffff });
    chmodSync(to, 0o600);
    return { pages: totalPages };
  } finally {
    source.close();
  }
}
