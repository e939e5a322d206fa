import express, { type NextFunction, type Request, type Response } from "express";
import { readOnlyRefusal } from "../api/app.js";
import { HTTP_STATUS, toAppError, validationError } from "../api/errors.js";
import { OPERATIONS } from "../api/operations.js";
import { type LiveTopic, pullRequestView, queueLine, queueOverview } from "./read-models/dashboard.js";
import { AppError, notFound } from "../app/errors.js";
import { githubPrincipal, knownInstallations, roleFromRepositories } from "./read-models/github-members.js";
import { findQueueVersion, type QueueAddress } from "../queue/queues.js";
import { listRepositories } from "../app/repositories.js";
import type { Services } from "../app/services.js";
import { authenticate, authenticateTokenId, type Principal, type TokenRole } from "../auth/tokens.js";
import { bundleUrls as makeBundleUrls } from "../flaky/bundle-uploads.js";
import { getTestDetails, listFailingTests, listQuarantinedTests, repositoryInScope } from "../flaky/queries.js";
import type { RepoRef } from "../ports/code-host.js";
import type { Logger } from "../log.js";
import { Assets } from "./assets.js";
import type { Html } from "./html.js";
import { type LiveSnapshot, type LivePart, outOfBand, patchOf, snapshotOf } from "./live-patch.js";
import { GitHubSignIn, type GitHubSignInOptions, randomToken, SignInFailed } from "./github-sign-in.js";
import { errorPage, type Viewer } from "./layout.js";
import { LiveHub, type LiveUpdate } from "./live.js";
import { overviewLive, overviewLiveParts, overviewPage } from "./pages/overview.js";
import { actionAnswer, liveSection, type Notice, noticeArea, queueLiveParts, queuePage } from "./pages/queue.js";
import { pullRequestLive, pullRequestLiveParts, pullRequestPage } from "./pages/pull-request.js";
import { chooseOrganizationPage, signInPage } from "./pages/sign-in.js";
import { DEFAULT_RANGE, RANGES, repoTestsPage, testPage, testsIndexPage } from "./pages/tests.js";
import { cookie, cookieOf, equal, GITHUB_SESSION_MS, SESSION_COOKIE, SESSION_MS, type SessionSubject, SessionKeys, sessionCookie, sessionHash } from "./session.js";
import { isSessionRevoked, revokeSession } from "../auth/sessions.js";
import { settingsUpdate } from "./settings-form.js";

export type WebOptions = {
  /** The key session cookies are signed with (GREENLINE_SESSION_SECRET, or the data directory's generated key: src/server.ts); unset here, a random key (tests). */
  sessionSecret?: string | undefined;
  /** GREENLINE_PUBLIC_URL: the origin state-changing requests must come from; unset, the request's own. */
  publicUrl?: string | undefined;
  /** How often the live stream looks for changed queues. */
  liveIntervalMs?: number;
  /** "Sign in with GitHub", when the GitHub App is configured with its OAuth client (GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET). */
  github?: GitHubSignInOptions | undefined;
};

/** The browser's pending GitHub sign-in (state, PKCE verifier, where to go after), for 10 minutes. */
const OAUTH_COOKIE = "greenline_oauth";
/** The organizations a GitHub user may pick from, when more than one admitted them, for 10 minutes. */
const CHOICE_COOKIE = "greenline_choice";
const OAUTH_MS = 10 * 60 * 1000;
const OAUTH_PATH = "/sign-in/github";
const MAX_USED_STATES = 100_000;

/** The paths the dashboard serves. */
function isDashboardPath(path: string): boolean {
  return path === "/" || path === "/sign-in" || path === "/sign-out" || path === "/events" || path === "/tests" || path === "/favicon.ico" || /^\/(queues|assets|actions|sign-in|tests)\//.test(path);
}

/**
 * Whether the dashboard answers a request (server.ts routes by this; the rest is the API's): its
 * own paths, and any other path a browser asks a page of (Accept naming text/html), so a mistyped
 * address gets the dashboard's 404 page rather than the API's JSON. /v1 and /healthz stay the API's.
 */
