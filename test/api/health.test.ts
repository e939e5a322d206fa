import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

/**
 * Liveness and readiness for an orchestrator (issue 27): `/healthz` answers while the process
 * runs; `/readyz` answers 200 only when the database answers, every migration this version ships
 * is applied and the worker ticks within its interval, and 503 naming what is not. Probes stay
 * out of the request log. A real server on each database.
 */
describe.each(BACKENDS)("liveness and readiness, $name", (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
  });
  afterAll(() => server?.close());

  /** /readyz keeps its answer a second (probes cost the database little, whatever their number). */
  const pastReadinessCache = () => new Promise((resolve) => setTimeout(resolve, 1_100));
  const get = async (path: string) => {
    const res = await fetch(`${server.url}${path}`);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  test("/healthz answers while the process runs; /readyz says the database and migrations are fine, and that this process runs no worker of its own", async () => {
    expect(await get("/healthz")).toEqual({ status: 200, body: { status: "ok", codeHost: "sandbox" } });
    const ready = await get("/readyz");
    expect(ready).toMatchObject({ status: 200, body: { status: "ready", checks: { database: "ok", migrations: "ok", worker: "off" } } });
    // A browser asking for it still gets the probe's JSON, not the dashboard.
    const asBrowser = await fetch(`${server.url}/readyz`, { headers: { accept: "text/html" } });
    expect(asBrowser.headers.get("content-type")).toContain("application/json");
  });

  test("/readyz is 503 naming a migration the database lacks, and ready again once it is there", async () => {
    const db = server.greenline.services.db;
    const [last] = await db.read((tx) => tx.$queryRawUnsafe<{ id: string; checksum: string; applied_at: string }[]>(`SELECT * FROM "_greenline_migrations" ORDER BY "id" DESC LIMIT 1`));
    expect(last).toBeDefined();
    await db.write((tx) => tx.$executeRawUnsafe(`DELETE FROM "_greenline_migrations" WHERE "id" = '${last!.id}'`));
    await pastReadinessCache();
    try {
      const missing = await get("/readyz");
      expect(missing).toMatchObject({ status: 503, body: { status: "not_ready", checks: { database: "ok", migrations: `missing ${last!.id}` } } });
    } finally {
      await db.write((tx) => tx.$executeRawUnsafe(`INSERT INTO "_greenline_migrations" ("id", "checksum", "applied_at") VALUES ('${last!.id}', '${last!.checksum}', '${last!.applied_at}')`));
    }
    await pastReadinessCache();
    expect((await get("/readyz")).status).toBe(200);
  });

  test("/readyz is 503 once a newer release's contract migration set a floor this version is below", async () => {
    const db = server.greenline.services.db;
    await db.write((tx) =>
      tx.$executeRawUnsafe(`INSERT INTO "_greenline_migrations" ("id", "checksum", "applied_at", "requires") VALUES ('9999_contract', '${"c".repeat(64)}', '${new Date().toISOString()}', '9998_next_release')`),
    );
    await pastReadinessCache();
    try {
      expect(await get("/readyz")).toMatchObject({ status: 503, body: { checks: { migrations: "missing 9998_next_release (required by 9999_contract)" } } });
    } finally {
      await db.write((tx) => tx.$executeRawUnsafe(`DELETE FROM "_greenline_migrations" WHERE "id" = '9999_contract'`));
    }
    await pastReadinessCache();
    expect((await get("/readyz")).status).toBe(200);
  });

  test("the worker is off until it runs here, ok while it ticks, stalled once no tick ended for ten intervals", async () => {
    const worker = server.greenline.worker;
    expect(worker.health().status).toBe("off");
    worker.start();
    try {
      await worker.tick();
      const now = Date.now();
      expect(worker.health(now)).toMatchObject({ status: "ok", lastTickAt: expect.any(Number) });
      await pastReadinessCache();
      expect((await get("/readyz")).body).toMatchObject({ status: "ready", checks: { worker: "ok", workerLastTickAt: expect.stringMatching(/^\d{4}-/) } });
      // Seen from an hour on, with no tick since: stalled (an interval's tick under way counts as ticking for 5 minutes).
      const later = worker.health(now + 60 * 60_000);
      expect(later.status).toBe("stalled");
    } finally {
      await worker.stop();
    }
    expect(worker.health().status).toBe("off");
  });

  test("health probes stay out of the request log; other requests are logged", async () => {
    const before = server.logs.length;
    for (let i = 0; i < 3; i++) {
      await get("/healthz");
      await get("/readyz");
    }
    await server.api.call("listQueues", {});
    const logged = server.logs.slice(before).join("");
    expect(logged).not.toContain("/healthz");
    expect(logged).not.toContain("/readyz");
    expect(logged).toContain("/v1/listQueues");
  });

  test("one structured line per queue decision that moved a PR, and per effect carried out; no token in them", async () => {
    const before = server.logs.length;
    await server.api.ok("createQueue", queueOf("logged"));
    // The request's id (x-request-id) follows the decision it made into its log line.
    const submitted = await fetch(`${server.url}/v1/submitPullRequest`, {
      method: "POST",
      headers: { "x-api-token": server.api.token, "content-type": "application/json", "x-request-id": "req-stack-42" },
      body: JSON.stringify(prOf(7, "logged")),
    });
    expect(submitted.status).toBe(200);
    await server.greenline.worker.drain();
    const lines = server.logs
      .slice(before)
      .join("")
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { msg: string; prs?: { pr: number; from: string | null; to: string; reason: string; runId?: string }[]; effect?: string; queueId?: string; runId?: string });
    const decisions = lines.filter((l) => l.msg === "queue decision");
    expect(decisions.flatMap((d) => d.prs ?? [])).toEqual(expect.arrayContaining([expect.objectContaining({ pr: 7, from: "pending", to: "testing", reason: "testing", runId: expect.any(String) })]));
    expect(decisions.find((d) => d.prs?.some((p) => p.pr === 7))).toMatchObject({ requestId: "req-stack-42" });
    const effects = lines.filter((l) => l.msg === "effect done");
    expect(effects).toEqual(expect.arrayContaining([expect.objectContaining({ effect: "start_run", queueId: decisions[0]!.queueId, runId: expect.any(String) })]));
    expect(server.logs.slice(before).join("")).not.toMatch(/"x-api-token":"(?!\[redacted\])/);
  });
});
