/**
 * The REST answers of the simulated GitHub, shaped as api.github.com shapes them: every field
 * GitHub's published description requires, with plausible values (the conformance test checks
 * them against @octokit/openapi, so they cannot drift).
 */
const API = "https://api.github.com";
const WEB = "https://github.com";
const T0 = "2026-01-01T00:00:00Z";

export const nodeId = (kind: string, id: number | string) => Buffer.from(`0:${kind}${id}`).toString("base64").replace(/=+$/, "");
/** A stable positive id for a name (users, repositories). */
export function idOf(name: string): number {
  let h = 7;
  for (const c of name.toLowerCase()) h = (h * 31 + c.charCodeAt(0)) % 2_000_000_000;
  return h + 1;
}
const link = (href: string) => ({ href });

export function user(login: string, type: "User" | "Organization" | "Bot" = "User") {
  const url = `${API}/users/${login}`;
  return {
    login,
    id: idOf(login),
    node_id: nodeId("User", idOf(login)),
    avatar_url: `https://avatars.githubusercontent.com/u/${idOf(login)}?v=4`,
    gravatar_id: "",
    url,
    html_url: `${WEB}/${login}`,
    followers_url: `${url}/followers`,
    following_url: `${url}/following{/other_user}`,
    gists_url: `${url}/gists{/gist_id}`,
    starred_url: `${url}/starred{/owner}{/repo}`,
    subscriptions_url: `${url}/subscriptions`,
    organizations_url: `${url}/orgs`,
    repos_url: `${url}/repos`,
    events_url: `${url}/events{/privacy}`,
    received_events_url: `${url}/received_events`,
    type,
    site_admin: false,
    user_view_type: "public",
  };
}

/** `public-user`: what `GET /user` answers a user access token without the profile permission. */
export function publicUser(login: string) {
  return {
    ...user(login),
    name: null,
    company: null,
    blog: "",
    location: null,
    email: null,
    hireable: null,
    bio: null,
    public_repos: 0,
    public_gists: 0,
    followers: 0,
    following: 0,
    created_at: T0,
    updated_at: T0,
  };
}

/** A repository's `permissions` for a user with `permission` (what `GET /user/installations/{id}/repositories` includes). */
export function repositoryPermissions(permission: "admin" | "write" | "read") {
  return { admin: permission === "admin", maintain: permission === "admin", push: permission !== "read", triage: permission !== "read", pull: true };
}

/** The App as GitHub shows it (`app` of check runs and suites). */
export function app(appId: number) {
  return {
    id: appId,
    slug: "greenline",
    client_id: "Iv1.simulated",
    node_id: nodeId("App", appId),
    owner: user("greenline-dev", "Organization"),
    name: "Greenline",
    description: "Merge queue and flaky-test service.",
    external_url: "https://github.com/greenline-dev/greenline",
    html_url: `${WEB}/apps/greenline`,
    created_at: T0,
    updated_at: T0,
    permissions: { checks: "write", contents: "write", metadata: "read", pull_requests: "write", statuses: "write" },
    events: ["check_run", "pull_request", "push", "status"],
  };
}

/** A workflow as "List repository workflows" answers it. */
export function workflow(repo: string, w: { id: number; name: string; path: string; state: string }) {
  return {
    id: w.id,
    node_id: nodeId("Workflow", w.id),
    name: w.name,
    path: w.path,
    state: w.state,
    created_at: T0,
    updated_at: T0,
    url: `${API}/repos/${repo}/actions/workflows/${w.id}`,
    html_url: `${WEB}/${repo}/blob/main/${w.path}`,
    badge_url: `${WEB}/${repo}/workflows/${encodeURIComponent(w.name)}/badge.svg`,
  };
}

/** Another App (GitHub Actions, a CLA bot) as a check run names it: GitHub Actions is App 15368. */
export function otherApp(slug: string) {
  const id = slug === "github-actions" ? 15368 : 900_000 + [...slug].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 99_991, 7);
  return {
    id,
    slug,
    client_id: `Iv1.${slug}`,
    node_id: nodeId("App", id),
    owner: user(slug === "github-actions" ? "github" : `${slug}-owner`, "Organization"),
    name: slug === "github-actions" ? "GitHub Actions" : slug,
    description: "",
    external_url: slug === "github-actions" ? "https://help.github.com/en/actions" : `https://example.com/${slug}`,
    html_url: `${WEB}/apps/${slug}`,
    created_at: T0,
    updated_at: T0,
    permissions: { checks: "write", metadata: "read" },
    events: slug === "github-actions" ? ["check_run", "pull_request", "push"] : ["pull_request"],
  };
}

