import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The request a piece of work is done for, carried through its awaits (docs/operations.md,
 * "Logs"): an API request's id (its `x-request-id`, or the one the request log gave it) or a
 * GitHub delivery's id, so that the log lines of the queue decisions it made name it.
 */
const current = new AsyncLocalStorage<{ requestId: string }>();

export function withRequestId<T>(requestId: string, fn: () => Promise<T>): Promise<T> {
  return current.run({ requestId }, fn);
}

/** The id of the request the work in progress is for, if any. */
export function currentRequestId(): string | undefined {
  return current.getStore()?.requestId;
}
