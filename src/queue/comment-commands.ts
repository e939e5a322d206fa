import type { Principal } from "../auth/tokens.js";
import { repositoryKey, type PullRequestInfo, type RepoRef } from "../ports/code-host.js";
import { COMMENT_USAGE, parseCommentCommand } from "../domain/comment-commands.js";
import { resolvePriority } from "../domain/priority.js";
import { findQueue, lockQueueRow } from "../store/queues.js";
import { appendEffects } from "../store/effects.js";
import { repositoryOwnerByKey } from "../store/repositories.js";
import { AppError } from "../app/errors.js";
import { cancelPullRequest, MAX_STACK_DEPTH, submitPullRequest } from "./pull-requests.js";
import { freezeQueue, unfreezeQueue } from "./freezes.js";
import { untilText } from "../domain/freezes.js";
import type { Services } from "../app/services.js";

export type PullRequestComment = { repo: RepoRef; prNumber: number; author: string; body: string };

/** What a commenter must be allowed to do in the repository to move its pull requests through the queue (and freeze it). */
const MAY_COMMAND = new Set(["admin", "maintain", "write"]);
/** What a commenter must be to declare an emergency merge (a hotfix: it merges through a freeze): a repository admin or maintainer. */
const MAY_HOTFIX = new Set(["admin", "maintain"]);

/**
 * Carries out a `/greenline …` comment on a pull request and answers on the pull request (once
 * carried out, through the queue's outbox: replyLater). An accepted `/greenline merge` on a
 * queue that shows its status on PRs (`statusCheckEnabled`) gets no reply: the status says it
 * is queued and its place; refusals, errors, `cancel`, a priority or `--no-batch` (which the
 * status does not show) and queues without statuses are answered. The
 * command acts for the organization that owns the repository in Greenline, only on a queue
 * whose commands are enabled (`commandsEnabled`), and only for people who may push to the
 * repository (GitHub's answer, kept a minute when it allows: GitHubPullRequests.permissionOf).
 * Comments without a command are ignored; a repository Greenline does not know gets no answer.
 */
