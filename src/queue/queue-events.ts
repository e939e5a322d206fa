import { currentRequestId } from "../app/request-context.js";
import { publishDecisionEvents } from "../outbound/publishing.js";
import { engineFreeze, freezeStatusAt, frozenStateAfter, type FrozenState } from "../domain/freezes.js";
import { insertQueueEvent } from "../store/timeline.js";
import { publishQueueEvents } from "../store/webhook-outbox.js";
import { queueFrozen, queueUnfrozen } from "../domain/webhook-events.js";
import { repositoryKey, type RepoRef } from "../ports/code-host.js";
import { decide } from "../domain/engine/engine.js";
import type { Decision, EngineEvent, NotifyEffect } from "../domain/engine/types.js";
import { estimatesOf, withFinishedRuns } from "../domain/engine/estimates.js";
import { sentenceOf, statusDescriptionOf } from "../domain/reasons.js";
import { movedPlaces, statusPlacesOf } from "../domain/status-places.js";
import type { ReportedCheck } from "../domain/status-checks.js";
import { ENGINE_ACTOR, timelineEventOf, type Cause, type TimelineEvent } from "../domain/timeline.js";
import type { PrState } from "../domain/states.js";
import { afterCommit, type Tx } from "../store/database.js";
import { countPendingMerges } from "../store/effects.js";
import { recordEstimateAtSubmission, type QueueEntry } from "../store/entries.js";
import { loadQueueState, saveDecision, type Loaded } from "../store/queue-state.js";
import { repositoryById } from "../store/repositories.js";
import { recentRunStats } from "../store/timeline.js";
import { findQueueInRepository, lockQueueRow, queueIdsOfRepository, recordTargetHead, type Queue } from "../store/queues.js";
import type { Services } from "../app/services.js";

/** The commit status each PR state shows on the code host. */
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

/**
 * Transitions that are not what they seem from the state alone, when PRs merged together did
 * not all land as tested: each PR is told what happened to it in a comment.
 */
const EXPLAINED: ReadonlySet<string> = new Set(["merged_after_target_moved", "target_moved_during_merge", "pr_ahead_not_merged"]);

/** What the run's test results said, for a comment: the failing tests and how each was judged (docs/flaky-queue.md). */
function flakyText(e: TimelineEvent): string {
  const flaky = e.evidence.flaky;
  if (!flaky || flaky.tests.length === 0) return "";
  const shown = flaky.tests.slice(0, 5).map((t) => `\`${t.name}\` (${t.judgement.replaceAll("_", " ")})`);
  const more = (flaky.testsTotal ?? flaky.tests.length) - shown.length;
  return `\n\nFailing tests (\`${flaky.rule}\`): ${shown.join(", ")}${more > 0 ? ` and ${more} more` : ""}.`;
}

/** A comment's text: the event's sentence, then the code host's own words (when it refused something) as a Markdown quote, then the failing tests the run's results named. */
function commentText(e: TimelineEvent): string {
  if (!e.hostMessage) return `${e.message}${flakyText(e)}`;
  const quoted = e.hostMessage
    .split("\n")
    .map((line) => (line.trim() === "" ? ">" : `> ${line}`))
    .join("\n");
  return `${sentenceOf(e.reason)}\n\n${quoted}${flakyText(e)}`;
}

/**
 * The status and comment a timeline event shows on the PR, per the queue's settings: its
 * `message` (the same sentence the API's timeline answers), with the PR's place in line and
 * estimate on the status while it waits.
 */
function notificationsOf(queue: Queue, entry: QueueEntry, e: TimelineEvent, place: string): NotifyEffect[] {
  const out: NotifyEffect[] = [];
  if (queue.statusCheckEnabled) {
    out.push({ kind: "pr_status", prNumber: e.prNumber, sha: entry.prSha, state: STATUS_OF[e.state], description: statusDescriptionOf(e.reason, e.hostMessage, place) });
  }
  if (queue.commentsEnabled && (e.state === "failed" || (e.state === "cancelled" && e.reason !== "cancelled_by_user"))) {
    // The same sentence as the timeline's and the status's, with the code host's own words, when it refused the PR, quoted below it.
    out.push({ kind: "pr_comment", prNumber: e.prNumber, body: `Greenline removed this pull request from the merge queue for \`${queue.branch}\`: **${e.state}** (\`${e.reason}\`). ${commentText(e)}` });
  } else if (queue.commentsEnabled && EXPLAINED.has(e.reason)) {
    out.push({ kind: "pr_comment", prNumber: e.prNumber, body: `Greenline, merge queue for \`${queue.branch}\`: **${e.state.replaceAll("_", " ")}** (\`${e.reason}\`). ${commentText(e)}` });
  }
  return out;
}

