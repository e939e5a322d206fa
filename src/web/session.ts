import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { TokenRole } from "../auth/tokens.js";

/**
 * The dashboard's session: a cookie holding who signed in, their organization and an expiry,
 * signed with HMAC-SHA256 (GREENLINE_SESSION_SECRET, or a key kept in the data directory). Its subject
 * is either an API token (`token`: its id; every request checks that the token exists and is not
 * revoked) or a GitHub user (`github`: the login and the role GitHub's permissions gave at sign-in;
 * every request checks that the organization still has an installation of the App). It holds no
 * secret. The CSRF token is derived from the session (a synchronizer token nobody else can compute).
 */
export type SessionSubject = { kind: "token"; tokenId: string } | { kind: "github"; login: string; role: TokenRole };
export type Session = { subject: SessionSubject; organizationId: string; expiresAt: number };

export const SESSION_COOKIE = "greenline_session";
export const SESSION_MS = 12 * 60 * 60 * 1000;
/** A GitHub session is shorter: membership and role are only re-read from GitHub at sign-in. */
export const GITHUB_SESSION_MS = 60 * 60 * 1000;

/** The value a subject is sealed as: [kind, ...fields]. */
function subjectFields(subject: SessionSubject): unknown[] {
  return subject.kind === "token" ? ["token", subject.tokenId] : ["github", subject.login, subject.role];
}

function subjectOf(fields: unknown): SessionSubject | null {
  // Sessions sealed before GitHub sign-in held the token id alone: they stay valid.
  if (typeof fields === "string") return { kind: "token", tokenId: fields };
  if (!Array.isArray(fields)) return null;
  const [kind, a, b] = fields as unknown[];
  if (kind === "token" && typeof a === "string" && fields.length === 2) return { kind, tokenId: a };
  if (kind === "github" && typeof a === "string" && (b === "read" || b === "write") && fields.length === 3) return { kind, login: a, role: b };
  return null;
}

export class SessionKeys {
  readonly #key: Buffer;

  constructor(secret: string | undefined) {
    this.#key = secret ? Buffer.from(secret, "utf8") : randomBytes(32);
  }

  #mac(purpose: string, text: string): string {
    return createHmac("sha256", this.#key).update(`${purpose}\n${text}`).digest("base64url");
  }

  /** `value` signed for `purpose`: base64url(JSON) + "." + HMAC. */
  sign(purpose: string, value: unknown): string {
    const payload = Buffer.from(JSON.stringify(value)).toString("base64url");
    return `${payload}.${this.#mac(purpose, payload)}`;
  }

  /** What `sign(purpose, …)` signed, or undefined when the text is forged or malformed. */
  verify(purpose: string, text: string | undefined): unknown {
    if (!text || text.length > 4096) return undefined;
    const [payload, mac, ...rest] = text.split(".");
    if (!payload || !mac || rest.length > 0 || !equal(mac, this.#mac(purpose, payload))) return undefined;
    try {
      return JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as unknown;
    } catch {
      return undefined;
    }
  }

  seal(session: Session): string {
    return this.sign("session", [subjectFields(session.subject), session.organizationId, session.expiresAt]);
  }

  /** The session a cookie value holds, or null when it is forged, malformed or expired. */
  open(value: string | undefined, now: number): Session | null {
    const fields = this.verify("session", value && value.length <= 1024 ? value : undefined);
    if (!Array.isArray(fields) || fields.length !== 3) return null;
    const [sealed, organizationId, expiresAt] = fields as unknown[];
    const subject = subjectOf(sealed);
    if (!subject || typeof organizationId !== "string" || typeof expiresAt !== "number") return null;
    return expiresAt > now ? { subject, organizationId, expiresAt } : null;
  }

  /** The CSRF token of a session (the cookie's value). */
  csrfToken(cookie: string): string {
    return this.#mac("csrf", cookie);
  }

  checkCsrf(cookie: string, given: string | undefined): boolean {
    return typeof given === "string" && equal(given, this.csrfToken(cookie));
  }
}

/**
 * What a signed-out session is remembered by (src/store/sessions.ts): the SHA-256 of its
 * cookie's value, hex. (Two sign-ins of one subject within the same millisecond seal the same
 * cookie, and so are one session: signing out ends both.)
 */
export function sessionHash(cookie: string): string {
  return createHash("sha256").update(cookie, "utf8").digest("hex");
}

/** Whether two strings are equal, compared in constant time. */
export function equal(a: string, b: string): boolean {
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
  return cookie(SESSION_COOKIE, value, { ...options, path: "/" });
}

/** A Set-Cookie value: HTTP-only, SameSite=Lax (sent on the top-level GET back from GitHub), Secure on https. */
export function cookie(name: string, value: string, options: { secure: boolean; maxAgeSeconds: number; path: string }): string {
  return `${name}=${value}; Path=${options.path}; HttpOnly; SameSite=Lax; Max-Age=${options.maxAgeSeconds}${options.secure ? "; Secure" : ""}`;
}
