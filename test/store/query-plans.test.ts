import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";
import pg from "pg";
import { BACKENDS } from "../support/backends.js";
import { ciFinishes, prOf, queueOf, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * Every statement the queue's hot path sends finds its rows through an index suited to it, so
 * that its cost does not grow with the queue's history (issue 23, "flat with history"). The
 * statements are the ones a real flow sends (submissions, runs, CI results, merges, the
 * worker), captured on SQLite's driver as they are prepared; each is then explained. Two plans
 * are refused: a full scan of a table that grows with history, and the pending effects read
 * through the (queueId, seq) index — which walks every effect the queue ever had to skip a sort
 * of the few pending ones (8 ms a read at 28,000 effects, read before every effect).
 */
const GROWING = ["QueueEntry", "Transition", "TestRun", "Effect", "QueueEvent", "TestUpload", "TestResult"];

const sqlite = BACKENDS.find((b) => b.name === "sqlite")!;

describe("query plans of the hot path (SQLite)", () => {
  const require = createRequire(import.meta.url);
  const Statement = Object.getPrototypeOf((new (require("better-sqlite3") as typeof BetterSqlite3)(":memory:") as BetterSqlite3.Database).prepare("SELECT 1"));
  const seen = new Set<string>();
  const methods = ["run", "all", "get"] as const;
  const originals = methods.map((m) => Statement[m] as (...args: unknown[]) => unknown);
  let server: TestServer;
  const clock = new TestClock();

  beforeAll(async () => {
    methods.forEach((m, i) => {
      Statement[m] = function (this: BetterSqlite3.Statement, ...args: unknown[]) {
        seen.add(this.source);
        return originals[i]!.apply(this, args);
      };
    });
    server = await startTestServer(sqlite, { now: clock.now, sandbox: { ciMs: 60_000 } });
  });
  afterAll(async () => {
    methods.forEach((m, i) => {
      Statement[m] = originals[i];
    });
    await server?.close();
  });

  test("no statement of a queue's work scans a table that grows with history, and pending effects are read by their own index", async () => {
    await server.api.ok("createQueue", { ...queueOf("plans"), concurrency: 2 });
    for (let round = 0; round < 3; round++) {
      for (let pr = 1; pr <= 3; pr++) await server.api.ok("submitPullRequest", prOf(round * 3 + pr, "plans"));
      await ciFinishes(server, clock);
      await ciFinishes(server, clock);
    }
    await server.api.ok("cancelPullRequest", prOf(3, "plans")).catch(() => undefined);
    await server.api.ok("getQueue", queueOf("plans"));
    // An operator's scrape (the service's backlog reads every queue's pending effects: their own partial index).
    expect((await fetch(`${server.url}/metrics`, { headers: { "x-api-token": server.api.token } })).status).toBe(200);
    // The hourly retention job's statements start with a comment (src/store/retention.ts): not the hot path.
    const statements = [...seen].filter((s) => /^\s*(SELECT|UPDATE|DELETE|INSERT|WITH)/i.test(s) && GROWING.some((t) => s.includes(`"${t}"`) || s.includes(`\`${t}\``)));
    expect(statements.length).toBeGreaterThan(20);

    const Database = require("better-sqlite3") as typeof BetterSqlite3;
    const db = new Database(new URL(server.databaseUrl).pathname, { readonly: true });
    try {
      const refused: string[] = [];
      for (const text of statements) {
        const params = (text.match(/\?/g) ?? []).map(() => null);
        let plan: string[];
        try {
          plan = (db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...params) as { detail: string }[]).map((r) => r.detail);
        } catch {
          continue; // A statement that names its parameters (Prisma's migrations, the driver's own): not a hot-path one.
        }
        // A partial index over pending rows only (Effect_pending_createdAt_idx) stays as small as the work waiting.
        const scans = plan.filter((line) => GROWING.some((t) => new RegExp(`^SCAN (\`main\`\\.)?\`?"?${t}"?\`?( |$)`).test(line)) && !/USING (COVERING )?INDEX \w*_pending_\w*$/.test(line));
        const pendingBySeq = /"doneAt" IS NULL/.test(text) && text.includes('"Effect"') && plan.some((line) => line.includes("Effect_queueId_seq_key"));
        if (scans.length > 0 || pendingBySeq) refused.push(`${text.replace(/\s+/g, " ").slice(0, 160)}\n    ${plan.join(" | ")}`);
      }
      expect(refused).toEqual([]);
    } finally {
      db.close();
    }
  });
});