/** The PRs an event is about: their transitions are the event's actor's doing; the rest are the engine's. */
function prsNamedBy(event: EngineEvent, loaded: Loaded): Set<number> | "all" {
  switch (event.kind) {
    case "submitted":
    case "cancelled":
    case "restart_requested":
    case "readiness_changed":
    case "targets_changed":
    case "merge_pr_left":
      return new Set([event.prNumber]);
    case "merge_failed":
    case "merge_held":
    case "merge_refused":
    case "merge_landed":
      return new Set(event.prNumbers);
    case "run_finished":
    case "run_rerun":
    case "jobs_rerun_requested":
      return new Set(loaded.engine.runs.find((r) => r.id === event.runId)?.tested ?? []);
    case "timer_fired":
      return new Set();
    case "base_moved":
    case "config_changed":
      return "all";
  }
}

/** Who causes an event when the caller does not say: the code host for what it reports, else the engine. */
export function defaultCause(services: Services, event: EngineEvent): Cause {
  const host: Cause = { actor: { kind: "code_host", name: services.codeHost.name } };
  switch (event.kind) {
    case "cancelled":
      return event.reason === "cancelled_by_user" ? { actor: ENGINE_ACTOR } : host;
    case "readiness_changed":
    case "run_finished":
    case "merge_failed":
    case "merge_refused":
    case "merge_pr_left":
    case "merge_landed":
    case "base_moved":
      return host;
    default:
      return { actor: ENGINE_ACTOR };
  }
}

/** A check's page on the code host: check runs have one (from their id); commit statuses' are not kept. */
export function checkUrlOf(repo: RepoRef | null): (check: ReportedCheck) => string | null {
  return (check) => (repo && check.kind === "check_run" && check.id !== null ? `https://${repo.host}/${repo.owner}/${repo.name}/runs/${check.id}` : null);
}

/** The decision's transitions as timeline events: the one place they get their actor and evidence. */
async function timelineOf(tx: Tx, queue: Queue, loaded: Loaded, decision: Decision, event: EngineEvent, cause: Cause, now: Date): Promise<TimelineEvent[]> {
  if (decision.transitions.length === 0) return [];
  const named = prsNamedBy(event, loaded);
  const needsRepo = decision.transitions.some((t) => t.to === "pending_failure" || t.to === "failed");
  const repo = needsRepo ? await repositoryById(tx, queue.repositoryId) : null;
  const checkUrl = checkUrlOf(repo);
  const runs = new Map(decision.queue.runs.map((r) => [r.id, r]));
  return decision.transitions.map((t) => {
    const entry = loaded.entries.get(t.prNumber)!;
    const runId = t.evidence?.runId;
    const engineRun = runId === undefined ? undefined : runs.get(runId);
    const row = runId === undefined ? undefined : loaded.runs.get(runId);
    const run = engineRun
      ? {
          id: engineRun.id,
          kind: engineRun.kind,
          tested: engineRun.tested,
          stack: engineRun.stack,
          testBranch: row?.testBranch ?? null,
          testBranchSha: row?.testBranchSha ?? null,
          statusChecks: row?.statusChecks ?? {},
          flakeVerdict: row?.flakeVerdict?.last ?? null,
        }
      : undefined;
    const ownCause = named === "all" || named.has(t.prNumber) ? cause : { actor: ENGINE_ACTOR };
    return timelineEventOf(t, { at: now, cause: ownCause, prHead: entry.prSha, ...(run ? { run } : {}), requiredChecks: queue.requiredStatuses, checkUrl, recordedRefusal: entry.failureMessage });
  });
}

/**
 * The statuses a decision writes, when the queue shows them: each transition's, with its place in
 * line while it waits, and a refresh for every PR still waiting whose shown place or estimate
 * moved (at most STATUS_PLACES_SHOWN of them, see domain/status-places.ts).
 */
