import express, { type NextFunction, type Request, type Response } from "express";
import { HTTP_STATUS, toAppError } from "../api/errors.js";
import type { Services } from "../app/services.js";
import { bundleUrls } from "../flaky/bundle-uploads.js";
import type { Logger } from "../log.js";
import { Assets } from "./assets.js";
import type { GitHubSignInOptions } from "./github-sign-in.js";
import { errorPage } from "./layout.js";
import { LiveHub } from "./live.js";
import { assetRoutes } from "./routes/assets.js";
import { type PageResponse, type RouteContext, send } from "./routes/context.js";
import { eventsRoutes } from "./routes/events.js";
import { guards } from "./routes/guards.js";
import { overviewRoutes } from "./routes/overview.js";
import { pullRequestRoutes } from "./routes/pull-request.js";
import { queueRoutes } from "./routes/queue.js";
import { signInRoutes } from "./routes/sign-in.js";
import { testsRoutes } from "./routes/tests.js";
import { analyticsRoutes } from "./routes/analytics.js";
import { auditRoutes } from "./routes/audit.js";
import { historyRoutes } from "./routes/history.js";
import { SessionKeys } from "./session.js";

export type WebOptions = {
  /** The key session cookies are signed with (GREENLINE_SESSION_SECRET, or the data directory's generated key: src/server.ts); unset here, a random key (tests). */
  sessionSecret?: string | undefined;
  /** GREENLINE_PUBLIC_URL: the origin state-changing requests must come from; unset, the request's own. */
  publicUrl?: string | undefined;
  /** How often the live stream looks for changed queues. */
  liveIntervalMs?: number;
  /** How often the live stream sends a heartbeat and re-checks each stream's session (default 20 s). */
  liveHeartbeatMs?: number;
  /** "Sign in with GitHub", when the GitHub App is configured with its OAuth client (GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET). */
  github?: GitHubSignInOptions | undefined;
};

/** The paths the dashboard serves. */
function isDashboardPath(path: string): boolean {
  return (
    path === "/" ||
    path === "/sign-in" ||
    path === "/sign-out" ||
    path === "/events" ||
    path === "/tests" ||
    path === "/history" ||
    path === "/audit" ||
    path === "/analytics" ||
    path === "/analytics.csv" ||
    path === "/favicon.ico" ||
    /^\/(queues|preflight|assets|actions|sign-in|tests)\//.test(path)
  );
}

/**
 * Whether the dashboard answers a request (server.ts routes by this; the rest is the API's): its
 * own paths, and any other path a browser asks a page of (Accept naming text/html), so a mistyped
 * address gets the dashboard's 404 page rather than the API's JSON. /v1, /healthz, /readyz and /metrics stay the API's.
 */
export function isDashboardRequest(req: { url?: string | undefined; method?: string | undefined; headers: { accept?: string | undefined } }): boolean {
  const path = (req.url ?? "/").split("?")[0]!;
  if (isDashboardPath(path)) return true;
  if (path === "/v1" || path.startsWith("/v1/") || path === "/healthz" || path === "/readyz" || path === "/metrics") return false;
  return (req.method === "GET" || req.method === "HEAD") && /\btext\/html\b/i.test(req.headers.accept ?? "");
}

/**
 * The headers of every dashboard answer: a CSP that allows only Greenline's own scripts and
 * styles (no inline script, no eval), no framing, no MIME sniffing, no referrer to other sites.
 */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader("content-security-policy", CSP);
  res.setHeader("x-content-type-options", "nosniff");
  res.setHeader("x-frame-options", "DENY");
  res.setHeader("referrer-policy", "same-origin");
  res.setHeader("cross-origin-opener-policy", "same-origin");
  next();
}

export type WebApp = { handle: express.Express; close(): void };

/**
 * The web dashboard: server-rendered pages (htmx for actions and live updates) on the API's port.
 * Each page's routes live beside it in src/web/routes/; this is the wiring: the security headers,
 * what every page's routes are given (the session guards among it), the routers, the 404 page and
 * the error page.
 */
export function createWebApp(services: Services, log: Logger, options: WebOptions = {}): WebApp {
  const assets = new Assets();
  const keys = new SessionKeys(options.sessionSecret);
  const hub = new LiveHub(services, log, { intervalMs: options.liveIntervalMs, heartbeatMs: options.liveHeartbeatMs });
  const originOf = (req: Request) => options.publicUrl ?? `${req.protocol}://${req.get("host") ?? "localhost"}`;
  const context: RouteContext = {
    services,
    log,
    assets,
    keys,
    hub,
    bundleUrls: bundleUrls(),
    originOf,
    secure: (req) => originOf(req).startsWith("https:"),
    ...guards(services, assets, keys, originOf),
  };
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(securityHeaders);

  app.use(assetRoutes(context));
  app.use(signInRoutes(context, options.github));
  app.use(overviewRoutes(context));
  // Before the queue page's: a PR's page is at its queue's address and `pulls/<number>`.
  app.use(pullRequestRoutes(context));
  app.use(queueRoutes(context));
  app.use(eventsRoutes(context));
  app.use(testsRoutes(context));
  app.use(auditRoutes(context));
  app.use(historyRoutes(context));
  app.use(analyticsRoutes(context));

  // Any other address (server.ts sends here whatever a browser asks a page of): the 404 page,
  // with the navigation when signed in.
  app.use(async (req: Request, res: PageResponse) => {
    const viewer = res.locals.viewer ?? (await context.viewerOf(req))?.viewer ?? null;
    send(res, 404, errorPage(assets, viewer, 404, "No such page."));
  });
  app.use((error: unknown, _req: Request, res: PageResponse, _next: NextFunction) => {
    const appError = toAppError(error, log);
    const status = HTTP_STATUS[appError.code];
    // Not found is worded alike whatever was missing (or another organization's).
    const message = status === 404 ? "No such page." : status >= 500 ? "Something went wrong; it has been logged." : appError.message;
    if (res.headersSent) {
      res.end();
      return;
    }
    send(res, status, errorPage(assets, res.locals.viewer ?? null, status, message));
  });

  return { handle: app, close: () => hub.close() };
}
