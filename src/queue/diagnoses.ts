import { freezeStatusAt, untilText } from "../domain/freezes.js";
import { rateReserveUntil, type RepoRef } from "../ports/code-host.js";
import { accountKeyOf, outageOf } from "../store/installation-outages.js";
import { diagnoseRun, type BlockedReason, type RunDiagnosis } from "../domain/diagnoses.js";
import type { NotifyEffect } from "../domain/engine/types.js";
import type { PrState } from "../domain/states.js";
import type { RequiredChecks } from "../domain/status-checks.js";
import type { Tx } from "../store/database.js";
import { appendEffects, outboxHead } from "../store/effects.js";
import { appendToTimelinesOf, countEntriesIn, entryOf } from "../store/entries.js";
import { lastSettingsChangeAt, lockQueueRow, queuesToJudgeBlocked, recordPublishedBlockedReason, type Queue } from "../store/queues.js";
import { publishQueueEvents } from "../store/webhook-outbox.js";
import { queueBlocked, queueUnblocked } from "../domain/webhook-events.js";
import { findRun, recordDiagnosis, runFactsOf, runningRunsOf, runsInFlight, seenCheckNames, type TestRun } from "../store/runs.js";
import { diagnosisTimelineEvent } from "../domain/timeline.js";
import type { Services } from "../app/services.js";
import { requiredChecksOf } from "./status-checks.js";

const MINUTE = 60_000;

/** The states of PRs waiting for the queue to merge them (not_ready PRs wait on their own author). */
/** The states of PRs a queue still has to test or merge: a queue with none is not blocked. */
export const WAITING: PrState[] = ["pending", "testing", "tests_passed", "pending_failure"];

/** The checks a queue's runs must pass, as far as known: none when the code host cannot say or requires none. */
async function requiredNames(services: Services, repo: RepoRef, queue: Pick<Queue, "branch" | "requiredStatuses">): Promise<string[]> {
  const required = await requiredChecksOf(services, repo, queue);
  return required.source === "unknown" ? [] : required.contexts;
}

/**
 * Diagnoses the runs in flight whose required checks have not all appeared on their testing
 * branch `checksStartTimeoutMinutes` after they started (docs/diagnoses.md): the diagnosis is
 * stored on the run, and told once on each PR it tests (its status's description, a comment)
 * through the queue's outbox, as the queue's settings allow. The run keeps waiting: only the
 * testing timeout ends it. Only with a code host that reports named checks (GitHub); what was
 * reported is what the deliveries and the reconciliation polling recorded. Answers how many
 * runs it diagnosed.
 */
export async function diagnoseRunsInFlight(services: Services): Promise<number> {
  if (!services.codeHost.ciResults) return 0;
  const now = services.now();
  const runs = await services.db.read((tx) => runsInFlight(tx));
  const due = runs.filter((run) => run.diagnosis === null && run.startedAt.getTime() + run.queue.checksStartTimeoutMinutes * MINUTE <= now.getTime());
  let diagnosed = 0;
  for (const run of due) {
    const required = await requiredNames(services, run.queue.repository, run.queue);
    if (required.length === 0) continue;
    if (required.every((name) => name in run.statusChecks)) continue;
    const before = await services.db.read((tx) => seenCheckNames(tx, run.queueId, now, 200, run.id));
    const diagnosis = diagnoseRun({
      required,
      seen: Object.keys(run.statusChecks),
      seenBefore: before.names,
      targetBranch: run.queue.branch,
      minutes: run.queue.checksStartTimeoutMinutes,
      at: now,
    });
    if (!diagnosis) continue;
    const recorded = await services.db.transaction(async (tx) => {
      // Under the queue's lock: the version bump refreshes cached reads, and effects keep their order.
      const queue = await lockQueueRow(tx, run.queueId);
      const fresh = await findRun(tx, run.id);
      if (!queue || !fresh || fresh.status !== "running" || fresh.diagnosis !== null) return false;
      await recordDiagnosis(tx, fresh.id, diagnosis);
      await recordOnTimelines(services, tx, queue, fresh, diagnosis, now);
      const notices = services.codeHost.notifiesPullRequests ? await noticesOf(tx, queue, fresh.tested, diagnosis) : [];
      await appendEffects(tx, queue.id, notices, { now, newId: services.newId });
      return true;
    });
    if (recorded) {
      services.log?.warn({ queueId: run.queueId, runId: run.runId, code: diagnosis.code, missingChecks: diagnosis.missingChecks }, "required checks have not started on a testing branch");
      diagnosed++;
    }
  }
  return diagnosed;
}

/** The diagnosis as an entry of the timeline of each PR the run tests (still testing), once per run: the caller records it with the run's. */
async function recordOnTimelines(services: Services, tx: Tx, queue: Queue, run: TestRun, diagnosis: RunDiagnosis, at: Date): Promise<void> {
  const facts = runFactsOf(run);
  await appendToTimelinesOf(tx, queue.id, run.tested, (entry) => (entry.state === "testing" ? diagnosisTimelineEvent(entry.prNumber, diagnosis, { at, prHead: entry.prSha, run: facts }) : null), services.newId);
}

