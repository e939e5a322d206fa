import { randomBytes } from "node:crypto";
import type { Server as HttpServer, IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Probot, ProbotOctokit, Server } from "probot";
import type { EmitterWebhookEvent } from "@octokit/webhooks";
import { createApiApp } from "./api/app.js";
import { ServiceMetrics } from "./app/service-metrics.js";
import { RETRY_AFTER_SECONDS } from "./api/errors.js";
import { ReadCache } from "./app/read-cache.js";
import type { Services } from "./app/services.js";
import { registerToken, TokenOfAnotherOrganization } from "./auth/tokens.js";
import type { CodeHost } from "./ports/code-host.js";
import { SandboxCodeHost } from "./adapters/sandbox/code-host.js";
import { ConfigError, type Config } from "./config.js";
import { createGitHubApp, recordGitHubDelivery } from "./webhooks/github.js";
import type { DeliveryHandler } from "./webhooks/services/inbox.js";
import { GitHubCodeHost } from "./adapters/github/code-host.js";
import { WRITE_SPACING_MS } from "./adapters/github/write-order.js";
import { bundleUrls } from "./flaky/bundle-uploads.js";
import { webhookRoute } from "./webhooks/webhook-route.js";
import { createWebApp, isDashboardRequest } from "./web/app.js";
import type { Logger } from "./log.js";
import { answerParseErrors, findFreePort } from "./net.js";
import { Database } from "./store/database.js";
import { Worker } from "./worker/worker.js";
import { orderedId } from "./store/ids.js";
import { dataDirectory, persistedSessionSecret } from "./session-secret.js";

export type Greenline = {
  url: string;
  services: Services;
  worker: Worker;
  /** The sandbox code host, when no GitHub App is configured. */
  sandbox: SandboxCodeHost | null;
  /**
   * Stops taking work, lets work in flight finish within the shutdown timeout, then closes
   * the database. Rejects when the timeout passed first (the caller should exit then).
   */
  close(): Promise<void>;
};

export type StartOptions = {
  log: Logger;
  /** Replaces the code host chosen from the configuration (tests). */
  codeHost?: CodeHost;
  now?: () => Date;
  /** Source of randomness for the sandbox's flaky CI. */
  random?: () => number;
  /** false: the worker does not run on its own; tests call worker.tick()/drain(). */
  startWorker?: boolean;
  /** Replaces some of HTTP_TIMEOUTS (tests). */
  httpTimeouts?: Partial<HttpTimeouts>;
  /** How often the dashboard's live stream looks for changed queues (default 200 ms). */
  liveIntervalMs?: number;
  /** How often the live stream sends a heartbeat and re-checks each stream's session (default 20 s; tests). */
  liveHeartbeatMs?: number;
  /** Replaces the configured limit of requests served at once (tests). */
  maxInFlight?: number;
};

/** Requests served at once by default (GREENLINE_MAX_IN_FLIGHT); more answer 503 with Retry-After. */
export const DEFAULT_MAX_IN_FLIGHT = 64;

export type HttpTimeouts = {
  /** To receive a request's headers. */
  headersMs: number;
  /** To receive a whole request, body included. */
  requestMs: number;
  /** A kept-alive connection waits this long for its next request. */
  keepAliveMs: number;
  /** A connection that neither sends nor receives a byte for this long is closed. */
  idleMs: number;
};

/**
 * How long a connection may hold the server. A 20 MiB upload must arrive within the request
 * timeout, at 23 KB/s or more; the idle timeout cuts only a connection that stalls, however
 * slowly it sends (docs/decisions.md).
 */
// keepAliveMs outlasts every client's own idle limit (undici's ~4 s, load balancers' 60 s), so the
// client, not the server, closes an idle kept-alive connection: a server closing it first races the
// client's next request on it (ECONNRESET). The idle timeout still closes it after 60 s.
export const HTTP_TIMEOUTS: HttpTimeouts = { headersMs: 30_000, requestMs: 15 * 60_000, keepAliveMs: 65_000, idleMs: 60_000 };

