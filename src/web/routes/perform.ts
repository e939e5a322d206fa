import { readOnlyRefusal } from "../../api/app.js";
import { HTTP_STATUS, validationError } from "../../api/errors.js";
import { OPERATIONS } from "../../api/operations.js";
import { AppError } from "../../app/errors.js";
import { mayWrite, type Principal } from "../../auth/tokens.js";
import type { RouteContext } from "./context.js";

/** An operation's outcome, as the notice a page shows: done (what it did), or refused (the application's message, with the status the API answers it with). */
export type OperationOutcome = { kind: "ok"; text: string } | { kind: "error"; text: string; status: number };

/**
 * Runs one of the API's operations for a page: its zod schema validates the body, its
 * application service handles it, a read-only token is refused as the API refuses it. Refusals
 * come back as notices with the application's message verbatim.
 */
export async function perform(
  { services, bundleUrls }: Pick<RouteContext, "services" | "bundleUrls">,
  principal: Principal,
  operationId: string,
  body: Record<string, unknown>,
  origin: string,
  done: string,
): Promise<OperationOutcome> {
  try {
    const op = OPERATIONS.find((o) => o.operationId === operationId)!;
    if (op.writes && !mayWrite(principal)) throw readOnlyRefusal(op.operationId);
    const parsed = op.request.safeParse(body);
    if (!parsed.success) throw validationError(parsed.error.issues);
    // Timelines and queue events name the dashboard as the way it was done (the API names its operation).
    let explained: string | undefined;
    const explain = (sentence: string) => {
      explained = sentence;
    };
    await op.handle({ services, principal: { ...principal, via: `dashboard (${op.operationId})` }, origin, bundleUrls, explain }, parsed.data);
    // Done without doing what was asked (a restart with nothing to restart): say why, not "done".
    return { kind: "ok", text: explained ?? done };
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { kind: "error", text: error.message, status: HTTP_STATUS[error.code] };
  }
}