const REPO_URLS: Record<string, string> = {
  archive_url: "/{archive_format}{/ref}",
  assignees_url: "/assignees{/user}",
  blobs_url: "/git/blobs{/sha}",
  branches_url: "/branches{/branch}",
  collaborators_url: "/collaborators{/collaborator}",
  comments_url: "/comments{/number}",
  commits_url: "/commits{/sha}",
  compare_url: "/compare/{base}...{head}",
  contents_url: "/contents/{+path}",
  contributors_url: "/contributors",
  deployments_url: "/deployments",
  downloads_url: "/downloads",
  events_url: "/events",
  forks_url: "/forks",
  git_commits_url: "/git/commits{/sha}",
  git_refs_url: "/git/refs{/sha}",
  git_tags_url: "/git/tags{/sha}",
  hooks_url: "/hooks",
  issue_comment_url: "/issues/comments{/number}",
  issue_events_url: "/issues/events{/number}",
  issues_url: "/issues{/number}",
  keys_url: "/keys{/key_id}",
  labels_url: "/labels{/name}",
  languages_url: "/languages",
  merges_url: "/merges",
  milestones_url: "/milestones{/number}",
  notifications_url: "/notifications{?since,all,participating}",
  pulls_url: "/pulls{/number}",
  releases_url: "/releases{/id}",
  stargazers_url: "/stargazers",
  statuses_url: "/statuses/{sha}",
  subscribers_url: "/subscribers",
  subscription_url: "/subscription",
  tags_url: "/tags",
  teams_url: "/teams",
  trees_url: "/git/trees{/sha}",
};

export type RepositorySettings = {
  defaultBranch: string;
  allowMergeCommit: boolean;
  allowSquashMerge: boolean;
  allowRebaseMerge: boolean;
  /** "Automatically delete head branches": a PR's head branch is deleted when the PR merges. */
  deleteBranchOnMerge: boolean;
};

/** `minimal-repository`: names and URLs. */
export function minimalRepository(fullName: string) {
  const [owner, name] = fullName.split("/") as [string, string];
  const url = `${API}/repos/${fullName}`;
  return {
    id: idOf(fullName),
    node_id: nodeId("Repository", idOf(fullName)),
    name,
    full_name: fullName,
    owner: user(owner, "Organization"),
    private: true,
    html_url: `${WEB}/${fullName}`,
    description: null,
    fork: false,
    url,
    ...Object.fromEntries(Object.entries(REPO_URLS).map(([key, suffix]) => [key, url + suffix])),
  };
}

/** `repository` (and, with the extra counts, `full-repository`). */
export function repository(fullName: string, settings: RepositorySettings) {
  return {
    ...minimalRepository(fullName),
    clone_url: `${WEB}/${fullName}.git`,
    git_url: `git://github.com/${fullName}.git`,
    ssh_url: `git@github.com:${fullName}.git`,
    svn_url: `${WEB}/${fullName}`,
    mirror_url: null,
    homepage: null,
    language: "TypeScript",
    forks: 0,
    forks_count: 0,
    stargazers_count: 0,
    watchers: 0,
    watchers_count: 0,
    size: 100,
    default_branch: settings.defaultBranch,
    open_issues: 0,
    open_issues_count: 0,
    is_template: false,
    topics: [],
    has_issues: true,
    has_projects: false,
    has_wiki: false,
    has_pages: false,
    has_downloads: true,
    has_discussions: false,
    archived: false,
    disabled: false,
    visibility: "private",
    license: null,
    pushed_at: T0,
    created_at: T0,
    updated_at: T0,
    allow_merge_commit: settings.allowMergeCommit,
    allow_squash_merge: settings.allowSquashMerge,
    allow_rebase_merge: settings.allowRebaseMerge,
    delete_branch_on_merge: settings.deleteBranchOnMerge,
    network_count: 0,
    subscribers_count: 0,
  };
}

