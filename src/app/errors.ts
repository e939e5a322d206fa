import { CodeHostRefusal } from "../ports/code-host.js";
import { DatabaseClosingError, isDatabaseBusy } from "../store/database.js";
import { QueueGoneError } from "../store/queues.js";

/** Error codes of the API (DESIGN.md), one per kind of failure a client can act on. */
export const ERROR_CODES = [
  "invalid_argument",
  "unauthenticated",
  "permission_denied",
  "not_found",
  "method_not_allowed",
  "conflict",
  "failed_precondition",
  "payload_too_large",
  "unsupported_media_type",
  "rate_limited",
  "internal",
  "unavailable",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export type ErrorDetail = { path: string; message: string };

/** A failure meant for the client: its message is shown as is, so it never holds secrets. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetail[] = [],
  ) {
    super(message);
    this.name = "AppError";
  }
}

export const permissionDenied = (message: string) => new AppError("permission_denied", message);
export const notFound = (message: string) => new AppError("not_found", message);
export const conflict = (message: string) => new AppError("conflict", message);
export const failedPrecondition = (message: string) => new AppError("failed_precondition", message);
export const invalidArgument = (path: string, message: string) => new AppError("invalid_argument", `${path}: ${message}`, [{ path, message }]);

/** Prisma's error for an insert or update that a unique constraint refused (a concurrent writer won). */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "P2002";
}

/**
 * A refusal of the code host met while serving a request, for the client (and a request that
 * came as the service shuts down, "unavailable"): a spent rate limit is "rate_limited" (with
 * when it resets), another transient one (the host down) "unavailable", both to retry later;
 * a permanent one is a failed precondition carrying the host's own words. Null for anything else.
 */
export function appErrorOfRefusal(error: unknown): AppError | null {
  // The service is shutting down: another replica (or this one, restarted) answers the retry.
  if (error instanceof DatabaseClosingError) return new AppError("unavailable", "the service is shutting down: retry");
  // The queue was deleted while the request read it: answered as if the request came just after.
  if (error instanceof QueueGoneError) return new AppError("not_found", "the queue was deleted while this request read it");
  // The database did not take the work within its bound (src/store/database.ts): retry shortly.
  if (isDatabaseBusy(error)) return new AppError("unavailable", "the service is busy: the database did not take the request in time; retry");
  if (!(error instanceof CodeHostRefusal)) return null;
  // The code host's rate limit is spent (a request that must ask it, such as creating a queue):
  // the client may try again then; nothing is wrong with Greenline.
  if (error.kind === "rate_limited") {
    const until = error.retryAt === null ? "" : ` until ${new Date(error.retryAt).toISOString()}`;
    return new AppError("rate_limited", `the code host's rate limit is spent${until}; try again then (${error.message})`);
  }
  // The App's installation on the account is suspended or gone: nothing wrong with the request.
  if (error.kind === "installation_suspended" || error.kind === "installation_removed") {
    return new AppError("failed_precondition", `the code host refuses the GitHub App on this account (${error.kind.replace("_", " ")}): ${error.message}`);
  }
  if (error.transient) {
    const when = error.retryAt !== null ? ` (retry after ${new Date(error.retryAt).toISOString()})` : "";
    return new AppError("unavailable", `the code host did not answer: ${error.message}${when}`);
  }
  return new AppError("failed_precondition", `the code host refused: ${error.message}`);
}
