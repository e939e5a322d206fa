import { freezeStatusAt } from "../domain/freezes.js";
import { runIdOf } from "../domain/engine/run-ids.js";
import { exponentialBackoffMs } from "../domain/backoff.js";
import type { OutboxEffect } from "../domain/engine/types.js";
import type { Services } from "../app/services.js";
import { applyMergeOutcome, eventsOfMerge } from "../queue/merges.js";
import { applyEvent, applyQueueEvent } from "../queue/queue-events.js";
import { recordVerdictTimeline } from "../queue/flake-verdicts.js";
import { NEW_FLAKE_RECORD } from "../domain/flaky/verdict.js";
import { CodeHostRefusal, isInstallationRefusal, rateReserveUntil } from "../ports/code-host.js";
import { noticeInstallationRefusal } from "../webhooks/services/installations.js";
import { completeEffects, completeEffectsSeeingVersion, deferEffect, giveUpEffect, isNotification, nextEffectToRun, recordEffectFailure, type CarriedOutbox, type PendingEffect } from "../store/effects.js";
import { lockQueueRow, queueForEffects, type QueueInRepository } from "../store/queues.js";
import { recordFlakeVerdict, runOf } from "../store/runs.js";
import { recordTestBranchAndLinkUploads } from "../store/flaky-store.js";
import { treeKeyOf } from "../domain/flaky/queue-evidence.js";
import { emergenciesAmong, mergeFactsOf, pinnedHeadsOf, recordFailureMessage } from "../store/entries.js";
import { builtPrefixOf } from "../store/built-runs.js";
import { publishQueueEvents } from "../store/webhook-outbox.js";
import { queueWritesOf, type QueueWrites } from "../store/queue-writes.js";
import type { Tx } from "../store/database.js";
import type { Sql } from "../store/sql.js";
import { effectGivenUp } from "../domain/webhook-events.js";
import { pullRequestPagePath } from "../domain/links.js";

/**
 * How a failed effect is tried again: after an exponential backoff with full jitter (a random
 * wait up to base·2^(attempts-1), capped), never before the refusal's own retry time (a rate
 * limit's reset, `retry-after`); after MAX_ATTEMPTS it is given up. A rate limit is no fault of
 * the effect's: it waits for the reset however often, and does not count towards giving up.
 */
export const EFFECT_BACKOFF = { baseMs: 2_000, capMs: 10 * 60_000, maxAttempts: 10 };

/**
 * A re-run of failed jobs waits for its workflow run to complete (GitHub refuses it before): it
 * holds the queue's later effects meanwhile, so it gives up sooner (some 4 minutes of backoff)
 * and the run is started again on its own instead.
 */
const RERUN_MAX_ATTEMPTS = 7;

/**
 * How long one run of a queue's effects goes on sending statuses and comments (after at least
 * one effect) before it leaves the rest to the worker's next round.
 */
export const NOTIFICATION_BUDGET_MS = 1_000;

/** After this many failed attempts an effect is logged as stuck. */
const WARN_AFTER_ATTEMPTS = 5;

/**
 * Executes a queue's pending effects, holding the queue's lock so that one process at a time
 * does: its work (runs, merges) in order, then its statuses and comments in order
 * (nextEffectToRun). Each effect is safe to repeat: after a crash the next holder starts again
 * from the effects not marked done. An effect waiting out a backoff holds the queue's
 * later effects (the outbox is ordered) and nothing else: other queues go on. Answers how many
 * effects were done or given up (an effect not yet due is no work). `limit`: at most this many
 * (the worker's claim of a queue is bounded, so that a busy queue does not hold the others);
 * `keepGoing`: asked before each effect after the first (a worker stopping, or a claim past its
 * time: a slow code host's queue gives its turn back between calls).
 */
