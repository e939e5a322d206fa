import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { ReadCache } from "../src/app/read-cache.js";
import type { Services } from "../src/app/services.js";
import { closeWebhookAgents, createWebhookAgents, WebhookDispatcher } from "../src/outbound/dispatch.js";
import { createWebhookEndpoint } from "../src/outbound/endpoints.js";
import { ensureOrganization } from "../src/auth/tokens.js";
import { DEFAULT_WEBHOOK_SETTINGS } from "../src/config.js";
import { prOrderingKey, type WebhookEvent } from "../src/domain/webhook-events.js";
import { Database } from "../src/store/database.js";
import { orderedId } from "../src/store/ids.js";
import { countPendingMessages, publishEvents } from "../src/store/webhook-outbox.js";
import { machine, postgresReachable, withAdmin } from "./support.js";

/**
 * npm run bench:webhooks [-- --quick]
 *
 * A burst of 10,000 events (1,000 PRs × 10 events, committed 100 per transaction) to 10 local
 * endpoints, every endpoint subscribed to every event: 100,000 deliveries. One endpoint answers
 * 500 to half its requests (retried with backoff: base 100 ms, max 1 s here); in a third burst
 * it answers every request after 1 s instead. The dispatcher
 * is the service's own (src/outbound/dispatch.ts, as the worker's loop calls it), signing
 * every request; the receivers are HTTP servers in this process. Reported: throughput, lag
 * from commit to the first successful delivery (p50, p99), lost (committed, never received) and
 * duplicates; the same burst with all 10 endpoints healthy is the baseline, in the same run.
 */

const quick = process.argv.includes("--quick");
const EVENTS = quick ? 1_000 : 10_000;
const PER_PR = 10;
const ENDPOINTS = 10;
const PER_TRANSACTION = 100;
const POSTGRES_ADMIN = process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

type Receiver = { server: Server; url: string; firstAt: Map<string, number>; receipts: number; refused: number };

/** How the first endpoint behaves: like the others, failing half its requests, or answering each after SLOW_MS. */
type Trouble = "none" | "failing" | "slow";
const SLOW_MS = 1_000;

