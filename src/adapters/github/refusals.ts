import { CodeHostRefusal } from "../../ports/code-host.js";

/** What Greenline was asking GitHub to do when it answered: the same status means different things per operation. */
export type GitHubOperation = "read" | "merge_pr" | "update_ref" | "create_ref" | "merge_branches" | "delete_ref" | "write";

type Headers = Record<string, string | number | undefined>;
type ErrorLike = { status?: number; message?: string; request?: { url?: string }; response?: { headers?: Headers; data?: unknown } };

/** Without a `retry-after` or a reset time, GitHub asks to wait at least a minute after a secondary rate limit. */
export const SECONDARY_RATE_LIMIT_WAIT_MS = 60_000;

/** GitHub's own message: `message` of the answer's body, else the error's. */
function messageOf(error: ErrorLike): string {
  const data = error.response?.data as { message?: unknown } | undefined;
  if (data && typeof data.message === "string" && data.message) return data.message;
  return error.message ?? String(error);
}

function header(headers: Headers | undefined, name: string): string | undefined {
  const value = headers?.[name];
  return value === undefined ? undefined : String(value);
}

/** When GitHub answered, by its own clock (the `date` header), else `now`: retry-after counts from there. */
function answeredAt(headers: Headers | undefined, now: number): number {
  const date = Date.parse(header(headers, "date") ?? "");
  return Number.isNaN(date) ? now : date;
}

/**
 * A rate limit, per GitHub's rules (docs/github.md, "Refusals and rate limits"): a 403 or 429
 * with `x-ratelimit-remaining: 0` is the primary limit, over until `x-ratelimit-reset` (epoch
 * seconds); a 403 or 429 with `retry-after`, or whose message names the secondary rate limit,
 * is a secondary limit, over after `retry-after` seconds, else after a minute. null: not a
 * rate limit.
 */
export function rateLimitOf(error: unknown, now: number = Date.now()): CodeHostRefusal | null {
  const e = (error ?? {}) as ErrorLike;
  if (e.status !== 403 && e.status !== 429) return null;
  const headers = e.response?.headers;
  const message = messageOf(e);
  const retryAfter = Number(header(headers, "retry-after"));
  if (header(headers, "retry-after") !== undefined && Number.isFinite(retryAfter)) return new CodeHostRefusal("rate_limited", message, answeredAt(headers, now) + retryAfter * 1000);
  const reset = Number(header(headers, "x-ratelimit-reset"));
  if (header(headers, "x-ratelimit-remaining") === "0") return new CodeHostRefusal("rate_limited", message, Number.isFinite(reset) ? reset * 1000 : answeredAt(headers, now) + SECONDARY_RATE_LIMIT_WAIT_MS);
  if (/secondary rate limit|abuse detection|rate limit exceeded/i.test(message) || e.status === 429) {
    return new CodeHostRefusal("rate_limited", message, answeredAt(headers, now) + SECONDARY_RATE_LIMIT_WAIT_MS);
  }
  return null;
}

/** The request for an installation access token: `POST /app/installations/{id}/access_tokens`. */
const TOKEN_REQUEST = /\/app\/installations\/(\d+)\/access_tokens(?:$|\?)/;

/**
 * A refusal of the whole installation rather than of the request (docs/github.md,
 * "Suspended and uninstalled installations"): a 403 "This installation has been suspended",
 * to the token request or to any call made with a token issued before; a 404 to the token
 * request (the installation is gone: the App was uninstalled). null: not one.
 */
export function installationRefusalOf(error: unknown): CodeHostRefusal | null {
  if (error instanceof CodeHostRefusal) return error.kind === "installation_suspended" || error.kind === "installation_removed" ? error : null;
  const e = (error ?? {}) as ErrorLike;
  const message = messageOf(e);
  if (e.status === 403 && /installation has been suspended|installation .*\bsuspended\b/i.test(message)) return new CodeHostRefusal("installation_suspended", message);
  if (e.status === 404 && TOKEN_REQUEST.test(e.request?.url ?? "")) {
    const id = TOKEN_REQUEST.exec(e.request?.url ?? "")?.[1];
    return new CodeHostRefusal("installation_removed", `The GitHub App is not installed any more${id ? ` (installation ${id})` : ""}: GitHub answered ${message}`);
  }
  return null;
}

/**
 * Every refusal from GitHub, classified once (the rules and their sources: docs/github.md,
 * "Refusals and rate limits"). Callers only rely on the kinds; the message is GitHub's own,
 * shown to users as it is.
 */
export function refusalOf(error: unknown, operation: GitHubOperation, now: number = Date.now()): CodeHostRefusal {
  if (error instanceof CodeHostRefusal) return error;
  const e = (error ?? {}) as ErrorLike;
  const message = messageOf(e);
  const status = e.status;
  // No answer at all (network, timeout) or GitHub's own trouble: ask again later.
  if (status === undefined || status >= 500) return new CodeHostRefusal("transient", message);
  // The installation suspended or gone: no fault of the request's (before a 403 is read as a rate limit or a refusal).
  const installation = installationRefusalOf(error);
  if (installation) return installation;
  const rateLimit = rateLimitOf(error, now);
  if (rateLimit) return rateLimit;
  if (status === 404 || status === 410) return new CodeHostRefusal("not_found", message);
  // An installation token expired or was revoked mid-flight: a new one is asked for next time.
  if (status === 401) return new CodeHostRefusal("transient", message);
  if (status === 403) {
    // "Resource not accessible by integration": the installation lacks a permission; other 403s
    // of a write are the branch's protection or rules refusing the App.
    if (/not accessible by integration|permission/i.test(message)) return new CodeHostRefusal("permission_missing", message);
    return new CodeHostRefusal(operation === "read" ? "permission_missing" : "cannot_merge", message);
  }
  // A change to .github/workflows/ without the `workflows` permission (docs/github.md, "Permissions").
  if (/without `?workflows`? permission/i.test(message)) return new CodeHostRefusal("permission_missing", message);
  switch (operation) {
    case "merge_pr":
      // 409 "Head branch was modified", 405 "Base branch was modified" (both come with either
      // status); any other 405 is GitHub's reason not to merge (checks, reviews, method…).
      if (/base branch (was|has been) modified/i.test(message)) return new CodeHostRefusal("target_moved", message);
      if (status === 409 || /head branch (was|has been) modified/i.test(message)) return new CodeHostRefusal("head_moved", message);
      return new CodeHostRefusal("cannot_merge", message);
    case "merge_branches":
      if (status === 409) return new CodeHostRefusal("conflict", message);
      break;
    case "update_ref":
      if (status === 422 && /fast.forward/i.test(message)) return new CodeHostRefusal("target_moved", message);
      if (status === 422 && /reference does not exist/i.test(message)) return new CodeHostRefusal("not_found", message);
      break;
    case "delete_ref":
      if (status === 422 && /reference does not exist/i.test(message)) return new CodeHostRefusal("not_found", message);
      break;
    default:
      break;
  }
  // 400, 405, 409, 422, 451: GitHub will not, whatever the number of times it is asked.
  return new CodeHostRefusal("cannot_merge", message);
}
