import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import pg from "pg";

import { DEFAULT_POSTGRES_TIMEOUTS, DEFAULT_WEBHOOK_SETTINGS, loadConfig, type Config } from "../src/config.js";
import { createLogger } from "../src/log.js";

export { findFreePort as freePort } from "../src/net.js";

/**
 * The Config of an in-process Greenline for a benchmark: on the sandbox (no GitHub App), on
 * 127.0.0.1 at a free port, logging warnings only, with the default timeouts and webhook
 * settings; `overrides` replace whole fields (e.g. `sandbox`, `shutdownTimeoutMs`).
 */
export function benchConfig(databaseUrl: string, bootstrap: Config["bootstrap"], overrides: Partial<Config> = {}): Config {
  return {
    port: 0,
    host: "127.0.0.1",
    databaseUrl,
    logLevel: "warn",
    githubApp: null,
    bootstrap,
    sandbox: { ciMs: 1000, failureRate: 0, flakeRate: 0 },
    workerIntervalMs: 250,
    postgresTimeouts: DEFAULT_POSTGRES_TIMEOUTS,
    shutdownTimeoutMs: 10_000,
    webhooks: DEFAULT_WEBHOOK_SETTINGS,
    ...overrides,
  };
}

/**
 * A fresh, empty database for a benchmark: a SQLite file in a temporary directory, or a new
 * PostgreSQL database on `admin`'s server; `drop` removes it.
 */
export async function freshDatabase(backend: "sqlite" | "postgres", admin: string, prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  if (backend === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
    return { url: `file:${join(dir, "greenline.db")}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `${prefix.replace(/-/g, "_")}_${process.pid}_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  await withAdmin(admin, (c) => c.query(`CREATE DATABASE "${name}"`));
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => withAdmin(admin, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined) };
}

export async function waitFor(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

/** Starts a Node script in its own process (the server under test never shares a CPU with the load generator's event loop). */
export async function startProcess(script: string, env: Record<string, string>, healthUrl?: string, execArgv: string[] = [], showOutput = false): Promise<{ child: ChildProcess; stop(): Promise<void> }> {
  const child = fork(script, [], { env: { ...process.env, ...env }, execArgv, stdio: ["ignore", showOutput ? "inherit" : "ignore", "inherit", "ipc"] });
  if (healthUrl) await waitFor(healthUrl);
  else
    await new Promise<void>((resolve, reject) => {
      child.once("message", () => resolve());
      child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)));
    });
  return {
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

export type LoadResult = { requestsPerSecond: number; p50: number; p99: number; errors: number; non2xx: number; total: number };

export async function load(options: autocannon.Options): Promise<LoadResult> {
  const result = await autocannon({ connections: 10, duration: 10, ...options });
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    total: result.requests.total,
  };
}

export async function postgresReachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function withAdmin<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export function machine(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model ?? "unknown CPU"}, Node ${process.version}`;
}

/**
 * A Greenline in this process with its worker stopped (only a request's own work happens), on a
 * fresh SQLite file or PostgreSQL database, and a queue holding `prs` PRs (numbers 1…prs) with
 * `fresh` more made on the sandbox but not submitted (numbers from 100,000, with their heads):
 * the writes a benchmark times. `close` stops it and drops the database.
 */
export async function queueInProcess(options: { backend: "sqlite" | "postgres"; prs: number; fresh: number; paused: boolean; concurrency?: number; admin?: string }) {
  // Loaded here: the benchmarks that run the service in a process of its own never load it.
  const { startGreenline } = await import("../src/server.js");
  const admin = options.admin ?? process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
  const token = "bench-token-0123456789abcdef";
  if (options.backend === "postgres" && !(await postgresReachable(admin))) throw new Error(`PostgreSQL not reachable at ${admin}`);
  const { url: databaseUrl, drop } = await freshDatabase(options.backend, admin, "greenline-in-process");
  const config = loadConfig({ DATABASE_URL: databaseUrl, GREENLINE_API_TOKEN: token, GREENLINE_ORG: "bench", PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn" }, () => "");
  const greenline = await startGreenline(config, { log: createLogger("warn"), startWorker: false });
  const close = async () => {
    await greenline.close();
    await drop();
  };
  try {
    const call = async (op: string, body: unknown) => {
      const response = await fetch(`${greenline.url}/v1/${op}`, { method: "POST", headers: { "content-type": "application/json", "x-api-token": token }, body: JSON.stringify(body) });
      if (!response.ok) throw new Error(`${op}: ${response.status} ${await response.text()}`);
      return response.text();
    };
    const repo = { host: "github.com", owner: "bench", name: "web" };
    const queue = { repo, targetBranch: "main" };
    await call("createQueue", { ...queue, ...(options.paused ? { state: "paused" } : {}), ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}) });
    for (let n = 1; n <= options.prs; n++) await call("submitPullRequest", { ...queue, pr: { number: n } });
    // The PRs the writes submit exist on the sandbox already (GitHub's PRs exist before they are submitted).
    const fresh = Array.from({ length: options.fresh }, (_, i) => 100_000 + i);
    const shas = new Map<number, string>();
    for (const n of fresh) shas.set(n, (await greenline.sandbox!.getPullRequest(repo, n, { targetBranch: "main", directMerge: false })).headSha);
    return { greenline, call, queue, fresh, shas, close };
  } catch (error) {
    await close();
    throw error;
  }
}
