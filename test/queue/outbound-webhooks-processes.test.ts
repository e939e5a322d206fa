import { Database } from "../../src/store/database.js";
import { BACKENDS, type Backend } from "../support/backends.js";
import { ApiClient, repo } from "../support/harness.js";
import { freePort, ServiceProcess } from "../support/service-process.js";
import { WebhookReceiver } from "../support/webhook-receiver.js";

/**
 * Outbound webhooks from real service processes to a real receiver: a process SIGKILLed while
 * deliveries are in flight, then started again on the same database; two replicas on one
 * PostgreSQL database. Nothing is lost, a message is duplicated only if it was in flight at the
 * kill (at-least-once), and each ordering key's messages arrive in order.
 */
const TOKEN = "outbound-webhooks-test-token-0123";
const PRS = 12;

function envFor(url: string): Record<string, string> {
  return {
    DATABASE_URL: url,
    GREENLINE_API_TOKEN: TOKEN,
    GREENLINE_ORG: "acme",
    GREENLINE_SANDBOX_CI_MS: "100",
    GREENLINE_WORKER_INTERVAL_MS: "20",
    GREENLINE_WEBHOOK_ALLOW_PRIVATE: "true",
    // Generous: a delivery answered after the timeout is sent again (at-least-once), which a loaded CI machine turned into a "duplicate" without any crash.
    GREENLINE_WEBHOOK_TIMEOUT_MS: "5000",
    GREENLINE_WEBHOOK_RETRY_BASE_MS: "100",
    GREENLINE_WEBHOOK_RETRY_MAX_MS: "500",
    GREENLINE_WEBHOOK_POLL_MS: "20",
  };
}

async function until(what: string, predicate: () => Promise<boolean> | boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Submits PRs 1..PRS to two queues, alternating between clients. */
async function submitAll(clients: ApiClient[]): Promise<void> {
  await clients[0]!.ok("createQueue", { repo: repo("one"), targetBranch: "main", concurrency: 3 });
  await clients[0]!.ok("createQueue", { repo: repo("two"), targetBranch: "main", concurrency: 2 });
  for (let n = 1; n <= PRS; n++) {
    await clients[n % clients.length]!.ok("submitPullRequest", { repo: repo("one"), targetBranch: "main", pr: { number: n } });
    await clients[(n + 1) % clients.length]!.ok("submitPullRequest", { repo: repo("two"), targetBranch: "main", pr: { number: n } });
  }
}

/**
 * Every message written was received (by webhook-id), each ordering key's in order of first
 * receipt; answers how many receipts were duplicates.
 */
async function checkDelivered(url: string, receiver: WebhookReceiver): Promise<number> {
  const db = await Database.open(url, { migrate: false });
  try {
    const messages = await db.read((tx) => tx.webhookMessage.findMany({ orderBy: { id: "asc" } }));
    expect(messages.length).toBeGreaterThan(PRS * 2 * 3);
    expect(messages.filter((m) => m.status !== "delivered")).toEqual([]);
    const first = new Map<string, number>();
    receiver.received.forEach((r, i) => {
      if (!first.has(r.webhookId)) first.set(r.webhookId, i);
    });
    expect(messages.filter((m) => !first.has(m.eventId)).map((m) => m.eventType)).toEqual([]);
    const byKey = new Map<string, number[]>();
    for (const m of messages) byKey.set(m.orderingKey, [...(byKey.get(m.orderingKey) ?? []), first.get(m.eventId)!]);
    for (const [key, order] of byKey) expect({ key, order }).toEqual({ key, order: [...order].sort((a, b) => a - b) });
    // Per PR: submitted, testing …, merged, as the queue decided them.
    const prOne = receiver.received.filter((r) => r.type.startsWith("pull_request.") && r.data.repository === "github.com/acme/one" && r.data.pullRequest.number === 1).map((r) => r.type);
    expect(prOne[0]).toBe("pull_request.submitted");
    expect(prOne.at(-1)).toBe("pull_request.merged");
    return receiver.received.length - first.size;
  } finally {
    await db.close();
  }
}

async function queuesDrained(client: ApiClient): Promise<boolean> {
  const queues = await Promise.all(["one", "two"].map((name) => client.ok("getQueue", { repo: repo(name), targetBranch: "main" })));
  return queues.every((q) => q.enqueuedPullRequests.length === 0);
}

async function pendingCount(url: string): Promise<number> {
  const db = await Database.open(url, { migrate: false });
  try {
    return await db.read((tx) => tx.webhookMessage.count({ where: { status: "pending" } }));
  } finally {
    await db.close();
  }
}

describe.each(BACKENDS)("outbound webhooks from service processes on $name", (backend: Backend) => {
  test("a service SIGKILLed mid-delivery and started again: nothing lost, duplicates only of what was in flight, order per key kept", async () => {
    const database = await backend.createDatabase();
    const receiver = await new WebhookReceiver().start();
    const service = new ServiceProcess(await freePort(), envFor(database.url));
    const client = new ApiClient(service.url, TOKEN);
    try {
      await service.start();
      const created = await client.ok("webhooks/create-endpoint", { url: receiver.url, events: ["*"] });
      receiver.secrets.push(created.secret);
      receiver.delayMs = 100;
      await submitAll([client]);
      await until("deliveries in flight", () => receiver.received.length >= 10 && receiver.inFlight > 0);
      const inFlight = receiver.inFlight;
      await service.kill();
      await service.start();
      await until("the queues to drain", () => queuesDrained(client));
      await until("every message delivered", async () => (await pendingCount(database.url)) === 0);
      const duplicates = await checkDelivered(database.url, receiver);
      // At most what the killed process had claimed and not recorded: one round of one endpoint (32).
      expect(duplicates).toBeLessThanOrEqual(Math.max(inFlight, 32));
      expect(receiver.unverified).toBe(0);
    } finally {
      await service.stop();
      await receiver.close();
      await database.drop();
    }
  }, 240_000);
});

const describeOnPostgres = process.env.GREENLINE_TEST_POSTGRES === "1" ? describe : describe.skip;

describeOnPostgres("outbound webhooks from two replicas on one PostgreSQL database", () => {
  test("with both dispatching, every message arrives exactly once (no crash: no duplicate), in order per key", async () => {
    const database = await BACKENDS.find((b) => b.name === "postgres")!.createDatabase();
    const receiver = await new WebhookReceiver().start();
    const replicas = await Promise.all([0, 1].map(async () => new ServiceProcess(await freePort(), envFor(database.url))));
    const clients = replicas.map((r) => new ApiClient(r.url, TOKEN));
    try {
      await Promise.all(replicas.map((r) => r.start()));
      const created = await clients[0]!.ok("webhooks/create-endpoint", { url: receiver.url, events: ["*"] });
      receiver.secrets.push(created.secret);
      receiver.delayMs = 20;
      await submitAll(clients);
      await until("the queues to drain", () => queuesDrained(clients[1]!));
      await until("every message delivered", async () => (await pendingCount(database.url)) === 0);
      expect(await checkDelivered(database.url, receiver)).toBe(0);
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
      await receiver.close();
      await database.drop();
    }
  }, 240_000);
});