export type PullShape = {
  number: number;
  title: string;
  author: string;
  headSha: string;
  headRef: string;
  headRepo: string;
  base: string;
  baseSha: string;
  state: "open" | "closed";
  merged: boolean;
  mergeCommitSha: string | null;
  draft: boolean;
  mergeable: boolean | null;
  mergeableState: string;
  changedFiles: number;
};

export function pullRequest(fullName: string, settings: RepositorySettings, pr: PullShape) {
  const url = `${API}/repos/${fullName}/pulls/${pr.number}`;
  const html = `${WEB}/${fullName}/pull/${pr.number}`;
  const issue = `${API}/repos/${fullName}/issues/${pr.number}`;
  const [headOwner] = pr.headRepo.split("/") as [string];
  const [owner] = fullName.split("/") as [string];
  return {
    url,
    id: idOf(`${fullName}#${pr.number}`),
    node_id: nodeId("PullRequest", idOf(`${fullName}#${pr.number}`)),
    html_url: html,
    diff_url: `${html}.diff`,
    patch_url: `${html}.patch`,
    issue_url: issue,
    commits_url: `${url}/commits`,
    review_comments_url: `${url}/comments`,
    review_comment_url: `${API}/repos/${fullName}/pulls/comments{/number}`,
    comments_url: `${issue}/comments`,
    statuses_url: `${API}/repos/${fullName}/statuses/${pr.headSha}`,
    number: pr.number,
    state: pr.state,
    locked: false,
    title: pr.title,
    user: user(pr.author),
    body: null,
    labels: [],
    milestone: null,
    active_lock_reason: null,
    created_at: T0,
    updated_at: T0,
    closed_at: pr.state === "closed" ? T0 : null,
    merged_at: pr.merged ? T0 : null,
    merge_commit_sha: pr.mergeCommitSha,
    assignee: null,
    assignees: [],
    requested_reviewers: [],
    requested_teams: [],
    head: { label: `${headOwner}:${pr.headRef}`, ref: pr.headRef, sha: pr.headSha, user: user(headOwner), repo: repository(pr.headRepo, settings) },
    base: { label: `${owner}:${pr.base}`, ref: pr.base, sha: pr.baseSha, user: user(owner, "Organization"), repo: repository(fullName, settings) },
    _links: {
      self: link(url),
      html: link(html),
      issue: link(issue),
      comments: link(`${issue}/comments`),
      review_comments: link(`${url}/comments`),
      review_comment: link(`${API}/repos/${fullName}/pulls/comments{/number}`),
      commits: link(`${url}/commits`),
      statuses: link(`${API}/repos/${fullName}/statuses/${pr.headSha}`),
    },
    author_association: "MEMBER",
    auto_merge: null,
    draft: pr.draft,
    merged: pr.merged,
    mergeable: pr.mergeable,
    rebaseable: pr.mergeable,
    mergeable_state: pr.mergeableState,
    merged_by: pr.merged ? user("greenline[bot]", "Bot") : null,
    comments: 0,
    review_comments: 0,
    maintainer_can_modify: false,
    commits: 1,
    additions: pr.changedFiles,
    deletions: 0,
    changed_files: pr.changedFiles,
  };
}

export type StatusRecord = { id: number; repo: string; sha: string; context: string; state: string; description: string; targetUrl: string | null; creator: string };

export function status(s: StatusRecord) {
  return {
    url: `${API}/repos/${s.repo}/statuses/${s.sha}`,
    avatar_url: "https://avatars.githubusercontent.com/in/12345?v=4",
    id: s.id,
    node_id: nodeId("StatusContext", s.id),
    state: s.state,
    description: s.description || null,
    target_url: s.targetUrl,
    context: s.context,
    created_at: T0,
    updated_at: T0,
    creator: user(s.creator),
  };
}

