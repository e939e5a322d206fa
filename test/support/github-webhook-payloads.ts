import { createHash } from "node:crypto";
import type { SimulatorCommit, SimulatorEvent, SimulatorPullRequest } from "./github-simulator.js";

/**
 * The payload GitHub sends for each simulator event, field for field as GitHub's published
 * webhook schemas (@octokit/webhooks-schemas) require them, checked by
 * test/github/simulator-webhooks.test.ts. Identifiers are derived from names (stable across
 * runs); URLs are github.com's, since Greenline reads the host of `repository.html_url`.
 * Sources for each shape: docs/github.md, "Webhook deliveries in the simulator".
 */
export type WebhookContext = {
  /** The App's installation on the repository's owner, when there is one. */
  installationOf: (owner: string) => number | undefined;
  appId: number;
  now: () => Date;
};

export type Webhook = { name: string; action: string | undefined; payload: Record<string, unknown> };

const WEB = "https://github.com";
const API = "https://api.github.com";
const ZERO = "0".repeat(40);

/** A stable positive integer id for a name (users, repositories, nodes). */
export function idOf(name: string): number {
  return createHash("sha1").update(name.toLowerCase()).digest().readUInt32BE(0) % 1_000_000_000;
}

const nodeId = (kind: string, id: number) => Buffer.from(`${kind}:${id}`).toString("base64").replace(/=+$/, "");

export function userPayload(login: string): Record<string, unknown> {
  const id = idOf(`user:${login}`);
  const url = `${API}/users/${encodeURIComponent(login)}`;
  return {
    login,
    id,
    node_id: nodeId("U", id),
    avatar_url: `https://avatars.githubusercontent.com/u/${id}?v=4`,
    gravatar_id: "",
    url,
    html_url: `${WEB}/${login.endsWith("[bot]") ? `apps/${login.slice(0, -5)}` : login}`,
    followers_url: `${url}/followers`,
    following_url: `${url}/following{/other_user}`,
    gists_url: `${url}/gists{/gist_id}`,
    starred_url: `${url}/starred{/owner}{/repo}`,
    subscriptions_url: `${url}/subscriptions`,
    organizations_url: `${url}/orgs`,
    repos_url: `${url}/repos`,
    events_url: `${url}/events{/privacy}`,
    received_events_url: `${url}/received_events`,
    type: login.endsWith("[bot]") ? "Bot" : "User",
    site_admin: false,
  };
}

export function repositoryPayload(fullName: string, at: string): Record<string, unknown> {
  const [owner = "", name = ""] = fullName.split("/");
  const id = idOf(`repo:${fullName}`);
  const api = `${API}/repos/${owner}/${name}`;
  const web = `${WEB}/${owner}/${name}`;
  return {
    id,
    node_id: nodeId("R", id),
    name,
    full_name: `${owner}/${name}`,
    private: true,
    owner: { ...userPayload(owner), type: "Organization" },
    html_url: web,
    description: null,
    fork: false,
    url: api,
    forks_url: `${api}/forks`,
    keys_url: `${api}/keys{/key_id}`,
    collaborators_url: `${api}/collaborators{/collaborator}`,
    teams_url: `${api}/teams`,
    hooks_url: `${api}/hooks`,
    issue_events_url: `${api}/issues/events{/number}`,
    events_url: `${api}/events`,
    assignees_url: `${api}/assignees{/user}`,
    branches_url: `${api}/branches{/branch}`,
    tags_url: `${api}/tags`,
    blobs_url: `${api}/git/blobs{/sha}`,
    git_tags_url: `${api}/git/tags{/sha}`,
    git_refs_url: `${api}/git/refs{/sha}`,
    trees_url: `${api}/git/trees{/sha}`,
    statuses_url: `${api}/statuses/{sha}`,
    languages_url: `${api}/languages`,
    stargazers_url: `${api}/stargazers`,
    contributors_url: `${api}/contributors`,
    subscribers_url: `${api}/subscribers`,
    subscription_url: `${api}/subscription`,
    commits_url: `${api}/commits{/sha}`,
    git_commits_url: `${api}/git/commits{/sha}`,
    comments_url: `${api}/comments{/number}`,
    issue_comment_url: `${api}/issues/comments{/number}`,
    contents_url: `${api}/contents/{+path}`,
    compare_url: `${api}/compare/{base}...{head}`,
    merges_url: `${api}/merges`,
    archive_url: `${api}/{archive_format}{/ref}`,
    downloads_url: `${api}/downloads`,
    issues_url: `${api}/issues{/number}`,
    pulls_url: `${api}/pulls{/number}`,
    milestones_url: `${api}/milestones{/number}`,
    notifications_url: `${api}/notifications{?since,all,participating}`,
    labels_url: `${api}/labels{/name}`,
    releases_url: `${api}/releases{/id}`,
    deployments_url: `${api}/deployments`,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: at,
    pushed_at: at,
    git_url: `git://github.com/${owner}/${name}.git`,
    ssh_url: `git@github.com:${owner}/${name}.git`,
    clone_url: `${web}.git`,
    svn_url: web,
    homepage: null,
    size: 1,
    stargazers_count: 0,
    watchers_count: 0,
    language: "TypeScript",
    has_issues: true,
    has_projects: true,
    has_downloads: true,
    has_wiki: false,
    has_pages: false,
    has_discussions: false,
    forks_count: 0,
    mirror_url: null,
    archived: false,
    disabled: false,
    open_issues_count: 0,
    license: null,
    allow_forking: true,
    is_template: false,
    web_commit_signoff_required: false,
    topics: [],
    visibility: "private",
    forks: 0,
    open_issues: 0,
    watchers: 0,
    default_branch: "main",
    custom_properties: {},
  };
}

