import { DEFAULT_QUEUE_SETTINGS } from "../../src/domain/queue-settings.js";
import { type AnalyticsData, analyticsQueues, loadAnalytics } from "../../src/store/analytics.js";
import { Database } from "../../src/store/database.js";
import { createQueue } from "../../src/store/queues.js";
import { FORMULA_REASON, MAIN_PRS, MAIN_RUNS, NOW, OTHER_PRS, OTHER_RUNS, RELEASE_PRS, RELEASE_RUNS, seedPullRequests, seedRuns } from "../support/analytics-history.js";
import { BACKENDS, seedAcmeRepository } from "../support/backends.js";

const DAY = 86_400_000;
const MIN = 60;
const day = (iso: string) => Date.parse(`${iso}T00:00:00Z`);
const now = Date.parse(NOW);
/** The last `n` UTC days, today so far included (as the page asks). */
const windowOf = (n: number) => ({ from: new Date(day(NOW.slice(0, 10)) - (n - 1) * DAY), to: new Date(now + 1) });

/**
 * The analytics' aggregation in SQL, on a history whose every figure is counted by hand in
 * test/support/analytics-history.ts: merges per day, nearest-rank p50/p95 of the time in queue,
 * runs, flaky ejections avoided, failures by reason, submissions by hour; another organization's
 * rows are in the same tables and never counted.
 */
