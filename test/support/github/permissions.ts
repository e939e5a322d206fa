/**
 * The GitHub App permission model of the simulator: what an installation was granted, and what
 * each repository route needs (from "Permissions required for GitHub Apps",
 * https://docs.github.com/en/rest/authentication/permissions-required-for-github-apps, and the
 * "Fine-grained access" box of each endpoint's page). A call the grant does not cover answers
 * 403 "Resource not accessible by integration", as GitHub does.
 */
export type Permission = "actions" | "administration" | "checks" | "contents" | "issues" | "metadata" | "pull_requests" | "statuses" | "workflows";
export type Access = "read" | "write";
export type Permissions = Partial<Record<Permission, Access>>;

/** What Greenline's app.yml asks for. */
export const DEFAULT_PERMISSIONS: Permissions = {
  actions: "write",
  checks: "write",
  contents: "write",
  issues: "write",
  metadata: "read",
  pull_requests: "write",
  statuses: "write",
};

export const NOT_ACCESSIBLE = {
  message: "Resource not accessible by integration",
  documentation_url: "https://docs.github.com/rest",
  status: "403",
};

/** Any one of these grants the call. */
type Need = [Permission, Access][];

const R = "[^/]+";
const ROUTES: [string, RegExp, Need][] = [
  // Branch protection: administration (read to read it).
  ["GET", new RegExp(`^/repos/${R}/${R}/branches/.+/protection(/.*)?$`), [["administration", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/branches/.+$`), [["metadata", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/rules/branches/.+$`), [["metadata", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/rulesets(/\\d+)?$`), [["metadata", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/collaborators/${R}/permission$`), [["metadata", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}$`), [["metadata", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/contents/.+$`), [["contents", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/compare/.+$`), [["contents", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/git/ref/.+$`), [["contents", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/git/commits/${R}$`), [["contents", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/git/blobs/${R}$`), [["contents", "read"]]],
  ["POST", new RegExp(`^/repos/${R}/${R}/git/refs$`), [["contents", "write"]]],
  ["PATCH", new RegExp(`^/repos/${R}/${R}/git/refs/.+$`), [["contents", "write"]]],
  ["DELETE", new RegExp(`^/repos/${R}/${R}/git/refs/.+$`), [["contents", "write"]]],
  ["POST", new RegExp(`^/repos/${R}/${R}/merges$`), [["contents", "write"]]],
  ["PUT", new RegExp(`^/repos/${R}/${R}/pulls/\\d+/merge$`), [["contents", "write"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/pulls(/\\d+)?$`), [["pull_requests", "read"]]],
  ["POST", new RegExp(`^/repos/${R}/${R}/pulls$`), [["pull_requests", "write"]]],
  ["PATCH", new RegExp(`^/repos/${R}/${R}/pulls/\\d+$`), [["pull_requests", "write"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/pulls/\\d+/reviews$`), [["pull_requests", "read"]]],
  ["POST", new RegExp(`^/repos/${R}/${R}/statuses/${R}$`), [["statuses", "write"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/commits/.+/status(es)?$`), [["statuses", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/commits/.+/check-runs$`), [["checks", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/commits/.+/check-suites$`), [["checks", "read"]]],
  ["POST", new RegExp(`^/repos/${R}/${R}/check-runs$`), [["checks", "write"]]],
  ["PATCH", new RegExp(`^/repos/${R}/${R}/check-runs/\\d+$`), [["checks", "write"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/check-runs/\\d+$`), [["checks", "read"]]],
  [
    "POST",
    new RegExp(`^/repos/${R}/${R}/issues/\\d+/comments$`),
    [
      ["issues", "write"],
      ["pull_requests", "write"],
    ],
  ],
  // "GitHub Apps must have the actions:read permission" (https://docs.github.com/en/rest/actions/workflow-runs#get-a-workflow-run).
  ["GET", new RegExp(`^/repos/${R}/${R}/actions/runs/\\d+$`), [["actions", "read"]]],
  // "GitHub Apps must have the actions:read permission" (https://docs.github.com/en/rest/actions/workflow-runs#list-workflow-runs-for-a-repository).
  ["GET", new RegExp(`^/repos/${R}/${R}/actions/runs$`), [["actions", "read"]]],
  ["GET", new RegExp(`^/repos/${R}/${R}/actions/jobs/\\d+$`), [["actions", "read"]]],
  // "GitHub Apps must have the actions:read permission" (https://docs.github.com/en/rest/actions/workflows#list-repository-workflows).
  ["GET", new RegExp(`^/repos/${R}/${R}/actions/workflows$`), [["actions", "read"]]],
  ["POST", new RegExp(`^/repos/${R}/${R}/actions/runs/\\d+/rerun(-failed-jobs)?$`), [["actions", "write"]]],
];

/** What a repository route needs; undefined for a route the table does not know (it answers 404 anyway). */
export function routeNeeds(method: string, path: string): Need | undefined {
  return ROUTES.find(([m, pattern]) => m === method && pattern.test(path))?.[2];
}

export function grants(granted: Permissions, permission: Permission, access: Access): boolean {
  const level = granted[permission];
  return level === "write" || (level === "read" && access === "read") || (permission === "metadata" && Object.keys(granted).length > 0);
}

export function covers(granted: Permissions, need: Need): boolean {
  return need.some(([permission, access]) => grants(granted, permission, access));
}