/** A commit as push events list them. */
function pushCommitPayload(repo: string, commit: SimulatorCommit, at: string): Record<string, unknown> {
  const person = { name: "Octo Cat", email: "octocat@example.com", username: "octocat" };
  return {
    id: commit.sha,
    tree_id: treeIdOf(commit.sha),
    distinct: true,
    message: commit.message,
    timestamp: at,
    url: `${WEB}/${repo}/commit/${commit.sha}`,
    author: person,
    committer: person,
    added: commit.added,
    removed: commit.removed,
    modified: commit.modified,
  };
}

const treeIdOf = (sha: string) => createHash("sha1").update(`tree:${sha}`).digest("hex");

function installationLite(context: WebhookContext, repo: string): Record<string, unknown> {
  const id = context.installationOf(repo.split("/")[0] ?? "");
  return id === undefined ? {} : { installation: { id, node_id: nodeId("I", id) } };
}

function appPayload(context: WebhookContext, slug: string): Record<string, unknown> {
  const id = slug === "github-actions" ? 15368 : context.appId;
  return {
    id,
    slug,
    node_id: nodeId("A", id),
    owner: { ...userPayload(slug === "github-actions" ? "github" : "greenline"), type: "Organization" },
    name: slug === "github-actions" ? "GitHub Actions" : "Greenline",
    description: null,
    external_url: `${WEB}/apps/${slug}`,
    html_url: `${WEB}/apps/${slug}`,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
    permissions: {},
    events: [],
  };
}

const link = (href: string) => ({ href });

/** A pull request as `pull_request` events carry it (`simple` for the smaller one reviews carry). */
function pullRequestPayload(repo: string, pr: SimulatorPullRequest, at: string, simple = false): Record<string, unknown> {
  const api = `${API}/repos/${repo}`;
  const web = `${WEB}/${repo}`;
  const id = idOf(`pr:${repo}#${pr.number}`);
  const owner = repo.split("/")[0] ?? "";
  const repository = repositoryPayload(repo, at);
  const common = {
    url: `${api}/pulls/${pr.number}`,
    id,
    node_id: nodeId("PR", id),
    html_url: `${web}/pull/${pr.number}`,
    diff_url: `${web}/pull/${pr.number}.diff`,
    patch_url: `${web}/pull/${pr.number}.patch`,
    issue_url: `${api}/issues/${pr.number}`,
    number: pr.number,
    state: pr.state,
    locked: false,
    title: pr.title,
    user: userPayload(pr.author),
    body: null,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: at,
    closed_at: pr.state === "closed" ? at : null,
    merged_at: pr.merged ? at : null,
    merge_commit_sha: null,
    assignee: null,
    assignees: [],
    requested_reviewers: [],
    requested_teams: [],
    labels: [],
    milestone: null,
    draft: pr.draft,
    commits_url: `${api}/pulls/${pr.number}/commits`,
    review_comments_url: `${api}/pulls/${pr.number}/comments`,
    review_comment_url: `${api}/pulls/comments{/number}`,
    comments_url: `${api}/issues/${pr.number}/comments`,
    statuses_url: `${api}/statuses/${pr.headSha}`,
    head: { label: `${owner}:${pr.headRef}`, ref: pr.headRef, sha: pr.headSha, user: repository.owner, repo: repository },
    base: { label: `${owner}:${pr.base}`, ref: pr.base, sha: pr.baseSha, user: repository.owner, repo: repository },
    _links: {
      self: link(`${api}/pulls/${pr.number}`),
      html: link(`${web}/pull/${pr.number}`),
      issue: link(`${api}/issues/${pr.number}`),
      comments: link(`${api}/issues/${pr.number}/comments`),
      review_comments: link(`${api}/pulls/${pr.number}/comments`),
      review_comment: link(`${api}/pulls/comments{/number}`),
      commits: link(`${api}/pulls/${pr.number}/commits`),
      statuses: link(`${api}/statuses/${pr.headSha}`),
    },
    author_association: "MEMBER",
    auto_merge: null,
    active_lock_reason: null,
  };
  if (simple) return common;
  const mergeable = pr.state !== "open" || pr.mergeableState === "unknown" ? null : pr.mergeableState !== "dirty";
  return {
    ...common,
    merged: pr.merged,
    mergeable,
    rebaseable: mergeable,
    mergeable_state: pr.state === "open" ? pr.mergeableState : "unknown",
    merged_by: pr.merged ? userPayload("greenline[bot]") : null,
    comments: 0,
    review_comments: 0,
    maintainer_can_modify: false,
    commits: 1,
    additions: Object.keys(pr.files).length,
    deletions: 0,
    changed_files: Object.keys(pr.files).length,
  };
}

