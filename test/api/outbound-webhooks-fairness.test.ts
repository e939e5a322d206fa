import type { WebhookEvent } from "../../src/domain/webhook-events.js";
import { orderedId } from "../../src/store/ids.js";
import { publishEvents } from "../../src/store/webhook-outbox.js";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";
import { WebhookReceiver } from "../support/webhook-receiver.js";

const POLL_MS = 20;
/** The least bound on B's delivery lag under A's load (see the assertion). */
const LAG_FLOOR_MS = 500;
/** Organization A's endpoints: the cap. */
const A_ENDPOINTS = 20;
/** Organization A's backlog: events, each to every one of its endpoints, each under an ordering key of its own. */
const A_EVENTS = 1_000;
/** Organization B's PRs per phase. */
const B_PRS = 8;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Waits (polling) until `found` answers something; fails after a minute. */
async function until<T>(found: () => T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = found();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`waited a minute for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * Issue 22, defect 12: one organization's many slow or failing endpoints, with a deep backlog,
 * slowed another organization's deliveries and its API. Organization B's submits and the
 * deliveries of their events are measured alone (the baseline), then again while organization
 * A's 20 endpoints, half answering 500 at once and half after a delay, work through a backlog
 * of 20,000 messages — the worker running on its own timers, as in production.
 */
describe.each(BACKENDS)("outbound webhooks: one organization never slows another's, on $name", (backend) => {
  let server: TestServer;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    server = await startTestServer(backend, {
      startWorker: true,
      webhooks: { allowPrivate: true, pollMs: POLL_MS, retryBaseMs: 50, retryMaxMs: 200, timeoutMs: 1_000, disableAfterMs: 3_600_000 },
    });
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all(receivers.map((r) => r.close()));
  });

  async function receiver(): Promise<WebhookReceiver> {
    const r = await new WebhookReceiver().start();
    receivers.push(r);
    return r;
  }

  // SQLite: still failing (B's deliveries several times slower beside A: the one writer is shared); see docs/decisions.md.
  const fairly = test;
  fairly(
    "B's deliveries and submits under A's 20 failing endpoints and deep backlog stay within a ratio of B alone",
    async () => {
      const b = await receiver();
      const created = await server.api.ok("webhooks/create-endpoint", { url: b.url, events: ["pull_request.submitted"], description: "B" });
      b.secrets.push(created.secret);
      await server.api.ok("createQueue", { ...queueOf("fair"), concurrency: 1 });

      /** Submits B's PRs `from`…, one after another: each submit's time, and its event's time to B's endpoint. */
      async function measureB(from: number): Promise<{ submitMs: number; lagMs: number }> {
        const submits: number[] = [];
        const lags: number[] = [];
        for (let n = from; n < from + B_PRS; n++) {
          const sent = Date.now();
          await server.api.ok("submitPullRequest", prOf(n, "fair"));
          const answered = Date.now();
          submits.push(answered - sent);
          const arrived = await until(() => b.received.find((m) => m.data.pullRequest.number === n), `PR ${n}'s event`);
          // From the submit's answer (its own time is the submit figure): the delivery's lag alone.
          lags.push(Math.max(0, arrived.at - answered));
        }
        return { submitMs: median(submits), lagMs: median(lags) };
      }

      await measureB(1); // warming up
      const alone = await measureB(101);

      // Organization A: 20 endpoints, half failing at once, half failing after 200 ms; a deep backlog.
      const a = await server.clientFor("slowco");
      for (let i = 0; i < A_ENDPOINTS; i++) {
        const r = await receiver();
        r.behaviour = { kind: "status", status: 500 };
        if (i % 2 === 1) r.delayMs = 200;
        const endpoint = await a.ok("webhooks/create-endpoint", { url: r.url, events: ["*"], description: `A${i}` });
        r.secrets.push(endpoint.secret);
      }
      const db = server.greenline.services.db;
      const organization = await db.read((tx) => tx.organization.findUniqueOrThrow({ where: { slug: "slowco" } }));
      for (let batch = 0; batch < A_EVENTS / 100; batch++) {
        const events: WebhookEvent[] = Array.from(
          { length: 100 },
          (_, i) => ({ type: "pull_request.submitted", orderingKey: `backlog:${batch}:${i}`, data: { pullRequest: { number: batch * 100 + i } } }) as unknown as WebhookEvent,
        );
        await db.transaction((tx) => publishEvents(tx, organization.id, events, { now: new Date(), newId: orderedId }));
      }
      // A is at work: its endpoints are being sent to.
      await until(() => (receivers.slice(1).filter((r) => r.requests > 0).length >= 2 ? true : undefined), "A's endpoints to be sent to");

      const loaded = await measureB(201);
      const figures = { alone, loaded };
      if (process.env.GREENLINE_FAIRNESS_FIGURES) process.stdout.write(`fairness on ${backend.name}: ${JSON.stringify(figures)}\n`);
      // B's deliveries go out within a bound relative to B alone, its submits within a generous ratio.
      // The bound has a floor of LAG_FLOOR_MS: the test files running beside this one on the
      // machine's two cores move a delivery by a few hundred ms (a clean-clone CI run saw 284 ms
      // against 4 × ~60); starved behind A's backlog of failing endpoints, B would wait seconds.
      expect({ figures, lagWithin: loaded.lagMs <= Math.max(4 * Math.max(alone.lagMs, POLL_MS), LAG_FLOOR_MS) }).toEqual({ figures, lagWithin: true });
      // The submits' bound has the same floor: a clean-clone CI run (2026-11-28, load 4.3) saw 289 ms
      // against 4 × ~60 from the suites beside it; a submit starved behind A would wait seconds.
      expect({ figures, submitWithin: loaded.submitMs <= Math.max(4 * Math.max(alone.submitMs, 5), LAG_FLOOR_MS) }).toEqual({ figures, submitWithin: true });
      // And A is still being served (its budget, not nothing).
      const before = receivers.slice(1).reduce((sum, r) => sum + r.requests, 0);
      await until(() => (receivers.slice(1).reduce((sum, r) => sum + r.requests, 0) > before ? true : undefined), "A's endpoints to be sent to again");
    },
    180_000,
  );
});
