import type { WebhookEvent } from "../../src/domain/webhook-events.js";
import { ORGANIZATION_ENDPOINTS_IN_FLIGHT } from "../../src/outbound/dispatch.js";
import { orderedId } from "../../src/store/ids.js";
import { publishEvents } from "../../src/store/webhook-outbox.js";
import { BACKENDS } from "../support/backends.js";
import { startTestServer, type TestServer } from "../support/harness.js";
import { WebhookReceiver } from "../support/webhook-receiver.js";

const describeOnPostgres = process.env.GREENLINE_TEST_POSTGRES === "1" ? describe : describe.skip;

const ENDPOINTS = 6;
const EVENTS = 40;

/**
 * An organization's budget of endpoints delivering at once (ORGANIZATION_ENDPOINTS_IN_FLIGHT) is
 * the organization's, not each process's: two replicas on one PostgreSQL database, both
 * dispatching on their own timers, never have more of its endpoints in flight together than one
 * would (issue 22, defect 12: before, N replicas gave it N times the budget).
 */
describeOnPostgres("an organization's outbound webhook budget across replicas", () => {
  const servers: TestServer[] = [];
  const receivers: WebhookReceiver[] = [];

  afterAll(async () => {
    // The replica sharing the database first: the first one drops it.
    for (const server of [...servers].reverse()) await server.close();
    await Promise.all(receivers.map((r) => r.close()));
  });

  test("two replicas deliver to at most the budget's number of the organization's endpoints at once", async () => {
    const webhooks = { allowPrivate: true, pollMs: 10, retryBaseMs: 50, retryMaxMs: 200, timeoutMs: 5_000, disableAfterMs: 3_600_000 };
    const postgres = BACKENDS.find((b) => b.name === "postgres")!;
    const first = await startTestServer(postgres, { webhooks });
    servers.push(first);
    for (let i = 0; i < ENDPOINTS; i++) {
      const r = await new WebhookReceiver().start();
      r.delayMs = 40;
      receivers.push(r);
      const endpoint = await first.api.ok("webhooks/create-endpoint", { url: r.url, events: ["*"], description: `E${i}` });
      r.secrets.push(endpoint.secret);
    }
    const db = first.greenline.services.db;
    const organization = await db.read((tx) => tx.organization.findUniqueOrThrow({ where: { slug: "acme" } }));
    const events = Array.from({ length: EVENTS }, (_, i) => ({ type: "pull_request.submitted", orderingKey: `budget:${i}`, data: { pullRequest: { number: i + 1 } } }) as unknown as WebhookEvent);
    await db.transaction((tx) => publishEvents(tx, organization.id, events, { now: new Date(), newId: orderedId }));

    // Both replicas dispatch on their own timers from here.
    servers.push(await startTestServer(postgres, { webhooks, sharedDatabaseOf: first, startWorker: true }));
    first.greenline.worker.start();

    let most = 0;
    const deadline = Date.now() + 120_000;
    while (receivers.some((r) => r.received.length < EVENTS)) {
      if (Date.now() > deadline) throw new Error(`not delivered: ${receivers.map((r) => r.received.length).join(", ")}`);
      most = Math.max(most, receivers.filter((r) => r.inFlight > 0).length);
      await new Promise((r) => setTimeout(r, 2));
    }
    // Every endpoint was served, never more of them at once than the organization's budget.
    expect(receivers.map((r) => r.received.length >= EVENTS)).toEqual(receivers.map(() => true));
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(ORGANIZATION_ENDPOINTS_IN_FLIGHT);
  }, 180_000);
});
