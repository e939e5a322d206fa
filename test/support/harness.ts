import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { createToken, registerToken } from "../../src/auth/tokens.js";
import type { CodeHost } from "../../src/ports/code-host.js";
import { DEFAULT_WEBHOOK_SETTINGS, type Config, type WebhookSettings } from "../../src/config.js";
import { createLogger } from "../../src/log.js";
import { startGreenline, type Greenline, type StartOptions } from "../../src/server.js";
import { checkAnswer } from "./answers.js";
import { DEFAULT_POSTGRES_TIMEOUTS } from "../../src/store/database.js";
import type { Backend } from "./backends.js";

export type ApiResponse<T = any> = { status: number; body: T; headers: Headers; text: string };

/** A client of the /v1 API holding one organization's token. Every answer is checked against the documented schemas (answers.ts). */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly token: string,
  ) {}

  async call<T = any>(operation: string, body: unknown, init: { headers?: Record<string, string>; method?: string } = {}): Promise<ApiResponse<T>> {
    const method = init.method ?? "POST";
    const response = await fetch(`${this.baseUrl}/v1/${operation}`, {
      method,
      headers: { "content-type": "application/json", "x-api-token": this.token, ...init.headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: any = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON (metrics)
    }
    checkAnswer(operation, method, response.status, response.headers.get("content-type"), parsed);
    return { status: response.status, body: parsed, headers: response.headers, text };
  }

  /** Calls and expects 200, failing with the server's error otherwise. */
  async ok<T = any>(operation: string, body: unknown): Promise<T> {
    const response = await this.call<T>(operation, body);
    if (response.status !== 200) throw new Error(`${operation} answered ${response.status}: ${response.text}`);
    return response.body;
  }

  async get(path: string): Promise<ApiResponse<string>> {
    const response = await fetch(`${this.baseUrl}/v1/${path}`, { headers: { "x-api-token": this.token } });
    const text = await response.text();
    const contentType = response.headers.get("content-type");
    const isJson = !response.ok || contentType?.startsWith("application/json");
    checkAnswer(path, "GET", response.status, contentType, isJson ? JSON.parse(text) : text);
    return { status: response.status, body: text, headers: response.headers, text };
  }
}

export type TestServer = {
  greenline: Greenline;
  url: string;
  databaseUrl: string;
  /** The bootstrap organization's client (org "acme"). */
  api: ApiClient;
  logs: string[];
  /** The sandbox's simulated CI time (GREENLINE_SANDBOX_CI_MS): a test clock moved on by it lets a run finish. */
  sandboxCiMs: number;
  /** A client for another organization, created on demand. */
  clientFor(org: string): Promise<ApiClient>;
  close(): Promise<void>;
};

export type TestServerOptions = {
  codeHost?: CodeHost;
  now?: () => Date;
  githubApp?: Config["githubApp"];
  sandbox?: Partial<Config["sandbox"]>;
  random?: () => number;
  /** Let the worker run on its own timer (default: tests drive it with worker.tick/drain). */
  startWorker?: boolean;
  httpTimeouts?: StartOptions["httpTimeouts"];
  /** Outbound webhooks' settings over the defaults (tests allow 127.0.0.1 receivers, fast retries). */
  webhooks?: Partial<WebhookSettings>;
  /** GREENLINE_PUBLIC_URL (the PR's status and comment then link to its dashboard page). */
  publicUrl?: string;
  /** GREENLINE_MAX_IN_FLIGHT: requests served at once. */
  maxInFlight?: number;
  /** GREENLINE_DB_WAIT_MS: a request's wait for the database (a connection, the writer, a row lock) before 503. */
  databaseWaitMs?: number;
  /** How often the dashboard's live stream beats and re-checks each stream's session (default 20 s). */
  liveHeartbeatMs?: number;
  /** Another server's database (a second replica on it; this server leaves it in place when closed). */
  sharedDatabaseOf?: TestServer;
  /** A SQLite file of the test's own (a restored backup), left in place when the server closes. */
  databaseFile?: string;
};

/** Starts the real service (HTTP server, database, Probot) on a fresh database of `backend`. */
export async function startTestServer(backend: Backend, options: TestServerOptions = {}): Promise<TestServer> {
  const shared = options.sharedDatabaseOf;
  const database = shared ? { url: shared.databaseUrl, drop: async () => {} } : options.databaseFile ? { url: `file:${options.databaseFile}`, drop: async () => {} } : await backend.createDatabase();
  const token = `test-token-${randomUUID()}`;
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      logs.push(String(chunk));
      callback();
    },
  });
  const config: Config = {
    port: 0,
    host: "127.0.0.1",
    databaseUrl: database.url,
    logLevel: "info",
    githubApp: options.githubApp ?? null,
    bootstrap: { token, org: "acme" },
    operatorOrg: "acme",
    sandbox: { ciMs: 60_000, failureRate: 0, flakeRate: 0, ...options.sandbox },
    workerIntervalMs: 20,
    postgresTimeouts: DEFAULT_POSTGRES_TIMEOUTS,
    shutdownTimeoutMs: 10_000,
    webhooks: { ...DEFAULT_WEBHOOK_SETTINGS, ...options.webhooks },
    ...(options.publicUrl ? { publicUrl: options.publicUrl } : {}),
    ...(options.databaseWaitMs ? { databaseWaitMs: options.databaseWaitMs } : {}),
  };
  const greenline = await startGreenline(config, {
    log: createLogger("info", sink),
    codeHost: options.codeHost,
    now: options.now,
    random: options.random,
    startWorker: options.startWorker ?? false,
    httpTimeouts: options.httpTimeouts,
    maxInFlight: options.maxInFlight,
    liveHeartbeatMs: options.liveHeartbeatMs,
  });
  return {
    greenline,
    url: greenline.url,
    databaseUrl: database.url,
    api: new ApiClient(greenline.url, token),
    logs,
    sandboxCiMs: config.sandbox.ciMs,
    async clientFor(org: string) {
      const { token: other } = await createToken(greenline.services.db, org, "test");
      return new ApiClient(greenline.url, other);
    },
    async close() {
      await greenline.close();
      await database.drop();
    },
  };
}

export { registerToken };

export const repo = (name = "web", owner = "acme") => ({ host: "github.com", owner, name });
export const queueOf = (name = "web", targetBranch = "main", owner = "acme") => ({ repo: repo(name, owner), targetBranch });
export const prOf = (number: number, name = "web", targetBranch = "main") => ({ ...queueOf(name, targetBranch), pr: { number } });

/**
 * Lets the sandbox's simulated CI finish and the worker act on everything due: the worker
 * drains (runs start), `clock` moves on by the sandbox's CI time, the worker drains again
 * (results applied, merges done).
 */
export async function ciFinishes(server: TestServer, clock: TestClock): Promise<void> {
  await server.greenline.worker.drain();
  clock.advance(server.sandboxCiMs);
  await server.greenline.worker.drain();
}

/** A clock tests move by hand. */
export class TestClock {
  constructor(public ms = Date.parse("2026-11-22T09:00:00Z")) {}
  now = () => new Date(this.ms);
  advance(ms: number): void {
    this.ms += ms;
  }
}