/**
 * Admission control: at most `limit` requests are served at once; one more is answered at once
 * with 503 and Retry-After (before its body is read, so it costs nearly nothing), and its
 * connection stays open for the client's retry. Without it a burst queued requests behind the
 * database until clients gave up and dropped their connections (issue 22). /healthz and
 * /readyz are always served, outside Probot's request log (an orchestrator must not restart a
 * busy replica, and its probes every few seconds would bury the log), and so are the dashboard's
 * live streams, which stay open for as long as a page does and do no work while idle.
 */
function admitRequests(http: HttpServer, limit: number, probes: (req: IncomingMessage, res: ServerResponse) => void, refused: () => void = () => {}): void {
  const handlers = http.listeners("request") as ((req: IncomingMessage, res: ServerResponse) => void)[];
  http.removeAllListeners("request");
  let inFlight = 0;
  http.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0];
    // Health probes (every few seconds from an orchestrator) are answered straight by the API, not
    // through Probot's request log: the log keeps the requests people make.
    if ((path === "/healthz" || path === "/readyz") && (req.method === "GET" || req.method === "HEAD")) {
      probes(req, res);
      return;
    }
    const exempt = (req.headers.accept ?? "").includes("text/event-stream");
    if (!exempt) {
      if (inFlight >= limit) {
        const body = JSON.stringify({ error: { code: "unavailable", message: `the service is saturated (${limit} requests in flight); retry after ${RETRY_AFTER_SECONDS} s`, details: [] } });
        res.writeHead(503, { "content-type": "application/json; charset=utf-8", "retry-after": String(RETRY_AFTER_SECONDS), "content-length": Buffer.byteLength(body) });
        res.end(body);
        refused();
        return;
      }
      inFlight++;
      res.once("close", () => inFlight--);
    }
    for (const handler of handlers) handler.call(http, req, res);
  });
}

function limitConnections(http: HttpServer, timeouts: HttpTimeouts): void {
  http.headersTimeout = timeouts.headersMs;
  http.requestTimeout = timeouts.requestMs;
  http.keepAliveTimeout = timeouts.keepAliveMs;
  // Node checks the two above only every 30 seconds; the idle timeout is each socket's own timer.
  http.timeout = timeouts.idleMs;
}

type OctokitOptions = { throttle?: object; retry?: object };

/**
 * Statuses the HTTP layer never asks again for: every 4xx is an answer (a refusal, a missing
 * permission, a rate limit), classified once (src/adapters/github/refusals.ts) and retried, if
 * at all, by the effect scheduler with backoff, not by sleeping inside a request.
 */
export const HTTP_DO_NOT_RETRY = [400, 401, 403, 404, 405, 409, 410, 422, 429, 451];

/**
 * How Greenline's Octokit retries: a 5xx or a network failure once, after half a second (the
 * effect scheduler backs off beyond that); a refusal never. Rate limits are not waited out
 * inside a request either (onRateLimit answers false): the refusal reaches the scheduler,
 * which honours `retry-after` and `x-ratelimit-reset`.
 */
function githubRequestPolicy(options: OctokitOptions, throttle: boolean): OctokitOptions {
  return {
    ...options,
    retry: { ...options.retry, doNotRetry: HTTP_DO_NOT_RETRY, retries: 1, retryAfterBaseValue: 500 },
    throttle: { ...options.throttle, ...(throttle ? {} : { enabled: false }), onRateLimit: () => false, onSecondaryRateLimit: () => false },
  };
}

/**
 * Starts Greenline: opens and migrates the database, registers the bootstrap token, and serves
 * Probot's webhook route, /healthz, /v1 and the web dashboard on one port.
 */
