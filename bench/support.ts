import { fork, type ChildProcess } from "node:child_process";
import { cpus } from "node:os";
import autocannon from "autocannon";
import pg from "pg";

import { DEFAULT_POSTGRES_TIMEOUTS, DEFAULT_WEBHOOK_SETTINGS, type Config } from "../src/config.js";

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
