import { BACKENDS } from "../support/backends.js";
import { startTestServer, type TestServer } from "../support/harness.js";

/**
 * A request that arrives as the service shuts down (the database no longer starts
 * transactions) is answered 503 `unavailable`, to be retried elsewhere, never 500.
 */
describe.each(BACKENDS)("requests during shutdown, $name", (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
  });
  afterAll(async () => {
    await server?.close();
  });

  test("a write and a read after the database began closing answer 503 unavailable", async () => {
    const queue = { repo: { host: "github.com", owner: "acme", name: "closing" }, targetBranch: "main" };
    await server.api.ok("createQueue", queue);
    await server.greenline.worker.stop();
    await server.greenline.services.db.close();
    for (const [operation, body] of [
      ["updateQueue", { ...queue, concurrency: 2 }],
      ["getQueue", queue],
    ] as const) {
      const answer = await server.api.call(operation, body);
      expect({ operation, status: answer.status, code: answer.body.error?.code }).toEqual({ operation, status: 503, code: "unavailable" });
    }
  });
});
