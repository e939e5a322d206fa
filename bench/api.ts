// npm run bench:api [-- --duration <s>] [--connections <n>] [--quick]
//
// The API under load, on SQLite and on PostgreSQL, side by side with a bare Express 5 handler
// measured in the same run: getQueue with 1,000 PRs enqueued, getSubmittedPullRequest, and
// submitPullRequest (a new PR each request), and getSubmittedPullRequest with includeTimeline
// on a PR whose timeline holds 200 events (the most kept). The service runs in its own process, as `npm start`
// runs it; autocannon drives it over HTTP at 10 connections.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { freePort, load, machine, postgresReachable, startProcess, withAdmin, type LoadResult } from "./support.js";

const { values } = parseArgs({
  options: { duration: { type: "string", default: "10" }, connections: { type: "string", default: "10" }, quick: { type: "boolean", default: false } },
});
const duration = values.quick ? 3 : Number(values.duration);
const connections = Number(values.connections);
const here = dirname(fileURLToPath(import.meta.url));
const mainScript = join(here, "../src/main.js");
const bareScript = join(here, "bare-express.js");
const POSTGRES_ADMIN = process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const TOKEN = "bench-token-0123456789abcdef";
const repo = { host: "github.com", owner: "bench", name: "web" };
const headers = { "content-type": "application/json", "x-api-token": TOKEN };
const TIMELINE_PR = 999_999;

type Row = { backend: string; operation: string } & LoadResult;

