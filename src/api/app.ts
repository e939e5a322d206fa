import { randomUUID } from "node:crypto";
import { withRequestId } from "../app/request-context.js";
import express, { type NextFunction, type Request, type Response } from "express";
import { AppError } from "../app/errors.js";
import { authenticateForkedRun, FORKED_RUN_HEADER } from "../queue/forked-runs.js";
import type { Services } from "../app/services.js";
import { authenticate, mayWrite, type Principal } from "../auth/tokens.js";
import type { Logger } from "../log.js";
import { bundleUrls as makeBundleUrls, receiveBundle, type BundleUrls } from "../flaky/bundle-uploads.js";
import type { UploadInput } from "../flaky/ingest.js";
import { jsonBody, rawBody } from "./body.js";
import { sendError, toAppError, validationError } from "./errors.js";
import { buildOpenApiDocument } from "./openapi.js";
import { OPERATIONS, type Operation, type RawResponse } from "./operations.js";
import { ZUploadTestResultsRequest } from "./flaky/upload-schemas.js";

export const MAX_BODY_BYTES = 20 * 1024 * 1024;
/** Trunk's CLI telemetry (protobuf, a few hundred bytes) is read and dropped. */
const MAX_TELEMETRY_BYTES = 1024 * 1024;

export type ApiOptions = {
  /** The service's public address (GREENLINE_PUBLIC_URL); unset: each request's own. */
  publicUrl?: string | undefined;
  /** How bundle upload URLs are signed (default: a random key, 15 minutes). */
  bundleUrls?: BundleUrls;
  /** This process's worker, as `/readyz` reports it (absent: no worker here). */
  workerHealth?: () => { status: "ok" | "off" | "stalled"; lastTickAt: number | null; tickingSince: number | null };
};

/** `principal` once authenticated; `forkedRunId` while a fork PR's upload waits for its body to be checked. */
type Locals = { principal?: Principal; forkedRunId?: string };

function headerOf(req: Request, name: string): string | undefined {
  const header = req.headers[name];
  return Array.isArray(header) ? header[0] : header;
}

function isRaw(value: object): value is RawResponse {
  return (value as RawResponse).raw === true;
}

/**
 * Every operation needs an x-api-token. An operation that accepts a fork PR's workflow run in
 * its place (setImpactedTargets, as Trunk's) lets a request with no token (the header absent
 * or empty, as merge-action sends it) but a run id through: the run is checked once the body
 * says what it is for (serve).
 */
function requireToken(services: Services, op?: Operation) {
  return async (req: Request, res: Response<unknown, Locals>, next: NextFunction) => {
    const token = headerOf(req, "x-api-token");
    const runId = headerOf(req, FORKED_RUN_HEADER);
    if (!token) {
      if (runId && op?.forkedRun) {
        res.locals.forkedRunId = runId;
        return next();
      }
      const hint = runId ? ` (${FORKED_RUN_HEADER} is accepted only by setImpactedTargets)` : "";
      return next(new AppError("unauthenticated", `missing x-api-token header${hint}`));
    }
    const principal = await authenticate(services.db, token);
    if (!principal) return next(new AppError("unauthenticated", "unknown or revoked API token"));
    if (op?.writes && !mayWrite(principal)) return next(readOnlyRefusal(op.operationId));
    res.locals.principal = principal;
    next();
  };
}

/** A read token asked for a change. */
export const readOnlyRefusal = (what: string) => new AppError("permission_denied", `this API token is read-only (role "read"): ${what} needs a token with role "write"`);

type Served = { services: Services; publicUrl: string | undefined; bundleUrls: BundleUrls };

/** The address a client reached the service at: configured, else the request's scheme and Host. */
const originOf = (req: Request, publicUrl: string | undefined) => publicUrl ?? `${req.protocol}://${req.get("host") ?? "localhost"}`;

function serve({ services, publicUrl, bundleUrls }: Served, op: Operation) {
  return async (req: Request, res: Response<unknown, Locals>) => {
    const source = op.method === "get" ? req.query : req.body;
    const parsed = op.request.safeParse(source ?? {});
    if (!parsed.success) throw validationError(parsed.error.issues);
    let principal = res.locals.principal;
    if (!principal) {
      const { forkedRunId } = res.locals;
      if (forkedRunId === undefined || !op.forkedRun) throw new Error(`${op.operationId} reached without a principal`);
      principal = await authenticateForkedRun(services, forkedRunId, op.forkedRun(parsed.data));
    }
    // Timelines and queue events say which operation did it.
    // The request log's id for it (its x-request-id, else a new one) follows the work it causes.
    const requestId = String((req as { id?: unknown }).id ?? req.headers["x-request-id"] ?? randomUUID()).slice(0, 200);
    const handled = principal;
    const result = await withRequestId(requestId, () => op.handle({ services, principal: { ...handled, via: op.operationId }, origin: originOf(req, publicUrl), bundleUrls }, parsed.data));
    if (isRaw(result)) res.type(result.contentType).send(result.body);
    else res.json(result);
  };
}

/** How long /readyz waits for the database before saying it is slow; how long its answer is kept. */
const READY_PING_MS = 1_000;
const READY_CACHE_MS = 1_000;