export async function startGreenline(config: Config, options: StartOptions): Promise<Greenline> {
  const { log } = options;
  const db = await Database.open(config.databaseUrl, { postgresTimeouts: config.postgresTimeouts, waitMs: config.databaseWaitMs });
  try {
    // Advice only: a server that cannot say (a PostgreSQL-compatible one without the setting) starts all the same.
    const warnings = await db.serverWarnings().catch((error: unknown) => {
      log.warn({ err: error }, "could not read the database server's settings");
      return [];
    });
    for (const warning of warnings) log.warn(warning);
    if (db.migrated && db.migrated.applied.length > 0) log.info({ migrations: db.migrated.applied }, "applied database migrations");
    // Normal while a rolling upgrade is under way (or after a rollback): finish rolling the replicas.
    if (db.migrated && db.migrated.newer.length > 0) {
      log.warn(
        { migrations: db.migrated.newer },
        "the database has migrations this version does not know: a newer release migrated it; running on it, as a release's migrations keep the release before it working (docs/operations.md, Upgrades)",
      );
    }
    if (config.bootstrap) {
      const { org, token } = config.bootstrap;
      const { created } = await registerToken(db, org, token, "bootstrap (GREENLINE_API_TOKEN)").catch((error: unknown) => {
        // The variables are right one by one; together they name another organization's token.
        if (error instanceof TokenOfAnotherOrganization) {
          throw new ConfigError([
            `GREENLINE_API_TOKEN is already the API token of organization "${error.owner}", not of GREENLINE_ORG ("${org}"): set GREENLINE_API_TOKEN to a new secret for "${org}" (e.g. openssl rand -hex 32), or GREENLINE_ORG to "${error.owner}"`,
          ]);
        }
        throw error;
      });
      log.info({ org, created }, "bootstrap API token registered");
    }
    // Sandbox: Probot still serves its webhook route, but with a random secret nothing can sign with.
    const webhookSecret = config.githubApp?.webhookSecret ?? randomBytes(32).toString("hex");
    const ProbotWithConfig = config.githubApp
      ? Probot.defaults({
          appId: config.githubApp.appId,
          privateKey: config.githubApp.privateKey,
          secret: webhookSecret,
          baseUrl: config.githubApp.apiUrl,
          log,
          Octokit: ProbotOctokit.defaults((options: OctokitOptions) => githubRequestPolicy(options, config.githubApp?.throttle !== false)),
        })
      : Probot.defaults({ githubToken: "sandbox", secret: webhookSecret, log });
    // Probot's Server serves this middleware first: ours bounds the webhook body and verifies it
    // as it arrives, where Probot's reads any body whole before looking at it.
    class BoundedProbot extends ProbotWithConfig {
      override async getNodeMiddleware() {
        // Verified deliveries are only recorded (and so answered at once); the worker runs the handlers.
        return webhookRoute({ secret: webhookSecret, log, receive: (delivery) => recordGitHubDelivery(services, delivery) });
      }
    }
    // Probot's Server treats port 0 as "use 3000"; here 0 means any free port.
    const port = config.port === 0 ? await findFreePort(config.host) : config.port;
    const server = new Server({ Probot: BoundedProbot, port, host: config.host, log, enableStaticFiles: false, enableNotFound: false });
    const now = options.now ?? (() => new Date());
    const sandbox = config.githubApp ? null : new SandboxCodeHost(db, { ...config.sandbox, random: options.random ?? Math.random, now });
    let codeHost: CodeHost = options.codeHost ?? sandbox!;
    let handleDelivery: DeliveryHandler | undefined;
    if (config.githubApp) {
      await server.load((probot) => {
        codeHost =
          options.codeHost ?? new GitHubCodeHost(probot, { now: () => now().getTime(), reservePercent: config.githubApp?.reservePercent, writeSpacingMs: config.githubApp?.throttle === false ? 0 : WRITE_SPACING_MS });
        handleDelivery = (delivery) => probot.receive(delivery as EmitterWebhookEvent);
        return createGitHubApp(() => services)(probot);
      });
    } else {
      log.warn("no GitHub App configured (APP_ID, PRIVATE_KEY, WEBHOOK_SECRET): using the sandbox code host, a simulated GitHub");
    }
    const services: Services = {
      db,
      codeHost,
      now,
      newId: () => orderedId(),
      random: options.random ?? Math.random,
      readCache: new ReadCache(),
      log,
      webhooks: config.webhooks,
      publicUrl: config.publicUrl,
      retention: config.retention,
      metrics: new ServiceMetrics(),
      ...(config.operatorOrg ? { operatorOrganization: config.operatorOrg } : {}),
    };
    const worker = new Worker(services, { intervalMs: config.workerIntervalMs, log, ciPoll: config.ciPoll, handleDelivery });
    const api = createApiApp(services, log, { publicUrl: config.publicUrl, bundleUrls: bundleUrls(config.bundleUrls), workerHealth: () => worker.health() });
    const oauth = config.githubApp?.oauth;
    const github = config.githubApp && oauth ? { ...oauth, apiUrl: config.githubApp.apiUrl ?? "https://api.github.com", appId: config.githubApp.appId } : undefined;
    const web = createWebApp(services, log, { sessionSecret: sessionSecret(config, log), publicUrl: config.publicUrl, liveIntervalMs: options.liveIntervalMs, liveHeartbeatMs: options.liveHeartbeatMs, github });
    server.addHandler((req, res) => {
      if (isDashboardRequest(req)) web.handle(req, res);
      else api(req, res);
      return true;
    });
    const http = await server.start();
    limitConnections(http, { ...HTTP_TIMEOUTS, ...options.httpTimeouts });
    answerParseErrors(http);
    admitRequests(http, options.maxInFlight ?? config.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT, api, () => services.metrics?.refusedRequests.inc());
    const responses = trackResponses(http);
    if (options.startWorker !== false) worker.start();
    const address = http.address() as AddressInfo;
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
    return {
      url: `http://${host === "0.0.0.0" || host === "[::]" ? "127.0.0.1" : host}:${address.port}`,
      services,
      worker,
      sandbox,
      async close() {
        const deadline = Date.now() + config.shutdownTimeoutMs;
        // Live streams never end on their own: they end now, and browsers reconnect elsewhere.
        web.close();
        const served = await Promise.all([settlesBy(worker.stop(), deadline), stopServing(server, http, responses, deadline)]);
        // The database waits for every transaction already asked for, including those of
        // requests whose client went away (their handlers still run).
        const closed = await settlesBy(db.close(), deadline);
        if (!served.every(Boolean) || !closed) throw new Error(`work was still in flight ${config.shutdownTimeoutMs} ms after the shutdown began`);
      },
    };
  } catch (error) {
    await db.close();
    throw error;
  }
}

