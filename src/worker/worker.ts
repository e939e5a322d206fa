import type { Services } from "../app/services.js";
import type { Logger } from "../log.js";
import { applyQueueEvent, noticeTargetHead } from "../queue/queue-events.js";
import { refreshStatuses } from "../flaky/status.js";
import { deliverPolledCiResults, reconcileRunsInFlight, type CiPollSettings } from "../queue/status-checks.js";
import { queuesWithRunningRuns } from "../store/queues.js";
import { claimDueQueues, markUnmarkedQueuesDue, nextDueOfQueue, releaseQueue, timerOf, unclaimQueue, type ClaimedQueue } from "../store/due-queues.js";
import { runEffects } from "./effects.js";
import { recheckDueReadiness } from "../queue/readiness-rechecks.js";
import { diagnoseRunsInFlight, publishBlockedReasonChanges } from "../queue/diagnoses.js";
import { processDueDeliveries, pruneDeliveries, type DeliveryHandler } from "../webhooks/services/inbox.js";
import { closeWebhookAgents, createWebhookAgents, pruneWebhookMessages, WebhookDispatcher } from "../outbound/dispatch.js";
import { settingsOf } from "../outbound/endpoints.js";
import { probeInstallationOutages } from "../webhooks/services/installations.js";
import { outageOfQueue } from "../store/installation-outages.js";
import { pruneHistory } from "../queue/retention.js";

/** How often flaky-test statuses are re-judged without uploads (evidence ages, tests recover). */
export const FLAKY_REFRESH_MS = 10 * 60 * 1000;
/** How often webhook deliveries past their retention are forgotten: processed inbound ones, delivered outbound ones. */
export const INBOX_PRUNE_MS = 60 * 60 * 1000;
/** How long one tick may spend on the webhook inbox's rounds before the queues' own work. */
export const INBOX_TICK_BUDGET_MS = 1_000;
/**
 * The due queues' work (src/store/due-queues.ts): how many a worker works on at once, how many
 * effects one claim of a queue executes at most (a queue with 500 PRs takes its turn like one
 * with 1, then goes behind the queues due before it), how long a claim's lease is (a replica
 * that dies while working on a queue leaves it to the others after this), how long one tick
 * goes on claiming, and when a queue whose work failed is tried again.
 */
export const DUE_QUEUES = { concurrency: 8, effectsPerClaim: 20, leaseMs: 15_000, tickBudgetMs: 2_000, retryAfterErrorMs: 5_000 };

export type WorkerOptions = {
  intervalMs: number;
  log: Logger;
  /** Processes a recorded webhook delivery (the GitHub App's handlers); absent: no inbox to process. */
  handleDelivery?: DeliveryHandler;
  /** Reconciliation polling of runs in flight with a host that offers CI results (default: 30 s doubling to 5 min). */
  ciPoll?: CiPollSettings;
};

/**
 * The queue worker. Each tick: processes the recorded webhook deliveries, probes suspended or
 * uninstalled installations whose probe is due, delivers the CI results
 * a code host without webhooks holds and notices its target branches moving outside the queue,
 * re-reads waiting PRs' readiness, reconciles and diagnoses runs in flight, fires due timers,
 * executes effects, and now and then prunes old deliveries and history (src/queue/retention.ts) and re-judges flaky tests. Outbound
 * webhooks go out on a loop of their own. Everything it does reads the database, so any number
 * of processes can run one, and a restarted process carries on.
 */
export class Worker {
  #interval: NodeJS.Timeout | null = null;
  #ticking: Promise<number> | null = null;
  #flakyRefreshedAt = Number.NEGATIVE_INFINITY;
  #inboxPrunedAt = Number.NEGATIVE_INFINITY;
  #outboxPrunedAt = Number.NEGATIVE_INFINITY;
  /** Outbound webhooks are delivered by a loop of their own: a slow endpoint never holds the queues' work. */
  readonly #webhookAgents = createWebhookAgents();
  readonly #webhooks: WebhookDispatcher;
  #webhookTimer: NodeJS.Timeout | null = null;
  #running = false;

  constructor(
    private readonly services: Services,
    private readonly options: WorkerOptions,
  ) {
    this.#webhooks = new WebhookDispatcher(services, this.#webhookAgents);
  }

