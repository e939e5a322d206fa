import { randomUUID } from "node:crypto";
import { oneOf } from "./columns.js";
import type { Database, Tx } from "./database.js";

/** An API token as authentication needs it: whose it is, and whether it still counts. */
export type TokenOwner = { id: string; organizationId: string; name: string; tokenHash: string; revoked: boolean; slug: string; role: TokenRole };

/**
 * What a token may do: "admin", every operation and emergency merges (docs/freezes.md);
 * "write", every operation but emergencies; "read", reads only (viewers).
 */
export const TOKEN_ROLES = ["admin", "write", "read"] as const;
export type TokenRole = (typeof TOKEN_ROLES)[number];

export type TokenSummary = { id: string; name: string; role: TokenRole; createdAt: Date; revokedAt: Date | null };

const roleOf = (value: string): TokenRole => oneOf(TOKEN_ROLES, value, "ApiToken.role");

const TOKEN_BY_HASH = {
  name: "greenline_token_by_hash",
  text: `SELECT t."id", t."organizationId", t."name", t."tokenHash", t."revokedAt" IS NOT NULL AS "revoked", o."slug", t."role"
  FROM "ApiToken" t JOIN "Organization" o ON o."id" = t."organizationId" WHERE t."tokenHash" = $1`,
};

const TOKEN_BY_ID = {
  name: "greenline_token_by_id",
  text: `SELECT t."id", t."organizationId", t."name", t."tokenHash", t."revokedAt" IS NOT NULL AS "revoked", o."slug", t."role"
  FROM "ApiToken" t JOIN "Organization" o ON o."id" = t."organizationId" WHERE t."id" = $1`,
};

type OwnerRow = Omit<TokenOwner, "revoked" | "role"> & { revoked: boolean | number; role: string };
const toOwner = (row: OwnerRow): TokenOwner => ({ ...row, revoked: Boolean(row.revoked), role: roleOf(row.role) });

/** The token with the hash `hash` and its organization, in one prepared query (every API request asks it: see Database.lookup). */
export async function tokenByHash(db: Database, hash: string): Promise<TokenOwner | null> {
  const row = await db.lookup<OwnerRow>(TOKEN_BY_HASH, [hash]);
  return row ? toOwner(row) : null;
}

/** The token `id` and its organization (a dashboard session re-checks its token on every request). */
export async function tokenById(db: Database, id: string): Promise<TokenOwner | null> {
  const row = await db.lookup<OwnerRow>(TOKEN_BY_ID, [id]);
  return row ? toOwner(row) : null;
}

/** The organization `slug` (lower-case), created if needed. Replicas starting together may race: the insert is a no-op for the loser. */
export async function ensureOrganization(tx: Tx, slug: string): Promise<{ id: string; slug: string }> {
  await tx.$executeRaw`INSERT INTO "Organization" ("id", "slug", "createdAt") VALUES (${randomUUID()}, ${slug}, ${new Date()}) ON CONFLICT ("slug") DO NOTHING`;
  return tx.organization.findUniqueOrThrow({ where: { slug }, select: { id: true, slug: true } });
}

/** The token with the hash `hash`, revoked or not, with its organization's slug, or null. */
export async function findTokenByHash(tx: Tx, hash: string): Promise<{ id: string; organizationId: string; organizationSlug: string; revokedAt: Date | null } | null> {
  const row = await tx.apiToken.findUnique({ where: { tokenHash: hash }, select: { id: true, organizationId: true, revokedAt: true, organization: { select: { slug: true } } } });
  return row ? { id: row.id, organizationId: row.organizationId, organizationSlug: row.organization.slug, revokedAt: row.revokedAt } : null;
}

/** Makes a revoked token count again. */
export async function reactivateToken(tx: Tx, id: string): Promise<void> {
  await tx.apiToken.update({ where: { id }, data: { revokedAt: null } });
}

/**
 * Stores a token unless one with its hash exists (a concurrent registration may have stored it
 * first), and answers the stored one.
 */
export async function insertToken(tx: Tx, token: { id: string; organizationId: string; name: string; hash: string; role: TokenRole }): Promise<{ id: string; organizationId: string }> {
  await tx.$executeRaw`INSERT INTO "ApiToken" ("id", "organizationId", "name", "tokenHash", "role", "createdAt")
      VALUES (${token.id}, ${token.organizationId}, ${token.name}, ${token.hash}, ${token.role}, ${new Date()}) ON CONFLICT ("tokenHash") DO NOTHING`;
  return tx.apiToken.findUniqueOrThrow({ where: { tokenHash: token.hash }, select: { id: true, organizationId: true } });
}

/** The organization's tokens, oldest first (never their hashes). */
export async function tokensOf(tx: Tx, slug: string): Promise<TokenSummary[]> {
  const rows = await tx.apiToken.findMany({
    where: { organization: { slug } },
    select: { id: true, name: true, role: true, createdAt: true, revokedAt: true },
    orderBy: { createdAt: "asc" },
  });
  return rows.map((row) => ({ ...row, role: roleOf(row.role) }));
}

/** Revokes the token `id` if it is not already; answers whether such a token exists. */
export async function revokeTokenById(tx: Tx, id: string, at: Date): Promise<boolean> {
  return (await revokeTokenNow(tx, id, at)) !== "missing";
}

/** Revokes the token `id`: "revoked" now, "already" revoked before, or "missing". */
export async function revokeTokenNow(tx: Tx, id: string, at: Date): Promise<"revoked" | "already" | "missing"> {
  const result = await tx.apiToken.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: at } });
  if (result.count > 0) return "revoked";
  return (await tx.apiToken.count({ where: { id } })) > 0 ? "already" : "missing";
}

/** The organization and name of the token `id`, or null. */
export async function tokenOwnerOf(tx: Tx, id: string): Promise<{ organizationId: string; name: string } | null> {
  return tx.apiToken.findUnique({ where: { id }, select: { organizationId: true, name: true } });
}
