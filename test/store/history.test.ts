import { MINUTE_MS } from "../../src/domain/time.js";
import { type HistoryCut, type HistoryFilter, type HistoryKey, historyPage, historyQueues } from "../../src/store/history.js";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * The history's store query (src/store/history.ts) on each database: pages cut by key both ways,
 * and a search no index serves reading at most its scan limit per page, the pages that go on
 * from where each stopped finding every match exactly once.
 */
describe.each(BACKENDS)("the history query on $name", (backend) => {
  const clock = new TestClock();
  let server: TestServer;
  let filter: HistoryFilter;
  const page = (f: HistoryFilter, cut: HistoryCut, take: number, scanLimit: number) => server.greenline.services.db.sqlRead((sql) => historyPage(sql, f, cut, take, scanLimit));

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
    await server.api.ok("createQueue", { ...queueOf("web"), state: "paused" });
    // PRs 1–12, a minute apart; the sandbox's author of PR n is sandbox-author-<n mod 7 + 1>.
    for (let n = 1; n <= 12; n++) {
      await server.api.ok("submitPullRequest", prOf(n));
      clock.advance(MINUTE_MS);
    }
    const organizationId = (await server.greenline.services.db.read((tx) => tx.organization.findFirstOrThrow({ where: { slug: "acme" } }))).id;
    filter = { queueIds: (await server.greenline.services.db.sqlRead((sql) => historyQueues(sql, organizationId))).map((q) => q.id) };
  });
  afterAll(() => server?.close());

  test("newest submission first; pages by key older, then newer back, the same rows", async () => {
    const first = await page(filter, null, 5, 10_000);
    expect(first.entries.map((e) => e.prNumber)).toEqual([12, 11, 10, 9, 8]);
    expect([first.more, first.scannedTo]).toEqual([true, null]);
    const second = await page(filter, { older: first.entries.at(-1)! }, 5, 10_000);
    expect(second.entries.map((e) => e.prNumber)).toEqual([7, 6, 5, 4, 3]);
    const third = await page(filter, { older: second.entries.at(-1)! }, 5, 10_000);
    expect([third.entries.map((e) => e.prNumber), third.more]).toEqual([[2, 1], false]);
    const back = await page(filter, { newer: third.entries[0]! }, 5, 10_000);
    expect([back.entries.map((e) => e.prNumber), back.more]).toEqual([[7, 6, 5, 4, 3], true]);
    const top = await page(filter, { newer: back.entries[0]! }, 5, 10_000);
    expect([top.entries.map((e) => e.prNumber), top.more]).toEqual([[12, 11, 10, 9, 8], false]);
  });

  test("a search reads at most its scan limit a page; going on from where each page stopped finds every match once, both ways", async () => {
    const byAuthor = { ...filter, author: "SANDBOX-AUTHOR-2" };
    const found: number[] = [];
    const stops: (HistoryKey | null)[] = [];
    let cut: HistoryCut = null;
    for (let i = 0; i < 10; i++) {
      const { entries, more, scannedTo } = await page(byAuthor, cut, 5, 3);
      found.push(...entries.map((e) => e.prNumber));
      stops.push(scannedTo);
      expect(more).toBe(false);
      if (!scannedTo) break;
      cut = { older: scannedTo };
    }
    // 12 PRs, 3 a page: 12–10 (none), 9–7 (8), 6–4 (none), 3–1 (1), then nothing left to read.
    expect(found).toEqual([8, 1]);
    expect(stops.length).toBe(5);
    expect(stops.at(-1)).toBeNull();
    // Forward from the oldest, the same matches in the page's order.
    const forward: number[] = [];
    let fromOldest: HistoryCut = { newer: { submittedAt: new Date(0), id: "" } };
    for (let i = 0; i < 10; i++) {
      const { entries, scannedTo } = await page(byAuthor, fromOldest, 5, 3);
      forward.push(...entries.map((e) => e.prNumber).reverse());
      if (!scannedTo) break;
      fromOldest = { newer: scannedTo };
    }
    expect(forward).toEqual([1, 8]);
    // With room for the whole history, one page finds both.
    expect((await page(byAuthor, null, 5, 10_000)).entries.map((e) => e.prNumber)).toEqual([8, 1]);
  });

  test("a number is found whatever the scan limit (its own index), and no queue means no rows", async () => {
    expect((await page({ ...filter, prNumber: 2 }, null, 5, 1)).entries.map((e) => e.prNumber)).toEqual([2]);
    expect(await page({ queueIds: [] }, null, 5, 10)).toEqual({ entries: [], more: false, scannedTo: null });
  });
});