/** What each PR the run tests is told: a status description and a comment, as the queue's settings allow. */
async function noticesOf(tx: Tx, queue: Queue, tested: number[], diagnosis: RunDiagnosis): Promise<NotifyEffect[]> {
  const out: NotifyEffect[] = [];
  for (const prNumber of tested) {
    const entry = await entryOf(tx, queue.id, prNumber);
    if (!entry || entry.state !== "testing") continue;
    if (queue.statusCheckEnabled) {
      // GitHub keeps 140 characters of a status's description.
      const description = `Testing: required check${diagnosis.missingChecks.length === 1 ? "" : "s"} not started: ${diagnosis.missingChecks.join(", ")}`;
      out.push({ kind: "pr_status", prNumber, sha: entry.prSha, state: "pending", description: description.length > 140 ? `${description.slice(0, 139)}…` : description });
    }
    if (queue.commentsEnabled) {
      out.push({
        kind: "pr_comment",
        prNumber,
        body: `Greenline, merge queue for \`${queue.branch}\`: the testing branch of this pull request is still waiting for required checks (\`${diagnosis.code}\`).\n\n${diagnosis.message}\n\nThe run keeps waiting until the testing timeout (${queue.testingTimeoutMinutes} minutes).`,
      });
    }
  }
  return out;
}

/** The names a queue's runs must pass: its own list, else what the code host requires (none when unknown). */
export function requiredNamesOf(queue: Pick<Queue, "requiredStatuses">, host: RequiredChecks): string[] {
  if (queue.requiredStatuses !== null) return queue.requiredStatuses;
  return host.source === "unknown" ? [] : host.contexts;
}

/** getQueue's diagnoses of a queue. */
export type QueueDiagnoses = { neverSeenRequiredChecks: string[]; blockedReason: BlockedReason | null };

/**
 * The required checks never reported on any of the queue's latest testing branches (once at
 * least one of them has had the checks-start timeout to report), and why the queue merges
 * nothing while PRs wait, if it does not.
 */
export async function queueDiagnoses(services: Services, tx: Tx, queue: Queue, repo: RepoRef, required: readonly string[]): Promise<QueueDiagnoses> {
  const now = services.now();
  let neverSeenRequiredChecks: string[] = [];
  if (required.length > 0) {
    const seen = await seenCheckNames(tx, queue.id, new Date(now.getTime() - queue.checksStartTimeoutMinutes * MINUTE));
    if (seen.judged > 0) neverSeenRequiredChecks = required.filter((name) => !seen.names.has(name));
  }
  return { neverSeenRequiredChecks, blockedReason: await blockedReasonOf(services, tx, queue, repo) };
}

/** How an effect's failure reads: the code host's rate limit, a missing permission, or anything else. */
function refusalOf(error: string): "rate_limited" | "permission_missing" | "effect_failing" {
  if (/rate limit/i.test(error)) return "rate_limited";
  if (/not accessible by integration|permission/i.test(error)) return "permission_missing";
  return "effect_failing";
}

/**
 * Why the queue merges nothing while PRs wait, with evidence, or null: the App's installation
 * on the repository's account suspended or uninstalled, paused, draining (or
 * switching modes), frozen (a merge freeze holds), the code host refusing the effect at the head of its outbox (its rate limit,
 * a missing permission, anything else), or a run whose required checks never started. The
 * first that applies, in that order.
 */
