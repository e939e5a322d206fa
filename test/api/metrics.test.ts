import { measureEntry } from "../../src/queue/metrics.js";
import type { PrState } from "../../src/domain/states.js";
import type { StoredTransition as Transition } from "../../src/store/metrics.js";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

/** The value of one series in Prometheus text, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const T0 = Date.parse("2026-11-20T10:00:00Z");
const minutes = (n: number) => new Date(T0 + n * 60_000);

describe("measureEntry", () => {
  let n = 0;
  const t = (at: number, fromState: PrState | null, toState: PrState, reason = "x"): Transition => ({
    id: String(n++),
    entryId: "e",
    queueId: "q",
    fromState,
    toState,
    reason,
    at: minutes(at),
  });

  test("measures waiting, testing and time in queue, leaving out time not ready", () => {
    const history = [t(0, null, "not_ready", "submitted"), t(20, "not_ready", "pending", "readiness_met"), t(25, "pending", "testing"), t(55, "testing", "tests_passed"), t(57, "tests_passed", "merged")];
    expect(measureEntry(history, minutes(0))).toEqual({ waits: [300], tests: [1800], timesInQueue: [37 * 60] });
  });

  test("a restart measures each testing period; only durations ending in the window count", () => {
    const history = [t(0, null, "pending", "submitted"), t(10, "pending", "testing"), t(40, "testing", "pending", "restart_requested"), t(45, "pending", "testing"), t(75, "testing", "failed")];
    expect(measureEntry(history, minutes(0))).toEqual({ waits: [600, 300], tests: [1800, 1800], timesInQueue: [75 * 60] });
    expect(measureEntry(history, minutes(42))).toEqual({ waits: [300], tests: [1800], timesInQueue: [75 * 60] });
  });

  test("a resubmission starts the time in queue again", () => {
    const history = [t(0, null, "pending", "submitted"), t(10, "pending", "cancelled"), t(100, "cancelled", "pending", "resubmitted"), t(103, "pending", "cancelled")];
    expect(measureEntry(history, minutes(60)).timesInQueue).toEqual([180]);
  });
});

describe.each(BACKENDS)("getMergeQueueMetrics on $name", (backend) => {
  let server: TestServer;
  let now = T0;
  beforeAll(async () => {
    server = await startTestServer(backend, { now: () => new Date(now) });
  });
  afterAll(() => server?.close());

  test("answers the text format with Trunk's names, labels and buckets, computed from stored facts", async () => {
    await server.api.ok("createQueue", queueOf("metrics"));
    await server.api.ok("createQueue", { ...queueOf("lanes"), mode: "parallel" });
    await server.api.ok("submitPullRequest", prOf(1, "metrics"));
    await server.api.ok("submitPullRequest", prOf(2, "metrics"));
    await server.api.ok("submitPullRequest", prOf(3, "lanes")); // not ready: no impacted targets
    now += 10 * 60_000;
    await server.api.ok("cancelPullRequest", prOf(1, "metrics"));

    const response = await server.api.get("getMergeQueueMetrics");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text = response.text;
    const labels = 'repo="acme/metrics",branch="main",queue_type="main"';
    expect(sample(text, `mq_depth_current{${labels}}`)).toBe(1);
    expect(sample(text, `mq_awaiting_mergeability{${labels}}`)).toBe(0);
    expect(sample(text, `mq_awaiting_mergeability{repo="acme/lanes",branch="main",queue_type="main"}`)).toBe(1);
    expect(sample(text, `mq_testing_slots_active{${labels}}`)).toBe(1);
    expect(sample(text, `mq_pr_conclusions_1h_total{${labels},conclusion="cancelled"}`)).toBe(1);
    expect(sample(text, `mq_pr_conclusions_1h_total{${labels},conclusion="merged"}`)).toBe(0);
    expect(sample(text, `mq_pr_restarts_1h_total{${labels}}`)).toBe(0);
    // One PR left the queue after 10 minutes: bucket 600 holds it, bucket 300 does not.
    expect(sample(text, `mq_pr_time_in_queue_1h_seconds_bucket{le="300",${labels}}`)).toBe(0);
    expect(sample(text, `mq_pr_time_in_queue_1h_seconds_bucket{le="600",${labels}}`)).toBe(1);
    expect(sample(text, `mq_pr_time_in_queue_1h_seconds_bucket{le="+Inf",${labels}}`)).toBe(1);
    expect(sample(text, `mq_pr_time_in_queue_1h_seconds_sum{${labels}}`)).toBe(600);
    // #1 started testing at once; #2 waited 10 minutes, until #1 left.
    expect(sample(text, `mq_pr_wait_duration_1h_seconds_bucket{le="60",${labels}}`)).toBe(1);
    expect(sample(text, `mq_pr_wait_duration_1h_seconds_bucket{le="300",${labels}}`)).toBe(1);
    expect(sample(text, `mq_pr_wait_duration_1h_seconds_bucket{le="600",${labels}}`)).toBe(2);
    expect(sample(text, `mq_pr_wait_duration_1h_seconds_sum{${labels}}`)).toBe(600);
    // #1 tested for 10 minutes before it was cancelled.
    expect(sample(text, `mq_pr_test_duration_1h_seconds_bucket{le="600",${labels}}`)).toBe(1);
    expect(sample(text, `mq_pr_test_duration_1h_seconds_sum{${labels}}`)).toBe(600);
  });

  test("conclusions older than an hour drop out of the 1h series", async () => {
    now += 61 * 60_000;
    const text = (await server.api.get("getMergeQueueMetrics")).text;
    const labels = 'repo="acme/metrics",branch="main",queue_type="main"';
    expect(sample(text, `mq_pr_conclusions_1h_total{${labels},conclusion="cancelled"}`)).toBe(0);
    expect(sample(text, `mq_pr_time_in_queue_1h_seconds_count{${labels}}`)).toBe(0);
    expect(sample(text, `mq_depth_current{${labels}}`)).toBe(1);
  });

  test("repo and repoHost select one repository", async () => {
    const text = (await server.api.get("getMergeQueueMetrics?repo=acme/lanes&repoHost=github.com")).text;
    expect(text).toContain('repo="acme/lanes"');
    expect(text).not.toContain('repo="acme/metrics"');
    const none = (await server.api.get("getMergeQueueMetrics?repo=acme/unknown&repoHost=github.com")).text;
    expect(none).not.toContain("repo=");
  });
});
