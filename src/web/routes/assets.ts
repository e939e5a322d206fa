import { Router } from "express";
import { errorPage } from "../layout.js";
import { type RouteContext, send } from "./context.js";

/** The hashed scripts, styles and icon (src/web/assets.ts), cached for good; and /favicon.ico. */
export function assetRoutes({ assets }: RouteContext): Router {
  const router = Router();

  router.get("/assets/:file", (req, res) => {
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
  router.get("/favicon.ico", (_req, res) => {
    res.setHeader("cache-control", "public, max-age=3600");
    res.redirect(302, assets.url("favicon.svg"));
  });

  return router;
}