export type CheckRunRecord = {
  id: number;
  repo: string;
  /** The repository's name as the test spelled it (events carry it). */
  displayRepo?: string;
  sha: string;
  name: string;
  status: "queued" | "in_progress" | "completed";
  conclusion: string | null;
  suiteId: number;
  headBranch: string | null;
  detailsUrl: string | null;
  /** The App that created it (its slug): `github-actions` for CI's, `greenline` for Greenline's own, another App's (a CLA bot). */
  appSlug?: string;
  /** The GitHub Actions workflow run whose job this check run is (a job's id is its check run's). */
  workflowRunId?: number;
  /** The workflow run's attempt the job ran in (a re-run's jobs are the next attempt's). */
  attempt?: number;
  /**
   * A job's steps as GitHub records them once it completed (`GET …/actions/jobs/{job_id}`); absent:
   * one step, "Run tests", concluding as the job does.
   */
  steps?: { name: string; conclusion: "success" | "failure" | "skipped" | "cancelled" }[];
};

/** A GitHub Actions job (`GET /repos/{owner}/{repo}/actions/jobs/{job_id}`): a check run of a workflow run, with its steps. */
export function job(c: CheckRunRecord & { workflowRunId: number }, w: { runAttempt: number; name: string }) {
  const done = c.status === "completed";
  const steps = done ? (c.steps ?? [{ name: "Run tests", conclusion: c.conclusion === "success" ? ("success" as const) : ("failure" as const) }]) : [];
  return {
    id: c.id,
    run_id: c.workflowRunId,
    run_url: `${API}/repos/${c.repo}/actions/runs/${c.workflowRunId}`,
    run_attempt: w.runAttempt,
    node_id: nodeId("CheckRun", c.id),
    head_sha: c.sha,
    head_branch: c.headBranch,
    url: `${API}/repos/${c.repo}/actions/jobs/${c.id}`,
    html_url: `${WEB}/${c.repo}/actions/runs/${c.workflowRunId}/job/${c.id}`,
    status: c.status,
    conclusion: c.conclusion,
    created_at: T0,
    started_at: T0,
    completed_at: done ? T0 : null,
    name: c.name,
    steps: steps.map((s, i) => ({ name: s.name, status: "completed" as const, conclusion: s.conclusion, number: i + 1, started_at: T0, completed_at: T0 })),
    check_run_url: `${API}/repos/${c.repo}/check-runs/${c.id}`,
    labels: ["ubuntu-latest"],
    runner_id: 1,
    runner_name: "GitHub Actions 1",
    runner_group_id: 2,
    runner_group_name: "GitHub Actions",
    workflow_name: w.name,
  };
}

export function checkRun(appId: number, c: CheckRunRecord) {
  return {
    id: c.id,
    node_id: nodeId("CheckRun", c.id),
    head_sha: c.sha,
    external_id: "",
    url: `${API}/repos/${c.repo}/check-runs/${c.id}`,
    html_url: `${WEB}/${c.repo}/runs/${c.id}`,
    details_url: c.detailsUrl ?? `${WEB}/${c.repo}/runs/${c.id}`,
    status: c.status,
    conclusion: c.conclusion,
    started_at: T0,
    completed_at: c.status === "completed" ? T0 : null,
    output: { title: null, summary: null, text: null, annotations_count: 0, annotations_url: `${API}/repos/${c.repo}/check-runs/${c.id}/annotations` },
    name: c.name,
    check_suite: { id: c.suiteId },
    app: c.appSlug === undefined || c.appSlug === "greenline" ? app(appId) : otherApp(c.appSlug),
    pull_requests: [],
  };
}

export function checkSuite(appId: number, repo: string, settings: RepositorySettings, suite: { id: number; sha: string; headBranch: string | null; runs: CheckRunRecord[] }) {
  const done = suite.runs.length > 0 && suite.runs.every((r) => r.status === "completed");
  const order = ["action_required", "cancelled", "timed_out", "failure", "neutral", "skipped", "stale", "success"];
  const conclusion = done ? (suite.runs.map((r) => r.conclusion ?? "success").sort((a, b) => order.indexOf(a) - order.indexOf(b))[0] ?? "success") : null;
  return {
    id: suite.id,
    node_id: nodeId("CheckSuite", suite.id),
    head_branch: suite.headBranch,
    head_sha: suite.sha,
    status: done ? "completed" : suite.runs.some((r) => r.status === "in_progress") ? "in_progress" : "queued",
    conclusion,
    url: `${API}/repos/${repo}/check-suites/${suite.id}`,
    before: null,
    after: suite.sha,
    pull_requests: [],
    app: app(appId),
    repository: minimalRepository(repo),
    created_at: T0,
    updated_at: T0,
    head_commit: {
      id: suite.sha,
      tree_id: suite.sha,
      message: "Commit",
      timestamp: T0,
      author: { name: "Octo Cat", email: "octocat@example.com" },
      committer: { name: "Octo Cat", email: "octocat@example.com" },
    },
    latest_check_runs_count: suite.runs.length,
    check_runs_url: `${API}/repos/${repo}/check-suites/${suite.id}/check-runs`,
    rerequestable: true,
    runs_rerequestable: true,
    settings,
  };
}

