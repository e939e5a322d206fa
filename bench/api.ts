// npm run bench:api [-- --duration <s>] [--connections <n>] [--quick] [--backend sqlite|postgres]
//
// The API under load, on SQLite and on PostgreSQL, side by side with bare Express 5 handlers
// measured in the same run. Reads: getQueue with 1,000 PRs enqueued, getSubmittedPullRequest,
// and getSubmittedPullRequest with includeTimeline on a PR whose timeline holds 200 events (the
// most kept), alone and then (getQueue, getSubmittedPullRequest) while one client submits new
// PRs to the same queue without pause; against a bare handler answering as many bytes.
// Writes, to the queue holding 1,000 PRs: submitPullRequest (a new PR each request),
// setImpactedTargets (on those PRs), cancelPullRequest (of those PRs); against a bare handler
// running one INSERT in a transaction on the same driver and durability settings (SQLite:
// better-sqlite3, WAL, synchronous FULL; PostgreSQL: a pg pool), measured before and after them.
// The service runs in its own process, as `npm start` runs it; autocannon drives it over HTTP at
// 10 connections. GREENLINE_BENCH_SERVER_NODE_ARGS passes Node options to the service (e.g.
// "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile it).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type autocannon from "autocannon";
import { SandboxCodeHost } from "../src/adapters/sandbox/code-host.js";
import { Database } from "../src/store/database.js";
import { freePort, load, machine, postgresReachable, startProcess, withAdmin, type LoadResult } from "./support.js";

const { values } = parseArgs({
  options: { backend: { type: "string" }, duration: { type: "string", default: "10" }, connections: { type: "string", default: "10" }, quick: { type: "boolean", default: false } },
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
/** The write cases' PRs: numbers from here on (the "main" queue holds 1 to 1,000). */
const FRESH_PR = 100_000;
const FRESH_PRS = Number(process.env.GREENLINE_BENCH_FRESH_PRS ?? 6000);
/** Node options for the service under test (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile it). */
const serverExecArgv = process.env.GREENLINE_BENCH_SERVER_NODE_ARGS?.split(" ").filter((a) => a !== "") ?? [];

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

/**
 * The PRs the write cases submit, made on the sandbox code host before the run (as PRs exist
 * on GitHub before anyone submits them): numbers no other queue of the bench uses, so none of
 * them is merged under the bench, and each submit is a new PR in the 1,000-PR queue.
 */
async function makeSandboxPrs(databaseUrl: string, from: number, count: number): Promise<Map<number, string>> {
  const db = await Database.open(databaseUrl);
  try {
    const sandbox = new SandboxCodeHost(db, { ciMs: 5000, failureRate: 0, flakeRate: 0, random: Math.random, now: () => new Date() });
    const shas = new Map<number, string>();
    let next = from;
    const worker = async () => {
      while (next < from + count) {
        const number = next++;
        shas.set(number, (await sandbox.getPullRequest(repo, number, { targetBranch: "main", directMerge: false })).headSha);
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    return shas;
  } finally {
    await db.close();
  }
}

/** The bare insert-transaction baseline on the backend's driver and settings, in a database of its own. */
async function measureBareInsert(backend: string, env: Record<string, string>): Promise<Row> {
  const port = await freePort();
  const bare = await startProcess(bareScript, { PORT: String(port), ...env });
  try {
    const options = { url: `http://127.0.0.1:${port}/v1/bare-insert`, method: "POST" as const, headers, body: JSON.stringify({ repo, targetBranch: "main", pr: { number: 500 } }) };
    await load({ ...options, duration: 1, connections });
    return { backend, operation: "bare Express 5: one INSERT in a transaction", ...(await load({ ...options, duration, connections })) };
  } finally {
    await bare.stop();
  }
}

/** Reads at `connections` while one client submits new PRs to the same queue without pause. */
async function readUnderWrites(base: string, read: autocannon.Options, nextSubmit: () => string): Promise<{ read: LoadResult; writer: LoadResult }> {
  const writerOptions = { url: `${base}/v1/submitPullRequest`, method: "POST" as const, headers, requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, body: nextSubmit() }) }] };
  const [reads, writes] = await Promise.all([load({ ...read, duration, connections }), load({ ...writerOptions, duration: duration + 1, connections: 1 })]);
  return { read: reads, writer: writes };
}

