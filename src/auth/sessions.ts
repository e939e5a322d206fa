import type { Database } from "../store/database.js";
import * as sessionStore from "../store/sessions.js";

/**
 * Signing out of the dashboard revokes the session server-side: its cookie (remembered by the
 * hash the caller gives, src/web/session.ts sessionHash) no longer opens until it would have
 * expired anyway, so a copy of it kept elsewhere is of no use.
 */
export async function revokeSession(db: Database, hash: string, expiresAt: Date, now: Date): Promise<void> {
  await sessionStore.revokeSession(db, hash, expiresAt, now);
}

/** Whether a session was signed out (every request of a session asks: one primary-key read). */
export async function isSessionRevoked(db: Database, hash: string): Promise<boolean> {
  return sessionStore.isSessionRevoked(db, hash);
}
