import type { Services } from "../app/services.js";
import type { Logger } from "../log.js";
import { applyQueueEvent, noticeTargetHead } from "../queue/queue-events.js";
import { refreshStatuses } from "../flaky/status.js";
import { storeDuePartSets } from "../flaky/upload-parts.js";
import { deliverPolledCiResults, reconcileRunsInFlight, type CiPollSettings } from "../queue/status-checks.js";
import { queuesWithRunningRuns } from "../store/queues.js";
import { accountsOfQueues, claimDueQueues, deferQueue, markUnmarkedQueuesDue, nextDueOfQueue, releaseQueue, renewClaim, timerOf, unclaimQueue, type ClaimedQueue } from "../store/due-queues.js";
import { runEffects } from "./effects.js";
import { dueRechecks, recheckDueReadiness, recheckReadiness } from "../queue/readiness-rechecks.js";
import { diagnoseRunsInFlight, publishBlockedReasonChanges } from "../queue/diagnoses.js";
import { processDueDeliveries, pruneDeliveries, type DeliveryHandler } from "../webhooks/services/inbox.js";
import { closeWebhookAgents, createWebhookAgents, pruneWebhookMessages, WebhookDispatcher } from "../outbound/dispatch.js";
import { settingsOf } from "../outbound/endpoints.js";
import { probeInstallationOutages } from "../webhooks/services/installations.js";
import { outageOfQueue } from "../store/installation-outages.js";
import { pruneHistory } from "../queue/retention.js";
import { claimDueSweeps } from "../store/worker-sweeps.js";
import { noteReplicaAlive } from "../store/metrics.js";
import { randomUUID } from "node:crypto";

/** How often flaky-test statuses are re-judged without uploads (evidence ages, tests recover). */
export const FLAKY_REFRESH_MS = 10 * 60 * 1000;
/** How often webhook deliveries past their retention are forgotten: processed inbound ones, delivered outbound ones. */
export const INBOX_PRUNE_MS = 60 * 60 * 1000;
/** How long one tick may spend on the webhook inbox's rounds before the queues' own work. */
export const INBOX_TICK_BUDGET_MS = 1_000;
/**
 * The due queues' work (src/store/due-queues.ts): how many a worker works on at once (slots
 * wait on the code host more than they use the database), how many of them the queues of one
 * installation may hold (a slow or failing code host leaves the others the rest: its queues
 * claimed beyond that are due again `deferMs` later, behind the others), how many
 * effects one claim of a queue executes at most (a queue with 500 PRs takes its turn like one
 * with 1, then goes behind the queues due before it) and for how long (between two effects:
 * a slow code host's queue gives its slot back), how long a claim's lease is (a replica that
 * dies while working on a queue leaves it to the others after this) and how often the worker
 * renews the leases of the queues it still works on, how long one tick goes on claiming, and
 * when a queue whose work failed is tried again.
 */
/** How often a replica notes it is alive (ReplicaHeartbeat). */
const REPLICA_NOTE_MS = 15_000;

export const DUE_QUEUES = { concurrency: 16, perInstallation: 8, deferMs: 1_000, effectsPerClaim: 20, claimBudgetMs: 2_000, leaseMs: 15_000, renewEveryMs: 5_000, tickBudgetMs: 2_000, retryAfterErrorMs: 5_000 };
/**
 * The worker's sweeps, each done by one replica per worker interval (src/store/worker-sweeps.ts):
 * probes of unavailable installations, a polling code host's CI results and target heads,
 * readiness re-reads, runs in flight reconciled with the code host and diagnosed, blocked reasons.
 */