async function notificationsOfDecision(tx: Tx, queue: Queue, loaded: Loaded, decision: Decision, event: EngineEvent, timeline: readonly TimelineEvent[], now: Date): Promise<NotifyEffect[]> {
  if (!queue.statusCheckEnabled) return timeline.flatMap((e) => notificationsOf(queue, loaded.entries.get(e.prNumber)!, e, ""));
  // The main runs this decision finished are not stored yet: the estimates count them too.
  const finished = decision.queue.runs.filter((r) => r.kind === "main" && r.finishedAt !== null && loaded.runs.get(r.id)?.finishedAt == null);
  const stats = withFinishedRuns(await recentRunStats(tx, queue.id), finished);
  const places = statusPlacesOf(decision.queue, stats, now.getTime());
  const out = timeline.flatMap((e) => notificationsOf(queue, loaded.entries.get(e.prNumber)!, e, places.get(e.prNumber) ?? ""));
  // A PR submitted straight into line has no transition of the engine's: it gets its first status here.
  const named = new Set(event.kind === "submitted" ? [event.prNumber] : []);
  const moved = movedPlaces(loaded.engine, decision.queue, stats, now.getTime(), new Set(timeline.map((e) => e.prNumber)), named);
  const after = new Map(decision.queue.entries.map((e) => [e.prNumber, e]));
  for (const [pr, place] of moved) {
    const entry = after.get(pr)!;
    out.push({ kind: "pr_status", prNumber: pr, sha: loaded.entries.get(pr)!.prSha, state: STATUS_OF[entry.state], description: statusDescriptionOf(entry.reason, null, place) });
  }
  return out;
}

/**
 * Feeds one event to the engine inside the caller's transaction (which holds the queue's
 * lock) and stores the decision: state, transitions with reasons, actor and evidence (the
 * PR's timeline), effects. The API, the worker and webhooks all change a queue through here.
 * `cause`: who caused the event (defaultCause when not given).
 */
export async function applyEvent(
  services: Services,
  tx: Tx,
  queue: Queue,
  event: EngineEvent,
  cause: Cause = defaultCause(services, event),
  /** Who changed the queue's freezes with this event (freezeQueue, unfreezeQueue): a freeze starting or ending now is theirs; else the schedule's (the engine). */
  options: { freezesChangedBy?: Cause } = {},
): Promise<Decision> {
  const started = performance.now();
  const loaded = await loadQueueState(tx, queue, event.kind === "merge_failed" ? event.prNumbers : [], { take: true });
  const now = services.now();
  // The freeze as of now (the engine's input); loaded.engine keeps the one last seen, which the PRs' statuses say.
  const freeze = freezeStatusAt(queue.freezes, now.getTime());
  const decision = decide({ ...loaded.engine, freeze: engineFreeze(freeze) }, event, now.getTime());
  const frozen = frozenStateAfter(queue.frozen, freeze, now.getTime());
  const timeline = await timelineOf(tx, queue, loaded, decision, event, cause, now);
  // Places move only when something moved: a decision without transitions or effects writes no status.
  const thawedOrFroze = (queue.frozen === null) !== (frozen === null) || queue.frozen?.until !== frozen?.until;
  const changed = timeline.length > 0 || event.kind === "submitted" || thawedOrFroze || decision.effects.some((e) => e.kind !== "schedule_timer");
  const notifications = services.codeHost.notifiesPullRequests && changed ? await notificationsOfDecision(tx, queue, loaded, decision, event, timeline, now) : [];
  if ((queue.frozen === null) !== (frozen === null)) await recordFreezeChange(services, tx, queue, queue.frozen, frozen, options.freezesChangedBy ?? { actor: ENGINE_ACTOR }, now);
  await saveDecision(tx, loaded, decision, { now, newId: services.newId, event, cause, timeline, notifications, frozen });
  if (event.kind === "submitted") await recordSubmissionEstimate(tx, queue, decision, event.prNumber, now);
  // Counted and logged once the decision is committed (a transaction rolled back and retried is
  // one decision): the metrics, and one line per decision that moved a PR (docs/operations.md).
  const seconds = (performance.now() - started) / 1000;
  const requestId = currentRequestId();
  const finished = decision.transitions.map((t) => ({ t, submittedAt: loaded.entries.get(t.prNumber)?.submittedAt }));
  const note = () => {
    const metrics = services.metrics;
    if (metrics) {
      metrics.decisions.inc({ event: event.kind });
      metrics.decisionDuration.observe(seconds);
      for (const { t, submittedAt } of finished) {
        metrics.transitions.inc({ to: t.to });
        if (submittedAt && (t.to === "merged" || t.to === "failed" || t.to === "cancelled")) metrics.timeInQueue.observe({ outcome: t.to }, Math.max(0, (now.getTime() - submittedAt.getTime()) / 1000));
      }
    }
    if (decision.transitions.length > 0 && services.log) {
      const prs = decision.transitions.map((t) => ({ pr: t.prNumber, from: t.from, to: t.to, reason: t.reason, ...(t.evidence?.runId ? { runId: t.evidence.runId } : {}) }));
      services.log.info({ queueId: queue.id, branch: queue.branch, event: event.kind, prs, ...(requestId ? { requestId } : {}) }, "queue decision");
    }
  };
  // A transaction that takes no hooks (none here so far) is noted at once.
  if (!afterCommit(tx, note)) note();
  // Outbound webhooks: the decision's events, in its transaction.
  await publishDecisionEvents(tx, loaded, decision, { now, newId: services.newId, timeline });
  return decision;
}

