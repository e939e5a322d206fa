import express, { type NextFunction, type Request, type Response } from "express";
import { AppError } from "../app/errors.js";
import type { Services } from "../app/services.js";
import { authenticate, type Principal } from "../auth/tokens.js";
import type { Logger } from "../log.js";
import { jsonBody } from "./body.js";
import { sendError, toAppError, validationError } from "./errors.js";
import { buildOpenApiDocument } from "./openapi.js";
import { OPERATIONS, type Operation, type RawResponse } from "./operations.js";

export const MAX_BODY_BYTES = 20 * 1024 * 1024;

type Locals = { principal: Principal };

function isRaw(value: object): value is RawResponse {
  return (value as RawResponse).raw === true;
}

function requireToken(services: Services) {
  return async (req: Request, res: Response<unknown, Locals>, next: NextFunction) => {
    const header = req.headers["x-api-token"];
    const token = Array.isArray(header) ? header[0] : header;
    if (!token) return next(new AppError("unauthenticated", "missing x-api-token header"));
    const principal = await authenticate(services.db, token);
    if (!principal) return next(new AppError("unauthenticated", "unknown or revoked API token"));
    res.locals.principal = principal;
    next();
  };
}

function serve(services: Services, op: Operation) {
  return async (req: Request, res: Response<unknown, Locals>) => {
    const source = op.method === "get" ? req.query : req.body;
    const parsed = op.request.safeParse(source ?? {});
    if (!parsed.success) throw validationError(parsed.error.issues);
    const result = await op.handle({ services, principal: res.locals.principal }, parsed.data);
    if (isRaw(result)) res.type(result.contentType).send(result.body);
    else res.json(result);
  };
}

/** The Express app serving /healthz and the /v1 API. */
export function createApiApp(services: Services, log: Logger): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);

  app.get("/healthz", async (_req, res) => {
    try {
      await services.db.ping();
      res.json({ status: "ok", codeHost: services.codeHost.name });
    } catch {
      res.status(503).json({ status: "unavailable" });
    }
  });

  const openapi = JSON.stringify(buildOpenApiDocument(OPERATIONS));
  const v1 = express.Router();
  v1.get("/openapi.json", (_req, res) => {
    res.type("application/json").send(openapi);
  });
  const auth = requireToken(services);
  for (const op of OPERATIONS) {
    if (op.method === "get") v1.get(op.path, auth, serve(services, op));
    else v1.post(op.path, auth, jsonBody(MAX_BODY_BYTES), serve(services, op));
    v1.all(op.path, (req, res, next) => {
      res.setHeader("Allow", op.method === "get" ? "GET, HEAD" : "POST");
      next(new AppError("method_not_allowed", `${req.method} is not allowed on ${op.path}; use ${op.method.toUpperCase()}`));
    });
  }
  app.use("/v1", v1);

  app.use((req, _res, next) => next(new AppError("not_found", `no such path: ${req.method} ${req.path}`)));
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    sendError(res, toAppError(error, log));
  });
  return app;
}
