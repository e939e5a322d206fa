import { CodeHostRefusal } from "../../ports/code-host.js";

/** What Greenline was asking GitHub to do when it answered: the same status means different things per operation. */
export type GitHubOperation = "read" | "merge_pr" | "update_ref" | "create_ref" | "merge_branches" | "delete_ref" | "write";

type ErrorLike = { status?: number; message?: string; response?: { headers?: Record<string, string | undefined>; data?: unknown } };

/** GitHub's own message: `message` of the answer's body, else the error's. */
function messageOf(error: ErrorLike): string {
  const data = error.response?.data as { message?: unknown } | undefined;
  if (data && typeof data.message === "string" && data.message) return data.message;
  return error.message ?? String(error);
}

/**
 * Every refusal from GitHub, classified once (the rules and their sources: docs/github.md).
 * First draft: the "refusals" work refines the rules; callers only rely on the kinds.
 */
export function refusalOf(error: unknown, operation: GitHubOperation): CodeHostRefusal {
  if (error instanceof CodeHostRefusal) return error;
  const e = (error ?? {}) as ErrorLike;
  const message = messageOf(e);
  const status = e.status;
  if (status === undefined || status >= 500) return new CodeHostRefusal("transient", message);
  if (status === 404) return new CodeHostRefusal("not_found", message);
  if (operation === "merge_pr") {
    if (status === 409) return new CodeHostRefusal("head_moved", message);
    if (status === 405) return new CodeHostRefusal("cannot_merge", message);
  }
  if (operation === "merge_branches" && status === 409) return new CodeHostRefusal("conflict", message);
  if (operation === "update_ref" && status === 422 && /fast.forward/i.test(message)) return new CodeHostRefusal("target_moved", message);
  if (status === 403 && /not accessible by integration/i.test(message)) return new CodeHostRefusal("permission_missing", message);
  // A change to .github/workflows/ without the `workflows` permission (docs/github.md, "Permissions").
  if (/without `?workflows`? permission/i.test(message)) return new CodeHostRefusal("permission_missing", message);
  return new CodeHostRefusal(status === 422 || status === 405 ? "cannot_merge" : "transient", message);
}