function reactionsPayload(url: string): Record<string, unknown> {
  return { url: `${url}/reactions`, total_count: 0, "+1": 0, "-1": 0, laugh: 0, hooray: 0, confused: 0, heart: 0, rocket: 0, eyes: 0 };
}

function issuePayload(repo: string, pr: SimulatorPullRequest, at: string): Record<string, unknown> {
  const api = `${API}/repos/${repo}/issues/${pr.number}`;
  const id = idOf(`issue:${repo}#${pr.number}`);
  return {
    url: api,
    repository_url: `${API}/repos/${repo}`,
    labels_url: `${api}/labels{/name}`,
    comments_url: `${api}/comments`,
    events_url: `${api}/events`,
    html_url: `${WEB}/${repo}/pull/${pr.number}`,
    id,
    node_id: nodeId("PR", id),
    number: pr.number,
    title: pr.title,
    user: userPayload(pr.author),
    labels: [],
    state: pr.state,
    locked: false,
    assignee: null,
    assignees: [],
    milestone: null,
    comments: 1,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: at,
    closed_at: pr.state === "closed" ? at : null,
    author_association: "MEMBER",
    active_lock_reason: null,
    draft: pr.draft,
    performed_via_github_app: null,
    pull_request: {
      url: `${API}/repos/${repo}/pulls/${pr.number}`,
      html_url: `${WEB}/${repo}/pull/${pr.number}`,
      diff_url: `${WEB}/${repo}/pull/${pr.number}.diff`,
      patch_url: `${WEB}/${repo}/pull/${pr.number}.patch`,
      merged_at: pr.merged ? at : null,
    },
    body: null,
    reactions: reactionsPayload(api),
    timeline_url: `${api}/timeline`,
    state_reason: null,
  };
}

function installationPayload(context: WebhookContext, installation: { id: number; account: string; suspended?: { by: string; at: string } }, at: string): Record<string, unknown> {
  return {
    id: installation.id,
    account: { ...userPayload(installation.account), type: "Organization" },
    repository_selection: "all",
    access_tokens_url: `${API}/app/installations/${installation.id}/access_tokens`,
    repositories_url: `${API}/installation/repositories`,
    html_url: `${WEB}/organizations/${installation.account}/settings/installations/${installation.id}`,
    app_id: context.appId,
    app_slug: "greenline",
    target_id: idOf(`user:${installation.account}`),
    target_type: "Organization",
    permissions: { checks: "read", contents: "write", issues: "write", metadata: "read", pull_requests: "write", statuses: "write" },
    events: ["check_run", "check_suite", "issue_comment", "pull_request", "pull_request_review", "push", "status"],
    created_at: at,
    updated_at: at,
    single_file_name: null,
    has_multiple_single_files: false,
    single_file_paths: [],
    // The `suspend` action names who suspended it, and when.
    suspended_by: installation.suspended ? userPayload(installation.suspended.by) : null,
    suspended_at: installation.suspended?.at ?? null,
  };
}

