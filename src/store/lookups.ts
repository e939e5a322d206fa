import type BetterSqlite3 from "better-sqlite3";
import type pg from "pg";

export type TokenRow = { id: string; organizationId: string; tokenHash: string; revoked: boolean; slug: string };
export type QueueVersionRow = { id: string; version: number };

/**
 * The two lookups every API request makes (its token; the version of the queue it reads),
 * as prepared statements on the driver. Through Prisma each costs ~0.15 ms of client
 * overhead for a ~0.01 ms query (docs/benchmarks.md); everything else, every write included,
 * goes through Prisma.
 */
export interface Lookups {
  tokenByHash(hash: string): Promise<TokenRow | null>;
  queueVersion(repositoryKey: string, organizationId: string, branch: string): Promise<QueueVersionRow | null>;
}

const TOKEN_SQL = `SELECT t."id", t."organizationId", t."tokenHash", t."revokedAt" IS NOT NULL AS "revoked", o."slug"
  FROM "ApiToken" t JOIN "Organization" o ON o."id" = t."organizationId" WHERE t."tokenHash" = $1`;
const QUEUE_VERSION_SQL = `SELECT q."id", q."version" FROM "Queue" q JOIN "Repository" r ON r."id" = q."repositoryId"
  WHERE r."key" = $1 AND r."organizationId" = $2 AND q."branch" = $3`;

/** SQLite: a read-only connection of its own (WAL: it sees the last committed state). */
export function sqliteLookups(db: BetterSqlite3.Database): Lookups {
  const token = db.prepare<[string], { id: string; organizationId: string; tokenHash: string; revoked: number; slug: string }>(TOKEN_SQL.replace("$1", "?"));
  const queue = db.prepare<[string, string, string], { id: string; version: number }>(QUEUE_VERSION_SQL.replace(/\$\d/g, "?"));
  return {
    async tokenByHash(hash) {
      const row = token.get(hash);
      return row ? { ...row, revoked: Boolean(row.revoked) } : null;
    },
    async queueVersion(key, organizationId, branch) {
      const row = queue.get(key, organizationId, branch);
      return row ? { id: row.id, version: Number(row.version) } : null;
    },
  };
}

export function postgresLookups(pool: pg.Pool): Lookups {
  return {
    async tokenByHash(hash) {
      const { rows } = await pool.query<TokenRow>({ name: "greenline_token_by_hash", text: TOKEN_SQL, values: [hash] });
      return rows[0] ?? null;
    },
    async queueVersion(key, organizationId, branch) {
      const { rows } = await pool.query<{ id: string; version: number }>({ name: "greenline_queue_version", text: QUEUE_VERSION_SQL, values: [key, organizationId, branch] });
      const row = rows[0];
      return row ? { id: row.id, version: Number(row.version) } : null;
    },
  };
}