/**
 * The merge time the line told a PR just submitted (as its status and the API tell it), kept so
 * the analytics can say afterwards how far estimates were from merges. One read of the queue's
 * recent runs per submission; nothing is kept when no time can be told (no finished run yet, the
 * PR not ready, the queue paused).
 */
async function recordSubmissionEstimate(tx: Tx, queue: Queue, decision: Decision, prNumber: number, now: Date): Promise<void> {
  const stats = await recentRunStats(tx, queue.id);
  if (!stats) return;
  const seconds = estimatesOf(decision.queue, stats, now.getTime()).get(prNumber)?.estimatedSecondsToMerge ?? null;
  if (seconds !== null) await recordEstimateAtSubmission(tx, queue.id, prNumber, new Date(now.getTime() + seconds * 1000));
}

/**
 * A freeze started or ended (first seen by this decision): recorded as a queue event with who
 * caused it (the engine, for a schedule) and published as queue.frozen / queue.unfrozen.
 */
async function recordFreezeChange(services: Services, tx: Tx, queue: Queue, before: FrozenState | null, after: FrozenState | null, cause: Cause, now: Date): Promise<void> {
  const at = now.toISOString();
  const details = after ? { reasons: after.reasons, until: after.until, testing: after.testing, freezeIds: after.ids } : { since: before?.since ?? null, reasons: before?.reasons ?? [], freezeIds: before?.ids ?? [] };
  const kind = after ? "freeze_started" : "freeze_ended";
  await insertQueueEvent(tx, { id: services.newId(), queueId: queue.id, kind, at: now, actor: cause.actor, payload: { ...details, ...(cause.command ? { command: cause.command } : {}) } });
  const told = { ...details, actor: cause.actor };
  await publishQueueEvents(tx, queue, (place) => [after ? queueFrozen(place, told, at) : queueUnfrozen(place, told, at)], { now, newId: services.newId });
}

/**
 * Applies an event in a transaction of its own. `guard` runs first, under the queue's lock;
 * when it answers false nothing is applied (the event was already delivered, say).
 */
export async function applyQueueEvent(services: Services, queueId: string, event: EngineEvent, guard?: (tx: Tx, queue: Queue) => Promise<boolean>, cause?: Cause): Promise<Decision | null> {
  return applyQueueEventOf(services, queueId, async (tx, queue) => (guard && !(await guard(tx, queue)) ? null : event), cause);
}

/**
 * Applies, in a transaction of its own, the event that `eventOf` answers under the queue's lock
 * (from what it reads there); null: nothing to apply, though what `eventOf` wrote commits.
 */
export async function applyQueueEventOf(services: Services, queueId: string, eventOf: (tx: Tx, queue: Queue) => Promise<EngineEvent | null>, cause?: Cause): Promise<Decision | null> {
  return services.db.transaction(async (tx) => {
    const queue = await lockQueueRow(tx, queueId);
    if (!queue) return null;
    const event = await eventOf(tx, queue);
    return event ? applyEvent(services, tx, queue, event, cause) : null;
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
