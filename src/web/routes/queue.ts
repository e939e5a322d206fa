import { type Request, Router } from "express";
import type { Principal } from "../../auth/tokens.js";
import type { QueueAddress } from "../../queue/queues.js";
import { checkQueueSetup } from "../../queue/preflight.js";
import { HTTP_STATUS, validationError } from "../../api/errors.js";
import { ZQueueAddress } from "../../api/queues/queue-schemas.js";
import { AppError, appErrorOfRefusal } from "../../app/errors.js";
import { errorPage, layout } from "../layout.js";
import { html, type Html } from "../html.js";
import { actionAnswer, noticeArea, preflightReport, queuePage } from "../pages/queue.js";
import { queueLine } from "../read-models/dashboard.js";
import { settingsUpdate } from "../settings-form.js";
import { type PageResponse, type RouteContext, repoOf, send, urlencoded } from "./context.js";
import { type OperationOutcome, perform } from "./perform.js";

/** A queue page's address: the repository, then the target branch (which may hold slashes). */
export const QUEUE_PAGE = "/queues/:host/:owner/:repo/*branch";

/** A queue's preflight, on demand (domain/links.ts preflightPagePath). */
export const PREFLIGHT_PAGE = "/preflight/:host/:owner/:repo/*branch";

/**
 * Whether a queue page (or its live stream) is the wall display: `?tv` (or `tv=1`). Any other
 * value is refused, naming the parameter, rather than quietly showing the ordinary page.
 */
export function wallDisplayOf(query: Request["query"]): boolean {
  const tv = query.tv;
  if (tv === undefined) return false;
  if (tv === "" || tv === "1") return true;
  throw new AppError("invalid_argument", "tv: must be given once, empty or 1 (?tv: the wall display)");
}

/** Whether a queue page (or its live stream) draws its whole line: `?all` (or `all=1`); else its first PRs (pages/queue-rows.ts). */
export function wholeLineOf(query: Request["query"]): boolean {
  const all = query.all;
  if (all === undefined) return false;
  if (all === "" || all === "1") return true;
  throw new AppError("invalid_argument", "all: must be given once, empty or 1 (?all: every pull request of the line)");
}

/** A queue page's path segments after the repository (its `*branch`). */
export const branchSegments = (req: Request) => (req.params as unknown as { branch: string[] }).branch;

/** A queue's page (its line, live) and its actions: pause, resume, drain, settings, and cancel, restart, priority of a PR. */
export function queueRoutes(context: RouteContext): Router {
  const { services, log, assets, originOf, signedIn, csrf } = context;
  const router = Router();

  router.get(QUEUE_PAGE, signedIn, async (req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    const address: QueueAddress = { repo: repoOf(req.params), targetBranch: branchSegments(req).join("/") };
    const tv = wallDisplayOf(req.query);
    const all = wholeLineOf(req.query);
    const line = await queueLine(services, viewer.principal, address);
    send(res, 200, queuePage(assets, viewer, address, line, services.now(), undefined, undefined, { tv, all }));
  });

  router.get(PREFLIGHT_PAGE, signedIn, async (req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    // The address is held to the API's rules (checkQueueSetup's request), as every way in is.
    const parsed = ZQueueAddress.safeParse({ repo: repoOf(req.params), targetBranch: branchSegments(req).join("/") });
    if (!parsed.success) return send(res, 400, errorPage(assets, viewer, 400, validationError(parsed.error.issues).message));
    const address: QueueAddress = parsed.data;
    let report: Html;
    try {
      report = preflightReport(await checkQueueSetup(services, viewer.principal, address));
    } catch (caught) {
      const error = caught instanceof AppError ? caught : appErrorOfRefusal(caught);
      if (!error) throw caught;
      const status = HTTP_STATUS[error.code];
      return send(res, status, req.get("hx-request") === "true" ? html`<p class="error">${error.message}</p>` : errorPage(assets, viewer, status, error.message));
    }
    if (req.get("hx-request") === "true") return send(res, 200, report);
    const { repo, targetBranch } = address;
    send(
      res,
      200,
      layout(assets, {
        title: `Preflight of ${repo.owner}/${repo.name} ${targetBranch}`,
        viewer,
        body: html`<p class="crumbs"><a href="/">Queues</a> / ${repo.host}</p><h1>Preflight of ${repo.owner}/${repo.name} <span class="branch">${targetBranch}</span></h1>${report}`,
      }),
    );
  });

  router.post("/actions/queue", urlencoded, signedIn, csrf, async (req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    const form = req.body as Record<string, unknown>;
    const address: QueueAddress = { repo: repoOf(form), targetBranch: String(form.branch ?? "") };
    const notice = await act(context, viewer.principal, address, form, originOf(req));
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

  return router;
}

/** What each action of the queue page asks of the API's operations, and what it says when done. */
const ACTIONS: Record<string, { operationId: string; body(form: Record<string, unknown>): Record<string, unknown>; done: string }> = {
  pause: { operationId: "updateQueue", body: () => ({ state: "paused" }), done: "The queue is paused." },
  resume: { operationId: "updateQueue", body: () => ({ state: "running" }), done: "The queue is running." },
  drain: { operationId: "updateQueue", body: () => ({ state: "draining" }), done: "The queue is draining." },
  freeze: {
    operationId: "freezeQueue",
    body: (form) => ({ reason: form.reason, ...(typeof form.until === "string" && form.until.trim() !== "" ? { until: form.until.trim() } : {}) }),
    done: "The queue is frozen: only hotfixes merge.",
  },
  unfreeze: { operationId: "unfreezeQueue", body: () => ({}), done: "The freezes holding the queue now are ended." },
  freeze_window: { operationId: "freezeQueue", body: (form) => ({ reason: form.reason, from: form.from, until: form.until }), done: "The freeze is scheduled." },
  freeze_weekly: {
    operationId: "freezeQueue",
    body: (form) => ({
      reason: form.reason,
      weekly: {
        timeZone: typeof form.timeZone === "string" ? form.timeZone.trim() : form.timeZone,
        days:
          typeof form.days === "string"
            ? form.days
                .split(/[\s,]+/)
                .filter(Boolean)
                .map((d) => d.slice(0, 3))
            : form.days,
        from: form.from,
        until: form.until,
      },
    }),
    done: "The weekly freeze is set.",
  },
  remove_freeze: { operationId: "unfreezeQueue", body: (form) => ({ freezeId: form.freezeId }), done: "The freeze is removed." },
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
async function act(context: RouteContext, principal: Principal, address: QueueAddress, form: Record<string, unknown>, origin: string): Promise<OperationOutcome> {
  const action = ACTIONS[String(form.action ?? "")];
  if (!action) return { kind: "error", text: `action: must be one of ${Object.keys(ACTIONS).join(", ")}`, status: 400 };
  const pr = typeof form.pr === "string" ? `#${form.pr}: ` : "";
  const body = { ...action.body(form), repo: address.repo, targetBranch: address.targetBranch };
  return perform(context, principal, action.operationId, body, origin, `${pr}${action.done}`);
}
