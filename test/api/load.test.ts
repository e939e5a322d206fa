import { createRequire } from "node:module";
import { Agent, request, type IncomingHttpHeaders } from "node:http";
import pg from "pg";
import { runLoad, seedWorld } from "../../bench/load-mix.js";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

type Answer = { status: number; headers: IncomingHttpHeaders; text: string; reusedSocket: boolean };

/** Sends a request's headers and the first `sent` bytes of its body; `finish` sends the rest and resolves with the answer. */
function partial(server: TestServer, agent: Agent, path: string, body: string, sent: number) {
  const req = request(`${server.url}${path}`, {
    method: "POST",
    agent,
    headers: { "x-api-token": server.api.token, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, text, reusedSocket: req.reusedSocket }));
    });
    req.on("error", reject);
  });
  req.write(body.slice(0, sent));
  const finish = () => {
    req.end(body.slice(sent));
    return answer;
  };
  return { answer, finish };
}

/** Counts the rows this process reads from either database driver (PostgreSQL's client, SQLite's statements) while `fn` runs. */
async function rowsRead<T>(fn: () => Promise<T>): Promise<number> {
  let rows = 0;
  const pgProto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const pgQuery = pgProto.query;
  pgProto.query = function (this: unknown, ...args: unknown[]) {
    const result = pgQuery.apply(this, args);
    if (result instanceof Promise) void result.then((r: { rows?: unknown[] } | undefined) => (rows += r?.rows?.length ?? 0)).catch(() => undefined);
    return result;
  };
  const BetterSqlite3 = createRequire(import.meta.url)("better-sqlite3") as new (path: string) => { prepare(sql: string): object; close(): void };
  const probe = new BetterSqlite3(":memory:");
  const statement = Object.getPrototypeOf(probe.prepare("SELECT 1")) as Record<"all" | "get", (...args: unknown[]) => unknown>;
  probe.close();
  const all = statement.all;
  const get = statement.get;
  statement.all = function (this: unknown, ...args: unknown[]) {
    const result = all.apply(this, args) as unknown[];
    rows += result.length;
    return result;
  };
  statement.get = function (this: unknown, ...args: unknown[]) {
    const result = get.apply(this, args);
    if (result !== undefined) rows++;
    return result;
  };
  try {
    await fn();
  } finally {
    pgProto.query = pgQuery;
    statement.all = all;
    statement.get = get;
  }
  return rows;
}

describe.each(BACKENDS)("under load on $name", (backend) => {
  describe("admission control", () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(backend, { maxInFlight: 2 });
      await server.api.ok("createQueue", queueOf());
    });
    afterAll(() => server?.close());

    test("a request over the limit of requests in flight answers 503 with Retry-After at once, and its connection serves the retry", async () => {
      const body = JSON.stringify(queueOf());
      const holders = [new Agent({ keepAlive: true }), new Agent({ keepAlive: true })];
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        // Two requests in flight: their headers arrived, their bodies have not.
        const held = holders.map((a) => partial(server, a, "/v1/getQueue", body, 5));
        await new Promise((resolve) => setTimeout(resolve, 100));
        const refused = await partial(server, agent, "/v1/getQueue", body, 0).finish();
        expect([refused.status, refused.headers["retry-after"], JSON.parse(refused.text).error.code]).toEqual([503, "1", "unavailable"]);
        const answered = await Promise.all(held.map((h) => h.finish()));
        expect(answered.map((a) => a.status)).toEqual([200, 200]);
        const retried = await partial(server, agent, "/v1/getQueue", body, 0).finish();
        expect([retried.status, retried.reusedSocket]).toEqual([200, true]);
        // /healthz is served whatever the load.
        const more = holders.map((a) => partial(server, a, "/v1/getQueue", body, 5));
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
        await Promise.all(more.map((h) => h.finish()));
      } finally {
        for (const a of [...holders, agent]) a.destroy();
      }
    });
  });

  describe("a generated mix", () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(backend, { maxInFlight: 3 });
    });
    afterAll(() => server?.close());

    // LOAD_PRS, LOAD_REQUESTS, LOAD_SEED make a longer run of the same mix, to hunt a rare failure.
    test("valid and invalid requests over a few connections: no connection dropped, no 5xx but 503 with Retry-After", async () => {
      const world = await seedWorld(server.url, server.api.token, { repos: 2, prs: Number(process.env.LOAD_PRS ?? 3), cycles: 1, connections: 2 });
      // More connections than the limit: some answers may be 503, each saying when to retry.
      const report = await runLoad(server.url, server.api.token, world, { requests: Number(process.env.LOAD_REQUESTS ?? 200), connections: 5, seed: Number(process.env.LOAD_SEED ?? 22) });
      const problems = report.operations.filter((s) => s.serverErrors > 0 || s.unavailableWithoutRetryAfter > 0);
      const unhandled = server.logs.filter((line) => line.includes("unhandled error")).map((line) => (JSON.parse(line) as { err?: { message?: string } }).err?.message?.trim().split("\n").at(-1));
      expect({ failedConnections: report.failedConnections, errors: report.connectionErrors, problems, unhandled }).toEqual({ failedConnections: 0, errors: [], problems: [], unhandled: [] });
      expect(report.requests).toBe(Number(process.env.LOAD_REQUESTS ?? 200));
      expect(report.all.count).toBe(Number(process.env.LOAD_REQUESTS ?? 200));
      // A generous bound (the machine may be loaded): no answer waits on without limit.
      expect(report.all.p99).toBeLessThan(10_000);
    }, 120_000);
  });

  describe("getMergeQueueMetrics", () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(backend);
      await server.api.ok("createQueue", queueOf("metrics"));
    });
    afterAll(() => server?.close());

    const cycle = async (numbers: number[], rounds: number) => {
      for (let round = 0; round < rounds; round++) {
        for (const n of numbers) await server.api.ok("submitPullRequest", prOf(n, "metrics"));
        for (const n of numbers) await server.api.ok("cancelPullRequest", prOf(n, "metrics"));
      }
    };

    test("reads as many rows whatever the number of transitions in its window and the length of histories", async () => {
      await cycle([1, 2], 1);
      const metrics = () => server.api.get("getMergeQueueMetrics");
      const few = await rowsRead(metrics);
      const before = (await metrics()).text;
      await cycle([1, 2, 3], 4);
      const many = await rowsRead(metrics);
      const after = (await metrics()).text;
      expect(after).toContain(`mq_pr_conclusions_1h_total{repo="acme/metrics",branch="main",queue_type="main",conclusion="cancelled"} 14`);
      expect(after).toContain(`mq_pr_time_in_queue_1h_seconds_count{repo="acme/metrics",branch="main",queue_type="main"} 14`);
      expect(before).toContain(`mq_pr_time_in_queue_1h_seconds_count{repo="acme/metrics",branch="main",queue_type="main"} 2`);
      expect(many).toBe(few);
    });
  });
});