  start(): void {
    this.#interval ??= setInterval(() => {
      if (!this.#ticking) this.tick().catch((error: unknown) => this.options.log.error({ err: error }, "worker tick failed"));
    }, this.options.intervalMs);
    if (!this.#running) {
      this.#running = true;
      this.#scheduleWebhooks(0);
    }
  }

  async stop(): Promise<void> {
    if (this.#interval) clearInterval(this.#interval);
    this.#interval = null;
    this.#running = false;
    if (this.#webhookTimer) clearTimeout(this.#webhookTimer);
    this.#webhookTimer = null;
    await Promise.all([this.#ticking?.catch(() => undefined), this.#webhooks.settled()]);
    closeWebhookAgents(this.#webhookAgents);
  }

  /**
   * The outbound webhooks' poll: every poll interval, each endpoint with messages pending that
   * is idle here starts delivering, round after round until none of its messages is due; a
   * busy endpoint is left to its own rounds (endpoints never wait for each other).
   */
  #scheduleWebhooks(delayMs: number): void {
    if (!this.#running) return;
    this.#webhookTimer = setTimeout(() => {
      const failed = (error: unknown, endpointId?: string) => this.options.log.error({ err: error, ...(endpointId ? { webhookEndpoint: endpointId } : {}) }, "delivering outbound webhooks failed");
      this.#webhooks
        .startIdle(() => this.#running, failed)
        .catch(failed)
        .finally(() => this.#scheduleWebhooks(settingsOf(this.services).pollMs));
    }, delayMs);
  }

  /** One round of outbound webhook delivery for each endpoint idle here (answers how many messages it attempted). */
  deliverWebhooksOnce(): Promise<number> {
    return this.#webhooks.roundOfIdle();
  }

  /** Rounds of outbound webhook delivery until none is due now (tests, with an injected clock). */
  async deliverWebhooks(maxRounds = 1_000): Promise<number> {
    let total = 0;
    for (let i = 0; i < maxRounds; i++) {
      const work = await this.deliverWebhooksOnce();
      if (work === 0) return total;
      total += work;
    }
    throw new Error("outbound webhooks did not settle");
  }

  /** One round of work; answers how many things it did. */
  tick(): Promise<number> {
    this.#ticking ??= this.#tick().finally(() => (this.#ticking = null));
    return this.#ticking;
  }

  /** Ticks until there is nothing left to do now (tests, with an injected clock). */
  async drain(maxRounds = 10_000): Promise<void> {
    for (let i = 0; i < maxRounds; i++) if ((await this.tick()) === 0) return;
    throw new Error("the worker did not settle");
  }

  async #tick(): Promise<number> {
    const { services } = this;
    let work = 0;
    // Webhook deliveries first: what they change is then acted on in the same round.
    if (this.options.handleDelivery) work += await this.#processInbox(this.options.handleDelivery);
    // Installations suspended or gone whose probe is due: one that answers again lets its queues go on in this round.
    work += await probeInstallationOutages(services);
    const polling = services.codeHost.polling;
    if (polling) {
      work += await deliverPolledCiResults(services, polling);
      work += await this.#noticeBaseMoves();
    }
    // Waiting PRs whose mergeability GitHub was still computing, or that an event may have changed.
    work += await recheckDueReadiness(services);
    // Deliveries of CI results get lost and reordered: runs in flight are reconciled with the host.
    work += await reconcileRunsInFlight(services, this.options.ciPoll);
    // Runs whose required checks never started are told so, long before their testing timeout.
    work += await diagnoseRunsInFlight(services);
    // The queues with work due (timers, effects), claimed oldest due first: no sweep of all queues.
    work += await this.#workOnDueQueues();
    // After the effects: a queue blocked on one that just failed, or one that went through, is told now.
    // (Not counted as work: publishing changes nothing the worker acts on.)
    await publishBlockedReasonChanges(services);
    if (services.now().getTime() - this.#outboxPrunedAt >= INBOX_PRUNE_MS) {
      this.#outboxPrunedAt = services.now().getTime();
      // Outbound webhooks delivered past their retention (no work counted: nothing waits on it).
      await pruneWebhookMessages(services);
      // The queues' history past its retention (one replica at a time).
      await services.db.tryWithLock("greenline-history-prune", () => pruneHistory(services));
      // Work no mark told of (the marks are written with the work; this is the net under them).
      const unmarked = await services.db.write((tx) => markUnmarkedQueuesDue(tx, services.now()));
      if (unmarked > 0) this.options.log.warn({ queues: unmarked }, "queues with work and no due mark were marked due");
    }
    if (services.now().getTime() - this.#flakyRefreshedAt >= FLAKY_REFRESH_MS) {
      this.#flakyRefreshedAt = services.now().getTime();
      const changed = await services.db.tryWithLock("greenline-flaky-refresh", () => refreshStatuses(services.db, services.now()));
      work += changed ?? 0;
    }
    return work;
  }

  /**
   * Claims due queues and works on each (DUE_QUEUES.concurrency at once): claims go on while
   * they find queues, for at most DUE_QUEUES.tickBudgetMs of this tick. Answers the work done.
   */
  async #workOnDueQueues(): Promise<number> {
    const { services } = this;
    const started = performance.now();
    let work = 0;
    const inFlight = new Set<Promise<void>>();
    const worked = new Set<string>();
    let exhausted = false;
    while (!exhausted || inFlight.size > 0) {
      if (!exhausted && inFlight.size < DUE_QUEUES.concurrency) {
        const now = services.now();
        const lease = new Date(now.getTime() + DUE_QUEUES.leaseMs);
        const claimed = await services.db.write((tx) => claimDueQueues(tx, services.db.kind, now, DUE_QUEUES.concurrency - inFlight.size, lease));
        // A queue worked on in this tick and due again at once (its work waits on something
        // else: a lock another process holds, a probe about to be made) waits for the next tick.
        const again = claimed.filter((queue) => worked.has(queue.queueId));
        for (const queue of again) await services.db.write((tx) => unclaimQueue(tx, queue));
        const fresh = claimed.filter((queue) => !worked.has(queue.queueId));
        if (fresh.length === 0 || performance.now() - started > DUE_QUEUES.tickBudgetMs) exhausted = true;
        for (const queue of fresh) {
          worked.add(queue.queueId);
          const working: Promise<void> = this.#workOnQueue(queue).then((done) => {
            work += done;
            inFlight.delete(working);
          });
          inFlight.add(working);
        }
        if (fresh.length > 0) continue;
      }
      if (inFlight.size > 0) await Promise.race(inFlight);
    }
    return work;
  }

  /**
   * One claim of a due queue: fires its timer when due, executes its effects (a bounded number),
   * and releases it due again when its next work is (or not at all). One queue's trouble (its
   * database rows, a bug) is logged and leaves the others to go on; it is tried again later.
   */
  async #workOnQueue(claimed: ClaimedQueue): Promise<number> {
    const { services } = this;
    const id = claimed.queueId;
    let work = 0;
    let next: Date | null;
    try {
      // A queue of an unavailable installation keeps its timers (a testing timeout must not fail
      // PRs whose CI results cannot be read meanwhile): they fire once the installation answers.
      const timerAt = await services.db.read((tx) => timerOf(tx, id));
      if (timerAt !== null && timerAt <= services.now()) {
        const fired = await applyQueueEvent(services, id, { kind: "timer_fired" }, async (tx, queue) => queue.timerAt !== null && queue.timerAt <= services.now() && !(await outageOfQueue(tx, id)));
        if (fired) work++;
      }
      work += await runEffects(services, id, DUE_QUEUES.effectsPerClaim);
      next = await services.db.read((tx) => nextDueOfQueue(tx, id, services.now()));
    } catch (error) {
      this.options.log.error({ err: error, queueId: id }, "running a queue's effects failed");
      next = new Date(services.now().getTime() + DUE_QUEUES.retryAfterErrorMs);
    }
    try {
      await services.db.write((tx) => releaseQueue(tx, claimed, next, services.now()));
    } catch (error) {
      // Its lease ends on its own: another claim takes it then.
      this.options.log.error({ err: error, queueId: id }, "releasing a queue's claim failed");
    }
    return work;
  }

  /**
   * Processes the webhook deliveries recorded and due now, and nothing else (tests that deliver
   * a webhook and look at what it did, before anything else the worker would do). Answers how
   * many were processed.
   */
  async processWebhooks(): Promise<number> {
    const handle = this.options.handleDelivery;
    if (!handle) return 0;
    let total = 0;
    for (let round = 0; round < 100; round++) {
      const done = await processDueDeliveries(this.services, handle);
      if (done === 0) break;
      total += done;
    }
    return total;
  }

  /**
   * The inbox drains as fast as it fills: rounds follow one another while they find work, for
   * at most INBOX_TICK_BUDGET_MS of this tick (then the queues' work goes on, and the next tick
   * carries on where this one stopped).
   */
  async #processInbox(handle: DeliveryHandler): Promise<number> {
    const { services } = this;
    const started = performance.now();
    let work = 0;
    for (let done = -1; done !== 0 && performance.now() - started < INBOX_TICK_BUDGET_MS; ) {
      done = await processDueDeliveries(services, handle);
      work += done;
    }
    if (services.now().getTime() - this.#inboxPrunedAt >= INBOX_PRUNE_MS) {
      this.#inboxPrunedAt = services.now().getTime();
      await pruneDeliveries(services);
    }
    return work;
  }

  /**
   * No webhook tells of pushes: compare the target head of each queue with runs in flight (the
   * only ones a move can make stale) with what the queue left.
   */
  async #noticeBaseMoves(): Promise<number> {
    const { services } = this;
    const queues = await services.db.read((tx) => queuesWithRunningRuns(tx));
    let work = 0;
    for (const queue of queues) {
      const head = await services.codeHost.getBranchHead(queue.repository, queue.branch);
      // A branch that is gone (null) is not a move to a new base.
      if (head === null || head === (queue.targetHead ?? queue.baseSha)) continue;
      if (await noticeTargetHead(services, queue.id, head)) work++;
    }
    return work;
  }
}
