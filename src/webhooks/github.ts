import { applyConfigFile } from "../flaky/config-file.js";
import type { Probot } from "probot";
import { handlePullRequestComment } from "../queue/comment-commands.js";
import { cancelOnPullRequestEvent } from "../queue/pull-requests.js";
import { reconcileCommit, reportStatus } from "../queue/status-checks.js";
import { noticeBranchHead } from "../queue/queue-events.js";
import { checkRunState, type CheckState } from "../domain/status-checks.js";
import type { Services } from "../app/services.js";
import type { CancelReason } from "../domain/engine/types.js";
import { forgetInstallation, noticeInstallationSuspended, registerInstallation } from "./services/installations.js";
import { recordDelivery, type InboundDelivery } from "./services/inbox.js";
import { askReadinessRecheck } from "../queue/readiness-rechecks.js";
import { repositoryKey } from "../ports/code-host.js";

/** The repository a webhook payload is about. */
const repoOf = (repository: { html_url: string; name: string; owner: { login: string } }) => ({
  host: new URL(repository.html_url).host,
  owner: repository.owner.login,
  name: repository.name,
});

/**
 * The webhook route's whole work for a verified delivery: record it in the inbox (once per
 * delivery id) and return, so GitHub is answered at once; the worker runs the handlers below.
 */
export async function recordGitHubDelivery(services: Services, delivery: InboundDelivery): Promise<void> {
  const payload = (delivery.payload ?? {}) as { action?: unknown; repository?: { html_url?: unknown; name?: unknown; owner?: { login?: unknown; name?: unknown } } };
  const repository = payload.repository;
  let key = "";
  if (repository && typeof repository.html_url === "string" && typeof repository.name === "string") {
    const owner = repository.owner?.login ?? repository.owner?.name;
    if (typeof owner === "string" && URL.canParse(repository.html_url)) key = repositoryKey(repoOf({ html_url: repository.html_url, name: repository.name, owner: { login: owner } }));
  }
  const action = typeof payload.action === "string" ? payload.action : null;
  await recordDelivery(services, { ...delivery, action, repositoryKey: key });
}

/**
 * The Probot app: webhooks from GitHub. An installation makes its account an organization of
 * Greenline (slug = account login), owning that account's repositories. CI results on testing
 * branches decide runs; a push to a target outside the queue restarts stale runs; a queued PR
 * that gets new commits, is closed (or merged outside the queue) or moves to another base
 * branch leaves its queues, cancelled with that reason; `/greenline …` comments on pull requests
 * are commands. `services` is read when a delivery
 * arrives (the services are built after the Probot app is loaded).
 */