export async function blockedReasonOf(services: Services, tx: Tx, queue: Pick<Queue, "id" | "state" | "freezes" | "frozen">, repo: RepoRef): Promise<BlockedReason | null> {
  const waiting = await countEntriesIn(tx, queue.id, WAITING);
  if (waiting === 0) return null;
  const now = services.now();
  const outage = await outageOf(tx, accountKeyOf(repo));
  if (outage) {
    const suspended = outage.state === "suspended";
    const what = suspended ? `The GitHub App's installation on ${repo.owner} is suspended` : `The GitHub App is not installed on ${repo.owner} any more`;
    const until = suspended ? "it is unsuspended" : "it is installed again";
    return {
      code: suspended ? "installation_suspended" : "installation_removed",
      message: `${what}: the queue starts and merges nothing, and keeps its ${waiting} pull request${waiting === 1 ? "" : "s"}, until ${until} (Greenline asks GitHub again at ${outage.nextProbeAt.toISOString()}). The code host said: ${outage.message}`,
      since: outage.since.toISOString(),
      evidence: { account: outage.accountKey, installationId: outage.installationId, state: outage.state, error: outage.message, nextProbeAt: outage.nextProbeAt.toISOString(), pullRequestsWaiting: waiting },
    };
  }
  if (queue.state === "paused" || queue.state === "draining" || queue.state === "switching_modes") {
    const since = (await lastSettingsChangeAt(tx, queue.id))?.toISOString() ?? null;
    if (queue.state === "paused") {
      return {
        code: "paused",
        message: `The queue is paused: ${waiting} pull request${waiting === 1 ? "" : "s"} wait. Resume it (updateQueue state running) to go on.`,
        since,
        evidence: { state: queue.state, pullRequestsWaiting: waiting },
      };
    }
    const queued = await countEntriesIn(tx, queue.id, ["pending"]);
    if (queued > 0) {
      return {
        code: "draining",
        message: `The queue is ${queue.state.replaceAll("_", " ")}: it finishes the pull requests in flight and starts no new test; ${queued} pull request${queued === 1 ? "" : "s"} wait to be tested.`,
        since,
        evidence: { state: queue.state, pullRequestsWaiting: queued },
      };
    }
  }
  const freeze = freezeStatusAt(queue.freezes, now.getTime());
  if (freeze.frozen) {
    const why = freeze.holding.map((f) => f.reason).join("; ");
    return {
      code: "frozen",
      message: `The queue is frozen until ${untilText(freeze.until)} (${why}): ${waiting} pull request${waiting === 1 ? "" : "s"} wait${freeze.testing ? " and are tested" : ""}; only hotfixes merge. Unfreeze it (unfreezeQueue) to go on.`,
      since: queue.frozen?.since ?? null,
      evidence: {
        until: freeze.until === null ? null : new Date(freeze.until).toISOString(),
        reasons: freeze.holding.map((f) => f.reason),
        freezeIds: freeze.holding.map((f) => f.id),
        testing: freeze.testing,
        pullRequestsWaiting: waiting,
      },
    };
  }
  const head = await outboxHead(tx, queue.id);
  if (head && head.attempts > 0 && head.lastError !== null) {
    const code = refusalOf(head.lastError);
    const retryAt = head.nextAttemptAt && head.nextAttemptAt > now ? head.nextAttemptAt.toISOString() : null;
    const what = code === "rate_limited" ? "The code host's rate limit is spent" : code === "permission_missing" ? "The code host refuses a permission" : "An effect keeps failing";
    return {
      code,
      message: `${what}: the queue's next step (${head.kind.replaceAll("_", " ")}) failed ${head.attempts} time${head.attempts === 1 ? "" : "s"}${retryAt ? `, next attempt at ${retryAt}` : ""}. The code host said: ${head.lastError}`,
      since: head.createdAt.toISOString(),
      evidence: { effect: head.kind, attempts: head.attempts, error: head.lastError, nextAttemptAt: retryAt },
    };
  }
  const reserveUntil = rateReserveUntil(services.codeHost, repo, now.getTime());
  if (reserveUntil !== null && head) {
    const until = new Date(reserveUntil).toISOString();
    return {
      code: "rate_limited",
      message: `The installation's rate limit is below its reserve until ${until}: retries wait for the reset.`,
      since: null,
      evidence: { effect: head.kind, until },
    };
  }
  const diagnosed = (await runningRunsOf(tx, queue.id)).find((run) => run.diagnosis !== null);
  if (diagnosed?.diagnosis) {
    return {
      code: "checks_not_started",
      message: diagnosed.diagnosis.message,
      since: diagnosed.diagnosis.at,
      evidence: { testRunId: diagnosed.id, testBranch: diagnosed.testBranch, diagnosis: diagnosed.diagnosis.code, missingChecks: diagnosed.diagnosis.missingChecks, seenChecks: diagnosed.diagnosis.seenChecks },
    };
  }
  return null;
}

/**
 * Publishes the queue's blocked reason if its code is not the one last published: queue.blocked
 * with the reason, or queue.unblocked when it cleared, and records it, in the caller's
 * transaction, which holds the queue's lock (so replicas and restarts publish a change once).
 * Answers whether it published.
 */
export async function publishBlockedReasonChange(services: Services, tx: Tx, queue: Pick<Queue, "id" | "state" | "publishedBlockedReason" | "freezes" | "frozen">, repo: RepoRef): Promise<boolean> {
  const reason = await blockedReasonOf(services, tx, queue, repo);
  const code = reason?.code ?? null;
  if (code === queue.publishedBlockedReason) return false;
  await recordPublishedBlockedReason(tx, queue.id, code);
  const at = services.now().toISOString();
  const previous = queue.publishedBlockedReason;
  await publishQueueEvents(tx, queue.id, (place) => [reason ? queueBlocked(place, reason, at) : queueUnblocked(place, previous ?? "", at)], { now: services.now(), newId: services.newId });
  return true;
}

/**
 * The worker's watch of blocked queues: for each queue with PRs waiting or a reason published,
 * its blocked reason is computed on a read (cheap, no lock); only a change takes the queue's
 * lock, computes it again and publishes it. Answers how many changes it published.
 */
export async function publishBlockedReasonChanges(services: Services): Promise<number> {
  const queues = await services.db.read((tx) => queuesToJudgeBlocked(tx, WAITING));
  let published = 0;
  for (const queue of queues) {
    const reason = await services.db.read((tx) => blockedReasonOf(services, tx, queue, queue.repository));
    if ((reason?.code ?? null) === queue.publishedBlockedReason) continue;
    const changed = await services.db.transaction(async (tx) => {
      const locked = await lockQueueRow(tx, queue.id);
      return locked ? publishBlockedReasonChange(services, tx, locked, queue.repository) : false;
    });
    if (changed) published++;
  }
  return published;
}