export async function runEffects(services: Services, queueId: string, limit = Number.POSITIVE_INFINITY, keepGoing: () => boolean = () => true): Promise<number> {
  const done = await services.db.tryWithLock(`greenline-effects:${queueId}`, async () => {
    let count = 0;
    const started = performance.now();
    // Effects need the queue's repository and settings; a merge also its merges and target head,
    // which another process's event may have moved: it is read afresh for a merge, and after an
    // effect that applied an event.
    let queue: QueueInRepository | null = null;
    // Effects carried out and not yet marked done: marked with the next effect that commits a
    // transaction of its own (a run recorded, a merge applied), or together at the end. Only
    // effects safe to carry out twice wait so (a status, a testing branch's deletion): a crash
    // meanwhile costs a repeat, nothing more; they are marked before anything decided after them
    // can be sent, as the transaction that marks them is the one that decides.
    const unmarked = new Set<string>();
    // Effects carried out (or given up) in this run: never picked again, whatever copy of the
    // outbox is read or carried (those not yet marked done are still pending in it).
    const executed = new Set<string>();
    // The outbox as last read, carried past an effect that applied an event when nothing else
    // wrote to the queue meanwhile (carryOver); read again after any other effect, as another
    // process may have appended to it.
    const outbox: CarriedOutbox = { rows: null, version: Number.NaN };
    const markUnmarked = async () => {
      if (unmarked.size === 0) return;
      const ids = [...unmarked];
      unmarked.clear();
      await services.db.write((tx) => completeEffects(tx, ids, services.now()));
    };
    try {
      while (count < limit && (count === 0 || keepGoing())) {
        // The queue's work first (merges, runs), then statuses and comments, superseded ones skipped.
        const pending = await nextEffectToRun(services.db, queueId, services.now(), executed, outbox);
        if (!pending || (pending.nextAttemptAt && pending.nextAttemptAt > services.now())) break;
        // Notifications are written a second apart (GitHub's guidance, Octokit's throttle): a long
        // line of them would keep the worker from the CI results that make merges. Past the budget
        // they wait for the next round, after the deliveries received meanwhile (which may decide
        // a merge, or newer statuses that replace these).
        if (count > 0 && isNotification(pending.kind) && performance.now() - started > NOTIFICATION_BUDGET_MS) break;
        if (!queue || pending.kind === "merge") {
          const read = await services.db.read((tx) => queueForEffects(tx, queueId));
          queue = read?.queue ?? null;
          // The App's installation on the repository's account is suspended or gone: nothing is
          // asked of the code host for it until the outage ends (a webhook, or the worker's probe).
          // Read with the queue, heeded once per call: an outage noticed during the call stops it below.
          if (count === 0 && read?.installationOutage) break;
        }
        const current = queue;
        if (!current) break;
        if (await deferredForReserve(services, current, pending)) break;
        try {
          const completion = completionOf(services, queueId, pending.id, unmarked);
          const startedAt = performance.now();
          const applied = await execute(services, current, pending.effect, completion, pending.attempts);
          // One line per effect carried out (docs/operations.md, "Logs"): statuses and comments at debug.
          const line = { queueId, effect: pending.kind, ...effectSubject(pending.effect), attempts: pending.attempts + 1, ms: Math.round(performance.now() - startedAt) };
          if (isNotification(pending.kind)) services.log?.debug(line, "effect done");
          else services.log?.info(line, "effect done");
          services.metrics?.effects.inc({ effect: pending.kind, outcome: "done" });
          services.metrics?.effectDuration.observe({ effect: pending.kind }, line.ms / 1000);
          executed.add(pending.id);
          if (completion.marked) unmarked.clear();
          else {
            unmarked.add(pending.id);
            if (!REPEATABLE.has(pending.kind)) await markUnmarked();
          }
          count++;
          if (applied) queue = carryOver(completion.tx ? queueWritesOf(completion.tx, queueId) : null, current, outbox);
          // The effect's own commit saw the version the outbox was read at: nothing appended since.
          else if (completion.version === undefined || completion.version !== outbox.version) outbox.rows = null;
        } catch (error) {
          outbox.rows = null;
          await markUnmarked();
          // A refusal of the whole installation is no fault of the effect's: it stays pending, its
          // attempts uncounted, and the account's queues wait for the installation to answer again.
          if (isInstallationRefusal(error)) {
            await noticeInstallationRefusal(services, current.repository, error);
            break;
          }
          const givenUp = await recordFailure(services, current, pending, error);
          services.metrics?.effects.inc({ effect: pending.kind, outcome: givenUp ? "given_up" : "failed" });
          if (!givenUp) break;
          executed.add(pending.id);
          count++;
          queue = null;
        }
      }
    } finally {
      await markUnmarked();
    }
    return count;
  });
  return done ?? 0;
}

