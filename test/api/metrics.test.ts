import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

/** The value of one series in Prometheus text, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const T0 = Date.parse("2026-11-20T10:00:00Z");

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

  test("time not ready is left out of the time in queue the write path records", async () => {
    await server.api.ok("createQueue", { ...queueOf("later"), mode: "parallel" });
    await server.api.ok("submitPullRequest", prOf(7, "later")); // not ready: no impacted targets yet
    now += 5 * 60_000;
    await server.api.ok("setImpactedTargets", { ...prOf(7, "later"), impactedTargets: ["//a"] });
    now += 15 * 60_000;
    await server.api.ok("cancelPullRequest", prOf(7, "later"));
    const text = (await server.api.get("getMergeQueueMetrics?repo=acme/later&repoHost=github.com")).text;
    const labels = 'repo="acme/later",branch="main",queue_type="main"';
    // 20 minutes since the submission, 5 of them not ready.
    expect(sample(text, `mq_pr_time_in_queue_1h_seconds_count{${labels}}`)).toBe(1);
    expect(sample(text, `mq_pr_time_in_queue_1h_seconds_sum{${labels}}`)).toBe(900);
    expect(sample(text, `mq_pr_time_in_queue_1h_seconds_bucket{le="600",${labels}}`)).toBe(0);
    expect(sample(text, `mq_pr_time_in_queue_1h_seconds_bucket{le="900",${labels}}`)).toBe(1);
    expect(sample(text, `mq_pr_test_duration_1h_seconds_sum{${labels}}`)).toBe(900);
  });

  test("a resubmission starts the time in queue again", async () => {
    await server.api.ok("createQueue", queueOf("again"));
    await server.api.ok("submitPullRequest", prOf(8, "again"));
    now += 5 * 60_000;
    await server.api.ok("cancelPullRequest", prOf(8, "again"));
    now += 10 * 60_000;
    await server.api.ok("submitPullRequest", prOf(8, "again"));
    now += 3 * 60_000;
    await server.api.ok("cancelPullRequest", prOf(8, "again"));
    const text = (await server.api.get("getMergeQueueMetrics?repo=acme/again&repoHost=github.com")).text;
    const labels = 'repo="acme/again",branch="main",queue_type="main"';
    expect(sample(text, `mq_pr_time_in_queue_1h_seconds_count{${labels}}`)).toBe(2);
    expect(sample(text, `mq_pr_time_in_queue_1h_seconds_sum{${labels}}`)).toBe(300 + 180);
    expect(sample(text, `mq_pr_test_duration_1h_seconds_sum{${labels}}`)).toBe(300 + 180);
  });

  test("a resubmission starts the time not ready again, also when a release that does not know it resubmitted", async () => {
    await server.api.ok("createQueue", { ...queueOf("ready-again"), mode: "parallel" });
    const pr = prOf(9, "ready-again");
    await server.api.ok("submitPullRequest", pr); // not ready: no impacted targets yet
    now += 5 * 60_000;
    await server.api.ok("setImpactedTargets", { ...pr, impactedTargets: ["//a"] });
    now += 10 * 60_000;
    await server.api.ok("cancelPullRequest", pr);
    now += 60_000;
    await server.api.ok("submitPullRequest", pr);
    now += 3 * 60_000;
    // As an older release's resubmission leaves it: an hour not ready, of an earlier submission.
    const { db } = server.greenline.services;
    await db.sqlTransaction((sql) =>
      sql.run(`UPDATE "QueueEntry" SET "notReadyMs" = ?, "notReadySubmittedAt" = ? WHERE "prNumber" = ? AND "queueId" IN (SELECT "id" FROM "Queue" WHERE "branch" = 'main')`, [3_600_000, new Date(T0), 9]),
    );
    await server.api.ok("cancelPullRequest", pr);
    const text = (await server.api.get("getMergeQueueMetrics?repo=acme/ready-again&repoHost=github.com")).text;
    const labels = 'repo="acme/ready-again",branch="main",queue_type="main"';
    // 10 of the first submission's 15 minutes, then the second's 3 (nothing subtracted from them).
    expect(sample(text, `mq_pr_time_in_queue_1h_seconds_sum{${labels}}`)).toBe(600 + 180);
  });

  test("two queues whose labels are the same (one owner/name on two hosts) share their series, summed: each series once", async () => {
    const address = (host: string) => ({ repo: { host, owner: "acme", name: "twin" }, targetBranch: "main" });
    await server.api.ok("createQueue", address("github.com"));
    await server.api.ok("createQueue", address("ghe.example.com"));
    await server.api.ok("submitPullRequest", { ...address("github.com"), pr: { number: 1 } });
    await server.api.ok("submitPullRequest", { ...address("ghe.example.com"), pr: { number: 1 } });
    const text = (await server.api.get("getMergeQueueMetrics")).text;
    const series = text
      .split("\n")
      .filter((line) => line !== "" && !line.startsWith("#"))
      .map((line) => line.slice(0, line.lastIndexOf(" ")));
    expect(series.filter((name, i) => series.indexOf(name) !== i)).toEqual([]);
    expect(sample(text, 'mq_depth_current{repo="acme/twin",branch="main",queue_type="main"}')).toBe(2);
  });

  test("repo and repoHost select one repository", async () => {
    const text = (await server.api.get("getMergeQueueMetrics?repo=acme/lanes&repoHost=github.com")).text;
    expect(text).toContain('repo="acme/lanes"');
    expect(text).not.toContain('repo="acme/metrics"');
    const none = (await server.api.get("getMergeQueueMetrics?repo=acme/unknown&repoHost=github.com")).text;
    expect(none).not.toContain("repo=");
  });
});