/**
 * GREENLINE_SESSION_SECRET, or the key kept in the data directory (generated at the first
 * start): without one, every restart would sign everyone out, and open pages' streams with them.
 */
function sessionSecret(config: Config, log: Logger): string {
  if (config.sessionSecret) return config.sessionSecret;
  const kept = persistedSessionSecret(dataDirectory(config.databaseUrl, config.dataDir));
  if (kept.created) log.info({ file: kept.file }, "generated the dashboard's session key (GREENLINE_SESSION_SECRET is unset); replicas not sharing this file need GREENLINE_SESSION_SECRET");
  if (kept.exposed) log.warn({ file: kept.file }, "the session key's file can be read by other users: chmod 600 it");
  return kept.secret;
}

/** Whether `promise` settles before the time `deadline` (ms since the epoch). */
async function settlesBy(promise: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()))));
  const settled = promise.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The responses being written; once the server stops, each closes its connection when done. */
type Responses = { inFlight: Set<ServerResponse>; stopping: boolean };

function trackResponses(http: HttpServer): Responses {
  const responses: Responses = { inFlight: new Set(), stopping: false };
  http.on("request", (_req, res: ServerResponse) => {
    if (responses.stopping && !res.headersSent) res.setHeader("connection", "close");
    responses.inFlight.add(res);
    res.once("close", () => responses.inFlight.delete(res));
  });
  return responses;
}

/**
 * Stops listening and ends every connection: idle ones now, busy ones after their response
 * (a keep-alive client would otherwise go on sending requests), and at the deadline whatever
 * is left. Answers whether all ended in time.
 */
async function stopServing(server: Server, http: HttpServer, responses: Responses, deadline: number): Promise<boolean> {
  responses.stopping = true;
  for (const res of responses.inFlight) if (!res.headersSent) res.setHeader("connection", "close");
  const stopped = server.stop();
  http.closeIdleConnections();
  if (await settlesBy(stopped, deadline)) return true;
  http.closeAllConnections();
  await stopped.catch(() => undefined);
  return false;
}
