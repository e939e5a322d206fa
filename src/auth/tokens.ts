import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type { Database, Tx } from "../store/database.js";

const TOKEN_PREFIX = "glt_";

/** A new API token: 32 random bytes, base64url, with a prefix secret scanners can match. */
export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString("base64url");
}

export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

export type Principal = { organizationId: string; organizationSlug: string; tokenId: string };

/**
 * The organization a token belongs to, or null. The lookup goes by the token's hash (so the
 * stored value never equals the secret), and the hash found is compared again in constant time.
 */
export async function authenticate(db: Database, token: string): Promise<Principal | null> {
  if (token.length === 0 || token.length > 512) return null;
  const hash = hashToken(token);
  const row = await db.lookups.tokenByHash(hash);
  if (!row || row.revoked) return null;
  if (!timingSafeEqual(Buffer.from(row.tokenHash, "hex"), Buffer.from(hash, "hex"))) return null;
  return { organizationId: row.organizationId, organizationSlug: row.slug, tokenId: row.id };
}

/** The organization `slug`, created if needed. Replicas starting together may race: the insert is a no-op for the loser. */
export async function ensureOrganization(tx: Tx, slug: string): Promise<{ id: string; slug: string }> {
  const normalized = slug.toLowerCase();
  await tx.$executeRaw`INSERT INTO "Organization" ("id", "slug", "createdAt") VALUES (${randomUUID()}, ${normalized}, ${new Date()}) ON CONFLICT ("slug") DO NOTHING`;
  return tx.organization.findUniqueOrThrow({ where: { slug: normalized }, select: { id: true, slug: true } });
}

/** Registers `token` for the organization `slug`, creating it if needed. Idempotent. */
export async function registerToken(db: Database, slug: string, token: string, name: string): Promise<{ id: string; created: boolean }> {
  const hash = hashToken(token);
  return db.transaction(async (tx) => {
    const org = await ensureOrganization(tx, slug);
    const existing = await tx.apiToken.findUnique({ where: { tokenHash: hash } });
    if (existing) {
      if (existing.organizationId !== org.id) throw new Error(`this token already belongs to another organization`);
      if (existing.revokedAt) await tx.apiToken.update({ where: { id: existing.id }, data: { revokedAt: null } });
      return { id: existing.id, created: false };
    }
    const id = randomUUID();
    await tx.$executeRaw`INSERT INTO "ApiToken" ("id", "organizationId", "name", "tokenHash", "createdAt")
      VALUES (${id}, ${org.id}, ${name}, ${hash}, ${new Date()}) ON CONFLICT ("tokenHash") DO NOTHING`;
    const row = await tx.apiToken.findUniqueOrThrow({ where: { tokenHash: hash } });
    if (row.organizationId !== org.id) throw new Error(`this token already belongs to another organization`);
    return { id: row.id, created: row.id === id };
  });
}

export async function createToken(db: Database, slug: string, name: string): Promise<{ id: string; token: string }> {
  const token = generateToken();
  const { id } = await registerToken(db, slug, token, name);
  return { id, token };
}

export type TokenSummary = { id: string; name: string; createdAt: Date; revokedAt: Date | null };

export async function listTokens(db: Database, slug: string): Promise<TokenSummary[]> {
  return db.read((tx) =>
    tx.apiToken.findMany({
      where: { organization: { slug: slug.toLowerCase() } },
      select: { id: true, name: true, createdAt: true, revokedAt: true },
      orderBy: { createdAt: "asc" },
    }),
  );
}

/** Revokes a token by id; false when no such token exists. */
export async function revokeToken(db: Database, id: string, now: Date): Promise<boolean> {
  return db.transaction(async (tx) => {
    const result = await tx.apiToken.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: now } });
    if (result.count > 0) return true;
    return (await tx.apiToken.count({ where: { id } })) > 0;
  });
}
