import { type NextFunction, type Request, type Response, Router } from "express";
import { findQueueVersion, type QueueAddress } from "../../queue/queues.js";
import { pullRequestPage } from "../pages/pull-request.js";
import { pullRequestView } from "../read-models/dashboard.js";
import { type PageResponse, type RouteContext, repoOf, send } from "./context.js";
import { branchSegments, QUEUE_PAGE } from "./queue.js";

/**
 * A pull request's page in its queue (/queues/<host>/<owner>/<repo>/<branch>/pulls/<number>): a
 * deep link for the PR's status and comment. Its address is a queue page's with `pulls/<number>`
 * after the branch: mounted before the queue page's routes, it takes only those.
 */
export function pullRequestRoutes({ services, assets, signedIn }: RouteContext): Router {
  const router = Router();

  router.get(QUEUE_PAGE, onlyPulls, signedIn, async (req, res: PageResponse) => {
    const viewer = res.locals.viewer!;
    const pull = pullOf(branchSegments(req))!;
    const address: QueueAddress = { repo: repoOf(req.params), targetBranch: pull.branch };
    // Read before the PR: the stream then sends whatever changed after it.
    const { version } = await findQueueVersion(services, viewer.principal, address);
    const view = await pullRequestView(services, viewer.principal, { ...address, prNumber: pull.prNumber });
    send(res, 200, pullRequestPage(assets, viewer, address, pull.prNumber, view, version, services.now()));
  });

  return router;
}

/** Lets through the queue addresses that end in `pulls/<number>`; the others go on to the queue page. */
function onlyPulls(req: Request, _res: Response, next: NextFunction): void {
  if (pullOf(branchSegments(req))) next();
  else next("route");
}

/** A queue page's path segments after the repository, when they end in `pulls/<number>`: the PR page's branch and number. */
function pullOf(segments: string[]): { branch: string; prNumber: number } | null {
  if (segments.length < 3 || segments.at(-2) !== "pulls" || !/^[1-9]\d{0,9}$/.test(segments.at(-1)!)) return null;
  const prNumber = Number(segments.at(-1));
  return Number.isSafeInteger(prNumber) && prNumber <= 2_147_483_647 ? { branch: segments.slice(0, -2).join("/"), prNumber } : null;
}
