// npm run bench:metrics [-- --queues=1000] [--history=100000] [--window=2000] [--scrapes=30] [--backend=sqlite|postgres] [--quick] [--keep]
//
// The metrics endpoint at an organization's scale (issue 27's budget: < 50 ms with 1,000 queues
// and 100,000 PRs of history). A fresh database per backend; the service in this process with
// its worker off (nothing changes under the scrapes), the operator's organization set (so the
// service's own metrics are in the answer too). Seeded:
// - `queues` queues (5 branches in each of queues/5 repositories), created through the API;
// - one live PR in each, submitted through the API (so each queue has a PR waiting: the scrape
//   asks each for its blocked reason);
// - `history` concluded PRs written straight into the database (entry + 4 transitions each, the
//   engine's shape), spread over the last 30 days, `window` of them concluded in the last hour
//   (what the one-hour series aggregate).
// Then, interleaved, `scrapes` times each: GET /metrics, getMergeQueueMetrics for the
// organization and for one repository, and the baselines GET /healthz and getQueue of one queue.
// Reported per request: p50/p95/p99 in ms, the answer's size, and the p50 ratio to getQueue's.
import { Writable } from "node:stream";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { createLogger } from "../src/log.js";
import { startGreenline } from "../src/server.js";
import { seedHistory } from "./history-seed.js";
import { benchConfig, freshDatabase, machine, postgresReachable } from "./support.js";

const { values } = parseArgs({
  options: {
    queues: { type: "string", default: "1000" },
    history: { type: "string", default: "100000" },
    window: { type: "string", default: "2000" },
    scrapes: { type: "string", default: "30" },
    backend: { type: "string" },
    quick: { type: "boolean", default: false },
    /** Leaves the seeded database behind (its URL is printed), to EXPLAIN the scrape's queries on it. */
    keep: { type: "boolean", default: false },
  },
});
const QUEUES = values.quick ? 200 : Number(values.queues);
const HISTORY = values.quick ? 20_000 : Number(values.history);
const WINDOW = values.quick ? 400 : Number(values.window);
const SCRAPES = values.quick ? 10 : Number(values.scrapes);
const TOKEN = "metrics-bench-token-0123456789ab";
const PG_ADMIN = process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const BRANCHES = ["main", "release", "next", "staging", "hotfix"];

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.max(0, Math.ceil((values.length * p) / 100) - 1))]!;

type Measured = { ms: number[]; bytes: number };

async function call(base: string, method: "GET" | "POST", path: string, body?: unknown): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json", "x-api-token": TOKEN },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const ms = performance.now() - started;
  if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${text.slice(0, 300)}`);
  return { ms, bytes: Buffer.byteLength(text) };
}

async function run(backend: "sqlite" | "postgres"): Promise<Record<string, unknown>> {
  const db = await freshDatabase(backend, PG_ADMIN, "metrics-bench");
  const config = benchConfig(db.url, { token: TOKEN, org: "acme" }, { sandbox: { ciMs: 3_600_000, failureRate: 0, flakeRate: 0 }, operatorOrg: "acme", shutdownTimeoutMs: 5_000 });
  const sink = new Writable({ write: (_c, _e, done) => done() });
  const greenline = await startGreenline(config, { log: createLogger("warn", sink), startWorker: false });
  try {
    const base = greenline.url;
    const addressOf = (i: number) => ({ repo: { host: "github.com", owner: "acme", name: `repo-${Math.floor(i / BRANCHES.length)}` }, targetBranch: BRANCHES[i % BRANCHES.length]! });
    const seedStarted = performance.now();
    // Queues and their live PRs through the API, eight at a time.
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < QUEUES; i = next++) {
        await call(base, "POST", "/v1/createQueue", addressOf(i));
        await call(base, "POST", "/v1/submitPullRequest", { ...addressOf(i), pr: { number: 1 } });
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    const apiSeedMs = performance.now() - seedStarted;

    // The history straight into the database: concluded PRs, 500 per transaction.
    const { services } = greenline;
    const historyStarted = performance.now();
    await seedHistory(services.db, backend, { prs: HISTORY, lastHour: WINDOW });
    const historyMs = performance.now() - historyStarted;

    const repo = addressOf(0).repo;
    const requests: Record<string, () => Promise<{ ms: number; bytes: number }>> = {
      healthz: () => call(base, "GET", "/healthz"),
      getQueue: () => call(base, "POST", "/v1/getQueue", addressOf(0)),
      "GET /metrics": () => call(base, "GET", "/metrics"),
      "getMergeQueueMetrics (organization)": () => call(base, "GET", "/v1/getMergeQueueMetrics"),
      "getMergeQueueMetrics (one repository)": () => call(base, "GET", `/v1/getMergeQueueMetrics?repo=${encodeURIComponent(`${repo.owner}/${repo.name}`)}&repoHost=${repo.host}`),
    };
    const measured: Record<string, Measured> = Object.fromEntries(Object.keys(requests).map((name) => [name, { ms: [], bytes: 0 }]));
    for (const request of Object.values(requests)) await request(); // warm-up
    for (let i = 0; i < SCRAPES; i++) {
      for (const [name, request] of Object.entries(requests)) {
        const { ms, bytes } = await request();
        measured[name]!.ms.push(ms);
        measured[name]!.bytes = bytes;
      }
    }
    const baseline = percentile(measured.getQueue!.ms, 50);
    const rows = Object.entries(measured).map(([name, m]) => ({
      request: name,
      p50: Number(percentile(m.ms, 50).toFixed(1)),
      p95: Number(percentile(m.ms, 95).toFixed(1)),
      p99: Number(percentile(m.ms, 99).toFixed(1)),
      kb: Number((m.bytes / 1024).toFixed(1)),
      p50VsGetQueue: Number((percentile(m.ms, 50) / baseline).toFixed(2)),
    }));
    console.log(
      `\n${backend}: ${QUEUES} queues, ${QUEUES} live PRs, ${HISTORY} PRs of history (${WINDOW} in the last hour); seeded in ${(apiSeedMs / 1000).toFixed(1)} s (API) + ${(historyMs / 1000).toFixed(1)} s (rows); load average ${loadavg()[0]!.toFixed(2)}`,
    );
    console.table(rows);
    return { backend, rows };
  } finally {
    await greenline.close();
    if (values.keep) console.log(`kept: ${db.url}`);
    else await db.drop();
  }
}

const backends: ("sqlite" | "postgres")[] = values.backend ? [values.backend as "sqlite" | "postgres"] : ["sqlite", "postgres"];
console.log(machine());
const results: Record<string, unknown>[] = [];
for (const backend of backends) {
  if (backend === "postgres" && !(await postgresReachable(PG_ADMIN))) {
    console.log("PostgreSQL is not reachable: its run is skipped.");
    continue;
  }
  results.push(await run(backend));
}
console.log(JSON.stringify({ queues: QUEUES, history: HISTORY, window: WINDOW, results }));