/** `promise`'s value, or `late` once `ms` have passed without one. */
function withinMs<T, L>(promise: Promise<T>, ms: number, late: L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<L>((resolve) => {
    timer = setTimeout(() => resolve(late), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The Express app serving /healthz, /readyz and the /v1 API. */
export function createApiApp(services: Services, log: Logger, options: ApiOptions = {}): express.Express {
  const served: Served = { services, publicUrl: options.publicUrl, bundleUrls: options.bundleUrls ?? makeBundleUrls() };
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);

  // Liveness: the process answers (an orchestrator restarts it when it does not). The database
  // is /readyz's: a database outage must not get every replica restarted.
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok", codeHost: services.codeHost.name });
  });
  // Readiness: the database answers, every migration this version ships is applied, and the
  // worker is ticking within its interval. 503 naming what is not, with no detail of the cause
  // beyond that (no error text: it may name hosts or users).
  // One check at a time, its answer kept a second: probes from every load balancer and
  // orchestrator cost the database two statements a second at most, whatever their number.
  let readiness: { at: number; answer: Promise<{ ready: boolean; body: object }> } | null = null;
  const checkReadiness = async () => {
    // A database that answers slowly (its pool busy under load) is still there: ready, said so.
    const database = await withinMs(
      services.db.ping().then(
        () => "ok" as const,
        () => "unreachable" as const,
      ),
      READY_PING_MS,
      "slow" as const,
    );
    const missing =
      database === "ok"
        ? await withinMs(
            services.db.missingMigrations().catch(() => null),
            READY_PING_MS,
            null,
          )
        : null;
    const migrations = database === "slow" ? "unknown" : missing === null ? "unknown" : missing.length === 0 ? "ok" : `missing ${missing.join(", ")}`;
    const worker = options.workerHealth?.() ?? { status: "off" as const, lastTickAt: null, tickingSince: null };
    const ready = database !== "unreachable" && (migrations === "ok" || database === "slow") && worker.status !== "stalled";
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    return { ready, body: { status: ready ? "ready" : "not_ready", checks: { database, migrations, worker: worker.status, workerLastTickAt: iso(worker.lastTickAt), workerTickingSince: iso(worker.tickingSince) } } };
  };
  app.get("/readyz", async (_req, res) => {
    if (!readiness || Date.now() - readiness.at > READY_CACHE_MS) readiness = { at: Date.now(), answer: checkReadiness() };
    const { ready, body } = await readiness.answer;
    res.status(ready ? 200 : 503).json(body);
  });

  const openapi = JSON.stringify(buildOpenApiDocument(OPERATIONS));
  const v1 = express.Router();
  v1.get("/openapi.json", (_req, res) => {
    res.type("application/json").send(openapi);
  });
  // Service metrics: every API request by operation and status, and how long it took.
  const metrics = services.metrics;
  if (metrics) {
    v1.use((_req, res, next) => {
      const started = performance.now();
      res.once("close", () => {
        // Set by the operation's own first handler: an error answered later keeps it.
        const operation = (res.locals as { operation?: string }).operation ?? "unknown";
        metrics.httpRequests.inc({ operation, status: String(res.statusCode) });
        metrics.httpDuration.observe({ operation }, (performance.now() - started) / 1000);
      });
      next();
    });
  }
  for (const op of OPERATIONS) {
    const auth = requireToken(services, op);
    const named = (_req: Request, res: Response, next: NextFunction) => {
      (res.locals as { operation?: string }).operation = op.operationId;
      next();
    };
    if (op.method === "get") v1.get(op.path, named, auth, serve(served, op));
    else v1.post(op.path, named, auth, jsonBody(MAX_BODY_BYTES), serve(served, op));
    v1.all(op.path, (req, res, next) => {
      res.setHeader("Allow", op.method === "get" ? "GET, HEAD" : "POST");
      next(new AppError("method_not_allowed", `${req.method} is not allowed on ${op.path}; use ${op.method.toUpperCase()}`));
    });
  }
  // Trunk's analytics CLI PUTs its bundle to the URL createBundleUpload signed: no token, the URL authorizes itself.
  v1.put("/bundles/:id", rawBody(MAX_BODY_BYTES), async (req, res) => {
    const validate = (input: UploadInput) => {
      const parsed = ZUploadTestResultsRequest.safeParse(input);
      if (!parsed.success) throw validationError(parsed.error.issues, "bundle");
      return parsed.data;
    };
    res.json(await receiveBundle(services, served.bundleUrls, { id: String(req.params.id), query: req.query, body: req.body as Buffer }, validate));
  });
  v1.all("/bundles/:id", (req, res, next) => {
    res.setHeader("Allow", "PUT");
    next(new AppError("method_not_allowed", `${req.method} is not allowed on /bundles/{id}; use PUT`));
  });
  // Its telemetry: accepted and dropped, whatever its type (protobuf).
  v1.post("/flakytests-cli/upload-metrics", requireToken(services), rawBody(MAX_TELEMETRY_BYTES), (_req, res) => {
    res.json({});
  });
  app.use("/v1", v1);
  // The conventional scrape path: getMergeQueueMetrics' answer (the token's organization's queues,
  // and for the operator's organization the service's own metrics), same token, same query.
  const metricsOp = OPERATIONS.find((op) => op.operationId === "getMergeQueueMetrics");
  if (metricsOp) app.get("/metrics", requireToken(services, metricsOp), serve(served, metricsOp));

  app.use((req, _res, next) => next(new AppError("not_found", `no such path: ${req.method} ${req.path}`)));
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    sendError(res, toAppError(error, log));
  });
  return app;
}
