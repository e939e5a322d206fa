import { Router } from "express";
import { AppError } from "../../app/errors.js";
import { findQueueVersion, type QueueAddress } from "../../queue/queues.js";
import type { Html } from "../html.js";
import type { Viewer } from "../layout.js";
import type { LiveUpdate } from "../live.js";
import { type LivePart, type LiveSnapshot, outOfBand, patchOf, snapshotOf } from "../live-patch.js";
import { overviewLive, overviewLiveParts } from "../pages/overview.js";
import { pullRequestLive, pullRequestLiveParts } from "../pages/pull-request.js";
import { liveSection, queueLiveParts } from "../pages/queue.js";
import { type LiveTopic, pullRequestView, queueLine, queueOverview } from "../read-models/dashboard.js";
import type { PageResponse, RouteContext } from "./context.js";
import { wallDisplayOf, wholeLineOf } from "./queue.js";

/**
 * The live stream of a page (/events: server-sent events, from the live hub of src/web/live.ts):
 * the overview (`overview=1`), a queue (`queue=<host/owner/repo/branch>`, and `tv=1` for its wall
 * display) or one of its PRs (and `pr=<number>`). `since` (or, when the browser reconnects on its own,
 * Last-Event-ID) is the stamp the page shows: the same as now, the stream starts from what
 * the page holds; otherwise it first sends the whole live part (changes were missed). Each
 * update re-checks the session, and is rendered for this viewer, scoped to their organization;
 * each heartbeat re-checks it too, so a revoked token's stream ends without waiting for a change.
 */
export function eventsRoutes({ services, hub, signedIn, viewerOf }: RouteContext): Router {
  const router = Router();

  router.get("/events", signedIn, async (req, res: PageResponse) => {
    const principal = res.locals.viewer!.principal;
    const shown = req.get("last-event-id") ?? (typeof req.query.since === "string" ? req.query.since : undefined);
    let topic: LiveTopic;
    let render: (viewer: Viewer) => Promise<{ parts: LivePart[]; full: () => Html }>;
    if (req.query.overview !== undefined) {
      topic = { kind: "organization", organizationId: principal.organizationId };
      render = async (viewer) => {
        const parts = overviewLiveParts(await queueOverview(services, viewer.principal));
        return { parts, full: () => overviewLive(parts) };
      };
    } else {
      const address = addressOf(String(req.query.queue ?? ""));
      if (!address) throw new AppError("not_found", "no such queue");
      // Another organization's queue is not found, exactly like a missing one.
      const { id } = await findQueueVersion(services, principal, address);
      topic = { kind: "queue", queueId: id };
      const tv = wallDisplayOf(req.query);
      const all = wholeLineOf(req.query);
      const prNumber = req.query.pr === undefined ? null : Number(req.query.pr);
      if (prNumber !== null && !(Number.isSafeInteger(prNumber) && prNumber > 0)) throw new AppError("invalid_argument", "pr: must be a positive whole number");
      render =
        prNumber === null
          ? async (viewer) => {
              const parts = queueLiveParts(viewer, address, await queueLine(services, viewer.principal, address), services.now(), { tv, all });
              return { parts, full: () => liveSection(parts) };
            }
          : async (viewer) => {
              const parts = pullRequestLiveParts(address, await pullRequestView(services, viewer.principal, { ...address, prNumber }), services.now());
              return { parts, full: () => pullRequestLive(parts) };
            };
    }
    const stamp = await hub.stampOf(topic);
    const first = await render(res.locals.viewer!);
    let snapshot: LiveSnapshot = snapshotOf(first.parts);
    // Unchanged on both sides of the read: the page holds what was read. Otherwise it gets it all.
    const unchanged = shown !== undefined && shown === stamp && (await hub.stampOf(topic)) === stamp;
    const update: LiveUpdate = async () => {
      const viewer = (await viewerOf(req))?.viewer;
      if (!viewer) return "ended";
      const next = await render(viewer);
      const patch = patchOf(snapshot, next.parts, next.full);
      snapshot = snapshotOf(next.parts);
      return patch;
    };
    hub.watch(topic, stamp, res, update, unchanged ? null : outOfBand(first.full()), async () => (await viewerOf(req)) !== undefined);
  });

  return router;
}

/** "host/owner/repo/branch/with/slashes" → the queue's address. */
function addressOf(value: string): QueueAddress | null {
  const [host, owner, name, ...branch] = value.split("/");
  if (!host || !owner || !name || branch.length === 0 || branch.join("/") === "") return null;
  return { repo: { host, owner, name }, targetBranch: branch.join("/") };
}