/**
 * After an effect that applied an event in a transaction of its own (`writes`): the queue and
 * its outbox as that transaction left them, when its lock found the version they were read at
 * plus one — nothing else wrote to the queue in between (every writer takes that lock and bumps
 * the version: src/store/queue-writes.ts) — instead of reading them back. Otherwise the outbox
 * is read again, and the queue (null) too. The repository's name is kept from the read.
 */
function carryOver(writes: QueueWrites | null, queue: QueueInRepository, outbox: CarriedOutbox): QueueInRepository | null {
  if (writes && outbox.rows && writes.lockedVersion === outbox.version + 1) {
    outbox.rows = [...outbox.rows.filter((row) => !writes.dropped.has(row.id)), ...writes.appended];
    outbox.version = writes.version;
  } else outbox.rows = null;
  if (!writes?.queue || writes.lockedVersion !== queue.version + 1) return null;
  // What the lock saw of the organization's endpoints holds for that transaction only.
  const { webhookEndpointsEnabled: _seenByTheLock, ...carried } = writes.queue;
  return { ...carried, repository: queue.repository };
}

/** What an effect is about, for its log line: its run or PRs (never a comment's body or a status's words). */
function effectSubject(effect: OutboxEffect): Record<string, unknown> {
  switch (effect.kind) {
    case "start_run":
      return { runId: effect.runId, prs: effect.tested };
    case "cancel_run":
    case "rerun_failed_jobs":
      return { runId: effect.runId };
    case "merge":
      return { runId: effect.runId, prs: effect.prNumbers };
    case "pr_status":
    case "pr_comment":
      return { pr: effect.prNumber };
    case "schedule_timer":
      return { at: new Date(effect.at).toISOString() };
  }
}

/** Effects safe to carry out twice, whose done mark may wait for the next commit: a status (the latest wins), a testing branch's deletion. */
const REPEATABLE: ReadonlySet<OutboxEffect["kind"]> = new Set(["pr_status", "cancel_run"]);

/**
 * Marks the effect being carried out done, with those carried out before it and not yet marked,
 * inside a transaction the effect commits anyway (the event it applies, the run it records):
 * one commit, not two. `marked` tells the runner it happened.
 */
type Completion = { marked: boolean; tx?: Tx; version?: number | null; inTx(tx: Tx): Promise<void>; inSql(sql: Sql): Promise<void> };

function completionOf(services: Services, queueId: string, id: string, unmarked: ReadonlySet<string>): Completion {
  const ids = () => [id, ...unmarked];
  const completion: Completion = {
    marked: false,
    async inTx(tx) {
      await completeEffects(tx, ids(), services.now());
      completion.marked = true;
      // The transaction of the event the effect applies: what it wrote is carried (carryOver).
      completion.tx = tx;
    },
    async inSql(sql) {
      completion.version = await completeEffectsSeeingVersion(sql, queueId, ids(), services.now());
      completion.marked = true;
    },
  };
  return completion;
}

/**
 * A retry waits while the installation has less than its reserve of the rate limit left: what
 * failing effects spend can never eat the calls that move the other queues forward (their
 * first attempts still go). Put off to the reset, not counted as an attempt. Answers whether
 * it was.
 */
async function deferredForReserve(services: Services, queue: QueueInRepository, pending: PendingEffect): Promise<boolean> {
  if (pending.attempts === 0) return false;
  const until = rateReserveUntil(services.codeHost, queue.repository, services.now().getTime());
  if (until === null) return false;
  await services.db.write((tx) => deferEffect(tx, pending.id, new Date(until)));
  services.log?.info({ effect: pending.kind, queueId: pending.queueId, attempts: pending.attempts, until: new Date(until).toISOString() }, "effect retry waits for the rate limit's reset (reserve reached)");
  return true;
}

/** When a failed effect may be tried again, after `attempts` failed attempts. */
export function nextAttemptAt(now: Date, attempts: number, refusal: CodeHostRefusal | null, random: () => number): Date {
  const ceiling = exponentialBackoffMs(attempts, EFFECT_BACKOFF.baseMs, EFFECT_BACKOFF.capMs);
  const at = now.getTime() + Math.floor(random() * ceiling);
  return new Date(Math.max(at, refusal?.retryAt ?? 0));
}