async function measureBackend(backend: string, databaseUrl: string, bareInsertEnv: Record<string, string>): Promise<{ rows: Row[]; queueBody: string }> {
  // Before the service starts: on SQLite a second writing process would meet its lock.
  const started = Date.now();
  const shas = await makeSandboxPrs(databaseUrl, FRESH_PR, FRESH_PRS);
  console.warn(`${backend}: ${FRESH_PRS} sandbox PRs made in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await startProcess(
    mainScript,
    { PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: databaseUrl, GREENLINE_API_TOKEN: TOKEN, GREENLINE_ORG: "bench", LOG_LEVEL: "warn" },
    `${base}/healthz`,
    serverExecArgv,
  );
  try {
    await seed(base, 1000);
    await seedTimeline(base);
    const queueBody = await (await fetch(`${base}/v1/getQueue`, { method: "POST", headers, body: JSON.stringify({ repo, targetBranch: "main" }) })).text();
    const rows: Row[] = [];
    const run = async (operation: string, options: Parameters<typeof load>[0], warm = true) => {
      if (warm) await load({ ...options, duration: 1, connections }); // warm-up
      const result = { backend, operation, ...(await load({ ...options, duration, connections })) };
      rows.push(result);
      return result;
    };
    const getQueue = { url: `${base}/v1/getQueue`, method: "POST" as const, headers, body: JSON.stringify({ repo, targetBranch: "main" }) };
    const getPr = { url: `${base}/v1/getSubmittedPullRequest`, method: "POST" as const, headers, body: JSON.stringify({ repo, targetBranch: "main", pr: { number: 500 } }) };
    await run("getQueue (1,000 PRs)", getQueue);
    await run("getSubmittedPullRequest", getPr);
    const timeline = { repo, targetBranch: "timeline", pr: { number: TIMELINE_PR } };
    await run("getSubmittedPullRequest (same PR, no timeline)", { url: `${base}/v1/getSubmittedPullRequest`, method: "POST", headers, body: JSON.stringify(timeline) });
    await run("getSubmittedPullRequest includeTimeline (200 events)", { url: `${base}/v1/getSubmittedPullRequest`, method: "POST", headers, body: JSON.stringify({ ...timeline, includeTimeline: true }) });

    // Writes to the queue holding 1,000 PRs: new PRs submitted, their impacted targets set, then cancelled.
    const bareBefore = await measureBareInsert(backend, bareInsertEnv);
    let number = FRESH_PR;
    let unmade = 0;
    const submitted: number[] = [];
    const submitBody = () => {
      const n = number++;
      // Past the PRs made beforehand, the sandbox makes the PR in the request (a write of its own): counted and told.
      if (n >= FRESH_PR + FRESH_PRS) unmade++;
      submitted.push(n);
      return JSON.stringify({ repo, targetBranch: "main", pr: { number: n } });
    };
    const submit = { url: `${base}/v1/submitPullRequest`, method: "POST" as const, headers, requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, body: submitBody() }) }] };
    await run("submitPullRequest (new PR)", submit);
    let target = 0;
    const targetsBody = () => {
      const n = submitted[target++ % submitted.length]!;
      return JSON.stringify({ repo, targetBranch: "main", pr: { number: n, sha: shas.get(n) }, impactedTargets: [`//pkg/t${target}`, `//pkg/u${target % 7}`] });
    };
    await run("setImpactedTargets", { url: `${base}/v1/setImpactedTargets`, method: "POST", headers, requests: [{ setupRequest: (req) => ({ ...req, body: targetsBody() }) }] });
    let cancelled = 0;
    const cancelBody = () => {
      // Each request cancels a PR still queued; past the last one submitted, it asks for the first again (an idempotent 200).
      const n = submitted[cancelled++ % submitted.length]!;
      return JSON.stringify({ repo, targetBranch: "main", pr: { number: n } });
    };
    const cancel = await run("cancelPullRequest", { url: `${base}/v1/cancelPullRequest`, method: "POST", headers, requests: [{ setupRequest: (req) => ({ ...req, body: cancelBody() }) }] });
    if (cancelled > submitted.length) console.warn(`${backend}: ${cancelled - submitted.length} of ${cancel.total} cancels asked for a PR already cancelled`);
    const bareAfter = await measureBareInsert(backend, bareInsertEnv);
    const bareInsert = { ...bareBefore, operation: "bare Express 5: one INSERT in a transaction (mean of before and after the writes)" };
    for (const key of ["requestsPerSecond", "p50", "p99"] as const) bareInsert[key] = (bareBefore[key] + bareAfter[key]) / 2;
    rows.push(bareInsert);

    // Reads while one client submits beside them without pause (every submit changes the queue).
    for (const [operation, options] of [
      ["getQueue (1,000 PRs) under a writer", getQueue],
      ["getSubmittedPullRequest under a writer", getPr],
    ] as const) {
      const { read, writer } = await readUnderWrites(base, options, submitBody);
      rows.push({ backend, operation, ...read });
      rows.push({ backend, operation: `(the writer beside it: submitPullRequest, 1 connection)`, ...writer });
    }
    if (unmade > 0) console.warn(`${backend}: ${unmade} submits asked for a PR the sandbox had not made beforehand (raise GREENLINE_BENCH_FRESH_PRS)`);
    return { rows, queueBody };
  } finally {
    await server.stop();
  }
}