async function startReceiver(trouble: Trouble, random: () => number): Promise<Receiver> {
  const receiver: Receiver = { server: createServer(), url: "", firstAt: new Map(), receipts: 0, refused: 0 };
  receiver.server.on("request", (req, res) => {
    req.resume();
    req.on("end", async () => {
      if (trouble === "slow") await new Promise((r) => setTimeout(r, SLOW_MS));
      if (trouble === "failing" && random() < 0.5) {
        receiver.refused++;
        res.writeHead(500).end();
        return;
      }
      const id = String(req.headers["webhook-id"]);
      receiver.receipts++;
      if (!receiver.firstAt.has(id)) receiver.firstAt.set(id, performance.now());
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.server.listen(0, "127.0.0.1", resolve));
  receiver.url = `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}/hook`;
  return receiver;
}

/** A seeded PRNG (mulberry32): the failing endpoint fails the same requests in every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Result = {
  deliveries: number;
  seconds: number;
  perSecond: number;
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
  /** p99 lag of the nine other endpoints (the failing one's retries wait out their backoff; the slow one's answers take 1 s). */
  healthyLagP99Ms: number;
  lost: number;
  duplicates: number;
  failedAttempts: number;
};

async function burst(url: string, trouble: Trouble): Promise<Result> {
  const db = await Database.open(url);
  const receivers: Receiver[] = [];
  const agents = createWebhookAgents();
  try {
    const services = {
      db,
      now: () => new Date(),
      newId: () => orderedId(),
      random: seeded(7),
      readCache: new ReadCache(),
      webhooks: { ...DEFAULT_WEBHOOK_SETTINGS, allowPrivate: true, retryBaseMs: 100, retryMaxMs: 1_000 },
    } as unknown as Services;
    const org = await db.transaction((tx) => ensureOrganization(tx, "bench"));
    const principal = { organizationId: org.id, organizationSlug: org.slug, tokenId: "bench", role: "write" as const };
    const failRandom = seeded(11);
    for (let i = 0; i < ENDPOINTS; i++) {
      const receiver = await startReceiver(i === 0 ? trouble : "none", failRandom);
      receivers.push(receiver);
      await createWebhookEndpoint(services, principal, { url: receiver.url, events: ["*"] });
    }
    // Events interleaved across PRs (event k of every PR, then k+1), each PR's in order.
    const prs = EVENTS / PER_PR;
    const events: WebhookEvent[] = [];
    for (let k = 0; k < PER_PR; k++) for (let pr = 1; pr <= prs; pr++) events.push({ type: "pull_request.testing", orderingKey: prOrderingKey("bench-queue", pr), data: { pullRequest: { number: pr }, k } });
    const committedAt = new Map<string, number>();
    let dispatching = true;
    let failedAttempts = 0;
    // As the worker's loop: every poll (the service's default), each idle endpoint starts its own rounds.
    const dispatcher = new WebhookDispatcher(services, agents);
    const loop = (async () => {
      while (dispatching) {
        await dispatcher.startIdle(
          () => dispatching,
          (error) => console.error(error),
        );
        await new Promise((r) => setTimeout(r, DEFAULT_WEBHOOK_SETTINGS.pollMs));
      }
      await dispatcher.settled();
    })();
    const started = performance.now();
    for (let i = 0; i < events.length; i += PER_TRANSACTION) {
      const chunk = events.slice(i, i + PER_TRANSACTION);
      const ids = await db.sqlTransaction((sql) => publishEvents(sql, org.id, chunk, { now: new Date(), newId: () => orderedId() }));
      // Committed now: the lag of each delivery is measured from here.
      const at = performance.now();
      for (const id of ids) committedAt.set(id, at);
    }
    const expected = committedAt.size * ENDPOINTS;
    const deadline = Date.now() + 15 * 60_000;
    while ((await db.read((tx) => countPendingMessages(tx))) > 0) {
      if (Date.now() > deadline) throw new Error("the burst did not drain in 15 minutes");
      await new Promise((r) => setTimeout(r, 50));
    }
    const finished = Math.max(...receivers.flatMap((r) => [...r.firstAt.values()]));
    dispatching = false;
    await loop;
    const lags: number[] = [];
    const healthyLags: number[] = [];
    let lost = 0;
    let duplicates = 0;
    for (const [index, r] of receivers.entries()) {
      for (const [id, at] of committedAt) {
        const first = r.firstAt.get(id);
        if (first === undefined) lost++;
        else {
          lags.push(first - at);
          if (trouble === "none" || index > 0) healthyLags.push(first - at);
        }
      }
      duplicates += r.receipts - r.firstAt.size;
      failedAttempts += r.refused;
    }
    lags.sort((a, b) => a - b);
    healthyLags.sort((a, b) => a - b);
    const pct = (p: number, of = lags) => Math.round(of[Math.min(of.length - 1, Math.floor(p * of.length))]!);
    const seconds = (finished - started) / 1000;
    return {
      deliveries: expected,
      seconds: Math.round(seconds * 10) / 10,
      perSecond: Math.round(expected / seconds),
      lagP50Ms: pct(0.5),
      lagP99Ms: pct(0.99),
      healthyLagP99Ms: pct(0.99, healthyLags),
      lagMaxMs: Math.round(lags.at(-1)!),
      lost,
      duplicates,
      failedAttempts,
    };
  } finally {
    closeWebhookAgents(agents);
    await Promise.all(receivers.map((r) => new Promise((resolve) => r.server.close(resolve))));
    await db.close();
  }
}

type Store = { name: string; create(): Promise<{ url: string; drop(): Promise<void> }> };
const stores: Store[] = [
  {
    name: "SQLite",
    async create() {
      const dir = mkdtempSync(join(tmpdir(), "greenline-bench-webhooks-"));
      return { url: `file:${join(dir, "bench.db")}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
];
if (await postgresReachable(POSTGRES_ADMIN)) {
  stores.push({
    name: "PostgreSQL",
    async create() {
      const name = `greenline_bench_webhooks_${process.pid}_${Date.now()}`;
      await withAdmin(POSTGRES_ADMIN, (c) => c.query(`CREATE DATABASE ${name}`));
      const url = new URL(POSTGRES_ADMIN);
      url.pathname = `/${name}`;
      return { url: url.toString(), drop: () => withAdmin(POSTGRES_ADMIN, (c) => c.query(`DROP DATABASE ${name} WITH (FORCE)`)).then(() => undefined) };
    },
  });
}

console.log(`bench:webhooks${quick ? " --quick" : ""} on ${machine()}: ${EVENTS} events × ${ENDPOINTS} endpoints`);
const summary: Record<string, Record<string, Result>> = {};
for (const store of stores) {
  summary[store.name] = {};
  for (const [label, trouble] of [
    ["all healthy (baseline)", "none"],
    ["one endpoint failing 50%", "failing"],
    ["one endpoint slow (1 s)", "slow"],
  ] as const) {
    const database = await store.create();
    try {
      const result = await burst(database.url, trouble);
      summary[store.name]![label] = result;
      console.log(
        `${store.name.padEnd(10)} ${label.padEnd(24)} ${result.deliveries} deliveries in ${result.seconds} s = ${result.perSecond}/s; lag commit→delivery p50 ${result.lagP50Ms} ms, p99 ${result.lagP99Ms} ms, max ${result.lagMaxMs} ms (healthy endpoints p99 ${result.healthyLagP99Ms} ms); lost ${result.lost}; duplicates ${result.duplicates}; failed attempts ${result.failedAttempts}`,
      );
    } finally {
      await database.drop();
    }
  }
}
console.log(JSON.stringify(summary));
