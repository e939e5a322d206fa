import { freezeStatusAt } from "../domain/freezes.js";
import type { Principal } from "../auth/tokens.js";
import { BLOCKED_REASON_CODES } from "../domain/diagnoses.js";
import { type DurationKind, loadMetricsData, loadServiceBacklog } from "../store/metrics.js";
import { invalidArgument } from "../app/errors.js";
import { repositoryKey } from "../app/repositories.js";
import type { Services } from "../app/services.js";

/** Trunk's bucket boundaries, in seconds. */
const BUCKETS = [60, 300, 600, 900, 1800, 3600, 5400, 7200];
const WINDOW_MS = 60 * 60 * 1000;

export type MetricsFilter = { repo?: string; repoHost?: string };

/** A label value in the text format: backslash, double quote and line feed escaped. */
const labelValue = (value: string) => value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");

/** A sample's value in the text format (as prom-client writes it). */
const sampleValue = (value: number) => (value === Number.POSITIVE_INFINITY ? "+Inf" : value === Number.NEGATIVE_INFINITY ? "-Inf" : String(value));

/**
 * The text format, written directly: with 1,000 queues a scrape is some 60,000 samples, which
 * prom-client's registry took 50–60 ms to build and render (label hashing, a histogram's buckets
 * zeroed one by one); this writes each line once. Families in the order they are declared, each
 * queue's samples in the queues' order.
 */
class Exposition {
  // One string appended to (V8 joins the pieces once, when it is written): twice as fast as an array of lines joined.
  #text = "";

  family(name: string, help: string, type: "gauge" | "histogram"): void {
    this.#text += `# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}\n# TYPE ${name} ${type}\n`;
  }

  sample(name: string, labels: string, value: number): void {
    this.#text += `${name}{${labels}} ${sampleValue(value)}\n`;
  }

  /** A histogram's samples from counts per bucket (index into BUCKETS, the last +Inf) and their sum. */
  histogram(name: string, labels: string, counts: readonly number[], sum: number): void {
    let cumulative = 0;
    for (let i = 0; i <= BUCKETS.length; i++) {
      cumulative += counts[i] ?? 0;
      this.#text += `${name}_bucket{le="${i < BUCKETS.length ? BUCKETS[i] : "+Inf"}",${labels}} ${cumulative}\n`;
    }
    this.#text += `${name}_sum{${labels}} ${sampleValue(sum)}\n${name}_count{${labels}} ${cumulative}\n`;
  }

  text(): string {
    return this.#text;
  }
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
  // The service's own metrics (the operator's organization) read beside the queues'.
  const [data, service] = await Promise.all([services.db.sqlRead((sql) => loadMetricsData(sql, principal.organizationId, key, windowStart, BUCKETS)), serviceMetricsFor(services, principal)]);

