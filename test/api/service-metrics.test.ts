import { connect } from "node:net";
import parsePrometheusTextFormat, { type MetricFamily } from "parse-prometheus-text-format";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

/**
 * The service's own metrics (issue 27, part 1; docs/operations.md): on /metrics and
 * getMergeQueueMetrics, with an API token, in Prometheus' text format as a real parser reads it.
 * Counters are counters (`_total`, only going up), durations histograms, labels bounded; the
 * operator's organization sees them, no other organization does. A real server on each database.
 */
describe.each(BACKENDS)("service metrics, $name", (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
  });
  afterAll(() => server?.close());

  async function scrape(path: string, token: string): Promise<{ status: number; families: Map<string, MetricFamily>; text: string }> {
    const res = await fetch(`${server.url}${path}`, { headers: { "x-api-token": token } });
    const text = await res.text();
    const families = res.status === 200 ? new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f])) : new Map<string, MetricFamily>();
    return { status: res.status, families, text };
  }
  const value = (family: MetricFamily | undefined, labels: Record<string, string>) => Number(family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value ?? Number.NaN);

  test("the operator's token sees counters, histograms and gauges of the service, with bounded labels, and counters only go up", async () => {
    await server.api.ok("createQueue", queueOf("svc"));
    await server.api.ok("submitPullRequest", prOf(11, "svc"));
    await server.greenline.worker.drain();
    const first = await scrape("/metrics", server.api.token);
    expect(first.status).toBe(200);
    const f = first.families;
    const types = (name: string) => f.get(name)?.type;
    expect([types("greenline_http_requests_total"), types("greenline_http_request_duration_seconds"), types("greenline_queue_decisions_total"), types("greenline_queue_decision_duration_seconds")]).toEqual([
      "COUNTER",
      "HISTOGRAM",
      "COUNTER",
      "HISTOGRAM",
    ]);
    expect([types("greenline_effects_total"), types("greenline_effect_duration_seconds"), types("greenline_pr_time_in_queue_seconds"), types("greenline_ci_result_to_merge_start_seconds")]).toEqual([
      "COUNTER",
      "HISTOGRAM",
      "HISTOGRAM",
      "HISTOGRAM",
    ]);
    for (const gauge of [
      "greenline_effects_waiting",
      "greenline_effects_oldest_age_seconds",
      "greenline_webhook_inbox_waiting",
      "greenline_webhook_inbox_failed",
      "greenline_db_pool_connections",
      "greenline_db_pool_in_use",
      "greenline_db_pool_waiting",
      "greenline_replicas_alive",
      "nodejs_eventloop_lag_seconds",
    ]) {
      expect([gauge, types(gauge)]).toEqual([gauge, "GAUGE"]);
    }
    // Node's default process metrics are there.
    expect(types("process_cpu_user_seconds_total")).toBe("COUNTER");
    expect(value(f.get("greenline_http_requests_total"), { operation: "submitPullRequest", status: "200" })).toBeGreaterThanOrEqual(1);
    expect(value(f.get("greenline_queue_decisions_total"), { event: "submitted" })).toBeGreaterThanOrEqual(1);
    expect(value(f.get("greenline_effects_total"), { effect: "start_run", outcome: "done" })).toBeGreaterThanOrEqual(1);
    // Every family of ours named _total is a counter, every counter is named _total (Trunk's one-hour
    // gauges keep Trunk's names, mq_*; prom-client's default nodejs_active_*_total are its own).
    for (const family of f.values()) {
      if (!family.name.startsWith("greenline_")) continue;
      expect([family.name, family.type === "COUNTER"]).toEqual([family.name, family.name.endsWith("_total")]);
      // No PR number, SHA or repository in the service's labels.
      if (family.name.startsWith("greenline_") && !["greenline_queue_blocked", "greenline_queue_frozen", "greenline_queue_freeze_changes_1h"].includes(family.name)) {
        for (const m of family.metrics) for (const label of Object.keys(m.labels ?? {})) expect(["operation", "status", "event", "to", "outcome", "effect", "endpoint", "installation", "le"]).toContain(label);
      }
    }
    // A refusal is counted under its operation; unknown paths share one label.
    expect((await server.api.call("submitPullRequest", { ...prOf(12, "svc"), pr: { number: "x" } })).status).toBe(400);
    await fetch(`${server.url}/v1/noSuchOperation${Math.random()}`, { method: "POST", headers: { "x-api-token": server.api.token } });
    await server.api.ok("getQueue", queueOf("svc"));
    const second = await scrape("/metrics", server.api.token);
    expect(value(second.families.get("greenline_http_requests_total"), { operation: "unknown", status: "404" })).toBeGreaterThanOrEqual(1);
    expect(value(second.families.get("greenline_http_requests_total"), { operation: "submitPullRequest", status: "400" })).toBe(1);
    // This replica counts itself: on PostgreSQL once its worker ran on its own (SQLite serves one process).
    if (backend.name === "postgres") {
      server.greenline.worker.start();
      await server.greenline.worker.tick();
      await server.greenline.worker.stop();
    }
    const third = await scrape("/metrics", server.api.token);
    expect(value(third.families.get("greenline_replicas_alive"), {})).toBe(1);
    // A browser asking for /metrics gets the metrics (with its token), not the dashboard.
    const asBrowser = await fetch(`${server.url}/metrics`, { headers: { "x-api-token": server.api.token, accept: "text/html" } });
    expect(asBrowser.headers.get("content-type")).toContain("text/plain");
    for (const name of ["greenline_http_requests_total", "greenline_queue_decisions_total", "greenline_effects_total"]) {
      for (const m of first.families.get(name)!.metrics) expect(value(second.families.get(name), m.labels ?? {})).toBeGreaterThanOrEqual(Number(m.value));
    }
    // The same answer on getMergeQueueMetrics.
    const seed = await scrape("/v1/getMergeQueueMetrics", server.api.token);
    expect(seed.families.get("greenline_effects_waiting")?.type).toBe("GAUGE");
    expect(seed.families.get("mq_depth_current")?.type).toBe("GAUGE");
  });

  test("another organization sees its own queues' metrics, nothing of the service; no token is a 401", async () => {
    const stranger = await server.clientFor("metrics-stranger");
    const theirs = await scrape("/metrics", stranger.token);
    expect(theirs.status).toBe(200);
    expect([...theirs.families.keys()].filter((name) => !name.startsWith("mq_") && !name.startsWith("greenline_queue_"))).toEqual([]);
    expect(theirs.text).not.toContain("svc");
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
  });

  test("requests refused by the admission limit are counted (the saturation the API never sees)", async () => {
    const busy = await startTestServer(backend, { maxInFlight: 1 });
    try {
      // A request whose body never comes holds the one place in flight.
      const { port } = new URL(busy.url);
      const socket = connect(Number(port), "127.0.0.1");
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      socket.write(`POST /v1/getQueue HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-token: ${busy.api.token}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await busy.api.call("getQueue", queueOf("none"))).status).toBe(503);
      socket.destroy();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const res = await fetch(`${busy.url}/metrics`, { headers: { "x-api-token": busy.api.token } });
      const families = new Map(parsePrometheusTextFormat(await res.text()).map((f) => [f.name, f]));
      expect(families.get("greenline_http_requests_refused_total")?.type).toBe("COUNTER");
      expect(Number(families.get("greenline_http_requests_refused_total")?.metrics[0]?.value)).toBeGreaterThanOrEqual(1);
    } finally {
      await busy.close();
    }
  });
});