/**
 * Records a failed attempt: schedules the next one, or gives the effect up (a permanent
 * refusal, or too many attempts) and carries out what giving it up means. Answers whether it
 * was given up (the queue's next effects may go on).
 */
async function recordFailure(services: Services, queue: QueueInRepository, pending: PendingEffect, error: unknown): Promise<boolean> {
  const message = error instanceof Error ? error.message : String(error);
  // Anything not classified by the code host is taken for a transient failure (bounded by the attempt limit).
  const refusal = error instanceof CodeHostRefusal ? error : null;
  const attempts = pending.attempts + 1;
  const permanent = refusal !== null && !refusal.transient;
  const exhausted = attempts >= (pending.kind === "rerun_failed_jobs" ? RERUN_MAX_ATTEMPTS : EFFECT_BACKOFF.maxAttempts) && refusal?.kind !== "rate_limited";
  if (!permanent && !exhausted) {
    const at = nextAttemptAt(services.now(), attempts, refusal, services.random ?? Math.random);
    await services.db.write((tx) => recordEffectFailure(tx, pending.id, message, at));
    if (attempts >= WARN_AFTER_ATTEMPTS) services.log?.warn({ effect: pending.kind, queueId: pending.queueId, attempts, error: message, nextAttemptAt: at.toISOString() }, "effect keeps failing");
    return false;
  }
  services.log?.warn({ effect: pending.kind, queueId: pending.queueId, attempts, refusal: refusal?.kind ?? "unclassified", error: message }, "effect given up");
  await services.db.transaction(async (tx) => {
    await giveUpEffect(tx, pending.id, message, services.now());
    const at = services.now();
    await publishQueueEvents(tx, pending.queueId, (place) => [effectGivenUp(place, { effect: pending.kind, attempts, error: message.slice(0, 500) }, at.toISOString())], {
      now: at,
      newId: services.newId,
    });
  });
  await giveUp(services, queue, pending.effect, message);
  return true;
}

/**
 * What an effect given up means for the queue: a run that cannot start fails (its PRs fail
 * with the code host's reason), a refused merge fails its PRs; a status, a comment or a
 * cancellation is dropped (the queue goes on without it).
 */
async function giveUp(services: Services, queue: QueueInRepository, effect: OutboxEffect, message: string): Promise<void> {
  switch (effect.kind) {
    case "start_run":
      await applyQueueEvent(services, queue.id, { kind: "run_finished", runId: effect.runId, outcome: "failed", failure: "start_refused" }, async (tx) => {
        await recordFailureMessage(tx, queue.id, effect.tested, message);
        return true;
      });
      return;
    case "merge":
      if (queue.mergedPrs.slice(0, effect.prNumbers.length).every((pr, i) => pr === effect.prNumbers[i])) {
        await applyQueueEvent(services, queue.id, { kind: "merge_refused", prNumbers: effect.prNumbers, message }, async (tx) => {
          await recordFailureMessage(tx, queue.id, effect.prNumbers, message);
          return true;
        });
      }
      return;
    case "rerun_failed_jobs":
      // Given up on the code host's re-run: test the tree again in a new run instead.
      await rerunAlone(services, queue, effect.runId, message);
      return;
    default:
      return;
  }
}

/**
 * The PR's page on the dashboard, when GREENLINE_PUBLIC_URL is configured: the PR's status links
 * to it and its comments end with it. Added as the effect runs, so the sentences stay as stored.
 */
function pullRequestPageUrl(services: Services, queue: QueueInRepository, prNumber: number): string | null {
  return services.publicUrl ? `${services.publicUrl}${pullRequestPagePath(queue.repository, queue.branch, prNumber)}` : null;
}