  // Per queue, in the queues' order: its labels, and what each family shows of it.
  type Row = {
    labels: string;
    depth: number;
    awaiting: number;
    testing: number;
    restarts: number;
    conclusions: Record<"merged" | "failed" | "cancelled", number>;
    durations: Record<DurationKind, { counts: number[]; sum: number }>;
    freezeChanges: { started: number; ended: number };
    /** 1 when a freeze holds one of its queues. */
    frozen: number;
    /** The blocked reasons its queues last published. */
    blocked: Set<string>;
  };
  // One row per label set: two queues whose labels are the same (the same owner/name on two
  // hosts — the labels have no host, as Trunk's have none) share their series, summed; the text
  // format allows a series once.
  const byLabels = new Map<string, Row>();
  const rows = new Map<string, Row>();
  for (const q of data.queues) {
    const labels = `repo="${labelValue(`${q.repository.owner}/${q.repository.name}`)}",branch="${labelValue(q.branch)}",queue_type="main"`;
    let row = byLabels.get(labels);
    if (!row) {
      row = {
        labels,
        depth: 0,
        awaiting: 0,
        testing: 0,
        restarts: 0,
        conclusions: { merged: 0, failed: 0, cancelled: 0 },
        durations: { wait: { counts: [], sum: 0 }, test: { counts: [], sum: 0 }, inQueue: { counts: [], sum: 0 } },
        freezeChanges: { started: 0, ended: 0 },
        frozen: 0,
        blocked: new Set(),
      };
      byLabels.set(labels, row);
    }
    if (freezeStatusAt(q.freezes, now.getTime()).frozen) row.frozen = 1;
    if (q.blockedReason !== null) row.blocked.add(q.blockedReason);
    rows.set(q.id, row);
  }
  // The aggregates are separate statements: a queue created between them is not in the list (skipped, not a 500).
  for (const row of data.counts) {
    const queue = rows.get(row.queueId);
    if (!queue) continue;
    if (row.state === "not_ready") queue.awaiting += row.count;
    else queue.depth += row.count;
    if (row.state === "testing") queue.testing += row.count;
  }
  for (const row of data.moves) {
    const queue = rows.get(row.queueId);
    if (!queue) continue;
    if (row.toState === "merged" || row.toState === "failed" || row.toState === "cancelled") queue.conclusions[row.toState] += row.count;
    if (row.fromState === "testing" && row.toState === "pending") queue.restarts += row.count;
  }
  for (const row of data.durations) {
    const histogram = rows.get(row.queueId)?.durations[row.kind];
    if (!histogram) continue;
    histogram.counts[row.bucket] = (histogram.counts[row.bucket] ?? 0) + row.count;
    histogram.sum += row.sumSeconds;
  }
  for (const row of data.freezeChanges) {
    const queue = rows.get(row.queueId);
    if (queue) queue.freezeChanges[row.kind === "freeze_started" ? "started" : "ended"] += row.count;
  }
  const series = [...byLabels.values()];

  const out = new Exposition();
  const gauge = (name: string, help: string, value: (row: Row) => number) => {
    out.family(name, help, "gauge");
    for (const row of series) out.sample(name, row.labels, value(row));
  };
  const histogram = (name: string, help: string, kind: DurationKind) => {
    out.family(name, help, "histogram");
    for (const row of series) out.histogram(name, row.labels, row.durations[kind].counts, row.durations[kind].sum);
  };
  gauge("mq_depth_current", "Pull requests in the queue, not counting those not ready", (row) => row.depth);
  gauge("mq_awaiting_mergeability", "Pull requests waiting on the code host's prerequisites (not ready)", (row) => row.awaiting);
  gauge("mq_testing_slots_active", "Pull requests testing", (row) => row.testing);
  out.family("mq_pr_conclusions_1h_total", "Pull requests concluded in the last hour", "gauge");
  for (const row of series) {
    for (const conclusion of ["merged", "failed", "cancelled"] as const) out.sample("mq_pr_conclusions_1h_total", `${row.labels},conclusion="${conclusion}"`, row.conclusions[conclusion]);
  }
  gauge("mq_pr_restarts_1h_total", "Testing to pending transitions in the last hour", (row) => row.restarts);
  histogram("mq_pr_wait_duration_1h_seconds", "Time from entering the queue to testing, last hour", "wait");
  histogram("mq_pr_test_duration_1h_seconds", "Time spent testing, last hour", "test");
  histogram("mq_pr_time_in_queue_1h_seconds", "Time from entering the queue to leaving it, last hour", "inQueue");
  out.family("greenline_queue_frozen", "1 while a merge freeze holds the queue (only hotfixes merge), else 0", "gauge");
  for (const row of series) out.sample("greenline_queue_frozen", row.labels, row.frozen);
  out.family("greenline_queue_freeze_changes_1h", "Merge freezes that started or ended in the last hour", "gauge");
  for (const row of series) {
    out.sample("greenline_queue_freeze_changes_1h", `${row.labels},event="started"`, row.freezeChanges.started);
    out.sample("greenline_queue_freeze_changes_1h", `${row.labels},event="ended"`, row.freezeChanges.ended);
  }
  // The reason the worker last published (queue.blocked; judged each round for every queue with
  // PRs waiting: src/queue/diagnoses.ts), read with the queue: no question per queue per scrape.
  out.family("greenline_queue_blocked", "1 for the reason the queue merges nothing while pull requests wait (getQueue's blockedReason), 0 for the others", "gauge");
  for (const row of series) {
    for (const code of BLOCKED_REASON_CODES) out.sample("greenline_queue_blocked", `${row.labels},reason="${code}"`, row.blocked.has(code) ? 1 : 0);
  }
  const body = out.text();
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
