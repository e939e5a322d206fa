import type { Database } from "./database.js";

/**
 * Dashboard sessions signed out before they expired, by the SHA-256 of their cookie: each
 * request of a session looks its hash up (one primary-key read), and a row is kept only until
 * the cookie would have expired anyway.
 */

export async function revokeSession(db: Database, hash: string, expiresAt: Date, now: Date): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.revokedSession.upsert({ where: { hash }, create: { hash, expiresAt }, update: {} });
    // Rows of sessions that have expired since are no longer needed (indexed on expiresAt).
    await tx.revokedSession.deleteMany({ where: { expiresAt: { lte: now } } });
  });
}

const REVOKED_SESSION = { name: "greenline_revoked_session", text: `SELECT "hash" FROM "RevokedSession" WHERE "hash" = $1` };

/** Whether the session of this cookie hash was signed out (one prepared primary-key read: see Database.lookup). */
export async function isSessionRevoked(db: Database, hash: string): Promise<boolean> {
  return (await db.lookup(REVOKED_SESSION, [hash])) !== undefined;
}
