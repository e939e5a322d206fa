import type { Request } from "express";
import type { Services } from "../../app/services.js";
import { isSessionRevoked } from "../../auth/sessions.js";
import { authenticateTokenId } from "../../auth/tokens.js";
import type { Assets } from "../assets.js";
import { errorPage } from "../layout.js";
import { githubPrincipal } from "../read-models/github-members.js";
import { cookieOf, SESSION_COOKIE, type SessionKeys, sessionHash } from "../session.js";
import { type RouteContext, send } from "./context.js";

/**
 * The guards of the dashboard's requests: who the session says is looking (its token or GitHub
 * membership re-checked on every request), that a page needs one, and that a state-changing
 * request came from a Greenline page (same origin, and the session's CSRF token).
 */
export function guards(services: Services, assets: Assets, keys: SessionKeys, originOf: (req: Request) => string): Pick<RouteContext, "sameOrigin" | "viewerOf" | "signedIn" | "csrf"> {
  const sameOrigin: RouteContext["sameOrigin"] = (req) => {
    const origin = req.get("origin");
    if (origin !== undefined) return origin === originOf(req);
    const site = req.get("sec-fetch-site");
    if (site !== undefined) return site === "same-origin";
    const referer = req.get("referer");
    return referer === undefined || referer === originOf(req) || referer.startsWith(`${originOf(req)}/`);
  };

  const viewerOf: RouteContext["viewerOf"] = async (req) => {
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
  };

  const signedIn: RouteContext["signedIn"] = async (req, res, next) => {
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

  const csrf: RouteContext["csrf"] = (req, res, next) => {
    const given = (req.body as Record<string, unknown> | undefined)?.csrf ?? req.get("x-csrf-token");
    if (!sameOrigin(req) || !keys.checkCsrf(res.locals.cookie!, typeof given === "string" ? given : undefined)) {
      return send(res, 403, errorPage(assets, res.locals.viewer ?? null, 403, "This request did not come from a Greenline page (CSRF check failed): reload the page and try again."));
    }
    next();
  };

  return { sameOrigin, viewerOf, signedIn, csrf };
}