export async function handlePullRequestComment(services: Services, comment: PullRequestComment): Promise<void> {
  const command = parseCommentCommand(comment.body);
  if (command === null) return;
  const { repo, prNumber, author } = comment;
  const owner = await principalOf(services, repo);
  if (!owner) return;
  const reply = (text: string) => services.codeHost.commentOnPullRequest(repo, prNumber, text);
  if (command instanceof Error) return reply(`@${author} Greenline did not understand that: ${command.message}.\n\n${COMMENT_USAGE}`);
  if (command.kind === "help") return reply(COMMENT_USAGE);

  // The PR's base names the queue; the submission uses this read too when it says whether the
  // PR can merge (GitHub answers "still computing" to a first read: then it asks again).
  const read = command.targetBranch === null ? await services.codeHost.getPullRequest(repo, prNumber, { targetBranch: "", directMerge: false }) : null;
  let targetBranch = command.targetBranch ?? read?.baseBranch;
  if (targetBranch === undefined) return;
  let queue = await services.db.read((tx) => findQueue(tx, owner.organizationId, repositoryKey(repo), targetBranch!));
  // A queue whose settings turn comment commands off does not hear them (the API still works).
  const disabled = () => {
    services.log?.info({ repository: repositoryKey(repo), pr: prNumber, branch: targetBranch, command: command.kind }, "comment command ignored: the queue has commands disabled");
  };
  if (queue && !queue.commandsEnabled) return disabled();
  const permission = await services.codeHost.permissionOf(repo, author);
  if (!MAY_COMMAND.has(permission)) {
    return reply(`@${author} only people who can push to ${repo.owner}/${repo.name} can use the merge queue (your access: ${permission}).`);
  }
  // A stacked PR (based on another PR's branch) belongs to the queue of the branch its stack is
  // based on (docs/stacks.md); looked for only for people who may use the queue.
  if (!queue && read && command.targetBranch === null) {
    const found = await stackQueueOf(services, owner.organizationId, repo, read);
    if (found) [targetBranch, queue] = [found.branch, found];
    if (queue && !queue.commandsEnabled) return disabled();
  }
  if (command.kind === "merge" && command.emergencyReason !== null && !MAY_HOTFIX.has(permission)) {
    return reply(`@${author} only admins and maintainers of ${repo.owner}/${repo.name} can declare an emergency merge (your access: ${permission}). \`/greenline merge\` without \`--emergency\` queues it in line.`);
  }
  const address = { repo, targetBranch, prNumber };
  // Timelines and queue events name the commenter and the command.
  // A repository admin or maintainer acts with an admin's rights (an emergency merge), others with write.
  const principal: Principal = { ...owner, role: MAY_HOTFIX.has(permission) ? "admin" : "write", actor: { kind: "user", name: author }, via: `/greenline ${command.kind}` };
  try {
    if (command.kind === "merge") {
      const { stack } = await submitPullRequest(services, principal, { ...address, priority: command.priority, noBatch: command.noBatch, emergencyReason: command.emergencyReason, ...(read ? { read } : {}) });
      // A stack: the PRs that entered with it are named (someone may not have meant them).
      if (stack.length > 0) {
        const others = stack.map((n) => `#${n}`).join(", ");
        await replyLater(
          services,
          queue?.id,
          prNumber,
          `@${author} queued for \`${targetBranch}\` with the pull requests it is stacked on (${others}): tested together on top of the line, merged bottom-up (docs/stacks.md).`,
          reply,
        );
        return;
      }
      // The queue's status on the PR says it was queued, and its place: no reply, unless the
      // command asked for what the status does not show (a priority, testing on its own, a hotfix).
      if (queue?.statusCheckEnabled && command.priority === null && !command.noBatch && command.emergencyReason === null) return;
      const priority = resolvePriority(command.priority).name;
      const what =
        command.emergencyReason !== null
          ? `as an emergency (${command.emergencyReason}): it is tested ahead of every other pull request and merges even while the queue is frozen`
          : `at priority ${priority}${command.noBatch ? ", tested on its own" : ""}`;
      await replyLater(services, queue?.id, prNumber, `@${author} queued for \`${targetBranch}\` ${what}. Greenline merges it once it is tested green on top of the pull requests ahead of it.`, reply);
    } else if (command.kind === "freeze") {
      const { status } = await freezeQueue(services, principal, { repo, targetBranch, reason: command.reason, testing: command.testing, ...(command.until !== null ? { until: new Date(command.until) } : {}) });
      const tested = command.testing ? "pull requests are still tested, and merge once it ends" : "nothing starts testing either";
      await replyLater(
        services,
        queue?.id,
        prNumber,
        `@${author} froze the queue for \`${targetBranch}\` until ${untilText(status.until === null ? null : Date.parse(status.until))}: ${command.reason}. Only hotfixes merge (\`/greenline merge --hotfix "reason"\`); ${tested}.`,
        reply,
      );
    } else if (command.kind === "unfreeze") {
      const { ended, status } = await unfreezeQueue(services, principal, { repo, targetBranch });
      const text =
        ended.length === 0
          ? `the queue for \`${targetBranch}\` was not frozen.`
          : `ended ${ended.map((f) => `the freeze "${f.reason}"`).join(", ")} on the queue for \`${targetBranch}\`${status.frozen ? `; it stays frozen until ${untilText(status.until === null ? null : Date.parse(status.until))} (${status.reasons.join("; ")})` : ": it merges again"}.`;
      await replyLater(services, queue?.id, prNumber, `@${author} ${text}`, reply);
    } else {
      await cancelPullRequest(services, principal, address);
      await replyLater(services, queue?.id, prNumber, `@${author} taken out of the queue for \`${targetBranch}\`.`, reply);
    }
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    const what = { merge: "queue this pull request", cancel: "cancel this pull request", freeze: "freeze the queue", unfreeze: "unfreeze the queue" }[command.kind];
    await reply(`@${author} could not ${what}: ${error.message}.`);
  }
}

/** The queue of the branch a stacked PR's stack is based on: its base followed down through the PRs whose heads they are. */
async function stackQueueOf(services: Services, organizationId: string, repo: RepoRef, pr: PullRequestInfo) {
  let base = pr.baseBranch;
  const seen = new Set([pr.number]);
  for (let depth = 0; depth <= MAX_STACK_DEPTH; depth++) {
    const below = await services.codeHost.pullRequestWithHead(repo, base, { targetBranch: "", directMerge: false });
    if (!below || seen.has(below.number)) return null;
    seen.add(below.number);
    base = below.baseBranch;
    const queue = await services.db.read((tx) => findQueue(tx, organizationId, repositoryKey(repo), base));
    if (queue) return queue;
  }
  return null;
}

/**
 * The answer to a command the queue carried out goes to the queue's outbox, as its other
 * comments do: the worker writes it after the queue's own work (a merge, a testing branch), and
 * the delivery is done without waiting for it (GitHub asks for comments to be spaced; a line of
 * them must not hold the CI results behind them in the inbox). Without the queue (it was made
 * by the command's own submission, in a race): at once.
 */
async function replyLater(services: Services, queueId: string | undefined, prNumber: number, body: string, reply: (text: string) => Promise<void>): Promise<void> {
  const queued =
    queueId !== undefined &&
    (await services.db.transaction(async (tx) => {
      // The queue's lock orders the outbox with the decisions appending to it.
      if (!(await lockQueueRow(tx, queueId))) return false;
      await appendEffects(tx, queueId, [{ kind: "pr_comment", prNumber, body }], { now: services.now(), newId: services.newId });
      return true;
    }));
  if (!queued) await reply(body);
}

/** The organization that owns the repository in Greenline, acting through a comment. */
async function principalOf(services: Services, repo: RepoRef): Promise<Principal | null> {
  const owner = await services.db.read((tx) => repositoryOwnerByKey(tx, repositoryKey(repo)));
  return owner ? { ...owner, tokenId: "", role: "write" } : null;
}