/** The bare Express baselines of the reads: a small JSON answer, and getQueue's 1,000-PR answer as a ready string. */
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
let queueBody: string | null = null;
let bareBeforeMaybe: { small: Row; large: Row } | null = null;
if (values.backend !== "postgres") {
  try {
    const sqlite = await measureBackend("sqlite", `file:${join(dir, "bench.db")}`, { BARE_SQLITE_FILE: join(dir, "bare.db") });
    queueBody = sqlite.queueBody;
    bareBeforeMaybe = await measureBare(queueBody);
    rows.push(...sqlite.rows);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
if (values.backend === "sqlite") {
  // PostgreSQL not asked for.
} else if (await postgresReachable(POSTGRES_ADMIN)) {
  const name = `greenline_bench_${process.pid}`;
  const bareName = `greenline_bare_${process.pid}`;
  await withAdmin(POSTGRES_ADMIN, async (c) => {
    await c.query(`CREATE DATABASE "${name}"`);
    await c.query(`CREATE DATABASE "${bareName}"`);
  });
  try {
    const url = new URL(POSTGRES_ADMIN);
    url.pathname = `/${name}`;
    const bareUrl = new URL(POSTGRES_ADMIN);
    bareUrl.pathname = `/${bareName}`;
    const postgres = await measureBackend("postgres", url.toString(), { BARE_POSTGRES_URL: bareUrl.toString() });
    queueBody ??= postgres.queueBody;
    rows.push(...postgres.rows);
  } finally {
    await withAdmin(POSTGRES_ADMIN, async (c) => {
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.query(`DROP DATABASE IF EXISTS "${bareName}" WITH (FORCE)`);
    });
  }
} else {
  console.warn(`PostgreSQL not reachable at ${POSTGRES_ADMIN}: PostgreSQL rows skipped`);
}
// The baselines again at the end: the machine is noisy, so ratios use the mean of both runs.
if (queueBody === null) throw new Error("no backend measured");
const bareBefore = bareBeforeMaybe ?? (await measureBare(queueBody));
const bareAfter = await measureBare(queueBody);
rows.unshift(bareBefore.small, bareBefore.large);
const smallBaseline = (bareBefore.small.requestsPerSecond + bareAfter.small.requestsPerSecond) / 2;
const largeBaseline = (bareBefore.large.requestsPerSecond + bareAfter.large.requestsPerSecond) / 2;
const WRITES = ["submitPullRequest (new PR)", "setImpactedTargets", "cancelPullRequest"];
const insertBaseline = (backend: string) => rows.find((r) => r.backend === backend && r.operation.startsWith("bare Express 5: one INSERT"))?.requestsPerSecond ?? Number.NaN;
/** Writes against the bare insert transaction on their backend; reads against bare Express with an answer of their size. */
const baselineOf = (r: Row) =>
  WRITES.includes(r.operation) || r.operation.startsWith("bare Express 5: one INSERT")
    ? insertBaseline(r.backend)
    : r.operation.startsWith("getQueue") || r.operation.includes("answer out")
      ? largeBaseline
      : smallBaseline;
const ratioOf = (r: Row) => r.requestsPerSecond / baselineOf(r);
const judged = (r: Row) => !r.operation.startsWith("(the writer");

console.log(
  `\nbench:api — ${machine()}; ${connections} connections, ${duration} s per operation; load average at the end ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.log(
  `bare Express, small answer: ${bareBefore.small.requestsPerSecond.toFixed(0)} req/s before, ${bareAfter.small.requestsPerSecond.toFixed(0)} after; ` +
    `getQueue-sized answer: ${bareBefore.large.requestsPerSecond.toFixed(0)} before, ${bareAfter.large.requestsPerSecond.toFixed(0)} after\n`,
);
console.log("| backend | operation | req/s | p50 ms | p99 ms | vs its baseline | errors / non-2xx |");
console.log("|---|---|---:|---:|---:|---:|---:|");
for (const r of rows) {
  console.log(`| ${r.backend} | ${r.operation} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50} | ${r.p99} | ${judged(r) ? `${(100 * ratioOf(r)).toFixed(1)}%` : "-"} | ${r.errors} / ${r.non2xx} |`);
}
const failures = rows.filter((r) => r.errors > 0 || r.non2xx > 0);
console.log(JSON.stringify({ smallBaseline: Math.round(smallBaseline), largeBaseline: Math.round(largeBaseline), rows: rows.map((r) => ({ ...r, ratio: judged(r) ? ratioOf(r) : null })) }));
if (failures.length > 0) {
  console.error(`errors or non-2xx answers in: ${failures.map((f) => `${f.backend} ${f.operation}`).join(", ")}`);
  process.exit(1);
}
