import { type Request, type Response, Router } from "express";
import { revokeSession } from "../../auth/sessions.js";
import { authenticate, type TokenRole } from "../../auth/tokens.js";
import { GitHubSignIn, type GitHubSignInOptions, randomToken, SignInFailed } from "../github-sign-in.js";
import { errorPage } from "../layout.js";
import { chooseOrganizationPage, signInPage } from "../pages/sign-in.js";
import { knownInstallations, roleFromRepositories } from "../read-models/github-members.js";
import { cookie, cookieOf, equal, GITHUB_SESSION_MS, SESSION_MS, type SessionSubject, sessionCookie, sessionHash } from "../session.js";
import { type PageResponse, type RouteContext, send, urlencoded } from "./context.js";

/** The browser's pending GitHub sign-in (state, PKCE verifier, where to go after), for 10 minutes. */
const OAUTH_COOKIE = "greenline_oauth";
/** The organizations a GitHub user may pick from, when more than one admitted them, for 10 minutes. */
const CHOICE_COOKIE = "greenline_choice";
const OAUTH_MS = 10 * 60 * 1000;
const OAUTH_PATH = "/sign-in/github";
const MAX_USED_STATES = 100_000;

const safeNext = (value: unknown) => (typeof value === "string" && /^\/(?![/\\])/.test(value) ? value : "/");

/**
 * Signing in and out: with an API token, or with GitHub (the App's OAuth web flow,
 * src/web/github-sign-in.ts) when `options` configures its OAuth client; a session cookie
 * (src/web/session.ts) either way, revoked server-side at sign-out.
 */
export function signInRoutes(context: RouteContext, options: GitHubSignInOptions | undefined): Router {
  const { services, log, assets, keys, originOf, secure, sameOrigin, signedIn, csrf } = context;
  const github = options ? new GitHubSignIn(options) : null;
  /** `state` values already used, until they expire: a callback is honoured once, even if its cookie is replayed. */
  const usedStates = new Map<string, number>();
  const router = Router();

  function startSession(req: Request, res: Response, subject: SessionSubject, organizationId: string, ms: number, extra: string[] = []): void {
    const value = keys.seal({ subject, organizationId, expiresAt: Date.now() + ms });
    res.setHeader("set-cookie", [...extra, sessionCookie(value, { secure: secure(req), maxAgeSeconds: ms / 1000 })]);
  }

  const clearCookie = (req: Request, name: string) => cookie(name, "", { secure: secure(req), maxAgeSeconds: 0, path: OAUTH_PATH });

  router.get("/sign-in", (req, res) => {
    send(res, 200, signInPage(assets, { next: safeNext(req.query.next), github: github !== null }));
  });

  router.post("/sign-in", urlencoded, async (req, res) => {
    const form = (req.body ?? {}) as Record<string, unknown>;
    const next = safeNext(form.next);
    if (!sameOrigin(req)) return send(res, 403, errorPage(assets, null, 403, "This request did not come from a Greenline page."));
    const token = typeof form.token === "string" ? form.token.trim() : "";
    const principal = token ? await authenticate(services.db, token) : null;
    if (!principal) return send(res, 401, signInPage(assets, { next, error: token ? "Unknown or revoked API token." : "token: required", github: github !== null }));
    startSession(req, res, { kind: "token", tokenId: principal.tokenId }, principal.organizationId, SESSION_MS);
    res.redirect(303, next);
  });

  // ---- Sign in with GitHub (the App's OAuth web flow; src/web/github-sign-in.ts) ----

  /** Starts the flow: a random state and PKCE verifier, kept in a short-lived cookie of this browser only. */
  router.get("/sign-in/github", (req, res) => {
    if (!github) return send(res, 404, errorPage(assets, null, 404, "No such page."));
    const state = randomToken();
    const verifier = randomToken();
    const pending = keys.sign("oauth", [state, verifier, safeNext(req.query.next), Date.now() + OAUTH_MS]);
    res.setHeader("set-cookie", cookie(OAUTH_COOKIE, pending, { secure: secure(req), maxAgeSeconds: OAUTH_MS / 1000, path: OAUTH_PATH }));
    res.setHeader("cache-control", "no-store");
    res.redirect(303, github.authorizeUrl({ redirectUri: `${originOf(req)}${OAUTH_PATH}/callback`, state, verifier }));
  });

  /** GitHub sends the browser back here with `code` and `state`. */
  router.get("/sign-in/github/callback", async (req, res) => {
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
  router.post("/sign-in/github/choose", urlencoded, (req, res) => {
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

  router.post("/sign-out", urlencoded, signedIn, csrf, async (req, res: PageResponse) => {
    // Revoked server-side until it would have expired: a copy of the cookie is of no use either.
    const cookie = res.locals.cookie!;
    const session = keys.open(cookie, Date.now());
    if (session) await revokeSession(services.db, sessionHash(cookie), new Date(session.expiresAt), new Date());
    res.setHeader("set-cookie", sessionCookie("", { secure: secure(req), maxAgeSeconds: 0 }));
    res.redirect(303, "/sign-in");
  });

  return router;
}