export function gitRef(repo: string, branch: string, sha: string) {
  return {
    ref: `refs/heads/${branch}`,
    node_id: nodeId("Ref", `${repo}:${branch}`),
    url: `${API}/repos/${repo}/git/refs/heads/${branch}`,
    object: { type: "commit", sha, url: `${API}/repos/${repo}/git/commits/${sha}` },
  };
}

export type CommitRecord = { sha: string; parents: string[]; message: string };

export function commit(repo: string, c: CommitRecord) {
  const person = { name: "Octo Cat", email: "octocat@example.com", date: T0 };
  return {
    url: `${API}/repos/${repo}/commits/${c.sha}`,
    sha: c.sha,
    node_id: nodeId("Commit", c.sha),
    html_url: `${WEB}/${repo}/commit/${c.sha}`,
    comments_url: `${API}/repos/${repo}/commits/${c.sha}/comments`,
    commit: {
      url: `${API}/repos/${repo}/git/commits/${c.sha}`,
      author: person,
      committer: person,
      message: c.message,
      comment_count: 0,
      tree: { sha: c.sha, url: `${API}/repos/${repo}/git/trees/${c.sha}` },
      verification: { verified: false, reason: "unsigned", payload: null, signature: null, verified_at: null },
    },
    author: user("octocat"),
    committer: user("web-flow"),
    parents: c.parents.map((sha) => ({ sha, url: `${API}/repos/${repo}/commits/${sha}`, html_url: `${WEB}/${repo}/commit/${sha}` })),
  };
}

/** `git-commit`: a commit of the Git database API. */
export function gitCommit(repo: string, c: CommitRecord) {
  const person = { name: "Octo Cat", email: "octocat@example.com", date: T0 };
  const tree = Buffer.from(c.sha).toString("hex").slice(0, 40);
  return {
    sha: c.sha,
    node_id: nodeId("Commit", c.sha),
    url: `${API}/repos/${repo}/git/commits/${c.sha}`,
    html_url: `${WEB}/${repo}/commit/${c.sha}`,
    author: person,
    committer: person,
    message: c.message,
    tree: { sha: tree, url: `${API}/repos/${repo}/git/trees/${tree}` },
    parents: c.parents.map((sha) => ({ sha, url: `${API}/repos/${repo}/git/commits/${sha}`, html_url: `${WEB}/${repo}/commit/${sha}` })),
    verification: { verified: false, reason: "unsigned", signature: null, payload: null, verified_at: null },
  };
}

export function comment(repo: string, c: { id: number; number: number; body: string; author: string }) {
  return {
    id: c.id,
    node_id: nodeId("IssueComment", c.id),
    url: `${API}/repos/${repo}/issues/comments/${c.id}`,
    html_url: `${WEB}/${repo}/pull/${c.number}#issuecomment-${c.id}`,
    issue_url: `${API}/repos/${repo}/issues/${c.number}`,
    body: c.body,
    user: user(c.author, c.author.endsWith("[bot]") ? "Bot" : "User"),
    created_at: T0,
    updated_at: T0,
    author_association: "NONE",
  };
}

export function installation(appId: number, id: number, account: string, permissions: Record<string, string>) {
  return {
    id,
    account: user(account, "Organization"),
    repository_selection: "all",
    access_tokens_url: `${API}/app/installations/${id}/access_tokens`,
    repositories_url: `${API}/installation/repositories`,
    html_url: `${WEB}/organizations/${account}/settings/installations/${id}`,
    app_id: appId,
    app_slug: "greenline",
    target_id: idOf(account),
    target_type: "Organization",
    permissions,
    events: ["check_run", "check_suite", "issue_comment", "pull_request", "pull_request_review", "push", "status"],
    created_at: T0,
    updated_at: T0,
    single_file_name: null,
    suspended_by: null,
    suspended_at: null,
  };
}

