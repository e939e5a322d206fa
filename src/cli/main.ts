import { DEFAULT_DATABASE_URL } from "../config.js";
import type { Database } from "../store/database.js";
import { type Out, runAsProcess, runCli, type Values } from "./client-commands.js";
import { CliUsageError } from "./greenline-client.js";

/**
 * The service's `greenline` (bin/greenline.js in a checkout or the container): the client
 * commands (client-commands.ts, also packaged alone as @greenline/cli) plus the commands that
 * need the service's database, below.
 */

class UsageError extends CliUsageError {}

/** The database and token code load only for the commands that use them: help, --version and `test` never pull in Prisma. */
async function withDatabase<T>(fn: (db: Database, tokens: typeof import("../auth/tokens.js")) => Promise<T>): Promise<T> {
  const [{ Database }, tokens] = await Promise.all([import("../store/database.js"), import("../auth/tokens.js")]);
  const db = await Database.open(process.env.DATABASE_URL?.trim() || DEFAULT_DATABASE_URL);
  try {
    return await fn(db, tokens);
  } finally {
    await db.close();
  }
}

function option(values: Record<string, string | boolean | string[] | undefined>, name: string): string {
  const value = values[name];
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} is required`);
  return value.trim();
}

/** The commands that run where the service runs; undefined for any other. */
async function serverCommand(key: string, values: Values, rest: string[], out: Out): Promise<number | undefined> {
  const slugPattern = /^[a-z0-9][a-z0-9-]{0,62}$/i;
  switch (key) {
    case "token create": {
      const org = option(values, "org");
      if (!slugPattern.test(org)) throw new UsageError("--org must be letters, digits and dashes");
      const role = values.role ?? "write";
      if (role !== "admin" && role !== "write" && role !== "read") throw new UsageError("--role must be write (every operation, the default), admin (also emergency merges) or read (reads only: viewers)");
      const { id, token } = await withDatabase((db, { createToken }) => createToken(db, org, values.name ?? "cli", role, "token create"));
      out(`Created ${role} token ${id} for organization ${org.toLowerCase()}. Store it now; it is not shown again:`);
      out(token);
      return 0;
    }
    case "token list": {
      const tokens = await withDatabase((db, { listTokens }) => listTokens(db, option(values, "org")));
      for (const t of tokens) out(`${t.id}\t${t.name}\t${t.role}\tcreated ${t.createdAt.toISOString()}\t${t.revokedAt ? `revoked ${t.revokedAt.toISOString()}` : "active"}`);
      if (tokens.length === 0) out("no tokens");
      return 0;
    }
    case "token revoke": {
      const id = rest[0];
      if (!id) throw new UsageError("token revoke needs the token's id (see token list)");
      const found = await withDatabase((db, { revokeToken }) => revokeToken(db, id, new Date(), "token revoke"));
      if (!found) {
        out(`no token with id ${id}`);
        return 1;
      }
      out(`revoked ${id}`);
      return 0;
    }
    case "setup github": {
      const { setupGitHub } = await import("./setup-github.js");
      return setupGitHub(values, out);
    }
    case "db backup": {
      const to = option(values, "to");
      const { backupSqlite, BackupRefused } = await import("../store/backup.js");
      try {
        const { pages } = await backupSqlite(process.env.DATABASE_URL?.trim() || DEFAULT_DATABASE_URL, to);
        out(`backed up the database to ${to} (${pages} pages); restore it by pointing DATABASE_URL at a copy of it (docs/operations.md)`);
        return 0;
      } catch (error) {
        if (!(error instanceof BackupRefused)) throw error;
        out(`greenline db backup: ${error.message}`);
        return 1;
      }
    }
    case "db migrate": {
      const migrated = await withDatabase(async (db) => db.migrated);
      if (migrated && migrated.applied.length > 0) out(`applied ${migrated.applied.join(", ")}`);
      if (migrated && migrated.newer.length > 0) out(`the database has migrations this version does not know (${migrated.newer.join(", ")}): a newer release migrated it; nothing to do`);
      else out("database is up to date");
      return 0;
    }
    default:
      return undefined;
  }
}

export function run(argv: string[], out: Out): Promise<number> {
  return runCli(argv, out, serverCommand);
}

runAsProcess(run);