export function createGitHubApp(services: () => Services) {
  return (app: Probot) => {
    // A push to a queue's target branch (the queue's own merges are recognized as such).
    app.on("push", async (context) => {
      const { ref, before, after, deleted, repository } = context.payload;
      if (deleted || !ref.startsWith("refs/heads/")) return;
      const repo = repoOf({ html_url: repository.html_url, name: repository.name, owner: { login: repository.owner?.login ?? repository.owner?.name ?? "" } });
      const branch = ref.slice("refs/heads/".length);
      // A new target may turn a PR waiting on conflicts (or behind) ready: re-read those not ready.
      await askReadinessRecheck(services(), repo, { all: true, onlyNotReady: true }, branch);
      await noticeBranchHead(services(), repo, branch, after, before);
      // The repository's config file lives on its default branch (read at its head: docs/decisions.md).
      if (branch === repository.default_branch) await applyConfigFile(services(), repo, branch);
    });
    // CI results on testing branches: commit statuses and check runs.
    app.on("status", async (context) => {
      const { sha, context: name, state, repository, id } = context.payload;
      // On a PR's head: required checks may now let a blocked PR merge.
      await askReadinessRecheck(services(), repoOf(repository), { headSha: sha, onlyNotReady: true });
      await reportStatus(services(), repoOf(repository), sha, { context: name, state: state as CheckState, kind: "status", id });
    });
    app.on(["check_run.created", "check_run.completed", "check_run.rerequested"], async (context) => {
      const { check_run: run, repository } = context.payload;
      await askReadinessRecheck(services(), repoOf(repository), { headSha: run.head_sha, onlyNotReady: true });
      const rerun = context.payload.action === "rerequested";
      await reportStatus(services(), repoOf(repository), run.head_sha, { context: run.name, state: rerun ? "pending" : checkRunState(run.status, run.conclusion), kind: "check_run", id: run.id, rerun });
    });
    app.on(["pull_request.synchronize", "pull_request.closed", "pull_request.edited"], async (context) => {
      const { pull_request: pr, repository } = context.payload;
      let reason: CancelReason | null = null;
      if (context.payload.action === "synchronize") reason = "pr_updated";
      else if (context.payload.action === "closed") reason = "pr_closed";
      else if (context.payload.action === "edited" && "changes" in context.payload && context.payload.changes.base) reason = "base_branch_changed";
      if (!reason) return;
      const cancelled = await cancelOnPullRequestEvent(services(), repoOf(repository), pr.number, reason, pr.head.sha, pr.base.ref, reason === "pr_closed" && pr.merged ? pr.base.ref : undefined);
      if (cancelled > 0) context.log.info({ repo: repository.full_name, pr: pr.number, reason, queues: cancelled }, "pull request left its queues");
    });
    // Events that may change whether a waiting PR can merge: the worker re-reads it from GitHub.
    app.on("check_suite.completed", async (context) => {
      const { check_suite: suite, repository } = context.payload;
      await askReadinessRecheck(services(), repoOf(repository), { headSha: suite.head_sha, onlyNotReady: true });
      // On a testing branch: a suite that completed may decide its run (every check of it now known).
      await reconcileCommit(services(), repoOf(repository), suite.head_sha);
    });
    app.on(["pull_request_review.submitted", "pull_request_review.dismissed", "pull_request_review.edited"], async (context) => {
      const { pull_request: pr, repository } = context.payload;
      await askReadinessRecheck(services(), repoOf(repository), { prNumber: pr.number });
    });
    app.on(["pull_request.ready_for_review", "pull_request.converted_to_draft", "pull_request.edited", "pull_request.reopened"], async (context) => {
      const { pull_request: pr, repository } = context.payload;
      await askReadinessRecheck(services(), repoOf(repository), { prNumber: pr.number });
    });
    // `/greenline merge` and the other comment commands, on pull requests (bots are not heard).
    app.on("issue_comment.created", async (context) => {
      const { issue, comment, repository } = context.payload;
      if (!issue.pull_request || comment.user?.type === "Bot") return;
      await handlePullRequestComment(services(), { repo: repoOf(repository), prNumber: issue.number, author: comment.user?.login ?? "", body: comment.body });
    });
    app.on(["installation.created", "installation.new_permissions_accepted", "installation.unsuspend", "installation_repositories"], async (context) => {
      const { id, account } = context.payload.installation;
      const login = account && "login" in account ? account.login : String(id);
      const htmlUrl = account && "html_url" in account ? account.html_url : null;
      // Installed (again), unsuspended, or its permissions accepted: the installation works, its queues go on.
      const resumes = context.name === "installation";
      await registerInstallation(services(), { id, login, htmlUrl }, { resumes });
      context.log.info({ installation: id, account: login, event: context.name, action: context.payload.action }, "installation registered");
    });
    // Who may push changed: the command authors' permissions kept for a minute
    // (GitHubPullRequests.permissionOf) are forgotten at once. GitHub sends these only to an App
    // with the organization's Members permission, which app.yml does not ask for: without them
    // the minute bounds how long a revoked access is still obeyed (docs/github.md, "Permissions").
    app.on("member", async (context) => {
      const { member, repository } = context.payload;
      const owner = repository?.owner?.login;
      if (owner) services().codeHost.forgetPermissions?.({ owner, repo: repository.name, ...(member ? { user: member.login } : {}) });
    });
    app.on(["membership", "organization"], async (context) => {
      const payload = context.payload as { organization?: { login: string }; member?: { login: string }; membership?: { user?: { login: string } | null } };
      const user = payload.member?.login ?? payload.membership?.user?.login;
      if (payload.organization) services().codeHost.forgetPermissions?.({ owner: payload.organization.login, ...(user ? { user } : {}) });
    });
    app.on(["repository", "team"], async (context) => {
      const payload = context.payload as { repository?: { name: string; owner: { login: string } }; organization?: { login: string } };
      // A team's change names the repository it was added to or removed from, or only the organization.
      if (payload.repository) services().codeHost.forgetPermissions?.({ owner: payload.repository.owner.login, repo: payload.repository.name });
      else if (payload.organization) services().codeHost.forgetPermissions?.({ owner: payload.organization.login });
    });
    app.on("installation.suspend", async (context) => {
      const { id, account } = context.payload.installation;
      const login = account && "login" in account ? account.login : String(id);
      await noticeInstallationSuspended(services(), { id, login, htmlUrl: account && "html_url" in account ? account.html_url : null });
      context.log.info({ installation: id }, "installation suspended");
    });
    app.on("installation.deleted", async (context) => {
      const { id, account } = context.payload.installation;
      const login = account && "login" in account ? account.login : String(id);
      await forgetInstallation(services(), { id, login, htmlUrl: account && "html_url" in account ? account.html_url : null });
    });
  };
}
