import { Router } from "express";
import { getAuditLog } from "../../app/audit.js";
import { AppError } from "../../app/errors.js";
import { auditPage } from "../pages/audit.js";
import { type PageResponse, type RouteContext, send } from "./context.js";

/** The organization's audit log (/audit), 50 entries a page (?page=<token>). */
export function auditRoutes({ services, assets, signedIn }: RouteContext): Router {
  const router = Router();
  router.get("/audit", signedIn, async (req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    const page = req.query.page ?? "";
    if (typeof page !== "string" || page.length > 1024) throw new AppError("invalid_argument", "page: must be given once, as a page token");
    send(res, 200, auditPage(assets, viewer, await getAuditLog(services, viewer.principal, { page_query: { page_size: 50, page_token: page } })));
  });
  return router;
}
