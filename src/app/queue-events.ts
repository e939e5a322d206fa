import { repositoryKey, type RepoRef } from "../ports/code-host.js";
import { decide } from "../domain/engine/engine.js";
import type { Decision, EngineEvent, NotifyEffect, Transition } from "../domain/engine/types.js";
import type { PrState } from "../domain/states.js";
import type { Tx } from "../store/database.js";
import { countPendingMerges } from "../store/effects.js";
import type { QueueEntry } from "../store/entries.js";
import { loadQueueState, saveDecision } from "../store/queue-state.js";
import { findQueueInRepository, lockQueueRow, queueIdsOfRepository, recordTargetHead, type Queue } from "../store/queues.js";
import type { Services } from "./services.js";

/** The commit status and description each PR state shows on the code host. */
const STATUS_OF: Record<PrState, "pending" | "success" | "failure" | "error"> = {
  not_ready: "pending",
  pending: "pending",
  testing: "pending",
  tests_passed: "pending",
  pending_failure: "pending",
  merged: "success",
  failed: "failure",
  cancelled: "error",
};
const DESCRIPTION_OF: Record<PrState, string> = {
  not_ready: "Not ready",
  pending: "Queued",
  testing: "Testing",
  tests_passed: "Passed, merging",
  pending_failure: "Failed, waiting for the PRs ahead",
  merged: "Merged",
  failed: "Failed",
  cancelled: "Cancelled",
};

/**
 * Transitions that are not what they seem from the state alone, when PRs merged together did
 * not all land as tested: each PR is told what happened to it.
 */
const EXPLAINED: Readonly<Record<string, string>> = {
  merged_after_target_moved:
    "This pull request is merged, but a commit not made by the queue landed on the target branch just before its merge, so the result on the target branch was not tested as such. The pull requests after it are tested again.",
  target_moved_during_merge: "A pull request merged ahead of this one landed on top of a commit not made by the queue: this pull request was not merged, and is tested again on the new head of the target branch.",
  pr_ahead_not_merged: "A pull request ahead of this one, tested together with it, was not merged: this pull request is tested again without it.",
};

/** The status and comment a transition shows on the PR, per the queue's settings. */
function notificationsOf(queue: Queue, entry: QueueEntry, t: Transition): NotifyEffect[] {
  const out: NotifyEffect[] = [];
  const reason = t.reason.replaceAll("_", " ");
  const explained = EXPLAINED[t.reason];
  if (queue.statusCheckEnabled) {
    const plain = (t.to === "merged" || t.to === "pending" || t.to === "testing" || t.to === "tests_passed") && !explained;
    const description = plain ? DESCRIPTION_OF[t.to] : `${DESCRIPTION_OF[t.to]}: ${reason}${t.message ? `: ${t.message}` : ""}`;
    out.push({ kind: "pr_status", prNumber: t.prNumber, sha: entry.prSha, state: STATUS_OF[t.to], description });
  }
  if (queue.commentsEnabled && (t.to === "failed" || (t.to === "cancelled" && t.reason !== "cancelled_by_user"))) {
    // The code host's own words, quoted, when it refused the PR.
    const refusal = t.message ?? (t.to === "failed" ? entry.failureMessage : null);
    const said = refusal ? `\n\nReason given:\n> ${refusal.replaceAll("\n", "\n> ")}` : "";
    out.push({ kind: "pr_comment", prNumber: t.prNumber, body: `Greenline removed this pull request from the merge queue for \`${queue.branch}\`: **${t.to}** (${reason}).${said}` });
  } else if (queue.commentsEnabled && explained) {
    out.push({ kind: "pr_comment", prNumber: t.prNumber, body: `Greenline, merge queue for \`${queue.branch}\`: **${t.to.replaceAll("_", " ")}** (${reason}). ${explained}` });
  }
  return out;
}

/**
 * Feeds one event to the engine inside the caller's transaction (which holds the queue's
 * lock) and stores the decision: state, transitions with reasons, effects. The API, the
 * worker and webhooks all change a queue through here.
 */
export async function applyEvent(services: Services, tx: Tx, queue: Queue, event: EngineEvent): Promise<Decision> {
  const loaded = await loadQueueState(tx, queue, event.kind === "merge_failed" ? event.prNumbers : []);
  const now = services.now();
  const decision = decide(loaded.engine, event, now.getTime());
  const notifications = services.codeHost.notifiesPullRequests ? decision.transitions.flatMap((t) => notificationsOf(queue, loaded.entries.get(t.prNumber)!, t)) : [];
  await saveDecision(tx, loaded, decision, { now, newId: services.newId, event, notifications });
  return decision;
}

/**
 * Applies an event in a transaction of its own. `guard` runs first, under the queue's lock;
 * when it answers false nothing is applied (the event was already delivered, say).
 */
export async function applyQueueEvent(services: Services, queueId: string, event: EngineEvent, guard?: (tx: Tx, queue: Queue) => Promise<boolean>): Promise<Decision | null> {
  return services.db.transaction(async (tx) => {
    const queue = await lockQueueRow(tx, queueId);
    if (!queue) return null;
    if (guard && !(await guard(tx, queue))) return null;
    return applyEvent(services, tx, queue, event);
  });
}

/**
 * The code host says the target branch is at `head`. If that is not where the queue left it,
 * someone pushed outside the queue: its runs were built on a stale base. A merge of the
 * queue's own still under way explains a new head, so nothing is concluded then (if the push
 * was someone else's, that merge finds the target moved and says so). Answers whether the
 * queue took note.
 */
export async function noticeTargetHead(services: Services, queueId: string, head: string, push?: { repo: RepoRef; before: string | null }): Promise<boolean> {
  const pendingMerge = await services.db.read((tx) => countPendingMerges(tx, queueId));
  if (pendingMerge > 0) return false;
  if (push && (await isStaleEcho(services, queueId, head, push))) return false;
  const applied = await applyQueueEvent(services, queueId, { kind: "base_moved", sha: head }, async (tx, fresh) => {
    if ((fresh.targetHead ?? fresh.baseSha) === head) return false;
    await recordTargetHead(tx, queueId, head);
    return true;
  });
  return applied !== null;
}

/**
 * Whether a pushed `head` is behind what the queue knows of its target (a delivery that arrived
 * after a later push's): then it is no move. A push whose `before` is the known head moves it
 * forward without asking; when the host cannot say, the push is taken as a move (restarting
 * runs is safe, merging on a stale view is not).
 */
async function isStaleEcho(services: Services, queueId: string, head: string, push: { repo: RepoRef; before: string | null }): Promise<boolean> {
  const ancestry = services.codeHost.ancestry;
  if (!ancestry) return false;
  const queue = await services.db.read((tx) => findQueueInRepository(tx, queueId));
  const known = queue && (queue.targetHead ?? queue.baseSha);
  if (!known || known === head || push.before === known) return false;
  try {
    return await ancestry.isAncestor(push.repo, head, known);
  } catch (error) {
    services.log?.warn({ err: error, queueId, head }, "could not tell whether a push is behind the known target head");
    return false;
  }
}

/**
 * The code host says a branch of a repository is at `head` (pushed over `before`, when known):
 * every queue of that target takes note, unless the push is an older one delivered late.
 */
export async function noticeBranchHead(services: Services, repo: RepoRef, branch: string, head: string, before: string | null = null): Promise<void> {
  const queueIds = await services.db.read((tx) => queueIdsOfRepository(tx, repositoryKey(repo), branch));
  for (const id of queueIds) await noticeTargetHead(services, id, head, { repo, before });
}
