import { BACKENDS } from "../support/backends.js";
import { createToken } from "../../src/auth/tokens.js";
import { ApiClient, ciFinishes, prOf, queueOf, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const CI_MS = 60_000;
const HOUR = 3_600_000;

/** Merge freezes through the API on the sandbox code host (docs/freezes.md). */
describe.each(BACKENDS)("merge freezes on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock();
  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: CI_MS } });
  });
  afterAll(() => server?.close());

  let adminClient: ApiClient | undefined;
  const admin = async () => (adminClient ??= new ApiClient(server.url, (await createToken(server.greenline.services.db, "acme", "release-manager", "admin")).token));
  const states = async (name: string) => Object.fromEntries(((await server.api.ok("getQueue", queueOf(name))).enqueuedPullRequests as { prNumber: number; state: string }[]).map((pr) => [pr.prNumber, pr.state]));
  const stateOf = async (name: string, number: number) => (await server.api.ok("getSubmittedPullRequest", prOf(number, name))).state as string;
  const eventKinds = async (name: string) => ((await server.api.ok("getQueueEvents", { ...queueOf(name), limit: 50 })).events as { kind: string }[]).map((e) => e.kind).reverse();

  test("a freeze now: PRs are tested and wait; a hotfix merges; unfreezing merges the rest", async () => {
    await server.api.ok("createQueue", { ...queueOf("now"), concurrency: 3 });
    const frozen = await server.api.ok("freezeQueue", { ...queueOf("now"), reason: "release 4.2 going out" });
    expect(frozen.freeze).toMatchObject({ kind: "now", reason: "release 4.2 going out", until: null, testing: true, holdingNow: true });
    expect(frozen.status).toMatchObject({ frozen: true, until: null, testing: true, reasons: ["release 4.2 going out"] });
    for (const n of [1, 2]) await server.api.ok("submitPullRequest", prOf(n, "now"));
    await ciFinishes(server, clock);
    await ciFinishes(server, clock);
    // Tested green, and held: nothing merges while frozen.
    expect(await states("now")).toEqual({ 1: "tests_passed", 2: "tests_passed" });
    const queue = await server.api.ok("getQueue", queueOf("now"));
    expect(queue.freeze).toMatchObject({ frozen: true, until: null, reasons: ["release 4.2 going out"] });
    expect(queue.blockedReason).toMatchObject({ code: "frozen", evidence: { reasons: ["release 4.2 going out"], pullRequestsWaiting: 2 } });
    expect(queue.blockedReason.message).toContain("frozen until it is unfrozen");
    // Metrics: the queue is frozen now, and one freeze started in the last hour.
    const metrics = await server.api.call("getMergeQueueMetrics", undefined, { method: "GET" });
    expect(metrics.text).toMatch(/greenline_queue_frozen\{repo="acme\/now",branch="main",queue_type="main"\} 1/);
    expect(metrics.text).toMatch(/greenline_queue_freeze_changes_1h\{repo="acme\/now",branch="main",queue_type="main",event="started"\} 1/);
    expect(metrics.text).toMatch(/greenline_queue_blocked\{repo="acme\/now",branch="main",queue_type="main",reason="frozen"\} 1/);

    // A hotfix (an emergency merge) goes ahead and merges through the freeze: an admin token declares it, a write token may not.
    const refused = await server.api.call("submitPullRequest", { ...prOf(3, "now"), emergencyReason: "fix the login outage" });
    expect([refused.status, refused.body.error.message]).toEqual([403, expect.stringContaining('role "admin"')]);
    await (await admin()).ok("submitPullRequest", { ...prOf(3, "now"), priority: "EMERGENCY", emergencyReason: "fix the login outage" });
    expect(await server.api.ok("getSubmittedPullRequest", prOf(3, "now"))).toMatchObject({ priorityName: "emergency", priorityValue: 0 });
    await ciFinishes(server, clock);
    await ciFinishes(server, clock);
    expect(await stateOf("now", 3)).toBe("merged");
    expect(await stateOf("now", 1)).not.toBe("merged");

    const thawed = await server.api.ok("unfreezeQueue", queueOf("now"));
    expect(thawed.ended.map((f: { reason: string }) => f.reason)).toEqual(["release 4.2 going out"]);
    expect(thawed.status).toMatchObject({ frozen: false });
    await ciFinishes(server, clock);
    await ciFinishes(server, clock);
    expect(await stateOf("now", 1)).toBe("merged");
    expect(await stateOf("now", 2)).toBe("merged");
    expect((await server.api.ok("getQueue", queueOf("now"))).blockedReason).toBeNull();
    expect(await eventKinds("now")).toEqual(["freeze_added", "freeze_started", "emergency_submission", "freeze_removed", "freeze_ended"]);
    // An emergency needs its reason, and another priority is no emergency.
    const noReason = await (await admin()).call("submitPullRequest", { ...prOf(4, "now"), priority: "emergency" });
    expect([noReason.status, noReason.body.error.details[0].path]).toEqual([400, "emergencyReason"]);
    const mixed = await (await admin()).call("submitPullRequest", { ...prOf(4, "now"), priority: "low", emergencyReason: "x" });
    expect([mixed.status, mixed.body.error.details[0].path]).toEqual([400, "priority"]);
    // Unfreezing a queue that is not frozen ends nothing, and says so.
    expect((await server.api.ok("unfreezeQueue", queueOf("now"))).ended).toEqual([]);
  });

  test("a one-off window starts and ends on its own; testing false holds testing too", async () => {
    await server.api.ok("createQueue", queueOf("window"));
    const from = new Date(clock.ms + HOUR).toISOString();
    const until = new Date(clock.ms + 3 * HOUR).toISOString();
    const made = await server.api.ok("freezeQueue", { ...queueOf("window"), reason: "maintenance", from, until, testing: false });
    expect(made.freeze).toMatchObject({ kind: "once", from, until, holdingNow: false, nextStart: from });
    expect(made.status).toMatchObject({ frozen: false, nextChangeAt: from });
    clock.advance(HOUR + 1_000);
    await server.greenline.worker.drain();
    expect((await server.api.ok("listQueueFreezes", queueOf("window"))).status).toMatchObject({ frozen: true, testing: false, until });
    await server.api.ok("submitPullRequest", prOf(1, "window"));
    await ciFinishes(server, clock);
    // Held: not even tested.
    expect(await stateOf("window", 1)).toBe("pending");
    clock.advance(2 * HOUR);
    await server.greenline.worker.drain();
    await ciFinishes(server, clock);
    await ciFinishes(server, clock);
    expect(await stateOf("window", 1)).toBe("merged");
    expect(await eventKinds("window")).toEqual(["freeze_added", "freeze_started", "freeze_ended"]);
    expect((await server.api.ok("listQueueFreezes", queueOf("window"))).freezes).toEqual([]);
  });

  test("a weekly window in a time zone; unfreezing ends this week's window only", async () => {
    await server.api.ok("createQueue", queueOf("weekly"));
    // The clock is Sunday 2026-11-22 09:00 UTC (10:00 in Berlin): every day 08:00–18:00 Berlin time holds now.
    const made = await server.api.ok("freezeQueue", {
      ...queueOf("weekly"),
      reason: "office hours",
      weekly: { timeZone: "Europe/Berlin", days: ["MON", "tue", "wed", "thu", "fri", "sat", "sun"], from: "08:00", until: "18:00" },
    });
    expect(made.status).toMatchObject({ frozen: true, until: "2026-11-22T17:00:00.000Z" });
    const ended = await server.api.ok("unfreezeQueue", queueOf("weekly"));
    expect(ended.status).toMatchObject({ frozen: false, nextChangeAt: "2026-11-23T07:00:00.000Z" });
    const listed = await server.api.ok("listQueueFreezes", queueOf("weekly"));
    expect(listed.freezes).toHaveLength(1);
    expect(listed.freezes[0]).toMatchObject({ kind: "weekly", holdingNow: false, nextStart: "2026-11-23T07:00:00.000Z" });
    await server.api.ok("unfreezeQueue", { ...queueOf("weekly"), freezeId: listed.freezes[0].id });
    expect((await server.api.ok("listQueueFreezes", queueOf("weekly"))).freezes).toEqual([]);
  });

  test.each([
    [{ reason: "  " }, "reason"],
    [{ reason: "x", weekly: { timeZone: "Mars/Olympus", days: ["mon"], from: "08:00", until: "18:00" } }, "weekly.timeZone"],
    [{ reason: "x", weekly: { timeZone: "UTC", days: ["someday"], from: "08:00", until: "18:00" } }, "weekly.days.0"],
    [{ reason: "x", weekly: { timeZone: "UTC", days: ["mon"], from: "8am", until: "18:00" } }, "weekly.from"],
    [{ reason: "x", until: "2030-02-30T00:00:00Z" }, "until"],
    [{ reason: "x", weekly: { timeZone: "UTC", days: [], from: "08:00", until: "18:00" } }, "weekly.days"],
    [{ reason: "x", from: "2030-01-01T00:00:00Z" }, "until"],
    [{ reason: "x", until: "2020-01-01T00:00:00Z" }, "until"],
    [{ reason: "x", from: "2030-01-02T00:00:00Z", until: "2030-01-01T00:00:00Z" }, "until"],
    [{ reason: "x", until: "tomorrow" }, "until"],
    [{ reason: "x", testing: "no" }, "testing"],
  ])("freezeQueue refuses %p with a 400 naming %s, and adds nothing", async (body, path) => {
    await server.api.call("createQueue", queueOf("bad"));
    const response = await server.api.call("freezeQueue", { ...queueOf("bad"), ...body });
    expect(response.status).toBe(400);
    expect(response.body.error.details.map((d: { path: string }) => d.path)).toEqual([path]);
    expect((await server.api.ok("listQueueFreezes", queueOf("bad"))).freezes).toEqual([]);
  });

  test("unknown freezes and queues are 404s; a read-only token may list but not freeze", async () => {
    await server.api.call("createQueue", queueOf("bad"));
    expect((await server.api.call("unfreezeQueue", { ...queueOf("bad"), freezeId: "nope" })).status).toBe(404);
    expect((await server.api.call("freezeQueue", { ...queueOf("none"), reason: "x" })).status).toBe(404);
    const { token } = await createToken(server.greenline.services.db, "acme", "freeze-viewer", "read");
    const reader = new ApiClient(server.url, token);
    expect((await reader.call("freezeQueue", { ...queueOf("bad"), reason: "x" })).status).toBe(403);
    expect((await reader.call("listQueueFreezes", queueOf("bad"))).status).toBe(200);
  });

  test("freezes and unfreezes raced against each other and the engine leave a consistent queue", async () => {
    await server.api.ok("createQueue", { ...queueOf("raced"), concurrency: 2 });
    for (const n of [1, 2, 3]) await server.api.ok("submitPullRequest", prOf(n, "raced"));
    const calls = [
      ...[1, 2, 3, 4].map((i) => server.api.call("freezeQueue", { ...queueOf("raced"), reason: `freeze ${i}` })),
      ...[1, 2].map(() => server.api.call("unfreezeQueue", queueOf("raced"))),
      server.greenline.worker.drain(),
    ];
    const answers = (await Promise.all(calls)).slice(0, 6) as { status: number }[];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const listed = await server.api.ok("listQueueFreezes", queueOf("raced"));
    // Every freeze is either listed or was ended by an unfreeze: none lost, none twice.
    const events = (await server.api.ok("getQueueEvents", { ...queueOf("raced"), limit: 50 })).events as { kind: string; details: { freeze?: { id: string } } }[];
    const added = events.filter((e) => e.kind === "freeze_added").map((e) => e.details.freeze!.id);
    const removed = events.filter((e) => e.kind === "freeze_removed").map((e) => e.details.freeze!.id);
    expect(added).toHaveLength(4);
    expect(new Set(removed).size).toBe(removed.length);
    expect([...listed.freezes.map((f: { id: string }) => f.id), ...removed].sort()).toEqual([...added].sort());
    expect(listed.status.frozen).toBe(listed.freezes.length > 0);
    // Whatever the order, the queue merges once it is not frozen.
    await server.api.ok("unfreezeQueue", queueOf("raced"));
    for (let i = 0; i < 4; i++) await ciFinishes(server, clock);
    expect(await states("raced")).toEqual({});
  });
});
