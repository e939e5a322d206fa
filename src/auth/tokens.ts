import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type { Database, Tx } from "../store/database.js";
import type { Actor } from "../domain/timeline.js";
import * as tokenStore from "../store/tokens.js";
import { recordCliAudit } from "../store/audit.js";

export type { TokenRole, TokenSummary } from "../store/tokens.js";
export { TOKEN_ROLES } from "../store/tokens.js";

const TOKEN_PREFIX = "glt_";

/** A new API token: 32 random bytes, base64url, with a prefix secret scanners can match. */
export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString("base64url");
}

export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/**
 * Who a request acts for: the organization, its role ("read" tokens may only read), and — for
 * timelines, queue events and logs — who did it (`actor`: the API token's name, a comment's or
 * a dashboard's GitHub user, a fork's workflow run) and through what (`via`: the API operation
 * or the comment command).
 */
export type Principal = { organizationId: string; organizationSlug: string; tokenId: string; role: tokenStore.TokenRole; actor?: Actor; via?: string };

/** Whether a principal may change things (write and admin tokens; read tokens only read). */
export const mayWrite = (principal: Pick<Principal, "role">) => principal.role === "write" || principal.role === "admin";

const principalOf = (row: tokenStore.TokenOwner): Principal => ({
  organizationId: row.organizationId,
  organizationSlug: row.slug,
  tokenId: row.id,
  role: row.role,
  actor: { kind: "token", name: row.name },
});

/**
 * The organization a token belongs to, or null. The lookup goes by the token's hash (so the
 * stored value never equals the secret), and the hash found is compared again in constant time.
 */
export async function authenticate(db: Database, token: string): Promise<Principal | null> {
  if (token.length === 0 || token.length > 512) return null;
  const hash = hashToken(token);
  const row = await tokenStore.tokenByHash(db, hash);
  if (!row || row.revoked) return null;
  if (!timingSafeEqual(Buffer.from(row.tokenHash, "hex"), Buffer.from(hash, "hex"))) return null;
  return principalOf(row);
}

/** The principal of the token `tokenId` if it still counts (not revoked), else null: a dashboard session's re-check. */
export async function authenticateTokenId(db: Database, tokenId: string): Promise<Principal | null> {
  if (tokenId.length === 0 || tokenId.length > 64) return null;
  const row = await tokenStore.tokenById(db, tokenId);
  return row && !row.revoked ? principalOf(row) : null;
}

/** The organization `slug`, created if needed. Replicas starting together may race: the insert is a no-op for the loser. */
export async function ensureOrganization(tx: Tx, slug: string): Promise<{ id: string; slug: string }> {
  return tokenStore.ensureOrganization(tx, slug.toLowerCase());
}

/** The token given to registerToken is already another organization's: `owner`'s (its slug). */
export class TokenOfAnotherOrganization extends Error {
  constructor(readonly owner: string) {
    super(`this token already belongs to another organization (${owner})`);
  }
}

/** Registers `token` for the organization `slug`, creating it if needed. Idempotent; TokenOfAnotherOrganization when another organization has it. */
export async function registerToken(
  db: Database,
  slug: string,
  token: string,
  name: string,
  role: tokenStore.TokenRole = "write",
  /** The CLI command creating it: recorded in the organization's audit log. */
  auditAs?: string,
): Promise<{ id: string; created: boolean }> {
  const hash = hashToken(token);
  return db.transaction(async (tx) => {
    const org = await ensureOrganization(tx, slug);
    const existing = await tokenStore.findTokenByHash(tx, hash);
    if (existing) {
      if (existing.organizationId !== org.id) throw new TokenOfAnotherOrganization(existing.organizationSlug);
      if (existing.revokedAt) await tokenStore.reactivateToken(tx, existing.id);
      return { id: existing.id, created: false };
    }
    const id = randomUUID();
    const row = await tokenStore.insertToken(tx, { id, organizationId: org.id, name, hash, role });
    if (row.organizationId !== org.id) throw new TokenOfAnotherOrganization((await tokenStore.findTokenByHash(tx, hash))?.organizationSlug ?? "unknown");
    if (auditAs !== undefined && row.id === id) await recordCliAudit(tx, org.id, auditAs, "token.created", { tokenId: id, name, role }, new Date(), randomUUID);
    return { id: row.id, created: row.id === id };
  });
}

export async function createToken(db: Database, slug: string, name: string, role: tokenStore.TokenRole = "write", auditAs?: string): Promise<{ id: string; token: string }> {
  const token = generateToken();
  const { id } = await registerToken(db, slug, token, name, role, auditAs);
  return { id, token };
}

export async function listTokens(db: Database, slug: string): Promise<tokenStore.TokenSummary[]> {
  return db.read((tx) => tokenStore.tokensOf(tx, slug.toLowerCase()));
}

/** Revokes a token by id; false when no such token exists. */
export async function revokeToken(db: Database, id: string, now: Date, auditAs?: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const outcome = await tokenStore.revokeTokenNow(tx, id, now);
    // Recorded when it was revoked now (revoking it again changes nothing, and records nothing).
    const owner = outcome === "revoked" && auditAs !== undefined ? await tokenStore.tokenOwnerOf(tx, id) : null;
    if (owner) await recordCliAudit(tx, owner.organizationId, auditAs!, "token.revoked", { tokenId: id, name: owner.name }, now, randomUUID);
    return outcome !== "missing";
  });
}
