import { Router } from "express";
import { overviewPage } from "../pages/overview.js";
import { queueOverview } from "../read-models/dashboard.js";
import { type PageResponse, type RouteContext, send } from "./context.js";

/** The overview (/): the organization's queues, live. */
export function overviewRoutes({ services, assets, hub, signedIn }: RouteContext): Router {
  const router = Router();

  router.get("/", signedIn, async (_req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    // Read before the queues: the stream then sends whatever changed after it.
    const stamp = await hub.stampOf({ kind: "organization", organizationId: viewer.principal.organizationId });
    send(res, 200, overviewPage(assets, viewer, await queueOverview(services, viewer.principal), stamp));
  });

  return router;
}
