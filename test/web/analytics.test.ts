import { createToken } from "../../src/auth/tokens.js";
import { MAIN_PRS, MAIN_RUNS, NOW, OTHER_PRS, OTHER_RUNS, RELEASE_PRS, RELEASE_RUNS, seedPullRequests, seedRuns } from "../support/analytics-history.js";
import { BACKENDS } from "../support/backends.js";
import { DashboardClient } from "../support/dashboard.js";
import { ciFinishes, prOf, queueOf, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const MAIN = "github.com/acme/web/main";
const q = encodeURIComponent;

/**
 * The analytics page and its CSV over HTTP, on the history test/support/analytics-history.ts
 * counts by hand: what they show, their parameters' rules (400 naming the field, 404 for
 * another organization's queue worded like a missing one), and the CSV's headers and escaping.
 */
describe.each(BACKENDS)("the analytics page on $name", (backend) => {
  let server: TestServer;
  let acme: DashboardClient;
  const clock = new TestClock(Date.parse(NOW));

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
    await server.api.ok("createQueue", queueOf("web", "main"));
    await server.api.ok("createQueue", queueOf("web", "release"));
    const globex = await server.clientFor("globex");
    await globex.ok("createQueue", queueOf("web", "main", "globex"));
    await server.greenline.services.db.write(async (tx) => {
      const queues = await tx.queue.findMany({ select: { id: true, branch: true, repository: { select: { owner: true } } } });
      const id = (owner: string, branch: string) => queues.find((x) => x.repository.owner === owner && x.branch === branch)!.id;
      await seedPullRequests(tx, id("acme", "main"), MAIN_PRS);
      await seedRuns(tx, id("acme", "main"), MAIN_RUNS);
      await seedPullRequests(tx, id("acme", "release"), RELEASE_PRS);
      await seedRuns(tx, id("acme", "release"), RELEASE_RUNS);
      await seedPullRequests(tx, id("globex", "main"), OTHER_PRS);
      await seedRuns(tx, id("globex", "main"), OTHER_RUNS);
    });
    acme = await DashboardClient.signIn(server.url, server.api.token);
  });
  afterAll(async () => {
    await server?.close();
  });

  const figure = (text: string, name: string) => new RegExp(`data-figure="${name}">([^<]*)<`).exec(text)?.[1];

  test("a queue's page over 7 days: its figures, the failures as sentences with their codes, each metric's numbers and CSV link", async () => {
    const page = await acme.get(`/analytics?window=7&queue=${q(MAIN)}`);
    expect(page.status).toBe(200);
    expect(figure(page.text, "merged")).toBe("6");
    expect(figure(page.text, "time-in-queue")).toBe("20 min / 1 h");
    // 7 runs for 6 merges.
    expect(figure(page.text, "runs-per-merged")).toBe("1.17");
    expect(figure(page.text, "failed")).toBe("5");
    expect(figure(page.text, "flaky-ejections-avoided")).toBe("3");
    expect(figure(page.text, "busiest-hour")).toBe("08:00–09:00");
    // Estimates off by 0, 5, 10, 20 and 30 min: the 3rd.
    expect(figure(page.text, "estimate-error")).toBe("10 min");
    expect(page.text).toContain("5 of 6 merged PRs were told a merge time when submitted: half merged within 10 min of it, 95% within 30 min; 3 merged later than told.");
    expect(page.text).toMatch(/<th scope="row" title="tests_failed">Tests failed\. <code class="reason">tests_failed<\/code><\/th><td class="count">3<\/td>/);
    // The day's numbers, readable without script: 4 merged on January 9, p50 20 min, p95 40 min.
    expect(page.text).toContain('<tr><th scope="row">2030-01-09</th><td>4</td><td>20 min</td><td>40 min</td></tr>');
    expect(page.text).toContain(`href="/analytics.csv?metric=merges_per_day&amp;window=7&amp;queue=${q(MAIN)}"`);
    // The window choice keeps the queue; the current window is marked.
    expect(page.text).toContain(`<a href="/analytics?window=90&amp;queue=${q(MAIN)}">90 days</a>`);
    expect(page.text).toContain(`<a href="/analytics?window=7&amp;queue=${q(MAIN)}" aria-current="page">7 days</a>`);
    expect(page.text).toContain('<a href="/analytics" aria-current="page">Analytics</a>');
    // The queue's own page links here.
    expect((await acme.get("/queues/github.com/acme/web/main")).text).toContain(`<a href="/analytics?queue=${q(MAIN)}">Analytics of this queue</a>`);
  });

  test("the organization's page counts both of its queues and never another organization's", async () => {
    const page = await acme.get("/analytics?window=7");
    expect(page.status).toBe(200);
    expect(figure(page.text, "merged")).toBe("7");
    expect(figure(page.text, "time-in-queue")).toBe("30 min / 1 h");
    expect(figure(page.text, "flaky-ejections-avoided")).toBe("4");
    expect(page.text).not.toContain("globex/web");
    // Without a window: 30 days.
    expect((await acme.get("/analytics")).text).toContain('aria-current="page">30 days</a>');
  });

  test("bad parameters answer 400 naming the field; another organization's queue is not found, like a missing one", async () => {
    const bad = await acme.get("/analytics?window=14");
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("window: must be one of 7, 30, 90 (days)");
    const twice = await acme.get("/analytics?window=7&window=30");
    expect(twice.status).toBe(400);
    expect(twice.text).toContain("window: must be given once, as text");
    const queue = await acme.get("/analytics?queue=main");
    expect(queue.status).toBe(400);
    expect(queue.text).toContain("queue: must be host/owner/repo/branch");
    const metric = await acme.get("/analytics.csv?metric=everything");
    expect(metric.status).toBe(400);
    expect(metric.text).toContain("metric: must be one of merges_per_day, time_in_queue");
    const other = await acme.get(`/analytics?queue=${q("github.com/globex/web/main")}`);
    const missing = await acme.get(`/analytics?queue=${q("github.com/acme/nope/main")}`);
    expect([other.status, missing.status]).toEqual([404, 404]);
    expect(other.text).toContain("No such page.");
    expect(other.text).not.toContain("globex");
    expect(other.text.replaceAll("globex", "acme")).toBe(missing.text.replaceAll("nope", "web"));
    expect((await acme.get(`/analytics.csv?metric=merges_per_day&queue=${q("github.com/globex/web/main")}`)).status).toBe(404);
  });

  test("a metric's CSV: its type, a file name, a row per day, and text a spreadsheet would run defused", async () => {
    const merges = await acme.get(`/analytics.csv?metric=merges_per_day&window=7&queue=${q(MAIN)}`);
    expect(merges.status).toBe(200);
    expect(merges.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(merges.headers.get("content-disposition")).toBe('attachment; filename="greenline-merges_per_day-github.com_acme_web_main-7d.csv"');
    expect(merges.text).toBe(["day_utc,merged", "2030-01-04,0", "2030-01-05,0", "2030-01-06,1", "2030-01-07,0", "2030-01-08,0", "2030-01-09,4", "2030-01-10,1", ""].join("\r\n"));
    const failures = await acme.get(`/analytics.csv?metric=failures_by_reason&window=7&queue=${q(MAIN)}`);
    expect(failures.text).toBe(
      [
        "reason_code,reason,failed",
        "tests_failed,Tests failed.,3",
        `"'=HYPERLINK(""http://evil.example"",""a, b"")","'=HYPERLINK(""http://evil.example"",""a, b"").",1`,
        "timeout,Tests did not finish within the queue's testing timeout.,1",
        "",
      ].join("\r\n"),
    );
    const times = await acme.get(`/analytics.csv?metric=time_in_queue&window=7&queue=${q(MAIN)}`);
    expect(times.text.split("\r\n")).toContain("2030-01-09,4,1200,2400");
    const runs = await acme.get(`/analytics.csv?metric=ci_runs_per_merge&window=7&queue=${q(MAIN)}`);
    expect(runs.text.split("\r\n")).toEqual(expect.arrayContaining(["2030-01-09,6,4,1.5", "2030-01-06,0,1,0", "2030-01-05,0,0,"]));
    const estimates = await acme.get(`/analytics.csv?metric=estimate_accuracy&window=7&queue=${q(MAIN)}`);
    expect(estimates.text.split("\r\n")).toEqual([
      "day_utc,merged,merged_with_estimate,error_p50_seconds,error_p95_seconds,merged_later_than_estimated",
      "2030-01-04,0,0,,,0",
      "2030-01-05,0,0,,,0",
      "2030-01-06,1,1,1800,1800,1",
      "2030-01-07,0,0,,,0",
      "2030-01-08,0,0,,,0",
      "2030-01-09,4,3,600,1200,2",
      "2030-01-10,1,1,0,0,0",
      "",
    ]);
    const hours = await acme.get("/analytics.csv?metric=busiest_hours&window=7");
    expect(hours.text.split("\r\n").slice(0, 10)).toEqual(["hour_utc,submissions", "0,0", "1,0", "2,0", "3,0", "4,0", "5,0", "6,0", "7,1", "8,5"]);
    expect(hours.headers.get("content-disposition")).toBe('attachment; filename="greenline-busiest_hours-acme-7d.csv"');
  });

  test("a read-only token sees the page and its CSV", async () => {
    const { token } = await createToken(server.greenline.services.db, "acme", "viewer", "read");
    const viewer = await DashboardClient.signIn(server.url, token);
    expect((await viewer.get("/analytics?window=90")).status).toBe(200);
    expect((await viewer.get("/analytics.csv?metric=flaky_ejections_avoided&window=90")).status).toBe(200);
  });
});

