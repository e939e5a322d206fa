import type { Response } from "express";
import type { z } from "zod";
import { AppError, appErrorOfRefusal, isUniqueViolation, type ErrorCode, type ErrorDetail } from "../app/errors.js";
import type { Logger } from "../log.js";

export const HTTP_STATUS: Record<ErrorCode, number> = {
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  failed_precondition: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
};

/** Seconds a client is asked to wait before retrying an "unavailable" answer (Retry-After). */
export const RETRY_AFTER_SECONDS = 1;

export function sendError(res: Response, error: AppError): void {
  if (res.headersSent) return;
  if (error.code === "unavailable") res.setHeader("retry-after", String(RETRY_AFTER_SECONDS));
  res.status(HTTP_STATUS[error.code]).json({ error: { code: error.code, message: error.message, details: error.details } });
}

/** Turns zod issues into one invalid_argument error naming each field and its rule. */
export function validationError(issues: z.core.$ZodIssue[], prefix?: string): AppError {
  const details: ErrorDetail[] = issues.slice(0, 20).map((issue) => {
    const path = [prefix, ...issue.path.map(String)].filter(Boolean).join(".") || "(body)";
    return { path, message: issue.message };
  });
  const message = details.map((d) => `${d.path}: ${d.message}`).join("; ");
  return new AppError("invalid_argument", message, details);
}

/**
 * Maps anything thrown while serving a request to the client's error. Unknown errors are
 * logged with their stack and answered with a bare "internal" error: nothing leaks.
 */
export function toAppError(error: unknown, log: Logger): AppError {
  if (error instanceof AppError) return error;
  // The code host refused or did not answer (GitHub down, rate limited, a permission missing).
  const refusal = appErrorOfRefusal(error);
  if (refusal) return refusal;
  // Prisma: unique constraint violated by a concurrent request.
  if (isUniqueViolation(error)) return new AppError("conflict", "a concurrent request changed the same record; retry");
  log.error({ err: error }, "unhandled error while serving a request");
  return new AppError("internal", "internal error");
}