export type WorkflowRunRecord = {
  id: number;
  /** The repository the run belongs to (the PR's base repository, for a fork PR's run), as named. */
  repo: string;
  name: string;
  path: string;
  event: string;
  status: "queued" | "in_progress" | "completed";
  conclusion: string | null;
  headSha: string;
  headBranch: string;
  /** The repository the head commit comes from: a fork's, for a fork PR's `pull_request` run. */
  headRepo: string;
  runNumber: number;
  actor: string;
  /** 1, then one more per re-run (of all or of the failed jobs). */
  attempt: number;
  /** When the run was created (epoch ms, the simulator's clock): a run over 30 days old cannot be re-run. */
  createdAt: number;
  /** The check run ids of its jobs, as of its latest attempt (a re-run job replaces the failed one). */
  jobs: number[];
};

/** A `pull-request-minimal` entry of a workflow run's `pull_requests`. */
export function pullRequestMinimal(fullName: string, pr: { number: number; headRef: string; headSha: string; headRepo: string; base: string; baseSha: string }) {
  const repoRef = (name: string) => ({ id: idOf(name), url: `${API}/repos/${name}`, name: name.split("/")[1]! });
  return {
    id: idOf(`${fullName}#${pr.number}`),
    number: pr.number,
    url: `${API}/repos/${fullName}/pulls/${pr.number}`,
    head: { ref: pr.headRef, sha: pr.headSha, repo: repoRef(pr.headRepo) },
    base: { ref: pr.base, sha: pr.baseSha, repo: repoRef(fullName) },
  };
}

/**
 * `workflow-run` (`GET /repos/{owner}/{repo}/actions/runs/{run_id}`). `pull_requests` is what the
 * caller found: GitHub leaves it empty for a run from a fork (github/docs#22501).
 */
export function workflowRun(w: WorkflowRunRecord, pullRequests: ReturnType<typeof pullRequestMinimal>[]) {
  const url = `${API}/repos/${w.repo}/actions/runs/${w.id}`;
  const workflowId = idOf(`${w.repo}/${w.path}`);
  const suiteId = idOf(`${w.repo}/suite/${w.id}`);
  const createdAt = new Date(w.createdAt).toISOString().replace(/\.\d{3}Z$/, "Z");
  return {
    id: w.id,
    name: w.name,
    node_id: nodeId("WorkflowRun", w.id),
    check_suite_id: suiteId,
    check_suite_node_id: nodeId("CheckSuite", suiteId),
    head_branch: w.headBranch,
    head_sha: w.headSha,
    path: w.path,
    display_title: w.name,
    run_number: w.runNumber,
    run_attempt: w.attempt,
    referenced_workflows: [],
    event: w.event,
    status: w.status,
    conclusion: w.conclusion,
    workflow_id: workflowId,
    url,
    html_url: `${WEB}/${w.repo}/actions/runs/${w.id}`,
    pull_requests: pullRequests,
    created_at: createdAt,
    updated_at: createdAt,
    actor: user(w.actor),
    triggering_actor: user(w.actor),
    run_started_at: createdAt,
    jobs_url: `${url}/jobs`,
    logs_url: `${url}/logs`,
    check_suite_url: `${API}/repos/${w.repo}/check-suites/${suiteId}`,
    artifacts_url: `${url}/artifacts`,
    cancel_url: `${url}/cancel`,
    rerun_url: `${url}/rerun`,
    previous_attempt_url: w.attempt > 1 ? `${url}/attempts/${w.attempt - 1}` : null,
    workflow_url: `${API}/repos/${w.repo}/actions/workflows/${workflowId}`,
    head_commit: {
      id: w.headSha,
      tree_id: w.headSha,
      message: w.name,
      timestamp: T0,
      author: { name: w.actor, email: `${w.actor}@users.noreply.github.com` },
      committer: { name: "GitHub", email: "noreply@github.com" },
    },
    repository: minimalRepository(w.repo),
    head_repository: { ...minimalRepository(w.headRepo), fork: w.headRepo.toLowerCase() !== w.repo.toLowerCase() },
    head_repository_id: idOf(w.headRepo),
  };
}
