import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";
import { MINUTE_MS } from "../../src/domain/time.js";
import { type HistoryCut, type HistoryFilter, type HistoryKey, historyPage, historyQueues } from "../../src/store/history.js";
import { authenticate } from "../../src/auth/tokens.js";
import { historyQueryOf, historyView } from "../../src/web/read-models/history.js";
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

  test("Newer from an empty page after a stopped search shows again what the page before it showed (found by review: the row it stopped at was lost)", async () => {
    const principal = (await authenticate(server.greenline.services.db, server.api.token))!;
    // The read model's links, followed as a browser would, with a scan limit of 5 instead of 10,000.
    const view = (query: Record<string, string>) => historyView(server.greenline.services, principal, historyQueryOf({ author: "sandbox-author-2", size: "5", ...query }), 5);
    // Author 2 wrote PRs 1 and 8: the first page reads 12 to 8 and stops there with #8; the second reads 7 to 3 and finds none.
    const first = await view({});
    expect(first.entries.map((e) => e.prNumber)).toEqual([8]);
    const second = await view({ before: first.older });
    expect(second.entries).toEqual([]);
    const back = await view({ after: second.newer });
    expect(back.entries.map((e) => e.prNumber)).toEqual([8]);
  });

  test("a number is found whatever the scan limit (its own index), and no queue means no rows", async () => {
    expect((await page({ ...filter, prNumber: 2 }, null, 5, 1)).entries.map((e) => e.prNumber)).toEqual([2]);
    expect(await page({ queueIds: [] }, null, 5, 10)).toEqual({ entries: [], more: false, scannedTo: null });
  });

  // PostgreSQL's plans follow its statistics (a few rows here): its plans at 100,000 are in docs/benchmarks.md.
  (backend.name === "sqlite" ? test : test.skip)("on SQLite, every search reads in the order's index and sorts nothing (a number: through its own index)", async () => {
    const require = createRequire(import.meta.url);
    const Driver = require("better-sqlite3") as typeof BetterSqlite3;
    const Statement = Object.getPrototypeOf(new Driver(":memory:").prepare("SELECT 1"));
    const original = Statement.all as (...args: unknown[]) => unknown;
    const seen: { text: string; params: unknown[] }[] = [];
    Statement.all = function (this: BetterSqlite3.Statement, ...args: unknown[]) {
      if (this.source.includes('FROM "QueueEntry" e')) seen.push({ text: this.source, params: args });
      return original.apply(this, args);
    };
    const day = { submittedFrom: new Date(0), submittedBefore: new Date(Date.parse("2100-01-01")) };
    const searches: [string, HistoryFilter][] = [
      ["title", { ...filter, title: "pull" }],
      ["author", { ...filter, author: "sandbox-author-2" }],
      ["state", { ...filter, state: "pending" }],
      ["reason", { ...filter, reason: "submitted" }],
      ["state, reason and dates", { ...filter, state: "pending", reason: "submitted", ...day }],
    ];
    try {
      for (const [, f] of searches) await page(f, { older: { submittedAt: new Date(Date.parse("2100-01-01")), id: "" } }, 5, 3);
      await page(filter, null, 5, 3);
      await page({ ...filter, prNumber: 2 }, null, 5, 3);
    } finally {
      Statement.all = original;
    }
    const db = new Driver(new URL(server.databaseUrl).pathname, { readonly: true });
    try {
      const plans = seen.map(({ text, params }) => ({
        byNumber: text.includes(`e."prNumber" = ?`),
        plan: (db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...(params as unknown[])) as { detail: string }[]).map((r) => r.detail).join(" | "),
      }));
      expect(plans.length).toBeGreaterThanOrEqual(searches.length * 2 + 2);
      for (const { byNumber, plan } of plans) {
        expect(plan).toMatch(byNumber ? /SEARCH e USING INDEX QueueEntry_queueId_prNumber_key/ : /(SCAN|SEARCH) e USING (COVERING )?INDEX QueueEntry_submittedAt_id_idx/);
        if (!byNumber) expect(plan).not.toContain("TEMP B-TREE");
      }
    } finally {
      db.close();
    }
  });
});
