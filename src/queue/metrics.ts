import { freezeStatusAt } from "../domain/freezes.js";
import { Gauge, Histogram, Registry } from "prom-client";
import type { Principal } from "../auth/tokens.js";
import { BLOCKED_REASON_CODES, type BlockedReasonCode } from "../domain/diagnoses.js";
import { isTerminal, QUEUE_STATES } from "../domain/states.js";
import { oneOf } from "../store/columns.js";
import { blockedReasonOf, WAITING } from "./diagnoses.js";
import { loadMetricsData, loadServiceBacklog, type StoredTransition } from "../store/metrics.js";
import { invalidArgument } from "../app/errors.js";
import { repositoryKey } from "../app/repositories.js";
import type { Services } from "../app/services.js";

/** Trunk's bucket boundaries, in seconds. */
const BUCKETS = [60, 300, 600, 900, 1800, 3600, 5400, 7200];
const WINDOW_MS = 60 * 60 * 1000;
const LABELS = ["repo", "branch", "queue_type"] as const;

export type MetricsFilter = { repo?: string; repoHost?: string };

type Durations = { waits: number[]; tests: number[]; timesInQueue: number[] };

/**
 * Measures, from one entry's transitions, the durations that ended inside the window: time
 * waiting to test (pending → testing), time testing, and time in queue (submission to
 * conclusion, not counting time spent not ready).
 */
export function measureEntry(transitions: StoredTransition[], windowStart: Date): Durations {
  const out: Durations = { waits: [], tests: [], timesInQueue: [] };
  let enteredPending: Date | null = null;
  let enteredTesting: Date | null = null;
  let queued = 0;
  let previous: StoredTransition | null = null;
  for (const t of transitions) {
    if (t.reason === "submitted" || t.reason === "resubmitted") queued = 0;
    else if (previous && previous.toState !== "not_ready") queued += t.at.getTime() - previous.at.getTime();
    const inWindow = t.at >= windowStart;
    if (t.toState === "testing" && enteredPending && inWindow) out.waits.push((t.at.getTime() - enteredPending.getTime()) / 1000);
    if (previous?.toState === "testing" && enteredTesting && inWindow) out.tests.push((t.at.getTime() - enteredTesting.getTime()) / 1000);
    if (isTerminal(t.toState) && inWindow && previous) out.timesInQueue.push(queued / 1000);
    if (t.toState === "pending") enteredPending = t.at;
    if (t.toState === "testing") enteredTesting = t.at;
    previous = t;
  }
  return out;
}

/**
 * Records in `histogram` a bucket's durations, aggregated by the database: `count` observations
 * of their mean, which lies in the same bucket, so the bucket counts, the count and the sum are
 * those of observing each (the sum up to rounding).
 */
function observeBucket(histogram: Histogram, labels: Record<string, string>, row: { bucket: number; count: number; sumSeconds: number }): void {
  const upper = BUCKETS[row.bucket] ?? Number.POSITIVE_INFINITY;
  const mean = Math.min(row.sumSeconds / row.count, upper);
  for (let i = 0; i < row.count; i++) histogram.observe(labels, mean);
}