describe.each(BACKENDS)("analytics aggregation on $name", (backend) => {
  let database: { url: string; drop(): Promise<void> };
  let db: Database;
  const load = (n: number, queueId?: string): Promise<AnalyticsData> => {
    const { from, to } = windowOf(n);
    return db.sqlRead((sql) => loadAnalytics(sql, { organizationId: "org", ...(queueId ? { queueId } : {}) }, from, to));
  };

  beforeAll(async () => {
    database = await backend.createDatabase();
    db = await Database.open(database.url);
    await db.write(async (tx) => {
      await seedAcmeRepository(tx);
      await tx.organization.create({ data: { id: "globex", slug: "globex" } });
      await tx.repository.create({ data: { id: "grepo", organizationId: "globex", host: "github.com", owner: "globex", name: "web", key: "github.com/globex/web" } });
      for (const [id, repositoryId, branch] of [
        ["main", "repo", "main"],
        ["release", "repo", "release"],
        ["other", "grepo", "main"],
      ] as const) {
        await createQueue(tx, { id, repositoryId, branch, settings: DEFAULT_QUEUE_SETTINGS, state: "running", head: "h0" });
      }
      await seedPullRequests(tx, "main", MAIN_PRS);
      await seedRuns(tx, "main", MAIN_RUNS);
      await seedPullRequests(tx, "release", RELEASE_PRS);
      await seedRuns(tx, "release", RELEASE_RUNS);
      await seedPullRequests(tx, "other", OTHER_PRS);
      await seedRuns(tx, "other", OTHER_RUNS);
    });
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  test("one queue over 7 days: merges per day with their p50/p95, runs and flaky ejections avoided per day", async () => {
    const data = await load(7, "main");
    expect(data.days).toEqual([
      // PR 11: failed, submitted again at 08:00, merged at 09:00: 60 min from its last submission.
      { day: day("2030-01-06"), merged: 1, p50Seconds: 60 * MIN, p95Seconds: 60 * MIN, runs: 0, flakyAvoided: 0, estimated: 1, estimateErrorP50Seconds: 30 * MIN, estimateErrorP95Seconds: 30 * MIN, late: 1 },
      // 10, 20, 30, 40 min: p50 is the ⌈0.5·4⌉ = 2nd, p95 the ⌈0.95·4⌉ = 4th. Six runs: retried, excused,
      // infrastructure re-run (three avoided), a clean verdict, a failed run, no verdict. Three were told
      // a merge time: off by 5, 20 (early) and 10 min: the 2nd and 3rd of 5, 10, 20; two late.
      { day: day("2030-01-09"), merged: 4, p50Seconds: 20 * MIN, p95Seconds: 40 * MIN, runs: 6, flakyAvoided: 3, estimated: 3, estimateErrorP50Seconds: 10 * MIN, estimateErrorP95Seconds: 20 * MIN, late: 2 },
      { day: day("2030-01-10"), merged: 1, p50Seconds: 5 * MIN, p95Seconds: 5 * MIN, runs: 1, flakyAvoided: 0, estimated: 1, estimateErrorP50Seconds: 0, estimateErrorP95Seconds: 0, late: 0 },
    ]);
    // The window's own percentiles over 5, 10, 20, 30, 40, 60 min: the 3rd and the 6th; estimates
    // off by 0, 5, 10, 20, 30 min: the 3rd and the 5th.
    expect(data.total).toEqual({ merged: 6, p50Seconds: 20 * MIN, p95Seconds: 60 * MIN, runs: 7, flakyAvoided: 3, failed: 5, estimated: 5, estimateErrorP50Seconds: 10 * MIN, estimateErrorP95Seconds: 30 * MIN, late: 3 });
  });

  test("failures by reason, most first, with a reason a spreadsheet would run kept as it is", async () => {
    // PR 7, PR 8 and PR 11's first submission; ties by reason ("=" before "t").
    expect((await load(7, "main")).failures).toEqual([
      { reason: "tests_failed", count: 3 },
      { reason: FORMULA_REASON, count: 1 },
      { reason: "timeout", count: 1 },
    ]);
  });

  test("submissions (first and again) by hour of day, UTC", async () => {
    expect((await load(7, "main")).hours).toEqual([
      { hour: 8, submissions: 5 },
      { hour: 9, submissions: 1 },
      { hour: 10, submissions: 1 },
      { hour: 13, submissions: 1 },
      { hour: 14, submissions: 1 },
      { hour: 22, submissions: 1 },
      { hour: 23, submissions: 1 },
    ]);
  });

  test("a longer window reaches older history: 30 days count PR 6 (180 min) and the run of January 2", async () => {
    const data = await load(30, "main");
    // 5, 10, 20, 30, 40, 60, 180 min: the ⌈3.5⌉ = 4th and the ⌈6.65⌉ = 7th.
    expect(data.total).toMatchObject({ merged: 7, p50Seconds: 30 * MIN, p95Seconds: 180 * MIN, runs: 8, flakyAvoided: 4, failed: 5, estimated: 5 });
    expect(data.days.map((d) => new Date(d.day).toISOString().slice(0, 10))).toEqual(["2030-01-02", "2030-01-03", "2030-01-06", "2030-01-09", "2030-01-10"]);
  });

  test("the organization: both of its queues, never another organization's", async () => {
    const data = await load(7);
    const ninth = data.days.find((d) => d.day === day("2030-01-09"))!;
    // release's 60 min joins 10, 20, 30, 40: the 3rd and the 5th; two more runs, one avoided.
    expect(ninth).toMatchObject({ day: day("2030-01-09"), merged: 5, p50Seconds: 30 * MIN, p95Seconds: 60 * MIN, runs: 8, flakyAvoided: 4, estimated: 3 });
    // 5, 10, 20, 30, 40, 60, 60: the 4th and the 7th.
    // Another organization's PR told 12:00 and merged at 08:01 is not among the estimates.
    expect(data.total).toEqual({ merged: 7, p50Seconds: 30 * MIN, p95Seconds: 60 * MIN, runs: 9, flakyAvoided: 4, failed: 5, estimated: 5, estimateErrorP50Seconds: 10 * MIN, estimateErrorP95Seconds: 30 * MIN, late: 3 });
    expect(data.hours.find((h) => h.hour === 7)).toEqual({ hour: 7, submissions: 1 });
    expect(data.hours.find((h) => h.hour === 8)).toEqual({ hour: 8, submissions: 5 });
    expect(await db.sqlRead((sql) => analyticsQueues(sql, "org", 10))).toEqual([
      { id: "main", repo: { host: "github.com", owner: "acme", name: "web" }, branch: "main" },
      { id: "release", repo: { host: "github.com", owner: "acme", name: "web" }, branch: "release" },
    ]);
  });

  if (backend.name === "sqlite") {
    test("each statement reads Transition and TestRun through an index (no scan of a table that grows with history)", async () => {
      const { from, to } = windowOf(90);
      const plans = await db.sqlRead(async (sql) => {
        const seen: { text: string; params: readonly unknown[] }[] = [];
        const spy = Object.assign(Object.create(sql) as typeof sql, {
          all: <T>(text: string, params: readonly unknown[] = []) => {
            seen.push({ text, params });
            return sql.all<T>(text, params);
          },
        });
        await loadAnalytics(spy, { organizationId: "org" }, from, to);
        await loadAnalytics(spy, { organizationId: "org", queueId: "main" }, from, to);
        return Promise.all(seen.map(async ({ text, params }) => (await sql.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)).map((row) => row.detail)));
      });
      expect(plans.length).toBe(7);
      const scans = plans.flat().filter((line) => /^SCAN (t|e|"?(Transition|TestRun|QueueEntry)"?)\b/.test(line));
      expect(scans).toEqual([]);
      expect(plans.flat().filter((line) => /USING INDEX Transition_queueId_at_idx/.test(line)).length).toBeGreaterThanOrEqual(4);
    });
  }

  test("an empty window answers zeros and no percentiles", async () => {
    const data = await db.sqlRead((sql) => loadAnalytics(sql, { organizationId: "org" }, new Date(Date.UTC(2029, 0, 1)), new Date(Date.UTC(2029, 0, 8))));
    expect(data).toEqual({
      days: [],
      total: { merged: 0, p50Seconds: null, p95Seconds: null, runs: 0, flakyAvoided: 0, failed: 0, estimated: 0, estimateErrorP50Seconds: null, estimateErrorP95Seconds: null, late: 0 },
      failures: [],
      hours: [],
    });
  });
});