export function isDashboardRequest(req: { url?: string | undefined; method?: string | undefined; headers: { accept?: string | undefined } }): boolean {
  const path = (req.url ?? "/").split("?")[0]!;
  if (isDashboardPath(path)) return true;
  if (path === "/v1" || path.startsWith("/v1/") || path === "/healthz") return false;
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

type Locals = { viewer?: Viewer; cookie?: string };

export type WebApp = { handle: express.Express; close(): void };

/** The web dashboard: server-rendered pages (htmx for actions and live updates) on the API's port. */
export function createWebApp(services: Services, log: Logger, options: WebOptions = {}): WebApp {
  const assets = new Assets();
  const keys = new SessionKeys(options.sessionSecret);
  const hub = new LiveHub(services, log, { intervalMs: options.liveIntervalMs });
  const bundleUrls = makeBundleUrls();
  const github = options.github ? new GitHubSignIn(options.github) : null;
  /** `state` values already used, until they expire: a callback is honoured once, even if its cookie is replayed. */
  const usedStates = new Map<string, number>();
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(securityHeaders);

  const originOf = (req: Request) => options.publicUrl ?? `${req.protocol}://${req.get("host") ?? "localhost"}`;
  const secure = (req: Request) => originOf(req).startsWith("https:");
  const send = (res: Response, status: number, page: Html): void => {
    res.status(status).type("html").setHeader("cache-control", "no-store").send(page.text);
  };

  app.get("/assets/:file", (req, res) => {
    const asset = assets.byUrl(req.path);
    if (!asset) return send(res, 404, errorPage(assets, null, 404, "No such page."));
    const gzip = /\bgzip\b/.test(req.get("accept-encoding") ?? "");
    res.setHeader("content-type", asset.type);
    res.setHeader("cache-control", "public, max-age=31536000, immutable");
    res.setHeader("vary", "accept-encoding");
    if (gzip) res.setHeader("content-encoding", "gzip");
    res.send(gzip ? asset.gzip : asset.body);
  });

  // Browsers ask for /favicon.ico on their own (before a page names its icon, or for a JSON
  // answer): sent to the hashed icon, for an hour, since this address cannot carry the hash.
  app.get("/favicon.ico", (_req, res) => {
    res.setHeader("cache-control", "public, max-age=3600");
    res.redirect(302, assets.url("favicon.svg"));
  });

  /** State-changing requests must come from the dashboard's own pages (Origin, else Sec-Fetch-Site, else Referer). */
  function sameOrigin(req: Request): boolean {
    const origin = req.get("origin");
    if (origin !== undefined) return origin === originOf(req);
    const site = req.get("sec-fetch-site");
    if (site !== undefined) return site === "same-origin";
    const referer = req.get("referer");
    return referer === undefined || referer === originOf(req) || referer.startsWith(`${originOf(req)}/`);
  }

  /** The session's viewer, its token re-checked (revoked: signed out at once); undefined when there is none. */
  async function viewerOf(req: Request): Promise<{ viewer: Viewer; cookie: string } | undefined> {
    const cookie = cookieOf(req.headers.cookie, SESSION_COOKIE);
    const session = keys.open(cookie, Date.now());
    if (!cookie || !session) return undefined;
    // Signed out: the cookie no longer opens, even replayed before it expires.
    if (await isSessionRevoked(services.db, sessionHash(cookie))) return undefined;
    const { subject } = session;
    const principal =
      subject.kind === "token" ? await authenticateTokenId(services.db, subject.tokenId) : await githubPrincipal(services, { organizationId: session.organizationId, login: subject.login, role: subject.role });
    if (!principal || principal.organizationId !== session.organizationId) return undefined;
    return { viewer: { principal, csrf: keys.csrfToken(cookie) }, cookie };
  }

  const urlencoded = express.urlencoded({ extended: false, limit: "64kb", parameterLimit: 200 });

  /** Pages: a session, or the sign-in page (the address to come back to kept). */
  const page = async (req: Request, res: Response<unknown, Locals>, next: NextFunction) => {
    const found = await viewerOf(req);
    if (!found) {
      // A page's own htmx request (a live update, an action) after its session ended: the whole
      // page goes to sign-in, rather than a sign-in page swapped into a part of it.
      if (req.get("hx-request") === "true") {
        const current = req.get("hx-current-url");
        const back = current?.startsWith(`${originOf(req)}/`) ? current.slice(originOf(req).length) : "/";
        res.setHeader("hx-redirect", `/sign-in?next=${encodeURIComponent(back)}`);
        return res.status(401).end();
      }
      if (req.path === "/events" || req.method !== "GET") return send(res, 401, errorPage(assets, null, 401, "Sign in first."));
      return res.redirect(303, `/sign-in?next=${encodeURIComponent(req.originalUrl)}`);
    }
    res.locals.viewer = found.viewer;
    res.locals.cookie = found.cookie;
    next();
  };

  /** Every POST of a signed-in page: same origin and the session's CSRF token (a form field or the X-CSRF-Token header). */
  const csrf = (req: Request, res: Response<unknown, Locals>, next: NextFunction) => {
    const given = (req.body as Record<string, unknown> | undefined)?.csrf ?? req.get("x-csrf-token");
    if (!sameOrigin(req) || !keys.checkCsrf(res.locals.cookie!, typeof given === "string" ? given : undefined)) {
      return send(res, 403, errorPage(assets, res.locals.viewer ?? null, 403, "This request did not come from a Greenline page (CSRF check failed): reload the page and try again."));
    }
    next();
  };

  const safeNext = (value: unknown) => (typeof value === "string" && /^\/(?![/\\])/.test(value) ? value : "/");

  app.get("/sign-in", (req, res) => {
    send(res, 200, signInPage(assets, { next: safeNext(req.query.next), github: github !== null }));
  });

  app.post("/sign-in", urlencoded, async (req, res) => {
    const form = (req.body ?? {}) as Record<string, unknown>;
    const next = safeNext(form.next);
    if (!sameOrigin(req)) return send(res, 403, errorPage(assets, null, 403, "This request did not come from a Greenline page."));
    const token = typeof form.token === "string" ? form.token.trim() : "";
    const principal = token ? await authenticate(services.db, token) : null;
    if (!principal) return send(res, 401, signInPage(assets, { next, error: token ? "Unknown or revoked API token." : "token: required", github: github !== null }));
    startSession(req, res, { kind: "token", tokenId: principal.tokenId }, principal.organizationId, SESSION_MS);
    res.redirect(303, next);
  });

  function startSession(req: Request, res: Response, subject: SessionSubject, organizationId: string, ms: number, extra: string[] = []): void {
    const value = keys.seal({ subject, organizationId, expiresAt: Date.now() + ms });
    res.setHeader("set-cookie", [...extra, sessionCookie(value, { secure: secure(req), maxAgeSeconds: ms / 1000 })]);
  }

  const clearCookie = (req: Request, name: string) => cookie(name, "", { secure: secure(req), maxAgeSeconds: 0, path: OAUTH_PATH });

  // ---- Sign in with GitHub (the App's OAuth web flow; src/web/github-sign-in.ts) ----

  /** Starts the flow: a random state and PKCE verifier, kept in a short-lived cookie of this browser only. */
  app.get("/sign-in/github", (req, res) => {
    if (!github) return send(res, 404, errorPage(assets, null, 404, "No such page."));
    const state = randomToken();
    const verifier = randomToken();
    const pending = keys.sign("oauth", [state, verifier, safeNext(req.query.next), Date.now() + OAUTH_MS]);
    res.setHeader("set-cookie", cookie(OAUTH_COOKIE, pending, { secure: secure(req), maxAgeSeconds: OAUTH_MS / 1000, path: OAUTH_PATH }));
    res.setHeader("cache-control", "no-store");
    res.redirect(303, github.authorizeUrl({ redirectUri: `${originOf(req)}${OAUTH_PATH}/callback`, state, verifier }));
  });

  /** GitHub sends the browser back here with `code` and `state`. */
  app.get("/sign-in/github/callback", async (req, res) => {
    if (!github) return send(res, 404, errorPage(assets, null, 404, "No such page."));
    // The pending sign-in is used up whatever happens next.
    res.setHeader("set-cookie", clearCookie(req, OAUTH_COOKIE));
    const pending = keys.verify("oauth", cookieOf(req.headers.cookie, OAUTH_COOKIE));
    const now = Date.now();
    for (const [used, until] of usedStates) if (until <= now) usedStates.delete(used);
    if (!Array.isArray(pending) || pending.length !== 4 || typeof pending[0] !== "string" || typeof pending[1] !== "string" || typeof pending[3] !== "number" || pending[3] <= now) {
      return send(res, 400, errorPage(assets, null, 400, "This sign-in with GitHub was not started in this browser, or took longer than 10 minutes: sign in again."));
    }
    const [state, verifier, next, expiresAt] = pending as [string, string, string, number];
    const given = req.query.state;
    if (typeof given !== "string" || !equal(given, state) || usedStates.has(state)) {
      return send(res, 403, errorPage(assets, null, 403, "state: does not match the sign-in this browser started (refused): sign in again."));
    }
    usedStates.set(state, expiresAt);
    // Bounded: past this many sign-ins in 10 minutes, the oldest are forgotten (their cookies are still single-use in the browser).
    if (usedStates.size > MAX_USED_STATES) usedStates.delete(usedStates.keys().next().value!);
    if (typeof req.query.error === "string") {
      const why = typeof req.query.error_description === "string" ? `: ${req.query.error_description}` : "";
      return send(res, 403, errorPage(assets, null, 403, `GitHub did not authorize the sign-in (${req.query.error}${why}).`));
    }
    const code = req.query.code;
    if (typeof code !== "string" || code === "" || code.length > 512) return send(res, 400, errorPage(assets, null, 400, "code: required (GitHub sends it back with the state)."));
    try {
      const token = await github.exchange({ code, redirectUri: `${originOf(req)}${OAUTH_PATH}/callback`, verifier });
      const login = await github.login(token);
      const admitted: { organizationId: string; slug: string; role: TokenRole }[] = [];
      for (const installation of await knownInstallations(services, await github.installations(token))) {
        const role = await roleFromRepositories(services, installation.organizationId, await github.repositories(token, installation.installationId));
        const same = admitted.find((a) => a.organizationId === installation.organizationId);
        if (!same) admitted.push({ organizationId: installation.organizationId, slug: installation.slug, role });
        else if (role === "write") same.role = "write";
      }
      if (admitted.length === 0) {
        log.info({ login }, "GitHub sign-in refused: no installation of the App");
        return send(
          res,
          403,
          errorPage(
            assets,
            null,
            403,
            `GitHub user ${login} is not a member of any account where Greenline's GitHub App is installed, so there is no organization to sign in to. Ask an owner to install the App, or sign in with an API token.`,
          ),
        );
      }
      log.info({ login, organizations: admitted.map((a) => `${a.slug}:${a.role}`) }, "GitHub sign-in");
      if (admitted.length === 1) {
        startSession(req, res, { kind: "github", login, role: admitted[0]!.role }, admitted[0]!.organizationId, GITHUB_SESSION_MS, [clearCookie(req, OAUTH_COOKIE)]);
        return res.redirect(303, next);
      }
      const choice = keys.sign("choice", [login, admitted.map((a) => [a.organizationId, a.slug, a.role]), next, Date.now() + OAUTH_MS]);
      res.setHeader("set-cookie", [clearCookie(req, OAUTH_COOKIE), cookie(CHOICE_COOKIE, choice, { secure: secure(req), maxAgeSeconds: OAUTH_MS / 1000, path: OAUTH_PATH })]);
      send(res, 200, chooseOrganizationPage(assets, { login, organizations: admitted.map((a) => ({ slug: a.slug, role: a.role })) }));
    } catch (error) {
      if (!(error instanceof SignInFailed)) throw error;
      log.warn({ status: error.status, reason: error.message }, "GitHub sign-in failed");
      send(res, error.status, errorPage(assets, null, error.status, error.message));
    }
  });

  /** A GitHub user admitted by several organizations picks one (sign out and in again to switch). */
  app.post("/sign-in/github/choose", urlencoded, (req, res) => {
    if (!github) return send(res, 404, errorPage(assets, null, 404, "No such page."));
    if (!sameOrigin(req)) return send(res, 403, errorPage(assets, null, 403, "This request did not come from a Greenline page."));
    const choice = keys.verify("choice", cookieOf(req.headers.cookie, CHOICE_COOKIE));
    if (!Array.isArray(choice) || choice.length !== 4 || typeof choice[0] !== "string" || !Array.isArray(choice[1]) || typeof choice[3] !== "number" || choice[3] <= Date.now()) {
      return send(res, 400, errorPage(assets, null, 400, "This choice of organization expired (10 minutes): sign in again."));
    }
    const [login, organizations, next] = choice as [string, [string, string, TokenRole][], string];
    const slug = (req.body as Record<string, unknown> | undefined)?.organization;
    const picked = organizations.find(([, s]) => s === slug);
    if (!picked) return send(res, 400, errorPage(assets, null, 400, `organization: must be one of ${organizations.map(([, s]) => s).join(", ")}`));
    startSession(req, res, { kind: "github", login, role: picked[2] }, picked[0], GITHUB_SESSION_MS, [clearCookie(req, CHOICE_COOKIE)]);
    res.redirect(303, safeNext(next));
  });

  app.post("/sign-out", urlencoded, page, csrf, async (req, res: Response<unknown, Locals>) => {
    // Revoked server-side until it would have expired: a copy of the cookie is of no use either.
    const cookie = res.locals.cookie!;
    const session = keys.open(cookie, Date.now());
    if (session) await revokeSession(services.db, sessionHash(cookie), new Date(session.expiresAt), new Date());
    res.setHeader("set-cookie", sessionCookie("", { secure: secure(req), maxAgeSeconds: 0 }));
    res.redirect(303, "/sign-in");
  });

  app.get("/", page, async (_req, res: Response<unknown, Locals>) => {
    const viewer = res.locals.viewer!;
    // Read before the queues: the stream then sends whatever changed after it.
    const stamp = await hub.stampOf({ kind: "organization", organizationId: viewer.principal.organizationId });
    send(res, 200, overviewPage(assets, viewer, await queueOverview(services, viewer.principal), stamp));
  });

  app.get("/queues/:host/:owner/:repo/*branch", page, async (req, res: Response<unknown, Locals>) => {
    const viewer = res.locals.viewer!;
    const segments = (req.params as unknown as { branch: string[] }).branch;
    const repo = { host: String(req.params.host), owner: String(req.params.owner), name: String(req.params.repo) };
    // `<branch>/pulls/<number>`: the pull request's page in that queue (a deep link for the PR's status and comment).
    const pull = pullOf(segments);
    if (pull) {
      const address: QueueAddress = { repo, targetBranch: pull.branch };
      // Read before the PR: the stream then sends whatever changed after it.
      const { version } = await findQueueVersion(services, viewer.principal, address);
      const view = await pullRequestView(services, viewer.principal, { ...address, prNumber: pull.prNumber });
      return send(res, 200, pullRequestPage(assets, viewer, address, pull.prNumber, view, version, services.now()));
    }
    const address: QueueAddress = { repo, targetBranch: segments.join("/") };
    const line = await queueLine(services, viewer.principal, address);
    send(res, 200, queuePage(assets, viewer, address, line, services.now()));
  });

  /**
   * The live stream of a page: the overview (`overview=1`), a queue (`queue=<host/owner/repo/branch>`)
   * or one of its PRs (and `pr=<number>`). `since` (or, when the browser reconnects on its own,
   * Last-Event-ID) is the stamp the page shows: the same as now, the stream starts from what
   * the page holds; otherwise it first sends the whole live part (changes were missed). Each
   * update re-checks the session, and is rendered for this viewer, scoped to their organization.
   */
  app.get("/events", page, async (req, res: Response<unknown, Locals>) => {
    const principal = res.locals.viewer!.principal;
    const shown = req.get("last-event-id") ?? (typeof req.query.since === "string" ? req.query.since : undefined);
    let topic: LiveTopic;
    let render: (viewer: Viewer) => Promise<{ parts: LivePart[]; full: () => Html }>;
    if (req.query.overview !== undefined) {
      topic = { kind: "organization", organizationId: principal.organizationId };
      render = async (viewer) => {
        const parts = overviewLiveParts(await queueOverview(services, viewer.principal));
        return { parts, full: () => overviewLive(parts) };
      };
    } else {
      const address = addressOf(String(req.query.queue ?? ""));
      if (!address) throw new AppError("not_found", "no such queue");
      // Another organization's queue is not found, exactly like a missing one.
      const { id } = await findQueueVersion(services, principal, address);
      topic = { kind: "queue", queueId: id };
      const prNumber = req.query.pr === undefined ? null : Number(req.query.pr);
      if (prNumber !== null && !(Number.isSafeInteger(prNumber) && prNumber > 0)) throw new AppError("invalid_argument", "pr: must be a positive whole number");
      render =
        prNumber === null
          ? async (viewer) => {
              const parts = queueLiveParts(viewer, address, await queueLine(services, viewer.principal, address), services.now());
              return { parts, full: () => liveSection(parts) };
            }
          : async (viewer) => {
              const parts = pullRequestLiveParts(address, await pullRequestView(services, viewer.principal, { ...address, prNumber }), services.now());
              return { parts, full: () => pullRequestLive(parts) };
            };
    }
    const stamp = await hub.stampOf(topic);
    const first = await render(res.locals.viewer!);
    let snapshot: LiveSnapshot = snapshotOf(first.parts);
    // Unchanged on both sides of the read: the page holds what was read. Otherwise it gets it all.
    const unchanged = shown !== undefined && shown === stamp && (await hub.stampOf(topic)) === stamp;
    const update: LiveUpdate = async () => {
      const viewer = (await viewerOf(req))?.viewer;
      if (!viewer) return "ended";
      const next = await render(viewer);
      const patch = patchOf(snapshot, next.parts, next.full);
      snapshot = snapshotOf(next.parts);
      return patch;
    };
    hub.watch(topic, stamp, res, update, unchanged ? null : outOfBand(first.full()));
  });

  app.post("/actions/queue", urlencoded, page, csrf, async (req, res: Response<unknown, Locals>) => {
    const viewer = res.locals.viewer!;
    const form = req.body as Record<string, unknown>;
    const address: QueueAddress = { repo: { host: String(form.host ?? ""), owner: String(form.owner ?? ""), name: String(form.repo ?? "") }, targetBranch: String(form.branch ?? "") };
    const notice = await act(services, viewer.principal, address, form, bundleUrls, originOf(req));
    const actor = viewer.principal.actor?.kind === "user" ? `github:${viewer.principal.actor.name}` : `token:${viewer.principal.tokenId}`;
    log.info({ actor, action: String(form.action ?? ""), queue: `${address.repo.owner}/${address.repo.name}/${address.targetBranch}`, outcome: notice.kind === "ok" ? "done" : notice.status }, "dashboard action");
    const status = notice.kind === "ok" ? 200 : notice.status;
    if (status === 403 || status === 404) {
      // htmx swaps only the notice (the page stays); a plain form gets the error page.
      return send(res, status, req.get("hx-request") === "true" ? noticeArea(notice, true) : errorPage(assets, viewer, status, notice.text));
    }
    const line = await queueLine(services, viewer.principal, address);
    const refusal = form.action === "settings" && notice.kind === "error" ? { message: notice.text, values: form } : undefined;
    if (req.get("hx-request") === "true") return send(res, status, actionAnswer(viewer, address, line, notice, form.action === "settings" ? { refusal } : undefined));
    send(res, status, queuePage(assets, viewer, address, line, services.now(), notice, refusal));
  });

  app.get("/tests", page, async (_req, res: Response<unknown, Locals>) => {
    const viewer = res.locals.viewer!;
    send(res, 200, testsIndexPage(assets, viewer, await listRepositories(services, viewer.principal)));
  });

  app.get("/tests/:host/:owner/:repo", page, async (req, res: Response<unknown, Locals>) => {
    const { principal } = res.locals.viewer!;
    const repo = repoOf(req.params);
    const range = typeof req.query.range === "string" && req.query.range !== "" ? req.query.range : DEFAULT_RANGE;
    if (!Object.hasOwn(RANGES, range)) throw new AppError("invalid_argument", `range: must be one of ${Object.keys(RANGES).join(", ")}`);
    const scope = { repo, org_url_slug: principal.organizationSlug };
    // Another organization's repository is not found, exactly like a missing one (the API's own check).
    if (!(await repositoryInScope(services, principal, scope))) throw notFound("no such repository");
    // [end - range, end): up to and including this millisecond.
    const end = services.now().getTime() + 1;
    const pageQuery = (token: unknown) => ({ page_size: 100, page_token: typeof token === "string" ? token : "" });
    const [failing, quarantined] = await Promise.all([
      listFailingTests(services, principal, { ...scope, start_time: new Date(end - RANGES[range]!.ms), end_time: new Date(end), page_query: pageQuery(req.query.failing_page) }),
      listQuarantinedTests(services, principal, { ...scope, page_query: pageQuery(req.query.quarantined_page) }),
    ]);
    send(res, 200, repoTestsPage(assets, res.locals.viewer!, repo, range, failing, quarantined));
  });

  app.get("/tests/:host/:owner/:repo/:testId", page, async (req, res: Response<unknown, Locals>) => {
    const viewer = res.locals.viewer!;
    const repo = repoOf(req.params);
    const details = await getTestDetails(services, viewer.principal, { repo, org_url_slug: viewer.principal.organizationSlug, test_id: String(req.params.testId) });
    // After an override is saved, the browser lands here (POST, redirect, GET): the page says so.
    const saved = typeof req.query.saved === "string" && QUARANTINE_SETTINGS.has(req.query.saved) ? req.query.saved : undefined;
    send(res, 200, testPage(assets, viewer, repo, details, saved ? { kind: "ok", text: `Quarantine setting saved: ${saved}.` } : undefined));
  });

  const QUARANTINE_SETTINGS = new Set(["always", "never", "auto"]);

  app.post("/actions/test", urlencoded, page, csrf, async (req, res: Response<unknown, Locals>) => {
    const viewer = res.locals.viewer!;
    const form = req.body as Record<string, unknown>;
    const repo: RepoRef = { host: String(form.host ?? ""), owner: String(form.owner ?? ""), name: String(form.repo ?? "") };
    const scope = { repo, org_url_slug: viewer.principal.organizationSlug };
    const body = { ...scope, test_id: form.test_id, setting: form.setting, reason: form.reason };
    const setting = typeof form.setting === "string" ? form.setting : "";
    const notice = await perform(services, viewer.principal, "setQuarantineSetting", body, bundleUrls, originOf(req), `Quarantine setting saved: ${setting}.`);
    const status = notice.kind === "ok" ? 200 : notice.status;
    if (status === 403 || status === 404) return send(res, status, errorPage(assets, viewer, status, notice.text));
    if (notice.kind === "ok") {
      // The test's own address (reloadable, shareable), not /actions/test.
      const testId = encodeURIComponent(String(form.test_id ?? ""));
      return res.redirect(303, `/tests/${[repo.host, repo.owner, repo.name].map(encodeURIComponent).join("/")}/${testId}?saved=${encodeURIComponent(setting)}`);
    }
    const details = await getTestDetails(services, viewer.principal, { ...scope, test_id: String(form.test_id ?? "") });
    send(res, status, testPage(assets, viewer, repo, details, notice));
  });

  // Any other address (server.ts sends here whatever a browser asks a page of): the 404 page,
  // with the navigation when signed in.
  app.use(async (req, res: Response<unknown, Locals>) => {
    const viewer = res.locals.viewer ?? (await viewerOf(req))?.viewer ?? null;
    send(res, 404, errorPage(assets, viewer, 404, "No such page."));
  });
  app.use((error: unknown, _req: Request, res: Response<unknown, Locals>, _next: NextFunction) => {
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

/** A route's repository parameters. */
function repoOf(params: Record<string, unknown>): RepoRef {
  return { host: String(params.host), owner: String(params.owner), name: String(params.repo) };
}

/** A queue page's path segments after the repository, when they end in `pulls/<number>`: the PR page's branch and number. */
function pullOf(segments: string[]): { branch: string; prNumber: number } | null {
  if (segments.length < 3 || segments.at(-2) !== "pulls" || !/^[1-9]\d{0,9}$/.test(segments.at(-1)!)) return null;
  const prNumber = Number(segments.at(-1));
  return Number.isSafeInteger(prNumber) && prNumber <= 2_147_483_647 ? { branch: segments.slice(0, -2).join("/"), prNumber } : null;
}

/** "host/owner/repo/branch/with/slashes" → the queue's address. */
function addressOf(value: string): QueueAddress | null {
  const [host, owner, name, ...branch] = value.split("/");
  if (!host || !owner || !name || branch.length === 0 || branch.join("/") === "") return null;
  return { repo: { host, owner, name }, targetBranch: branch.join("/") };
}

type ActionOutcome = { kind: "ok"; text: string } | { kind: "error"; text: string; status: number };

/** What each action of the queue page asks of the API's operations, and what it says when done. */
const ACTIONS: Record<string, { operationId: string; body(form: Record<string, unknown>): Record<string, unknown>; done: string }> = {
  pause: { operationId: "updateQueue", body: () => ({ state: "paused" }), done: "The queue is paused." },
  resume: { operationId: "updateQueue", body: () => ({ state: "running" }), done: "The queue is running." },
  drain: { operationId: "updateQueue", body: () => ({ state: "draining" }), done: "The queue is draining." },
  settings: { operationId: "updateQueue", body: (form) => settingsUpdate(form), done: "Settings saved." },
  cancel: { operationId: "cancelPullRequest", body: (form) => ({ pr: { number: form.pr } }), done: "Cancelled." },
  restart: { operationId: "restartTestsOnPullRequest", body: (form) => ({ pr: { number: form.pr } }), done: "Tests restarted." },
  priority: { operationId: "submitPullRequest", body: (form) => ({ pr: { number: form.pr }, priority: form.priority }), done: "Priority changed." },
};

/**
 * Carries out an action through the API's own operation: the same validation, the same
 * application service, the same refusal for a read-only token. Refusals come back as notices
 * with the application's message verbatim.
 */
async function act(services: Services, principal: Principal, address: QueueAddress, form: Record<string, unknown>, bundleUrls: ReturnType<typeof makeBundleUrls>, origin: string): Promise<Notice & ActionOutcome> {
  const action = ACTIONS[String(form.action ?? "")];
  if (!action) return { kind: "error", text: `action: must be one of ${Object.keys(ACTIONS).join(", ")}`, status: 400 };
  const pr = typeof form.pr === "string" ? `#${form.pr}: ` : "";
  const body = { ...action.body(form), repo: address.repo, targetBranch: address.targetBranch };
  return perform(services, principal, action.operationId, body, bundleUrls, origin, `${pr}${action.done}`);
}

/**
 * Runs one of the API's operations for a page: its zod schema validates the body, its
 * application service handles it, a read-only token is refused as the API refuses it. Refusals
 * come back as notices with the application's message verbatim.
 */
async function perform(
  services: Services,
  principal: Principal,
  operationId: string,
  body: Record<string, unknown>,
  bundleUrls: ReturnType<typeof makeBundleUrls>,
  origin: string,
  done: string,
): Promise<Notice & ActionOutcome> {
  try {
    const op = OPERATIONS.find((o) => o.operationId === operationId)!;
    if (op.writes && principal.role !== "write") throw readOnlyRefusal(op.operationId);
    const parsed = op.request.safeParse(body);
    if (!parsed.success) throw validationError(parsed.error.issues);
    // Timelines and queue events name the dashboard as the way it was done (the API names its operation).
    let explained: string | undefined;
    const explain = (sentence: string) => {
      explained = sentence;
    };
    await op.handle({ services, principal: { ...principal, via: `dashboard (${op.operationId})` }, origin, bundleUrls, explain }, parsed.data);
    // Done without doing what was asked (a restart with nothing to restart): say why, not "done".
    return { kind: "ok", text: explained ?? done };
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { kind: "error", text: error.message, status: HTTP_STATUS[error.code] };
  }
}
