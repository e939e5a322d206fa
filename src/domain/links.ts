/** A repository as the links name it (the port's RepoRef has this shape). */
type RepoRef = { host: string; owner: string; name: string };

/**
 * The dashboard's addresses that leave the dashboard: the PR's commit status and comment link to
 * its page (when GREENLINE_PUBLIC_URL is configured). Every segment is URL-encoded; a branch's
 * slashes stay slashes, as on the queue page.
 */
export function queuePagePath(repo: RepoRef, branch: string): string {
  return `/queues/${queueSegments(repo, branch)}`;
}

/** A queue's preflight page (issue 26): its own prefix, since the queue page's branch may hold slashes. */
export function preflightPagePath(repo: RepoRef, branch: string): string {
  return `/preflight/${queueSegments(repo, branch)}`;
}

function queueSegments(repo: RepoRef, branch: string): string {
  return `${[repo.host, repo.owner, repo.name].map(encodeURIComponent).join("/")}/${branch.split("/").map(encodeURIComponent).join("/")}`;
}

/** A pull request's page in a queue: the queue's address, then `/pulls/<number>`. */
export function pullRequestPagePath(repo: RepoRef, branch: string, prNumber: number): string {
  return `${queuePagePath(repo, branch)}/pulls/${prNumber}`;
}