/**
 * The estimate a PR is told when submitted is kept (QueueEntry.estimatedMergeAt) and compared
 * with its merge: through the real engine and the sandbox's CI, the first PR (no finished run
 * yet: no time can be told) has none, the second has one.
 */
describe.each(BACKENDS)("estimates told at submission on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock(Date.parse("2030-01-10T10:00:00Z"));

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: 60_000 } });
  });
  afterAll(async () => {
    await server?.close();
  });

  test("the second PR's estimate is kept and its merge compared with it", async () => {
    await server.api.ok("createQueue", queueOf("est"));
    await server.api.ok("submitPullRequest", prOf(1, "est"));
    await ciFinishes(server, clock);
    await server.api.ok("submitPullRequest", prOf(2, "est"));
    const told = await server.greenline.services.db.read((tx) => tx.queueEntry.findMany({ orderBy: { prNumber: "asc" }, select: { prNumber: true, estimatedMergeAt: true } }));
    expect(told[0]).toEqual({ prNumber: 1, estimatedMergeAt: null });
    // One run of 60 s to go: told about a minute from now.
    expect(told[1]!.estimatedMergeAt!.getTime() - clock.ms).toBeGreaterThanOrEqual(60_000);
    expect(told[1]!.estimatedMergeAt!.getTime() - clock.ms).toBeLessThanOrEqual(120_000);
    await ciFinishes(server, clock);
    const acme = await DashboardClient.signIn(server.url, server.api.token);
    const csv = await acme.get(`/analytics.csv?metric=estimate_accuracy&window=7&queue=${q("github.com/acme/est/main")}`);
    const today = csv.text
      .split("\r\n")
      .find((line) => line.startsWith("2030-01-10,"))!
      .split(",");
    expect(today.slice(0, 3)).toEqual(["2030-01-10", "2", "1"]);
    expect(Number(today[3])).toBeGreaterThanOrEqual(0);
  });
});
