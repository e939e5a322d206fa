// npx tsc -p tsconfig.build.json && node [--cpu-prof] dist/bench/write-cost.js [--prs 1000] [--writes 200] [--backend sqlite|postgres]
//
// Milliseconds per API write (submitPullRequest of a new PR, setImpactedTargets, cancelPullRequest)
// on a queue holding --prs PRs, one request at a time, the service in this process with its
// worker stopped (so only the request's own work is timed), beside getQueue right after each
// write (the answer built again). Where bench:api measures throughput under ten connections
// (serialized by the queue's lock), this says what one write costs and, under --cpu-prof, where.
import { parseArgs } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/log.js";
import { startGreenline } from "../src/server.js";
import { postgresReachable, withAdmin } from "./support.js";

const { values } = parseArgs({
  options: { prs: { type: "string", default: "1000" }, writes: { type: "string", default: "200" }, backend: { type: "string", default: "sqlite" }, paused: { type: "boolean", default: false } },
});
const PRS = Number(values.prs);
const WRITES = Number(values.writes);
const ADMIN = process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const TOKEN = "bench-token-0123456789abcdef";
const repo = { host: "github.com", owner: "bench", name: "web" };

let databaseUrl: string;
let cleanup: () => Promise<void>;
if (values.backend === "postgres") {
  if (!(await postgresReachable(ADMIN))) throw new Error(`PostgreSQL not reachable at ${ADMIN}`);
  const name = `greenline_write_cost_${process.pid}`;
  await withAdmin(ADMIN, (c) => c.query(`CREATE DATABASE "${name}"`));
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  databaseUrl = url.toString();
  cleanup = async () => {
    await withAdmin(ADMIN, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  };
} else {
  const dir = mkdtempSync(join(tmpdir(), "greenline-write-cost-"));
  databaseUrl = `file:${join(dir, "greenline.db")}`;
  cleanup = async () => rmSync(dir, { recursive: true, force: true });
}
const config = loadConfig({ DATABASE_URL: databaseUrl, GREENLINE_API_TOKEN: TOKEN, GREENLINE_ORG: "bench", PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn" }, () => "");
const greenline = await startGreenline(config, { log: createLogger("warn"), startWorker: false });
try {
  const call = async (op: string, body: unknown) => {
    const response = await fetch(`${greenline.url}/v1/${op}`, { method: "POST", headers: { "content-type": "application/json", "x-api-token": TOKEN }, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${op}: ${response.status} ${await response.text()}`);
    return response.text();
  };
  const queue = { repo, targetBranch: "main" };
  await call("createQueue", { ...queue, ...(values.paused ? { state: "paused" } : {}), concurrency: 3 });
  for (let n = 1; n <= PRS; n++) await call("submitPullRequest", { ...queue, pr: { number: n } });
  const fresh = Array.from({ length: WRITES }, (_, i) => 100_000 + i);
  const shas = new Map<number, string>();
  for (const n of fresh) shas.set(n, (await greenline.sandbox!.getPullRequest(repo, n, { targetBranch: "main", directMerge: false })).headSha);
  const time = async (label: string, request: (n: number) => Promise<unknown>) => {
    const started = process.hrtime.bigint();
    for (const n of fresh) await request(n);
    const ms = Number(process.hrtime.bigint() - started) / 1e6 / fresh.length;
    console.log(`${label.padEnd(40)} ${ms.toFixed(2)} ms`);
  };
  console.log(`bench/write-cost — ${values.backend}, ${PRS} PRs queued${values.paused ? " (paused)" : ""}, ${WRITES} requests each, one at a time`);
  await time("submitPullRequest (new PR)", (n) => call("submitPullRequest", { ...queue, pr: { number: n } }));
  await time("setImpactedTargets", (n) => call("setImpactedTargets", { ...queue, pr: { number: n, sha: shas.get(n) }, impactedTargets: [`//t${n}`] }));
  await time("getQueue after setImpactedTargets", async (n) => {
    await call("setImpactedTargets", { ...queue, pr: { number: n, sha: shas.get(n) }, impactedTargets: [`//u${n}`] });
    await call("getQueue", queue);
  });
  await time("getQueue, same version", () => call("getQueue", queue));
  await time("cancelPullRequest", (n) => call("cancelPullRequest", { ...queue, pr: { number: n } }));
} finally {
  await greenline.close();
  await cleanup();
}