export const SWEEPS = ["installation-probes", "polled-ci-results", "target-heads", "readiness-rechecks", "runs-in-flight", "run-diagnoses", "blocked-reasons"] as const;
/** How many target-head checks (a code host without webhooks), and how many readiness re-reads, one process has in flight at most in the background. */
export const BACKGROUND_CHECKS_IN_FLIGHT = 8;

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
 * webhooks go out on a loop of their own. On the worker's own loop (start), the due queues'
 * effects, the readiness re-reads and the target-head checks go on in the background, each
 * apart (a slow or failing code host for one queue holds that queue, not the tick nor the
 * others: docs/engine.md, "Isolation"); a tick asked for (tick, drain) waits for them. Everything it does reads the database, so any number
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
  #stopping = false;
  /** The queues this process works on now (its claims), each in a slot of its own. */
  readonly #claims = new Map<string, { claimed: ClaimedQueue; account: string; working: Promise<number>; releasing: boolean }>();
  /** How many slots the queues of each installation (its account) hold here. */
  readonly #slotsOf = new Map<string, number>();
  /** The renewal of the claims' leases in flight (a release waits for it: the claim's token may change). */
  #renewing: Promise<void> | null = null;
  /** Slots a claim statement in flight may fill. */
  #reserved = 0;
  #refilling = false;
  #renewal: NodeJS.Timeout | null = null;
  /** Checks of queues' target heads in flight (the worker's own loop does not wait for them). */
  readonly #baseChecks = new Map<string, Promise<number>>();
  /** Re-reads of PRs' readiness in flight (idem), by queue and PR. */
  readonly #rechecks = new Map<string, Promise<number>>();

  constructor(
    private readonly services: Services,
    private readonly options: WorkerOptions,
  ) {
    this.#webhooks = new WebhookDispatcher(services, this.#webhookAgents);
  }

  start(): void {
    this.#stopping = false;
    this.#startedAt ??= Date.now();
    this.#interval ??= setInterval(() => {
      if (!this.#ticking) this.#tickOnce(false).catch((error: unknown) => this.options.log.error({ err: error }, "worker tick failed"));
    }, this.options.intervalMs);
    if (!this.#running) {
      this.#running = true;
      this.#scheduleWebhooks(0);
    }
  }

  async stop(): Promise<void> {
    this.#startedAt = null;
    if (this.#interval) clearInterval(this.#interval);
    this.#interval = null;
    this.#running = false;
    this.#stopping = true;
    if (this.#webhookTimer) clearTimeout(this.#webhookTimer);
    this.#webhookTimer = null;
    // The queues worked on in the background finish their effect in flight and release their claim.
    const background = [...[...this.#claims.values()].map((c) => c.working), ...this.#baseChecks.values(), ...this.#rechecks.values()].map((p) => p.catch(() => undefined));
    await Promise.all([this.#ticking?.catch(() => undefined), this.#webhooks.settled(), ...background]);
    if (this.#renewal) clearInterval(this.#renewal);
    this.#renewal = null;
    // Stopped: ticks asked for (tests, tools) work again.
    this.#stopping = false;
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

  /** One round of work, waiting for the queues it claimed; answers how many things it did. */
  tick(): Promise<number> {
    return this.#tickOnce(true);
  }

  #tickOnce(wait: boolean): Promise<number> {
    if (!this.#ticking) {
      this.#tickStartedAt = Date.now();
      this.#ticking = this.#tick(wait)
        .then((work) => {
          // Only a tick that did its round counts: one failing every interval is no sign of life.
          this.#lastTickAt = Date.now();
          return work;
        })
        .finally(() => {
          this.#ticking = null;
          this.#tickStartedAt = null;
        });
    }
    return this.#ticking;
  }

  readonly #replicaId = randomUUID();
  #aliveNotedAt = 0;

  /** Wall-clock times (epoch ms) of the last tick's end and of the one under way (readiness: /readyz). */
  #lastTickAt: number | null = null;
  #tickStartedAt: number | null = null;
  #startedAt: number | null = null;

  /**
   * Whether this process's worker is ticking within its interval (`/readyz`): off when it does
   * not run on its own here (tests, tools); stalled when no tick ended for 10 intervals (at least
   * 30 s) and none is under way, or one has gone on for 5 minutes.
   */
  health(now = Date.now()): { status: "ok" | "off" | "stalled"; lastTickAt: number | null; tickingSince: number | null } {
    const view = { lastTickAt: this.#lastTickAt, tickingSince: this.#tickStartedAt };
    if (this.#startedAt === null) return { status: "off", ...view };
    if (this.#tickStartedAt !== null) return { status: now - this.#tickStartedAt > 15 * 60_000 ? "stalled" : "ok", ...view };
    const since = Math.max(this.#lastTickAt ?? this.#startedAt, this.#startedAt);
    return { status: now - since > Math.max(30_000, 10 * this.options.intervalMs) ? "stalled" : "ok", ...view };
  }

  /** Ticks until there is nothing left to do now (tests, with an injected clock). */
  async drain(maxRounds = 10_000): Promise<void> {
    for (let i = 0; i < maxRounds; i++) if ((await this.tick()) === 0) return;
    throw new Error("the worker did not settle");
  }

  /**
   * `wait`: the queues' work and the checks of target heads are waited for (else they go on in
   * the background), and every sweep is done (a tick asked for must see everything due).
   */
  async #tick(wait: boolean): Promise<number> {
    const { services } = this;
    let work = 0;
    // This replica is alive (service metrics count the replicas): noted every 15 s at most, while
    // the worker runs on its own (ticks asked for by tests and tools note nothing).
    if (this.#startedAt !== null && services.db.kind !== "sqlite" && Date.now() - this.#aliveNotedAt >= REPLICA_NOTE_MS) {
      this.#aliveNotedAt = Date.now();
      await services.db.write((tx) => noteReplicaAlive(tx, this.#replicaId)).catch((error: unknown) => this.options.log.warn({ err: error }, "noting this replica alive failed"));
    }
    // Webhook deliveries first: what they change is then acted on in the same round.
    if (this.options.handleDelivery) work += await this.#processInbox(this.options.handleDelivery);
    // The sweeps below are shared by the replicas: each does those it claims, due once per interval.
    const sweeps = wait ? new Set(SWEEPS) : await this.#claimSweeps();
    // Installations suspended or gone whose probe is due: one that answers again lets its queues go on in this round.
    if (sweeps.has("installation-probes")) work += await probeInstallationOutages(services);
    const polling = services.codeHost.polling;
    if (polling) {
      if (sweeps.has("polled-ci-results")) work += await deliverPolledCiResults(services, polling);
      if (sweeps.has("target-heads")) work += await this.#noticeBaseMoves(wait);
    }
    // Waiting PRs whose mergeability GitHub was still computing, or that an event may have changed.
    if (sweeps.has("readiness-rechecks")) work += wait ? await recheckDueReadiness(services) : await this.#recheckReadinessInBackground();
    // Deliveries of CI results get lost and reordered: runs in flight are reconciled with the host.
    if (sweeps.has("runs-in-flight")) work += await reconcileRunsInFlight(services, this.options.ciPoll);
    // Runs whose required checks never started are told so, long before their testing timeout.
    if (sweeps.has("run-diagnoses")) work += await diagnoseRunsInFlight(services);
    // The queues with work due (timers, effects), claimed oldest due first: no sweep of all queues.
    work += await this.#workOnDueQueues(wait);
    // After the effects: a queue blocked on one that just failed, or one that went through, is told now.
    // (Not counted as work: publishing changes nothing the worker acts on.)
    if (sweeps.has("blocked-reasons")) await publishBlockedReasonChanges(services);
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
      // Uploads sent in parts whose parts stopped coming, or whose storing a crash cut short.
      work += (await services.db.tryWithLock("greenline-upload-parts", () => storeDuePartSets(services))) ?? 0;
    }
    return work;
  }

  /** The sweeps due now that this process claimed (none when the claim fails: the next tick tries again). */
  async #claimSweeps(): Promise<Set<string>> {
    const { services } = this;
    // The machine's clock, not the service's: the interval is the worker's pace, and a service
    // clock held still (tests, tools) must not leave the sweeps claimed forever.
    const now = new Date();
    try {
      // Due again a little before this process's next tick (a timer's jitter must not skip it).
      return await services.db.write((tx) => claimDueSweeps(tx, SWEEPS, now, new Date(now.getTime() + Math.round(this.options.intervalMs * 0.8))));
    } catch (error) {
      this.options.log.error({ err: error }, "claiming the worker's sweeps failed");
      return new Set();
    }
  }

  /**
   * Claims due queues and works on each, at most DUE_QUEUES.concurrency at once in this process
   * (counting those still worked on since earlier ticks): claims go on while they find queues
   * and slots, for at most DUE_QUEUES.tickBudgetMs. `wait` (a tick asked for, in tests and
   * tools): waits for the queues it claimed, claiming more as slots free, and answers the work
   * done. Else (the worker's own loop) it answers at once: each queue is worked on in the
   * background, and one whose code host is slow or failing holds its own slot, not the tick nor
   * the other queues; a slot that frees claims the next due queue without waiting for a tick.
   */
  async #workOnDueQueues(wait: boolean): Promise<number> {
    const { services } = this;
    const started = performance.now();
    let work = 0;
    const mine = new Set<Promise<void>>();
    const worked = new Set<string>();
    let exhausted = false;
    for (;;) {
      const free = DUE_QUEUES.concurrency - this.#claims.size - this.#reserved;
      if (!exhausted && free > 0 && !this.#stopping) {
        this.#reserved += free;
        let claimed: ClaimedQueue[];
        let accounts: Map<string, string>;
        try {
          const now = services.now();
          const lease = new Date(now.getTime() + DUE_QUEUES.leaseMs);
          ({ claimed, accounts } = await services.db.write(async (tx) => {
            const queues = await claimDueQueues(tx, services.db.kind, now, free, lease);
            return {
              claimed: queues,
              accounts: await accountsOfQueues(
                tx,
                queues.map((q) => q.queueId),
              ),
            };
          }));
        } finally {
          this.#reserved -= free;
        }
        // A queue this process still works on, claimed again (its lease ended before it was
        // renewed: this process stalled): its claim takes the new lease, and is released once.
        for (const queue of claimed) {
          const held = this.#claims.get(queue.queueId);
          if (held) held.claimed.leaseUntil = queue.leaseUntil;
        }
        // A queue worked on in this tick and due again at once (its work waits on something
        // else: a lock another process holds, a probe about to be made) waits for the next tick.
        const again = claimed.filter((queue) => worked.has(queue.queueId) && !this.#claims.has(queue.queueId));
        for (const queue of again) await services.db.write((tx) => unclaimQueue(tx, queue));
        const candidates = claimed.filter((queue) => !worked.has(queue.queueId) && !this.#claims.has(queue.queueId));
        // An installation holding its share of the slots: its other queues wait behind the rest.
        const fresh: { queue: ClaimedQueue; account: string }[] = [];
        const deferred: ClaimedQueue[] = [];
        for (const queue of candidates) {
          const account = accounts.get(queue.queueId) ?? "";
          const held = (this.#slotsOf.get(account) ?? 0) + fresh.filter((f) => f.account === account).length;
          if (held >= DUE_QUEUES.perInstallation) deferred.push(queue);
          else fresh.push({ queue, account });
        }
        // (A tick asked for leaves them due as they were: it claims them once its slots free.)
        if (deferred.length > 0) {
          const at = new Date(services.now().getTime() + DUE_QUEUES.deferMs);
          await services.db.write(async (tx) => {
            for (const queue of deferred) await (wait ? unclaimQueue(tx, queue) : deferQueue(tx, queue, at));
          });
        }
        if (fresh.length === 0 || performance.now() - started > DUE_QUEUES.tickBudgetMs) exhausted = true;
        for (const { queue, account } of fresh) {
          worked.add(queue.queueId);
          const working = this.#startClaim(queue, account);
          if (!wait) continue;
          const counted: Promise<void> = working.then((done) => {
            work += done;
            mine.delete(counted);
          });
          mine.add(counted);
        }
        if (fresh.length > 0) continue;
      }
      if (!wait || mine.size === 0) break;
      await Promise.race(mine);
    }
    return work;
  }

  /**
   * Works on a claimed queue in this process's pool of claims: its lease is renewed while the
   * work lasts, and when it ends (the worker's own loop running) a freed slot claims more due
   * queues at once. Answers the work done.
   */
  #startClaim(claimed: ClaimedQueue, account: string): Promise<number> {
    this.#slotsOf.set(account, (this.#slotsOf.get(account) ?? 0) + 1);
    const working = this.#workOnQueue(claimed).finally(() => {
      this.#claims.delete(claimed.queueId);
      const held = (this.#slotsOf.get(account) ?? 1) - 1;
      if (held > 0) this.#slotsOf.set(account, held);
      else this.#slotsOf.delete(account);
      if (this.#claims.size === 0 && this.#renewal) {
        clearInterval(this.#renewal);
        this.#renewal = null;
      }
    });
    this.#claims.set(claimed.queueId, { claimed, account, working, releasing: false });
    this.#renewal ??= setInterval(() => {
      if (this.#renewing) return;
      this.#renewing = this.#renewClaims()
        .catch((error: unknown) => this.options.log.error({ err: error }, "renewing the claims' leases failed"))
        .finally(() => (this.#renewing = null));
    }, DUE_QUEUES.renewEveryMs);
    return working.then((done) => {
      // Work done frees the slot for the next due queue; a claim that found nothing to do
      // (its queue waits on something else) leaves the next claim to the next tick.
      if (done > 0 && this.#running && !this.#stopping) this.#refill();
      return done;
    });
  }

  /** Claims due queues into the free slots, in the background (one refill at a time). */
  #refill(): void {
    if (this.#refilling) return;
    this.#refilling = true;
    this.#workOnDueQueues(false)
      .catch((error: unknown) => this.options.log.error({ err: error }, "claiming due queues failed"))
      .finally(() => (this.#refilling = false));
  }

  /**
   * Extends the leases of the queues this process still works on: a slow code host's call may
   * outlast a lease, and a queue must not be claimed by another worker meanwhile. A claim
   * another worker took after its lease ended (this process stalled) is left to it; the queue's
   * lock (runEffects) still keeps the two from working on it at once.
   */
  async #renewClaims(): Promise<void> {
    const { services } = this;
    const claims = [...this.#claims.values()].filter((c) => !c.releasing).map((c) => c.claimed);
    if (claims.length === 0) return;
    const lease = new Date(services.now().getTime() + DUE_QUEUES.leaseMs);
    const renewed = await services.db.write(async (tx) => {
      const held: ClaimedQueue[] = [];
      for (const claimed of claims) if (await renewClaim(tx, claimed, lease)) held.push(claimed);
      return held;
    });
    for (const claimed of renewed) claimed.leaseUntil = lease;
    const lost = claims.filter((claimed) => !renewed.includes(claimed)).map((claimed) => claimed.queueId);
    if (lost.length > 0) this.options.log.warn({ queues: lost }, "claims whose lease ended before it was renewed (another worker may have claimed them)");
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
      // A claim gives its turn back after DUE_QUEUES.claimBudgetMs between effects (a slow code
      // host), and when the worker stops.
      const started = performance.now();
      work += await runEffects(services, id, DUE_QUEUES.effectsPerClaim, () => !this.#stopping && performance.now() - started < DUE_QUEUES.claimBudgetMs);
      next = await services.db.read((tx) => nextDueOfQueue(tx, id, services.now()));
    } catch (error) {
      this.options.log.error({ err: error, queueId: id }, "running a queue's effects failed");
      next = new Date(services.now().getTime() + DUE_QUEUES.retryAfterErrorMs);
    }
    // A renewal of the leases in flight may change the claim's token: the release waits for it,
    // and no renewal takes this claim after.
    const held = this.#claims.get(id);
    if (held) held.releasing = true;
    await this.#renewing;
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
   * only ones a move can make stale) with what the queue left. `wait`: one after the other,
   * waited for; else each queue's check goes on in the background (at most
   * BACKGROUND_CHECKS_IN_FLIGHT at once, a queue whose check is in flight is skipped): a slow or
   * failing code host for one queue holds neither the tick nor the other queues' checks.
   */
  async #noticeBaseMoves(wait: boolean): Promise<number> {
    const { services } = this;
    const queues = await services.db.read((tx) => queuesWithRunningRuns(tx));
    const check = async (queue: (typeof queues)[number]) => {
      const head = await services.codeHost.getBranchHead(queue.repository, queue.branch);
      // A branch that is gone (null) is not a move to a new base.
      if (head === null || head === (queue.targetHead ?? queue.baseSha)) return 0;
      return (await noticeTargetHead(services, queue.id, head)) ? 1 : 0;
    };
    if (wait) {
      let work = 0;
      for (const queue of queues) work += await check(queue);
      return work;
    }
    for (const queue of queues) {
      if (this.#baseChecks.size >= BACKGROUND_CHECKS_IN_FLIGHT || this.#stopping) break;
      if (this.#baseChecks.has(queue.id)) continue;
      const checking = check(queue)
        .catch((error: unknown) => {
          this.options.log.warn({ err: error, queueId: queue.id }, "checking a queue's target head failed");
          return 0;
        })
        .finally(() => this.#baseChecks.delete(queue.id));
      this.#baseChecks.set(queue.id, checking);
    }
    return 0;
  }

  /**
   * The worker's own loop re-reads due PRs in the background, each apart (at most
   * BACKGROUND_CHECKS_IN_FLIGHT at once; one in flight is not asked again): a slow code host's PR
   * holds neither the tick nor the other re-reads. The work they do is the engine's, marked due
   * on their queues; the tick counts none of it.
   */
  async #recheckReadinessInBackground(): Promise<number> {
    if (this.#rechecks.size >= BACKGROUND_CHECKS_IN_FLIGHT || this.#stopping) return 0;
    for (const item of await dueRechecks(this.services)) {
      if (this.#rechecks.size >= BACKGROUND_CHECKS_IN_FLIGHT || this.#stopping) break;
      const key = `${item.queueId}#${item.prNumber}`;
      if (this.#rechecks.has(key)) continue;
      const rechecking = recheckReadiness(this.services, item)
        .then((changed) => (changed ? 1 : 0))
        .catch((error: unknown) => {
          this.options.log.warn({ err: error, queueId: item.queueId, pr: item.prNumber }, "re-reading a pull request's readiness failed");
          return 0;
        })
        .finally(() => this.#rechecks.delete(key));
      this.#rechecks.set(key, rechecking);
    }
    return 0;
  }
}
