import { applyEvent } from "../../src/queue/queue-events.js";
import { queueWritesOf } from "../../src/store/queue-writes.js";
import { findQueueInRepository, lockQueueRow } from "../../src/store/queues.js";
import { BACKENDS } from "../support/backends.js";
import { ciFinishes, prOf, queueOf, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * The effect runner carries the queue row a decision leaves instead of reading it back
 * (src/store/queue-writes.ts): that row must be the one the database holds, field for field,
 * and the effects it carries the ones stored, with their sequence numbers.
 */
describe.each(BACKENDS)("the queue a decision leaves, on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock();

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: 60_000 } });
  });
  afterAll(async () => {
    await server?.close();
  });

  test("is the row read back, and its appended effects are the stored ones", async () => {
    await server.api.ok("createQueue", { ...queueOf("carried"), concurrency: 2 });
    for (let pr = 1; pr <= 3; pr++) await server.api.ok("submitPullRequest", prOf(pr, "carried"));
    await ciFinishes(server, clock);
    const { services } = server.greenline;
    const queueId = (await services.db.read((tx) => tx.queue.findFirst({ where: { repository: { name: "carried" } }, select: { id: true } })))!.id;
    // A push outside the queue: runs restart on the new base (state, base, run numbers, timer, effects all move).
    const writes = await services.db.transaction(async (tx) => {
      const queue = (await lockQueueRow(tx, queueId))!;
      await applyEvent(services, tx, queue, { kind: "base_moved", sha: "pushed-outside" });
      return queueWritesOf(tx, queueId);
    });
    const stored = await services.db.read((tx) => findQueueInRepository(tx, queueId));
    const { repository: _repository, ...row } = stored!;
    const { webhookEndpointsEnabled: _seen, ...carried } = writes!.queue!;
    expect(carried).toEqual(row);
    expect(writes!.version).toBe(row.version);
    expect(writes!.appended.length).toBeGreaterThan(0);
    const effects = await services.db.read((tx) => tx.effect.findMany({ where: { id: { in: writes!.appended.map((e) => e.id) } }, orderBy: { seq: "asc" } }));
    expect(writes!.appended.map((e) => [e.id, e.seq, e.kind, e.payload])).toEqual(effects.map((e) => [e.id, e.seq, e.kind, e.payload]));
  });
});