const repositoryLite = (fullName: string) => {
  const id = idOf(`repo:${fullName}`);
  return { id, node_id: nodeId("R", id), name: fullName.split("/")[1] ?? "", full_name: fullName, private: true };
};

/** GitHub's webhook (event name, action, payload) for a simulator event. */
export function webhookFor(event: SimulatorEvent, context: WebhookContext): Webhook {
  const at = context
    .now()
    .toISOString()
    .replace(/\.\d{3}Z$/, "Z");
  const sender = userPayload(event.sender);
  switch (event.kind) {
    case "push": {
      const commits = event.commits.map((c) => pushCommitPayload(event.repo, c, at));
      return {
        name: "push",
        action: undefined,
        payload: {
          ref: `refs/heads/${event.branch}`,
          before: event.before,
          after: event.after,
          repository: { ...repositoryPayload(event.repo, at), created_at: 1767225600, pushed_at: Math.floor(context.now().getTime() / 1000), stargazers: 0, master_branch: "main" },
          pusher: { name: event.sender, email: null },
          ...installationLite(context, event.repo),
          sender,
          created: event.created,
          deleted: event.deleted,
          forced: event.forced,
          base_ref: null,
          compare: event.created ? `${WEB}/${event.repo}/commit/${event.after.slice(0, 12)}` : `${WEB}/${event.repo}/compare/${event.before.slice(0, 12)}...${event.after.slice(0, 12)}`,
          commits,
          head_commit: event.deleted || event.after === ZERO ? null : (commits.at(-1) ?? null),
        },
      };
    }
    case "status": {
      const commitUrl = `${API}/repos/${event.repo}/commits/${event.sha}`;
      const person = { name: "Octo Cat", email: "octocat@example.com", date: at };
      return {
        name: "status",
        action: undefined,
        payload: {
          id: event.id,
          sha: event.sha,
          name: event.repo,
          target_url: event.targetUrl,
          avatar_url: null,
          context: event.context,
          description: event.description,
          state: event.state,
          commit: {
            sha: event.sha,
            node_id: nodeId("C", idOf(event.sha)),
            commit: {
              author: person,
              committer: person,
              message: event.commit.message,
              tree: { sha: treeIdOf(event.sha), url: `${API}/repos/${event.repo}/git/trees/${treeIdOf(event.sha)}` },
              url: `${API}/repos/${event.repo}/git/commits/${event.sha}`,
              comment_count: 0,
              verification: { verified: false, reason: "unsigned", signature: null, payload: null },
            },
            url: commitUrl,
            html_url: `${WEB}/${event.repo}/commit/${event.sha}`,
            comments_url: `${commitUrl}/comments`,
            author: userPayload("octocat"),
            committer: userPayload("web-flow"),
            parents: event.commit.parents.map((sha) => ({ sha, url: `${API}/repos/${event.repo}/commits/${sha}`, html_url: `${WEB}/${event.repo}/commit/${sha}` })),
          },
          branches: event.branches.map((b) => ({ name: b.name, commit: { sha: b.sha, url: `${API}/repos/${event.repo}/commits/${b.sha}` }, protected: b.name === "main" })),
          created_at: at,
          updated_at: at,
          repository: repositoryPayload(event.repo, at),
          ...installationLite(context, event.repo),
          sender,
        },
      };
    }
    case "check_run": {
      const run = event.checkRun;
      const api = `${API}/repos/${event.repo}`;
      const suite = {
        id: run.suiteId,
        node_id: nodeId("CS", run.suiteId),
        head_branch: event.branch,
        head_sha: run.headSha,
        status: run.status === "completed" ? "completed" : "queued",
        conclusion: null,
        url: `${api}/check-suites/${run.suiteId}`,
        before: null,
        after: run.headSha,
        pull_requests: [],
        app: appPayload(context, "github-actions"),
        created_at: at,
        updated_at: at,
      };
      return {
        name: "check_run",
        action: event.action,
        payload: {
          action: event.action,
          check_run: {
            id: run.id,
            node_id: nodeId("CR", run.id),
            head_sha: run.headSha,
            external_id: String(run.id),
            url: `${api}/check-runs/${run.id}`,
            html_url: `${WEB}/${event.repo}/runs/${run.id}`,
            details_url: `${WEB}/${event.repo}/actions/runs/${run.id}`,
            status: run.status,
            conclusion: run.conclusion,
            started_at: at,
            completed_at: run.status === "completed" ? at : null,
            output: { title: null, summary: null, text: null, annotations_count: 0, annotations_url: `${api}/check-runs/${run.id}/annotations` },
            name: run.name,
            check_suite: suite,
            app: appPayload(context, "github-actions"),
            pull_requests: [],
          },
          repository: repositoryPayload(event.repo, at),
          ...installationLite(context, event.repo),
          sender,
        },
      };
    }
    case "check_suite": {
      const api = `${API}/repos/${event.repo}`;
      const person = { name: "Octo Cat", email: "octocat@example.com" };
      return {
        name: "check_suite",
        action: event.action,
        payload: {
          action: event.action,
          check_suite: {
            id: event.suiteId,
            node_id: nodeId("CS", event.suiteId),
            head_branch: event.branch,
            head_sha: event.headSha,
            status: "completed",
            conclusion: event.conclusion,
            url: `${api}/check-suites/${event.suiteId}`,
            before: null,
            after: event.headSha,
            pull_requests: [],
            app: appPayload(context, "github-actions"),
            created_at: at,
            updated_at: at,
            rerequestable: true,
            runs_rerequestable: true,
            latest_check_runs_count: event.runs,
            check_runs_url: `${api}/check-suites/${event.suiteId}/check-runs`,
            head_commit: { id: event.headSha, tree_id: treeIdOf(event.headSha), message: "", timestamp: at, author: person, committer: person },
          },
          repository: repositoryPayload(event.repo, at),
          ...installationLite(context, event.repo),
          sender,
        },
      };
    }
    case "pull_request": {
      const extra = event.action === "synchronize" ? { before: event.before, after: event.after } : event.action === "edited" ? { changes: event.changes ?? {} } : {};
      return {
        name: "pull_request",
        action: event.action,
        payload: {
          action: event.action,
          number: event.pr.number,
          ...extra,
          pull_request: pullRequestPayload(event.repo, event.pr, at),
          repository: repositoryPayload(event.repo, at),
          ...installationLite(context, event.repo),
          sender,
        },
      };
    }
    case "pull_request_review": {
      const api = `${API}/repos/${event.repo}/pulls/${event.pr.number}`;
      const html = `${WEB}/${event.repo}/pull/${event.pr.number}`;
      return {
        name: "pull_request_review",
        action: event.action,
        payload: {
          action: event.action,
          review: {
            id: event.review.id,
            node_id: nodeId("PRR", event.review.id),
            user: sender,
            body: event.review.body,
            commit_id: event.review.commitId,
            submitted_at: at,
            state: event.review.state,
            html_url: `${html}#pullrequestreview-${event.review.id}`,
            pull_request_url: api,
            author_association: "MEMBER",
            _links: { html: link(`${html}#pullrequestreview-${event.review.id}`), pull_request: link(api) },
          },
          pull_request: pullRequestPayload(event.repo, event.pr, at, true),
          repository: repositoryPayload(event.repo, at),
          ...installationLite(context, event.repo),
          sender,
        },
      };
    }
    case "issue_comment": {
      const api = `${API}/repos/${event.repo}/issues/comments/${event.comment.id}`;
      return {
        name: "issue_comment",
        action: event.action,
        payload: {
          action: event.action,
          issue: issuePayload(event.repo, event.pr, at),
          comment: {
            url: api,
            html_url: `${WEB}/${event.repo}/pull/${event.pr.number}#issuecomment-${event.comment.id}`,
            issue_url: `${API}/repos/${event.repo}/issues/${event.pr.number}`,
            id: event.comment.id,
            node_id: nodeId("IC", event.comment.id),
            user: sender,
            created_at: at,
            updated_at: at,
            author_association: "MEMBER",
            body: event.comment.body,
            reactions: reactionsPayload(api),
            performed_via_github_app: null,
          },
          repository: repositoryPayload(event.repo, at),
          ...installationLite(context, event.repo),
          sender,
        },
      };
    }
    case "installation":
      return {
        name: "installation",
        action: event.action,
        payload: {
          action: event.action,
          installation: installationPayload(context, event.installation, at),
          ...(event.action === "created" || event.action === "deleted" ? { repositories: event.repositories.map(repositoryLite) } : {}),
          sender,
        },
      };
    case "installation_repositories":
      return {
        name: "installation_repositories",
        action: event.action,
        payload: {
          action: event.action,
          installation: { ...installationPayload(context, event.installation, at), repository_selection: "selected" },
          repository_selection: "selected",
          repositories_added: event.added.map(repositoryLite),
          repositories_removed: event.removed.map(repositoryLite),
          requester: null,
          sender,
        },
      };
  }
}