/** Carries out an effect; answers whether it applied an event to the queue (its outbox and state may have moved). */
async function execute(services: Services, queue: QueueInRepository, effect: OutboxEffect, completion: Completion, attempts = 0): Promise<boolean> {
  const repo = queue.repository;
  const { codeHost, db } = services;
  switch (effect.kind) {
    case "start_run": {
      const run = await db.read((tx) => runOf(tx, queue.id, effect.runId));
      // A run may have passed already: its CI reported while a crash kept this effect from
      // being marked done. Its testing branch must still be recorded, or it cannot merge.
      if (!run || run.testBranchSha || (run.status !== "running" && run.status !== "passed")) return false;
      if (!effect.baseSha) {
        // The queue never learned its base: learn it; the engine restarts the run on it.
        const head = await codeHost.getBranchHead(repo, queue.branch);
        if (head) await applyQueueEvent(services, queue.id, { kind: "base_moved", sha: head }, (tx) => completion.inTx(tx).then(() => true));
        return true;
      }
      // A merge that landed since the effect was decided re-describes the run from the new
      // target head (same tree, shorter stack). Either description may extend a run already
      // built (its commit then descends from the target, and fewer PRs are merged again).
      const { description, prefix } = await db.read((tx) => builtPrefixOf(tx, queue.id, [run, { baseSha: effect.baseSha, stack: effect.stack }]));
      const { baseSha } = description;
      const stack = [...description.stack];
      const heads = await db.read((tx) => pinnedHeadsOf(tx, queue.id, stack));
      const request = { queueId: queue.id, runId: effect.runId, targetBranch: queue.branch, baseSha, stack, heads, prefix, pullRequest: queue.createPrsForTestingBranches };
      // A permanent refusal (a commit gone, a merge the host will not do) is thrown: the runner
      // gives the effect up, and the run fails with the host's reason (giveUp).
      const started = await codeHost.startTestRun(repo, request);
      if (started.kind === "conflict") {
        await applyQueueEvent(services, queue.id, { kind: "run_finished", runId: effect.runId, outcome: "failed", failure: "merge_conflict" }, (tx) => completion.inTx(tx).then(() => true));
        return true;
      }
      // Test results uploaded for the testing branch before it was recorded are linked to the run now.
      const treeKey = treeKeyOf(baseSha, stack, heads);
      await db.sqlTransaction(async (sql) => {
        await recordTestBranchAndLinkUploads(sql, run.id, started.testBranch, started.sha, treeKey);
        await completion.inSql(sql);
      });
      return false;
    }
    case "cancel_run": {
      const run = await db.read((tx) => runOf(tx, queue.id, effect.runId));
      if (run?.testBranch) await codeHost.cancelTestRun(repo, run.testBranch, { pullRequest: queue.createPrsForTestingBranches });
      return false;
    }
    case "merge": {
      // A merge decided before an earlier one failed is void: its PRs are back in line. The
      // merges still to land are the queue's merged list, in order; this one must be next.
      const merged = queue.mergedPrs;
      if (!effect.prNumbers.every((pr, i) => merged[i] === pr)) return false;
      // A merge decided before a freeze began waits for its end, unless its PRs are all emergencies
      // (docs/freezes.md): held, its PRs stay tested green, and the engine merges them at the thaw.
      // A retry of a merge that already landed part of itself (a crash, a lost answer) is finished
      // instead: the target is not where the queue left it.
      if (freezeStatusAt(queue.freezes, services.now().getTime()).frozen) {
        const emergencies = await db.read((tx) => emergenciesAmong(tx, queue.id, effect.prNumbers));
        const untouched = async () => (await codeHost.getBranchHead(repo, queue.branch)) === (queue.targetHead ?? queue.baseSha);
        if (effect.prNumbers.some((pr) => !emergencies.has(pr)) && (await untouched())) {
          await applyQueueEvent(services, queue.id, { kind: "merge_held", prNumbers: effect.prNumbers }, (tx) => completion.inTx(tx).then(() => true));
          return true;
        }
      }
      let tested: { branch: string; sha: string } | null = null;
      if (effect.runId !== null) {
        const run = await db.read((tx) => runOf(tx, queue.id, effect.runId!));
        if (!run?.testBranch || !run.testBranchSha) throw new Error(`run ${effect.runId} has no testing branch to merge`);
        tested = { branch: run.testBranch, sha: run.testBranchSha };
        // Once per merge: its first attempt starts it (a retry after a failure is not a new start).
        if (run.finishedAt && attempts === 0) services.metrics?.ciToMerge.observe(Math.max(0, (services.now().getTime() - run.finishedAt.getTime()) / 1000));
      }
      const expectedHead = queue.targetHead ?? queue.baseSha;
      if (!expectedHead) throw new Error("the queue does not know its target head");
      const stacks = await db.read((tx) => mergeFactsOf(tx, queue.id, queue.branch, effect.prNumbers));
      const heads = stacks.heads;
      const stacked = Object.keys(stacks.stackBases).length > 0;
      const result = await codeHost.mergeTestedRun(repo, {
        targetBranch: queue.branch,
        expectedHead,
        prNumbers: effect.prNumbers,
        heads,
        tested,
        exactTree: effect.exactTree,
        method: queue.mergeMethod,
        // Checks taken from each PR's head are checked there by GitHub's rules when the PR merges.
        // Stacked PRs merge one by one, each moved to the target just before (docs/stacks.md).
        ...(queue.pullRequestChecks.length > 0 || stacked ? { throughPullRequests: true } : {}),
        ...(stacked ? { stackBases: stacks.stackBases } : {}),
        ...(Object.keys(stacks.retargetAfter).length > 0 ? { retargetAfter: stacks.retargetAfter } : {}),
      });
      // PRs become merged only here, as the code host confirms them; refused ones fail or are
      // cancelled with the host's words, and the merges decided after them go back in line.
      // The merged run is archived then: its cancel_run deletes the testing branch (once).
      await applyMergeOutcome(services, queue.id, eventsOfMerge(effect.prNumbers, result), result.head, completion.inTx);
      return true;
    }
    case "pr_status": {
      const page = pullRequestPageUrl(services, queue, effect.prNumber);
      await codeHost.setPullRequestStatus(repo, effect.sha, { state: effect.state, description: effect.description, ...(page ? { targetUrl: page } : {}) });
      return false;
    }
    case "pr_comment": {
      const page = pullRequestPageUrl(services, queue, effect.prNumber);
      await codeHost.commentOnPullRequest(repo, effect.prNumber, page ? `${effect.body}\n\nDetails: ${page}` : effect.body);
      return false;
    }
    case "rerun_failed_jobs": {
      const run = await db.read((tx) => runOf(tx, queue.id, effect.runId));
      // Decided already (its checks reported anew, it timed out, its PRs left): nothing to re-run.
      if (!run || run.status !== "running" || !run.testBranch || !run.testBranchSha) return false;
      let rerun = 0;
      let refused: string | null = null;
      if (codeHost.ciRetries) {
        try {
          ({ rerun } = await codeHost.ciRetries.rerunFailedJobs(repo, { queueId: queue.id, runId: effect.runId, testBranch: run.testBranch, sha: run.testBranchSha, checkRunIds: effect.checkRunIds ?? [] }));
        } catch (error) {
          // Transient refusals are retried with backoff; a permanent one (no `actions: write`) falls back to a new run.
          if (!(error instanceof CodeHostRefusal) || error.transient) throw error;
          refused = error.message;
          services.log?.warn({ queueId: queue.id, runId: effect.runId, refusal: error.kind, error: error.message }, "the code host refused to re-run failed jobs: starting the run again on its own");
        }
      }
      if (rerun === 0) await rerunAlone(services, queue, effect.runId, refused, completion.inTx);
      return rerun === 0;
    }
    case "schedule_timer":
      return false;
  }
}