async function post(base: string, op: string, body: unknown): Promise<void> {
  const response = await fetch(`${base}/v1/${op}`, { method: "POST", headers, body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`${op}: ${response.status} ${await response.text()}`);
}

async function seed(base: string, prs: number): Promise<void> {
  await post(base, "createQueue", { repo, targetBranch: "main" });
  await post(base, "createQueue", { repo, targetBranch: "submit" });
  let next = 1;
  const worker = async () => {
    while (next <= prs) {
      const number = next++;
      await post(base, "submitPullRequest", { repo, targetBranch: "main", pr: { number }, priority: number % 4 === 0 ? "high" : undefined });
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

/**
 * A PR in the queue "timeline" whose timeline holds the most events kept: submitted and
 * cancelled over and over. The queue is paused, so the sandbox's CI never merges the PR.
 */
async function seedTimeline(base: string): Promise<void> {
  await post(base, "createQueue", { repo, targetBranch: "timeline", state: "paused" });
  // A number no other queue of the bench uses: the sandbox has one PR per number, and the "main" queue merges its own.
  const pr = { repo, targetBranch: "timeline", pr: { number: TIMELINE_PR } };
  // Each round is two transitions (submitted or resubmitted, cancelled).
  for (let round = 0; round < 105; round++) {
    await post(base, "submitPullRequest", pr);
    await post(base, "cancelPullRequest", pr);
  }
  await post(base, "submitPullRequest", pr);
  const answer = await fetch(`${base}/v1/getSubmittedPullRequest`, { method: "POST", headers, body: JSON.stringify({ ...pr, includeTimeline: true }) });
  const events = ((await answer.json()) as { timeline: unknown[] }).timeline.length;
  if (events !== 200) throw new Error(`the timeline PR holds ${events} events, not 200`);
}

async function measureBackend(backend: string, databaseUrl: string): Promise<{ rows: Row[]; queueBody: string }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await startProcess(mainScript, { PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: databaseUrl, GREENLINE_API_TOKEN: TOKEN, GREENLINE_ORG: "bench", LOG_LEVEL: "warn" }, `${base}/healthz`);
  try {
    await seed(base, 1000);
    await seedTimeline(base);
    const queueBody = await (await fetch(`${base}/v1/getQueue`, { method: "POST", headers, body: JSON.stringify({ repo, targetBranch: "main" }) })).text();
    const rows: Row[] = [];
    const run = async (operation: string, options: Parameters<typeof load>[0]) => {
      await load({ ...options, duration: 1, connections }); // warm-up
      rows.push({ backend, operation, ...(await load({ ...options, duration, connections })) });
    };
    await run("getQueue (1,000 PRs)", { url: `${base}/v1/getQueue`, method: "POST", headers, body: JSON.stringify({ repo, targetBranch: "main" }) });
    await run("getSubmittedPullRequest", { url: `${base}/v1/getSubmittedPullRequest`, method: "POST", headers, body: JSON.stringify({ repo, targetBranch: "main", pr: { number: 500 } }) });
    const timeline = { repo, targetBranch: "timeline", pr: { number: TIMELINE_PR } };
    await run("getSubmittedPullRequest (same PR, no timeline)", { url: `${base}/v1/getSubmittedPullRequest`, method: "POST", headers, body: JSON.stringify(timeline) });
    await run("getSubmittedPullRequest includeTimeline (200 events)", { url: `${base}/v1/getSubmittedPullRequest`, method: "POST", headers, body: JSON.stringify({ ...timeline, includeTimeline: true }) });
    let number = 1;
    await run("submitPullRequest (new PR)", {
      url: `${base}/v1/submitPullRequest`,
      method: "POST",
      headers,
      requests: [{ setupRequest: (req) => ({ ...req, body: JSON.stringify({ repo, targetBranch: "submit", pr: { number: number++ } }) }) }],
    });
    return { rows, queueBody };
  } finally {
    await server.stop();
  }
}

/** The bare Express baselines: a small JSON answer, and getQueue's 1,000-PR answer as a ready string. */
async function measureBare(queueBody: string): Promise<{ small: Row; large: Row }> {
  const port = await freePort();
  const file = join(mkdtempSync(join(tmpdir(), "greenline-bare-")), "queue.json");
  writeFileSync(file, queueBody);
  const bare = await startProcess(bareScript, { PORT: String(port), LARGE_BODY_FILE: file });
  try {
    const body = JSON.stringify({ repo, targetBranch: "main", pr: { number: 500 } });
    const run = async (path: string, operation: string): Promise<Row> => {
      const options = { url: `http://127.0.0.1:${port}${path}`, method: "POST" as const, headers, body };
      await load({ ...options, duration: 1, connections });
      return { backend: "-", operation, ...(await load({ ...options, duration, connections })) };
    };
    return {
      small: await run("/v1/bare", "bare Express 5: JSON in, small JSON out"),
      large: await run("/v1/bare-large", `bare Express 5: JSON in, getQueue's ${Math.round(queueBody.length / 1024)} KiB answer out`),
    };
  } finally {
    await bare.stop();
    rmSync(dirname(file), { recursive: true, force: true });
  }
}

const rows: Row[] = [];
const dir = mkdtempSync(join(tmpdir(), "greenline-bench-"));
let sqlite: { rows: Row[]; queueBody: string };
try {
  sqlite = await measureBackend("sqlite", `file:${join(dir, "bench.db")}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const bareBefore = await measureBare(sqlite.queueBody);
rows.push(bareBefore.small, bareBefore.large, ...sqlite.rows);
if (await postgresReachable(POSTGRES_ADMIN)) {
  const name = `greenline_bench_${process.pid}`;
  await withAdmin(POSTGRES_ADMIN, (c) => c.query(`CREATE DATABASE "${name}"`));
  try {
    const url = new URL(POSTGRES_ADMIN);
    url.pathname = `/${name}`;
    rows.push(...(await measureBackend("postgres", url.toString())).rows);
  } finally {
    await withAdmin(POSTGRES_ADMIN, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  }
} else {
  console.warn(`PostgreSQL not reachable at ${POSTGRES_ADMIN}: PostgreSQL rows skipped`);
}
// The baselines again at the end: the machine is noisy, so ratios use the mean of both runs.
const bareAfter = await measureBare(sqlite.queueBody);
const smallBaseline = (bareBefore.small.requestsPerSecond + bareAfter.small.requestsPerSecond) / 2;
const largeBaseline = (bareBefore.large.requestsPerSecond + bareAfter.large.requestsPerSecond) / 2;
const baselineOf = (r: Row) => (r.operation.startsWith("getQueue") || r.operation.includes("answer out") ? largeBaseline : smallBaseline);
const ratioOf = (r: Row) => r.requestsPerSecond / baselineOf(r);

console.log(`\nbench:api — ${machine()}; ${connections} connections, ${duration} s per operation`);
console.log(
  `bare Express, small answer: ${bareBefore.small.requestsPerSecond.toFixed(0)} req/s before, ${bareAfter.small.requestsPerSecond.toFixed(0)} after; ` +
    `getQueue-sized answer: ${bareBefore.large.requestsPerSecond.toFixed(0)} before, ${bareAfter.large.requestsPerSecond.toFixed(0)} after\n`,
);
console.log("| backend | operation | req/s | p50 ms | p99 ms | vs bare Express (same answer size) | errors / non-2xx |");
console.log("|---|---|---:|---:|---:|---:|---:|");
for (const r of rows) {
  console.log(`| ${r.backend} | ${r.operation} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50} | ${r.p99} | ${(100 * ratioOf(r)).toFixed(1)}% | ${r.errors} / ${r.non2xx} |`);
}
const failures = rows.filter((r) => r.errors > 0 || r.non2xx > 0);
console.log(JSON.stringify({ smallBaseline: Math.round(smallBaseline), largeBaseline: Math.round(largeBaseline), rows: rows.map((r) => ({ ...r, ratio: ratioOf(r) })) }));
if (failures.length > 0) {
  console.error(`errors or non-2xx answers in: ${failures.map((f) => `${f.backend} ${f.operation}`).join(", ")}`);
  process.exit(1);
}
