import { authenticate } from "../../src/auth/tokens.js";
import { queueOverview } from "../../src/web/read-models/dashboard.js";
import { BACKENDS } from "../support/backends.js";
import { ciFinishes, prOf, queueOf, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * The overview's figures of the last 24 hours, computed in the database from what the write path
 * recorded (merges and failures by hour, the time in queue's quantiles): checked against a
 * history whose every time is known.
 */
describe.each(BACKENDS)("the overview's figures on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock(Date.parse("2026-11-22T09:10:00Z"));
  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: 10 * 60_000 } });
  });
  afterAll(() => server?.close());

  const overview = async () => {
    const principal = (await authenticate(server.greenline.services.db, server.api.token))!;
    return queueOverview(server.greenline.services, principal);
  };

  test("merges by hour, failures, and the time in queue at p50 and p95", async () => {
    await server.api.ok("createQueue", { ...queueOf("figures"), concurrency: 1 });
    // #1 merges after one CI run (10 min in queue); #2 waits for it, then merges 10 min later (20 min).
    await server.api.ok("submitPullRequest", prOf(1, "figures"));
    await server.api.ok("submitPullRequest", prOf(2, "figures"));
    await ciFinishes(server, clock);
    await ciFinishes(server, clock);
    // #3, submitted an hour later, is cancelled after 45 minutes: it counts in the time in queue, not as a merge.
    clock.advance(60 * 60_000);
    await server.api.ok("submitPullRequest", prOf(3, "figures"));
    clock.advance(45 * 60_000);
    await server.api.ok("cancelPullRequest", prOf(3, "figures"));

    const [summary] = (await overview()).filter((q) => q.repo.name === "figures");
    expect(summary).toMatchObject({ merged24h: 2, failed24h: 0, depth: 0 });
    // Nearest rank over [600, 1200, 2700] s: p50 the 2nd, p95 the 3rd.
    expect(summary!.timeInQueueP50).toBe(1200);
    expect(summary!.timeInQueueP95).toBe(2700);
    // Both merges in the hour that started at 09:00 (the last of the 24 hours then was 11:00).
    const hour = summary!.trend.hours.indexOf(Date.parse("2026-11-22T09:00:00Z"));
    expect(hour).toBe(21);
    expect(summary!.trend.merged[hour]).toBe(2);
    expect(summary!.trend.merged.reduce((a, b) => a + b, 0)).toBe(2);
  });

  test("23 h 45 min after the merges, they still count in the day's totals, though the chart's hours start after them", async () => {
    clock.ms = Date.parse("2026-11-23T09:15:00Z"); // the window starts at 09:15 the day before; its first whole hour at 10:00
    const [summary] = (await overview()).filter((q) => q.repo.name === "figures");
    expect(summary).toMatchObject({ merged24h: 2, failed24h: 0, timeInQueueP50: 1200 });
    expect(summary!.runsPerMerged).toBe(1);
    expect(summary!.trend.hours[0]).toBe(Date.parse("2026-11-22T10:00:00Z"));
    expect(summary!.trend.merged.reduce((a, b) => a + b, 0)).toBe(0);
  });

  test("a day later, nothing of it counts", async () => {
    clock.advance(25 * 60 * 60_000);
    const [summary] = (await overview()).filter((q) => q.repo.name === "figures");
    expect(summary).toMatchObject({ merged24h: 0, failed24h: 0, timeInQueueP50: null, timeInQueueP95: null });
  });

  test("another organization's queues are not in it", async () => {
    const globex = await server.clientFor("globex");
    await globex.ok("createQueue", queueOf("theirs", "main", "globex"));
    expect((await overview()).map((q) => q.repo.name)).not.toContain("theirs");
  });
});
