import express, { type NextFunction, type Request, type Response } from "express";
import type { Services } from "../../app/services.js";
import type { BundleUrls } from "../../flaky/bundle-uploads.js";
import type { Logger } from "../../log.js";
import type { RepoRef } from "../../ports/code-host.js";
import type { Assets } from "../assets.js";
import type { Html } from "../html.js";
import type { Viewer } from "../layout.js";
import type { LiveHub } from "../live.js";
import type { SessionKeys } from "../session.js";

/** What a signed-in request carries once `signedIn` let it through: the viewer and the session's cookie. */
export type Locals = { viewer?: Viewer; cookie?: string };

/** A page's answer, with the session's viewer in its locals. */
export type PageResponse = Response<unknown, Locals>;

type Middleware = (req: Request, res: PageResponse, next: NextFunction) => unknown;

/**
 * What the wiring (src/web/app.ts) gives each page's routes: the application, the dashboard's
 * parts (assets, session keys, the live hub), the request's origin, and the guards
 * (src/web/routes/guards.ts) a page's routes put before their handlers.
 */
export type RouteContext = {
  services: Services;
  log: Logger;
  assets: Assets;
  keys: SessionKeys;
  hub: LiveHub;
  bundleUrls: BundleUrls;
  /** The origin the browser reached the dashboard at: GREENLINE_PUBLIC_URL, else the request's own. */
  originOf(req: Request): string;
  /** Whether cookies are marked Secure (the origin is https). */
  secure(req: Request): boolean;
  /** State-changing requests must come from the dashboard's own pages (Origin, else Sec-Fetch-Site, else Referer). */
  sameOrigin(req: Request): boolean;
  /** The session's viewer, its token re-checked (revoked: signed out at once); undefined when there is none. */
  viewerOf(req: Request): Promise<{ viewer: Viewer; cookie: string } | undefined>;
  /** Pages: a session, or the sign-in page (the address to come back to kept). */
  signedIn: Middleware;
  /** Every POST of a signed-in page: same origin and the session's CSRF token (a form field or the X-CSRF-Token header). */
  csrf: Middleware;
};

/** Forms' bodies (sign-in, actions), bounded. */
export const urlencoded = express.urlencoded({ extended: false, limit: "64kb", parameterLimit: 200 });

/** A page as the answer: never cached. */
export function send(res: Response, status: number, page: Html): void {
  res.status(status).type("html").setHeader("cache-control", "no-store").send(page.text);
}

/** The repository a route's parameters or a form's fields name (`host`, `owner`, `repo`; a missing one is empty). */
export function repoOf(fields: Record<string, unknown>): RepoRef {
  return { host: String(fields.host ?? ""), owner: String(fields.owner ?? ""), name: String(fields.repo ?? "") };
}
