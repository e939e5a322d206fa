import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * The dashboard's session: a cookie holding the API token's id, its organization and an expiry,
 * signed with HMAC-SHA256 (GREENLINE_SESSION_SECRET, or a random key per process). It holds no
 * secret; every request still checks that the token exists and is not revoked. The CSRF token
 * is derived from the session (a synchronizer token nobody else can compute).
 */
export type Session = { tokenId: string; organizationId: string; expiresAt: number };

export const SESSION_COOKIE = "greenline_session";
export const SESSION_MS = 12 * 60 * 60 * 1000;

export class SessionKeys {
  readonly #key: Buffer;

  constructor(secret: string | undefined) {
    this.#key = secret ? Buffer.from(secret, "utf8") : randomBytes(32);
  }

  #mac(purpose: string, text: string): string {
    return createHmac("sha256", this.#key).update(`${purpose}\n${text}`).digest("base64url");
  }

  seal(session: Session): string {
    const payload = Buffer.from(JSON.stringify([session.tokenId, session.organizationId, session.expiresAt])).toString("base64url");
    return `${payload}.${this.#mac("session", payload)}`;
  }

  /** The session a cookie value holds, or null when it is forged, malformed or expired. */
  open(value: string | undefined, now: number): Session | null {
    if (!value || value.length > 1024) return null;
    const [payload, mac, ...rest] = value.split(".");
    if (!payload || !mac || rest.length > 0 || !equal(mac, this.#mac("session", payload))) return null;
    try {
      const [tokenId, organizationId, expiresAt] = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as unknown[];
      if (typeof tokenId !== "string" || typeof organizationId !== "string" || typeof expiresAt !== "number") return null;
      return expiresAt > now ? { tokenId, organizationId, expiresAt } : null;
    } catch {
      return null;
    }
  }

  /** The CSRF token of a session (the cookie's value). */
  csrfToken(cookie: string): string {
    return this.#mac("csrf", cookie);
  }

  checkCsrf(cookie: string, given: string | undefined): boolean {
    return typeof given === "string" && equal(given, this.csrfToken(cookie));
  }
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The value of cookie `name` in a Cookie header. */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function sessionCookie(value: string, options: { secure: boolean; maxAgeSeconds: number }): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${options.maxAgeSeconds}${options.secure ? "; Secure" : ""}`;
}
