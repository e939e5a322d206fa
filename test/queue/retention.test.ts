import { DAY_MS } from "../../src/domain/time.js";
import { pruneHistory } from "../../src/queue/retention.js";
import { BACKENDS } from "../support/backends.js";
import { ciFinishes, prOf, queueOf, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const CI_MS = 60_000;

/**
 * History past its retention leaves the database (src/queue/retention.ts): done effects after
 * GREENLINE_EFFECT_RETENTION_DAYS; finished PRs with their timelines, archived runs and operator
 * events after GREENLINE_HISTORY_RETENTION_DAYS; 0 keeps them. What the queues work with stays, and
 * a queue goes on as before after its history is gone.
 */
describe.each(BACKENDS)("history retention, $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock();

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: CI_MS } });
  });
  afterAll(() => server?.close());

  const db = () => server.greenline.services.db;
  const counts = (name: string) =>
    db().read(async (tx) => {
      const queue = await tx.queue.findFirstOrThrow({ where: { repository: { name } }, select: { id: true } });
      const where = { queueId: queue.id };
      return {
        doneEffects: await tx.effect.count({ where: { ...where, doneAt: { not: null } } }),
        pendingEffects: await tx.effect.count({ where: { ...where, doneAt: null } }),
        maxSeq: (await tx.effect.aggregate({ where, _max: { seq: true } }))._max.seq ?? 0,
        entries: await tx.queueEntry.count({ where }),
        transitions: await tx.transition.count({ where }),
        runs: await tx.testRun.count({ where }),
        events: await tx.queueEvent.count({ where }),
        settingsChanges: await tx.queueEvent.count({ where: { ...where, kind: "config_changed" } }),
        operatorSettingsChanges: await tx.queueEvent.count({ where: { ...where, kind: "settings_changed" } }),
      };
    });

  test("done effects go after their retention, then finished PRs, their timelines, archived runs and old events; the line and its work stay; the queue goes on", async () => {
    const name = "kept";
    await server.api.ok("createQueue", { ...queueOf(name), concurrency: 2 });
    await server.api.ok("updateQueue", { ...queueOf(name), concurrency: 3 });
    await server.api.ok("updateQueue", { ...queueOf(name), concurrency: 4 });
    for (const n of [1, 2, 3]) await server.api.ok("submitPullRequest", prOf(n, name));
    await ciFinishes(server, clock);
    for (const n of [1, 2, 3]) expect((await server.api.ok("getSubmittedPullRequest", prOf(n, name))).state).toBe("merged");
    const merged = await counts(name);
    expect(merged.doneEffects).toBeGreaterThan(3);
    expect(merged.transitions).toBeGreaterThan(3);
    expect(merged.settingsChanges).toBe(2);
    expect(merged.operatorSettingsChanges).toBe(2);

    // A week and a day later a PR waits in line (submitted now): only done effects are old enough.
    clock.advance(8 * DAY_MS);
    await server.api.ok("submitPullRequest", prOf(4, name));
    const pruned = await pruneHistory(server.greenline.services, { historyDays: 90, effectDays: 7, auditDays: 365 }, 2);
    expect(pruned).toMatchObject({ queueEvents: 0, runs: 0, pullRequests: 0 });
    // Every done effect goes (PR 4's pending effects are numbered after them); the pending ones stay.
    expect(pruned.effects).toBe(merged.doneEffects);
    const afterEffects = await counts(name);
    expect(afterEffects.doneEffects).toBe(0);
    expect(afterEffects.pendingEffects).toBeGreaterThan(0);
    expect(afterEffects.maxSeq).toBeGreaterThan(merged.maxSeq);
    expect(afterEffects.entries).toBe(4);
    expect(afterEffects.runs).toBeGreaterThan(merged.runs);

    // PR 4 merges; its effects are numbered after every effect the queue ever had.
    await ciFinishes(server, clock);
    expect((await server.api.ok("getSubmittedPullRequest", prOf(4, name))).state).toBe("merged");
    expect((await counts(name)).maxSeq).toBeGreaterThan(merged.maxSeq);

    // With nothing pending, the queue's last effect stays, done: the next is numbered after it.
    const beforeLast = await counts(name);
    clock.advance(8 * DAY_MS);
    await pruneHistory(server.greenline.services, { historyDays: 90, effectDays: 7, auditDays: 365 }, 2);
    expect(await counts(name)).toMatchObject({ doneEffects: 1, pendingEffects: 0, maxSeq: beforeLast.maxSeq });

    // 0 keeps history forever.
    clock.advance(100 * DAY_MS);
    expect(await pruneHistory(server.greenline.services, { historyDays: 0, effectDays: 0, auditDays: 0 })).toEqual({ effects: 0, queueEvents: 0, runs: 0, pullRequests: 0, auditEntries: 0 });

    // A PR in line now stays; PRs 1–4 (finished over 90 days ago), their transitions, the archived
    // runs and the events go; the latest settings change stays.
    await server.api.ok("submitPullRequest", prOf(5, name));
    const old = await pruneHistory(server.greenline.services, { historyDays: 90, effectDays: 7, auditDays: 365 }, 2);
    expect(old.pullRequests).toBe(4);
    expect(old.runs).toBeGreaterThan(0);
    const left = await counts(name);
    expect(left).toMatchObject({ entries: 1, settingsChanges: 1, operatorSettingsChanges: 1 });
    // The operator's events still show the latest settings change.
    const shown = await server.api.ok("getQueueEvents", queueOf(name));
    expect(JSON.stringify(shown)).toContain("settings_changed");
    expect((await server.api.call("getSubmittedPullRequest", prOf(1, name))).status).toBe(404);
    expect((await server.api.ok("getSubmittedPullRequest", prOf(5, name))).state).toMatch(/pending|testing/);

    // The queue goes on: PR 5 merges.
    await ciFinishes(server, clock);
    expect((await server.api.ok("getSubmittedPullRequest", prOf(5, name))).state).toBe("merged");

    // The audit log keeps its own time (a year by default): the queue's creation and its two
    // settings changes, 116 days old, are still there; 30 days' retention prunes them.
    const repo = queueOf(name).repo;
    expect((await server.api.ok("getAuditLog", { page_query: { page_size: 50, page_token: "" }, repo })).entries.map((e: { action: string }) => e.action)).toEqual([
      "queue.settings_changed",
      "queue.settings_changed",
      "queue.created",
    ]);
    const audited = await pruneHistory(server.greenline.services, { historyDays: 90, effectDays: 7, auditDays: 30 });
    expect(audited.auditEntries).toBeGreaterThanOrEqual(3);
    expect((await server.api.ok("getAuditLog", { page_query: { page_size: 50, page_token: "" }, repo })).entries).toEqual([]);
  });
});
