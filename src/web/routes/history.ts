import { Router } from "express";
import { historyPage } from "../pages/history.js";
import { historyQueryOf, historyView } from "../read-models/history.js";
import { type PageResponse, type RouteContext, send } from "./context.js";

/**
 * The organization's history (/history): every PR through its queues, searched by the query's
 * parameters (q, author, state, reason, queue, from, to, size; before/after page tokens). A bad
 * parameter answers 400 naming it and its rule (the error page, through the app's error handler).
 */
export function historyRoutes({ services, assets, signedIn }: RouteContext): Router {
  const router = Router();
  router.get("/history", signedIn, async (req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    const view = await historyView(services, viewer.principal, historyQueryOf(req.query as Record<string, unknown>));
    send(res, 200, historyPage(assets, viewer, view, services.now()));
  });
  return router;
}