const postgres = BACKENDS.find((b) => b.name === "postgres");

/**
 * The statements issue 23's second round made PostgreSQL's own (saveDecision's writes in one
 * WITH statement, the effects' insert numbering itself, the lock that finds its queue, the
 * outbox read with the queue's version, the runner's first read), captured with their values as
 * a real flow sends them and explained with sequential scans disabled: a table that grows with
 * history read in full then means no index serves the statement (on tables this small the
 * planner would otherwise scan them all).
 */
(postgres ? describe : describe.skip)("query plans of the PostgreSQL-only hot statements", () => {
  const sent: { text: string; values: unknown[] }[] = [];
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  let server: TestServer;
  const clock = new TestClock();
  // (appendEffects' own insert outside a decision is the WITH statement's first clause.)
  // And the metrics' one-hour window: conclusions and restarts counted, durations summed (an index range of Transition.at per scrape, whatever the history).
  const OURS = [
    /^WITH "effects" AS/,
    /WHERE "id" = \(SELECT q\."id"/,
    /AS "queueVersion"/,
    /AS "installationOutage"/,
    /AS "webhookEndpointsEnabled"/,
    /^WITH "window" AS MATERIALIZED/,
    /^SELECT t\."queueId", t\."fromState", t\."toState", COUNT/,
  ];

  beforeAll(async () => {
    proto.query = function (this: unknown, ...args: unknown[]) {
      const first = args[0] as { text?: string; values?: unknown[] } | string;
      if (typeof first === "object" && first?.text && OURS.some((re) => re.test(first.text!.trim()))) sent.push({ text: first.text, values: first.values ?? [] });
      return original.apply(this, args);
    };
    server = await startTestServer(postgres!, { now: clock.now, sandbox: { ciMs: 60_000 } });
  });
  afterAll(async () => {
    proto.query = original;
    await server?.close();
  });

  test("each is served by an index", async () => {
    await server.api.ok("createQueue", { ...queueOf("plans"), concurrency: 2 });
    for (let round = 0; round < 2; round++) {
      for (let pr = 1; pr <= 3; pr++) await server.api.ok("submitPullRequest", prOf(round * 3 + pr, "plans"));
      await ciFinishes(server, clock);
      await ciFinishes(server, clock);
    }
    await server.api.ok("cancelPullRequest", prOf(6, "plans")).catch(() => undefined);
    expect((await fetch(`${server.url}/metrics`, { headers: { "x-api-token": server.api.token } })).status).toBe(200);
    const texts = new Map(sent.map((s) => [s.text, s.values]));
    // Every one of them was sent by the flow.
    expect(OURS.filter((re) => ![...texts.keys()].some((t) => re.test(t.trim()))).map(String)).toEqual([]);

    const client = new pg.Client({ connectionString: server.databaseUrl });
    await client.connect();
    try {
      await client.query("SET enable_seqscan = off");
      const refused: string[] = [];
      for (const [text, values] of texts) {
        // EXPLAIN without ANALYZE plans the statement and runs nothing (its writes included).
        const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${text}`, values);
        const plan = rows.map((r) => r["QUERY PLAN"]);
        if (plan.some((line) => GROWING.some((t) => line.includes(`Seq Scan on "${t}"`) || new RegExp(`Seq Scan on ${t}\\b`).test(line)))) {
          refused.push(`${text.replace(/\s+/g, " ").slice(0, 160)}\n    ${plan.join(" | ")}`);
        }
      }
      expect(refused).toEqual([]);
    } finally {
      await client.end();
    }
  });
});
