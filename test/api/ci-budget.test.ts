import { BACKENDS } from "../support/backends.js";
import { ciFinishes, prOf, queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const CI_MS = 60_000;

/** The CI budget and adaptive tuning through the API, on the sandbox code host (docs/engine.md, "CI budget and adaptive tuning"). */
describe.each(BACKENDS)("CI budget and adaptive tuning on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock();
  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: CI_MS } });
  });
  afterAll(() => server?.close());

  const states = async (name: string) => ((await server.api.ok("getQueue", queueOf(name))).enqueuedPullRequests as { prNumber: number; state: string }[]).map((pr) => [pr.prNumber, pr.state]);

  test("ciBudget caps the runs in flight below concurrency, and getQueue shows what adaptive tuning picks", async () => {
    const created = await server.api.ok("createQueue", { ...queueOf("budget"), concurrency: 5, bisectionConcurrency: 4, ciBudget: 2, tuning: "ADAPTIVE" });
    expect(created).toMatchObject({ concurrency: 5, ciBudget: 2, tuning: "adaptive", tuned: { concurrency: 2, bisectionConcurrency: 1, largestBatch: 10, observedFailureRate: 0.05 } });
    for (const n of [1, 2, 3]) await server.api.ok("submitPullRequest", prOf(n, "budget"));
    await server.greenline.worker.drain();
    expect(await states("budget")).toEqual([
      [1, "testing"],
      [2, "testing"],
      [3, "pending"],
    ]);
    await ciFinishes(server, clock);
    await ciFinishes(server, clock);
    expect((await states("budget")).filter(([, state]) => state !== "merged")).toEqual([]);
    // Runs that passed lower the failure rate it counts with (stored with each decision).
    const after = await server.api.ok("getQueue", queueOf("budget"));
    expect(after.tuned.observedFailureRate).toBeLessThan(0.05);
  });

  test("a failed run raises the observed failure rate", async () => {
    await server.api.ok("createQueue", { ...queueOf("failing"), tuning: "adaptive" });
    await server.greenline.sandbox!.openPullRequest(repo("failing"), { number: 7, targetBranch: "main", files: { "src/bad.ts": "syntax error" }, broken: true });
    await server.api.ok("submitPullRequest", prOf(7, "failing"));
    await ciFinishes(server, clock);
    expect((await server.api.ok("getQueue", queueOf("failing"))).tuned.observedFailureRate).toBeGreaterThan(0.05);
  });

  test("fixed tuning shows no picks; ciBudget 0 clears the budget", async () => {
    const created = await server.api.ok("createQueue", { ...queueOf("fixed"), ciBudget: 3 });
    expect(created).toMatchObject({ ciBudget: 3, tuning: "fixed" });
    expect(created.tuned).toBeUndefined();
    expect(await server.api.ok("updateQueue", { ...queueOf("fixed"), ciBudget: 0 })).toMatchObject({ ciBudget: 0 });
  });

  test.each([
    ["ciBudget", -1],
    ["ciBudget", 2.5],
    ["ciBudget", 4294967296],
    ["ciBudget", "4"],
    ["tuning", "auto"],
    ["tuning", null],
  ])("updateQueue refuses %s = %p with a 400 naming it, and changes nothing", async (field, value) => {
    await server.api.call("createQueue", { ...queueOf("bounds"), ciBudget: 2 });
    const response = await server.api.call("updateQueue", { ...queueOf("bounds"), concurrency: 7, [field]: value });
    expect(response.status).toBe(400);
    expect(response.body.error.details.map((d: { path: string }) => d.path)).toEqual([field]);
    expect(await server.api.ok("getQueue", queueOf("bounds"))).toMatchObject({ concurrency: 1, ciBudget: 2, tuning: "fixed" });
  });

  test("updates raced against each other and against the engine leave one of them, whole", async () => {
    await server.api.ok("createQueue", { ...queueOf("raced"), concurrency: 3 });
    for (const n of [1, 2, 3, 4]) await server.api.ok("submitPullRequest", prOf(n, "raced"));
    const updates = [1, 2, 3, 4, 5, 6].map((budget) => ({ ...queueOf("raced"), ciBudget: budget, tuning: budget % 2 === 0 ? "adaptive" : "fixed" }));
    const answers = await Promise.all([...updates.map((u) => server.api.call("updateQueue", u)), server.greenline.worker.drain()]);
    for (const answer of answers.slice(0, updates.length)) expect((answer as { status: number }).status).toBe(200);
    const final = await server.api.ok("getQueue", queueOf("raced"));
    expect([1, 2, 3, 4, 5, 6]).toContain(final.ciBudget);
    expect(final.tuning).toBe(final.ciBudget % 2 === 0 ? "adaptive" : "fixed");
    // Runs started under an earlier budget finish; those started once they are done keep the final one.
    await ciFinishes(server, clock);
    await server.greenline.worker.drain();
    const testing = (await states("raced")).filter(([, state]) => state === "testing").length;
    expect(testing).toBeLessThanOrEqual(Math.min(3, final.ciBudget));
  });
});
