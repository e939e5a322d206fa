import pg from "pg";
import { orderedId } from "../../src/store/ids.js";
import { deleteMessagesOfEndpoint, lockEndpointsForOutcomes, markFailed } from "../../src/store/webhook-outbox.js";
import { BACKENDS } from "../support/backends.js";
import { startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * Issue 22, defect 10 (found by bench:api-load on PostgreSQL): deleting an endpoint deletes its
 * messages in batches while a delivery round of that endpoint records its outcomes. The two took
 * the same message rows in opposite orders, and PostgreSQL ended one of them with "deadlock
 * detected" — a 500 for deleteWebhookEndpoint, or a round's outcomes lost. Both now lock the
 * endpoint's row first. (SQLite has one writer: no such interleaving.)
 */
const POSTGRES = BACKENDS.filter((b) => b.name === "postgres");
const describePostgres = POSTGRES.length > 0 ? describe : describe.skip;

describePostgres("an endpoint deleted while its round records outcomes, on postgres", () => {
  let server: TestServer;
  const clock = new TestClock();

  beforeAll(async () => {
    server = await startTestServer(POSTGRES[0]!, { now: clock.now });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Waits until some backend of the database waits for a lock (the deletion, blocked). */
  async function someoneWaitsForALock(): Promise<void> {
    const admin = new pg.Client({ connectionString: server.databaseUrl.replace(/\?.*$/, "") });
    await admin.connect();
    try {
      for (;;) {
        const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
        if (rows[0].n > 0) return;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    } finally {
      await admin.end();
    }
  }

  test("the deletion's batch waits for the record (no deadlock), then deletes what is left", async () => {
    const org = await server.clientFor("deadlock");
    // Not audit.entry: the endpoint would receive the record of its own creation.
    const endpoint = (await org.ok("webhooks/create-endpoint", { url: "https://example.com/hook", events: ["pull_request.submitted"] })).endpoint.id;
    const { db } = server.greenline.services;
    const ids = [orderedId(), orderedId()];
    const columns = ["id", "endpointId", "eventId", "eventType", "orderingKey", "payload", "createdAt", "status", "attempts", "nextAttemptAt"];
    await db.sqlTransaction((sql) =>
      sql.insert(
        "WebhookMessage",
        columns,
        ids.map((id) => [id, endpoint, `msg_${id}`, "pull_request.submitted", "pr", "{}", clock.now(), "pending", 0, clock.now()]),
      ),
    );
    const failure = { status: 500, error: "answered 500", retryAt: new Date(clock.ms + 60_000) };

    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let tookSecond!: () => void;
    const second = new Promise<void>((resolve) => (tookSecond = resolve));
    let recordedSecond = false;
    // The round's record: the second message first, then (after the deletion has started) the first.
    const record = db.sqlTransaction(async (sql) => {
      await lockEndpointsForOutcomes(sql, [endpoint]);
      await markFailed(sql, ids[1]!, failure, clock.now());
      tookSecond();
      await gate;
      await markFailed(sql, ids[0]!, failure, clock.now());
      recordedSecond = true;
    });
    await second;
    const deletion = db.sqlTransaction((sql) => deleteMessagesOfEndpoint(sql, endpoint, 1_000));
    await someoneWaitsForALock();
    openGate();

    await expect(record).resolves.toBeUndefined();
    expect(recordedSecond).toBe(true);
    await expect(deletion).resolves.toBe(2);
  });
});
