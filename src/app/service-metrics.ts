import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** Latency buckets (seconds) for requests, decisions and effects: 5 ms to 30 s. */
const FAST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Buckets (seconds) for what waits on CI and people: 1 s to 1 day. */
const SLOW_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14_400, 43_200, 86_400];

let processMetrics: Registry | null = null;

/** Node's default metrics (CPU, memory, event loop, GC), one set per process however many services it runs. */
function processRegistry(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics });
  }
  return processMetrics;
}

/** What the service's own gauges read at each scrape (the store's backlog, the pool, the code host's budget). */
export type ServiceState = {
  effects: { waiting: number; oldestCreatedAt: Date | null; failing: number };
  inbox: { waiting: number; failed: number };
  outbound: { endpointId: string; pending: number }[];
  pool: { size: number; inUse: number; waiting: number };
  rateLimits: { installation: number; limit: number; remaining: number }[];
  replicas: number;
};

/**
 * This process's service metrics (docs/operations.md, "Metrics"): counters that only go up,
 * histograms of durations, gauges read at each scrape, and Node's default process metrics, in
 * one prom-client registry. Labels are bounded: operation ids, status codes, event and effect
 * kinds, outcomes, installation ids and endpoint ids — never PR numbers, SHAs or repositories.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly #counter = (name: string, help: string, labelNames: string[] = []) => new Counter({ name, help, labelNames, registers: [this.registry] });
  readonly #histogram = (name: string, help: string, buckets: number[], labelNames: string[] = []) => new Histogram({ name, help, labelNames, buckets, registers: [this.registry] });
  readonly #gauge = (name: string, help: string, labelNames: string[] = []) => new Gauge({ name, help, labelNames, registers: [this.registry] });

  readonly httpRequests = this.#counter("greenline_http_requests_total", "API requests answered, by operation and HTTP status", ["operation", "status"]);
  readonly refusedRequests = this.#counter("greenline_http_requests_refused_total", "Requests answered 503 by the admission limit (GREENLINE_MAX_IN_FLIGHT) before the API saw them: the service was saturated");
  readonly httpDuration = this.#histogram("greenline_http_request_duration_seconds", "Time to answer an API request, by operation", FAST_BUCKETS, ["operation"]);
  readonly decisions = this.#counter("greenline_queue_decisions_total", "Queue decisions saved, by the engine event that caused them", ["event"]);
  readonly decisionDuration = this.#histogram("greenline_queue_decision_duration_seconds", "Time from taking an event to the decision written (loading the queue, deciding, saving), in its transaction", FAST_BUCKETS);
  readonly transitions = this.#counter("greenline_pr_transitions_total", "Pull request state changes decided, by the state entered", ["to"]);
  readonly timeInQueue = this.#histogram("greenline_pr_time_in_queue_seconds", "Time from a pull request's submission to its leaving the queue, by how it left", SLOW_BUCKETS, ["outcome"]);
  readonly effects = this.#counter("greenline_effects_total", "Effects carried out on the code host, by kind and outcome (done, failed: retried later, given_up)", ["effect", "outcome"]);
  readonly effectDuration = this.#histogram("greenline_effect_duration_seconds", "Time an effect took on the code host, by kind", FAST_BUCKETS, ["effect"]);
  readonly ciToMerge = this.#histogram("greenline_ci_result_to_merge_start_seconds", "Time from a run's passing result to the start of its merge", SLOW_BUCKETS);

  readonly #effectsWaiting = this.#gauge("greenline_effects_waiting", "Effects not yet carried out (all queues)");
  readonly #effectsFailing = this.#gauge("greenline_effects_failing", "Effects not yet carried out that failed at least once");
  readonly #oldestEffect = this.#gauge("greenline_effects_oldest_age_seconds", "Age of the oldest effect not yet carried out (0: none)");
  readonly #inboxWaiting = this.#gauge("greenline_webhook_inbox_waiting", "GitHub deliveries recorded and not yet processed");
  readonly #inboxFailed = this.#gauge("greenline_webhook_inbox_failed", "GitHub deliveries given up on (kept with their error)");
  readonly #outbound = this.#gauge("greenline_outbound_webhook_backlog", "Outbound webhook messages waiting for delivery, by endpoint id", ["endpoint"]);
  readonly #poolSize = this.#gauge("greenline_db_pool_connections", "Database connections open in this process's pool");
  readonly #poolInUse = this.#gauge("greenline_db_pool_in_use", "Database connections in use");
  readonly #poolWaiting = this.#gauge("greenline_db_pool_waiting", "Requests waiting for a database connection");
  readonly #rateRemaining = this.#gauge("greenline_github_rate_limit_remaining", "Requests left in the installation's GitHub rate limit window, as GitHub last answered this process", ["installation"]);
  readonly #rateLimit = this.#gauge("greenline_github_rate_limit", "The installation's GitHub rate limit per window", ["installation"]);
  readonly #replicas = this.#gauge("greenline_replicas_alive", "Replicas whose worker ticked in the last minute (this one included)");

  /** The exposition of these metrics and of Node's default process metrics (collected once per process). */
  async text(): Promise<string> {
    return Registry.merge([this.registry, processRegistry()]).metrics();
  }

  /** Sets the gauges read at scrape time from `state`, `now` the scrape's time. */
  observeState(state: ServiceState, now: Date): void {
    this.#effectsWaiting.set(state.effects.waiting);
    this.#effectsFailing.set(state.effects.failing);
    this.#oldestEffect.set(state.effects.oldestCreatedAt ? Math.max(0, (now.getTime() - state.effects.oldestCreatedAt.getTime()) / 1000) : 0);
    this.#inboxWaiting.set(state.inbox.waiting);
    this.#inboxFailed.set(state.inbox.failed);
    this.#outbound.reset();
    for (const row of state.outbound) this.#outbound.set({ endpoint: row.endpointId }, row.pending);
    this.#poolSize.set(state.pool.size);
    this.#poolInUse.set(state.pool.inUse);
    this.#poolWaiting.set(state.pool.waiting);
    this.#rateRemaining.reset();
    this.#rateLimit.reset();
    for (const row of state.rateLimits) {
      this.#rateRemaining.set({ installation: String(row.installation) }, row.remaining);
      this.#rateLimit.set({ installation: String(row.installation) }, row.limit);
    }
    this.#replicas.set(state.replicas);
  }
}