/** getMergeQueueMetrics: Trunk's metric names, labels and buckets, in the text format. */
export async function renderMetrics(services: Services, principal: Principal, filter: MetricsFilter): Promise<{ contentType: string; body: string }> {
  if ((filter.repo === undefined) !== (filter.repoHost === undefined)) {
    throw invalidArgument(filter.repo === undefined ? "repo" : "repoHost", "repo and repoHost must be given together");
  }
  let key: string | undefined;
  if (filter.repo !== undefined) {
    const [owner, name, ...rest] = filter.repo.split("/");
    if (!owner || !name || rest.length > 0) throw invalidArgument("repo", "must have the form owner/name");
    key = repositoryKey({ host: filter.repoHost!, owner, name });
  }
  const now = services.now();
  const windowStart = new Date(now.getTime() - WINDOW_MS);
  const data = await services.db.sqlRead((sql) => loadMetricsData(sql, principal.organizationId, key, windowStart, BUCKETS));
  // Only a queue with PRs waiting can be blocked (blockedReasonOf answers null at once otherwise):
  // the others cost no query.
  const waiting = new Set(data.counts.filter((row) => WAITING.includes(row.state) && row.count > 0).map((row) => row.queueId));
  const blocked = await services.db.read(async (tx) => {
    const out = new Map<string, BlockedReasonCode | null>();
    for (const q of data.queues) {
      const code = waiting.has(q.id) ? ((await blockedReasonOf(services, tx, { id: q.id, state: oneOf(QUEUE_STATES, q.state, "Queue.state"), freezes: q.freezes, frozen: null }, q.repository))?.code ?? null) : null;
      out.set(q.id, code);
    }
    return out;
  });

  const registry = new Registry();
  const gauge = (name: string, help: string, extra: string[] = []) => new Gauge({ name, help, labelNames: [...LABELS, ...extra], registers: [registry] });
  const histogram = (name: string, help: string) => new Histogram({ name, help, labelNames: [...LABELS], buckets: BUCKETS, registers: [registry] });
  const depth = gauge("mq_depth_current", "Pull requests in the queue, not counting those not ready");
  const awaiting = gauge("mq_awaiting_mergeability", "Pull requests waiting on the code host's prerequisites (not ready)");
  const testing = gauge("mq_testing_slots_active", "Pull requests testing");
  const conclusions = gauge("mq_pr_conclusions_1h_total", "Pull requests concluded in the last hour", ["conclusion"]);
  const restarts = gauge("mq_pr_restarts_1h_total", "Testing to pending transitions in the last hour");
  const wait = histogram("mq_pr_wait_duration_1h_seconds", "Time from entering the queue to testing, last hour");
  const test = histogram("mq_pr_test_duration_1h_seconds", "Time spent testing, last hour");
  const inQueue = histogram("mq_pr_time_in_queue_1h_seconds", "Time from entering the queue to leaving it, last hour");
  const frozenGauge = gauge("greenline_queue_frozen", "1 while a merge freeze holds the queue (only hotfixes merge), else 0");
  const freezeChanges = gauge("greenline_queue_freeze_changes_1h", "Merge freezes that started or ended in the last hour", ["event"]);
  const blockedGauge = gauge("greenline_queue_blocked", "1 for the reason the queue merges nothing while pull requests wait (getQueue's blockedReason), 0 for the others", ["reason"]);

  const labelsOf = new Map(data.queues.map((q) => [q.id, { repo: `${q.repository.owner}/${q.repository.name}`, branch: q.branch, queue_type: "main" }]));
  for (const labels of labelsOf.values()) {
    for (const metric of [depth, awaiting, testing, restarts]) metric.set(labels, 0);
    for (const conclusion of ["merged", "failed", "cancelled"]) conclusions.set({ ...labels, conclusion }, 0);
    for (const metric of [wait, test, inQueue]) metric.zero(labels);
  }
  for (const q of data.queues) {
    const labels = labelsOf.get(q.id)!;
    frozenGauge.set(labels, freezeStatusAt(q.freezes, now.getTime()).frozen ? 1 : 0);
    for (const event of ["started", "ended"]) freezeChanges.set({ ...labels, event }, 0);
  }
  for (const row of data.freezeChanges) freezeChanges.inc({ ...labelsOf.get(row.queueId)!, event: row.kind === "freeze_started" ? "started" : "ended" }, row.count);
  for (const [queueId, reason] of blocked) {
    const labels = labelsOf.get(queueId)!;
    for (const code of BLOCKED_REASON_CODES) blockedGauge.set({ ...labels, reason: code }, code === reason ? 1 : 0);
  }
  for (const row of data.counts) {
    const labels = labelsOf.get(row.queueId)!;
    if (row.state === "not_ready") awaiting.inc(labels, row.count);
    else depth.inc(labels, row.count);
    if (row.state === "testing") testing.inc(labels, row.count);
  }
  for (const row of data.moves) {
    const labels = labelsOf.get(row.queueId)!;
    if (isTerminal(row.toState)) conclusions.inc({ ...labels, conclusion: row.toState }, row.count);
    if (row.fromState === "testing" && row.toState === "pending") restarts.inc(labels, row.count);
  }
  const histograms = { wait, test, inQueue };
  for (const row of data.durations) observeBucket(histograms[row.kind], labelsOf.get(row.queueId)!, row);
  const body = await registry.metrics();
  const service = await serviceMetricsFor(services, principal);
  return { contentType: "text/plain; version=0.0.4; charset=utf-8", body: service === null ? body : `${body}\n${service}` };
}

/**
 * The service's own metrics (docs/operations.md, "Metrics"), for the organization that runs it
 * (GREENLINE_OPERATOR_ORG; unset: nobody) only: they count every organization's backlog,
 * which no other organization may learn of. Null for anyone else, or when none are kept.
 */
async function serviceMetricsFor(services: Services, principal: Principal): Promise<string | null> {
  const metrics = services.metrics;
  if (!metrics || services.operatorOrganization === undefined || principal.organizationSlug.toLowerCase() !== services.operatorOrganization) return null;
  const now = services.now();
  const backlog = await services.db.sqlRead((sql) => loadServiceBacklog(sql));
  metrics.observeState({ ...backlog, pool: services.db.poolStats(), rateLimits: services.codeHost.rateBudget?.limits?.() ?? [] }, now);
  return metrics.text();
}
