import { Router } from "express";
import { AppError } from "../../app/errors.js";
import { csvOf } from "../csv.js";
import { analyticsPage, METRICS, type MetricName } from "../pages/analytics.js";
import { analyticsParameters, analyticsView, queueParameterOf } from "../read-models/analytics.js";
import { type PageResponse, type RouteContext, send } from "./context.js";

/**
 * Analytics of the organization's queues, or of one (?queue=host/owner/repo/branch), over the
 * last 7, 30 or 90 days (?window=): the page (/analytics) and each metric as CSV
 * (/analytics.csv?metric=…). Read-only: a read-only token sees it all.
 */
export function analyticsRoutes({ services, assets, signedIn }: RouteContext): Router {
  const router = Router();

  router.get("/analytics", signedIn, async (req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    send(res, 200, analyticsPage(assets, viewer, await analyticsView(services, viewer.principal, analyticsParameters(req.query))));
  });

  router.get("/analytics.csv", signedIn, async (req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    const metric = req.query.metric;
    if (typeof metric !== "string" || !Object.hasOwn(METRICS, metric)) throw new AppError("invalid_argument", `metric: must be one of ${Object.keys(METRICS).join(", ")}`);
    const parameters = analyticsParameters(req.query);
    const view = await analyticsView(services, viewer.principal, parameters);
    const { header, rows } = METRICS[metric as MetricName];
    const scope = view.queue ? queueParameterOf(view.queue) : viewer.principal.organizationSlug;
    // A file name of safe characters only (the queue's branch may hold anything).
    const name = `greenline-${metric}-${scope}-${view.window}d`.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 150);
    res
      .status(200)
      .type("text/csv; charset=utf-8")
      .setHeader("cache-control", "no-store")
      .setHeader("content-disposition", `attachment; filename="${name}.csv"`)
      .send(csvOf(header, rows(view)));
  });

  return router;
}