/**
 * A retry of a run's failed jobs the code host cannot do (it runs no CI of its own, or refuses):
 * the run's tree is tested again in a new run of its own (the engine's run_rerun), keeping what
 * the verdicts spent, and the PRs' timelines say so (with the host's words when it refused).
 */
async function rerunAlone(services: Services, queue: QueueInRepository, runId: string, refused: string | null, alsoInTx?: (tx: Tx) => Promise<void>): Promise<void> {
  await services.db.transaction(async (tx) => {
    const locked = await lockQueueRow(tx, queue.id);
    const old = locked && (await runOf(tx, queue.id, runId));
    if (!locked || !old || old.status !== "running") return;
    await alsoInTx?.(tx);
    // The engine numbers the new run first; the same decision may start others after it.
    const againId = runIdOf(locked.nextRunNumber);
    await applyEvent(services, tx, locked, { kind: "run_rerun", runId });
    const created = await runOf(tx, queue.id, againId);
    if (!created) return;
    const record = old.flakeVerdict ?? NEW_FLAKE_RECORD;
    await recordFlakeVerdict(tx, created.id, { ...record, judged: {}, excused: {} });
    await recordVerdictTimeline(services, tx, locked, { ...created, flakeVerdict: record }, "flaky_retry_new_run", record.last, refused);
  });
}
