import { countQueries } from "../../bench/query-count.js";
import { Database } from "../../src/store/database.js";
import { claimDueQueues, markAccountQueuesDue, markQueueDue, markUnmarkedQueuesDue, queueDueAt, releaseQueue, renewClaim, type ClaimedQueue } from "../../src/store/due-queues.js";
import { appendEffects } from "../../src/store/effects.js";
import { DUE_QUEUES } from "../../src/worker/worker.js";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * The due-work table (src/store/due-queues.ts): writes that give a queue work mark it due,
 * workers claim due queues instead of sweeping all of them, oldest due first and a bounded
 * amount of work per claim, and on PostgreSQL two workers never claim the same queue at once.
 */
const CI_MS = 60_000;

describe.each(BACKENDS)("due queues, $name", (backend) => {
  let server: TestServer;
  /** A clock that moves 1 ms each time it is read: every effect's doneAt tells the order they were done in. */
  const clock = new TestClock();
  const ticking = () => new Date(clock.ms++);

  beforeAll(async () => {
    server = await startTestServer(backend, { now: ticking, sandbox: { ciMs: CI_MS } });
  });
  afterAll(() => server?.close());

  const db = () => server.greenline.services.db;
  const worker = () => server.greenline.worker;
  const queueId = async (name: string) => (await db().read((tx) => tx.queue.findFirstOrThrow({ where: { repository: { name } }, select: { id: true } }))).id;
  const dueAt = async (name: string) => db().read(async (tx) => queueDueAt(tx, await queueId(name)));
  const timerAt = async (name: string) => (await db().read((tx) => tx.queue.findFirstOrThrow({ where: { repository: { name } } }))).timerAt;

  test("a submission, a timer and a CI result each make their queue due; a queue with nothing to do is not", async () => {
    await server.api.ok("createQueue", { ...queueOf("marks"), batch: true, batchingMinSize: 2, batchingMaxWaitTimeMinutes: 5 });
    await worker().drain();
    expect(await dueAt("marks")).toBeNull();
    // One PR of a batch of two: the queue waits for more, its timer set to the batching wait.
    await server.api.ok("submitPullRequest", prOf(1, "marks"));
    await worker().drain();
    const timer = await timerAt("marks");
    expect(timer).not.toBeNull();
    expect(await dueAt("marks")).toEqual(timer);
    // The timer fires: the batch of one starts its run (an effect), done in the same drain.
    clock.advance(5 * 60_000);
    await worker().drain();
    expect((await server.api.ok("getSubmittedPullRequest", prOf(1, "marks"))).state).toBe("testing");
    // Nothing left to do but its testing timeout's timer: due then, and not before.
    const timeout = await timerAt("marks");
    expect(timeout!.getTime()).toBeGreaterThan(clock.ms + CI_MS);
    expect(await dueAt("marks")).toEqual(timeout);
    // Its CI result arrives: applied, the merge is decided and done.
    clock.advance(CI_MS);
    await worker().drain();
    expect((await server.api.ok("getSubmittedPullRequest", prOf(1, "marks"))).state).toBe("merged");
    expect(await timerAt("marks")).toBeNull();
    expect(await dueAt("marks")).toBeNull();
    // A submission marks the queue due in its own transaction, before any worker runs.
    await server.api.ok("submitPullRequest", prOf(2, "marks"));
    expect(await dueAt("marks")).not.toBeNull();
  });

  test("the safety net: a queue with an effect not done and no due mark is marked due (and its effect runs); a marked or idle queue is left alone", async () => {
    await server.api.ok("createQueue", queueOf("unmarked"));
    await server.api.ok("submitPullRequest", prOf(1, "unmarked"));
    await worker().drain();
    const id = await queueId("unmarked");
    // A hand-made repair: the start of PR 1's run to be done again, and no mark of it.
    await db().transaction(async (tx) => {
      await tx.effect.updateMany({ where: { queueId: id, kind: "start_run" }, data: { doneAt: null } });
      await tx.queueDue.deleteMany({ where: { queueId: id } });
    });
    await worker().drain();
    expect(await dueAt("unmarked")).toBeNull();
    expect(await db().read((tx) => tx.effect.count({ where: { queueId: id, doneAt: null } }))).toBe(1);
    expect(await db().write((tx) => markUnmarkedQueuesDue(tx, ticking()))).toBe(1);
    expect(await dueAt("unmarked")).not.toBeNull();
    // Marked once: a second pass finds nothing to mark.
    expect(await db().write((tx) => markUnmarkedQueuesDue(tx, ticking()))).toBe(0);
    await worker().drain();
    expect(await db().read((tx) => tx.effect.count({ where: { queueId: id, doneAt: null } }))).toBe(0);
  });

  test("fair: a queue with 100 effects due first takes turns of DUE_QUEUES.effectsPerClaim; one with 1 effect is not held behind them", async () => {
    await server.api.ok("createQueue", queueOf("busy"));
    await server.api.ok("createQueue", queueOf("quiet"));
    await worker().drain();
    const [busy, quiet] = [await queueId("busy"), await queueId("quiet")];
    const comment = (n: number) => ({ kind: "pr_comment" as const, prNumber: n, body: `comment ${n}` });
    const context = { now: ticking(), newId: server.greenline.services.newId };
    await db().transaction((tx) =>
      appendEffects(
        tx,
        busy,
        Array.from({ length: 100 }, (_, i) => comment(i + 1)),
        context,
      ),
    );
    await db().transaction((tx) => appendEffects(tx, quiet, [comment(1)], { ...context, now: ticking() }));
    const concurrency = DUE_QUEUES.concurrency;
    DUE_QUEUES.concurrency = 1;
    try {
      await worker().drain();
    } finally {
      DUE_QUEUES.concurrency = concurrency;
    }
    const done = await db().read((tx) => tx.effect.findMany({ where: { queueId: { in: [busy, quiet] } }, select: { queueId: true, doneAt: true } }));
    expect(done.every((e) => e.doneAt !== null)).toBe(true);
    const quietAt = done.find((e) => e.queueId === quiet)!.doneAt!.getTime();
    const busyBefore = done.filter((e) => e.queueId === busy && e.doneAt!.getTime() < quietAt).length;
    expect(busyBefore).toBe(DUE_QUEUES.effectsPerClaim);
  });

  test("claims oldest due first, skips claimed queues until released or their lease ends, and keeps a mark made during a claim", async () => {
    for (const name of ["c1", "c2", "c3"]) await server.api.ok("createQueue", queueOf(name));
    await worker().drain();
    const [c1, c2, c3] = [await queueId("c1"), await queueId("c2"), await queueId("c3")];
    const t = ticking();
    const at = (ms: number) => new Date(t.getTime() + ms);
    await db().transaction(async (tx) => {
      await markQueueDue(tx, c2, at(1));
      await markQueueDue(tx, c1, at(2));
      await markQueueDue(tx, c3, at(10_000));
    });
    const claim = (now: Date, limit = 10) => db().write((tx) => claimDueQueues(tx, db().kind, now, limit, new Date(now.getTime() + 15_000)));
    const first = await claim(at(5), 1);
    expect(first.map((c) => c.queueId)).toEqual([c2]);
    const second = await claim(at(5));
    expect(second.map((c) => c.queueId)).toEqual([c1]);
    // Claimed: not claimed again while the lease lasts; claimable once it ended (a replica that died).
    expect(await claim(at(6))).toEqual([]);
    const claimedAll = await claim(at(15_006));
    const taken = claimedAll.filter((c) => [c1, c2, c3].includes(c.queueId));
    expect(taken.map((c) => c.queueId).sort()).toEqual([c1, c2, c3].sort());
    // Queues other tests left due are released as they were.
    for (const c of claimedAll.filter((x) => !taken.includes(x))) await db().write((tx) => releaseQueue(tx, c, t, t));
    // A mark while claimed: releasing with nothing left keeps the queue due.
    const c2Claim = taken.find((c) => c.queueId === c2)!;
    await db().transaction((tx) => markQueueDue(tx, c2, at(15_007)));
    await db().write((tx) => releaseQueue(tx, c2Claim, null, at(15_008)));
    expect(await db().read((tx) => queueDueAt(tx, c2))).not.toBeNull();
    const again: ClaimedQueue[] = await claim(at(15_009));
    expect(again.map((c) => c.queueId)).toEqual([c2]);
    for (const c of [...again, ...taken.filter((x) => x.queueId !== c2)]) await db().write((tx) => releaseQueue(tx, c, null, at(15_010)));
    expect(await db().read((tx) => tx.queueDue.count({ where: { queueId: { in: [c1, c2, c3] } } }))).toBe(0);
  });

  test("an installation that answers again marks its account's queues due, and no other account's", async () => {
    // "acme-east" starts with "acme": only the account's own repositories ("acme/…") are marked.
    await server.api.ok("createQueue", queueOf("account-a", "main", "acme"));
    await server.api.ok("createQueue", queueOf("account-b", "main", "Acme"));
    await server.api.ok("createQueue", queueOf("account-c", "main", "acme-east"));
    await worker().drain();
    for (const name of ["account-a", "account-b", "account-c"]) expect(await dueAt(name)).toBeNull();
    const at = new Date(clock.ms);
    await db().write((tx) => markAccountQueuesDue(tx, "github.com/acme", at));
    expect(await dueAt("account-a")).toEqual(at);
    expect(await dueAt("account-b")).toEqual(at);
    expect(await dueAt("account-c")).toBeNull();
    await worker().drain();
  });

  test("a renewed lease keeps the queue claimed past the first lease; a claim taken by another worker since is neither renewed nor released by the first", async () => {
    await server.api.ok("createQueue", queueOf("lease"));
    await worker().drain();
    const id = await queueId("lease");
    const t = ticking();
    const at = (ms: number) => new Date(t.getTime() + ms);
    await db().transaction((tx) => markQueueDue(tx, id, at(1)));
    const claim = async (now: Date) => (await db().write((tx) => claimDueQueues(tx, db().kind, now, 100, new Date(now.getTime() + 15_000)))).filter((c) => c.queueId === id);
    const [first] = await claim(at(2));
    expect(first).toBeDefined();
    // Renewed before its end: not claimable after the first lease would have ended.
    expect(await db().write((tx) => renewClaim(tx, first!, at(30_000)))).toBe(true);
    first!.leaseUntil = at(30_000);
    expect(await claim(at(20_000))).toEqual([]);
    // Not renewed in time: another worker claims it; the first's renewal and release change nothing.
    const [second] = await claim(at(30_001));
    expect(second).toBeDefined();
    expect(await db().write((tx) => renewClaim(tx, first!, at(90_000)))).toBe(false);
    await db().write((tx) => releaseQueue(tx, first!, null, at(30_002)));
    expect(await claim(at(30_003))).toEqual([]);
    // The holder's release ends the claim (nothing left: the row goes).
    await db().write((tx) => releaseQueue(tx, second!, null, at(30_004)));
    expect(await dueAt("lease")).toBeNull();
  });

  if (backend.name === "postgres") {
    test("two workers on their own connections claim each due queue exactly once", async () => {
      const names = Array.from({ length: 30 }, (_, i) => `two-${i}`);
      for (const name of names) await server.api.ok("createQueue", queueOf(name));
      await worker().drain();
      const ids = await Promise.all(names.map(queueId));
      const now = ticking();
      await db().transaction(async (tx) => {
        for (const id of ids) await markQueueDue(tx, id, now);
      });
      const other = await Database.open(server.databaseUrl, { migrate: false });
      try {
        const claims: ClaimedQueue[] = [];
        const claimedBy = async (database: Database) => {
          const mine: string[] = [];
          for (;;) {
            const claimed = await database.write((tx) => claimDueQueues(tx, "postgres", now, 2, new Date(now.getTime() + 60_000)));
            if (claimed.length === 0) return mine;
            claims.push(...claimed);
            mine.push(...claimed.map((c) => c.queueId));
          }
        };
        const lease = new Date(now.getTime() + 60_000);
        // The first worker's claim holds its rows (its transaction still open) while the other
        // claims: SKIP LOCKED gives the other different queues at once, without waiting for it.
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        let claimedFirst!: () => void;
        const firstClaimed = new Promise<void>((resolve) => (claimedFirst = resolve));
        const firstOfA = db().transaction(async (tx) => {
          const claimed = await claimDueQueues(tx, "postgres", now, 2, lease);
          claimedFirst();
          await held;
          return claimed;
        });
        await firstClaimed;
        const firstOfB = await other.write((tx) => claimDueQueues(tx, "postgres", now, 2, lease));
        release();
        const heldByA = await firstOfA;
        claims.push(...heldByA, ...firstOfB);
        expect(firstOfB.map((c) => c.queueId).filter((id) => heldByA.some((h) => h.queueId === id))).toEqual([]);
        // Then both claim what is left, at once.
        const [restOfA, restOfB] = await Promise.all([claimedBy(db()), claimedBy(other)]);
        const a = [...heldByA.map((c) => c.queueId), ...restOfA];
        const b = [...firstOfB.map((c) => c.queueId), ...restOfB];
        // Both took part, and every queue was claimed by exactly one of them.
        expect(a.length).toBeGreaterThan(0);
        expect(b.length).toBeGreaterThan(0);
        const all = [...a, ...b].filter((id) => ids.includes(id));
        expect(all.sort()).toEqual([...ids].sort());
        expect(new Set(all).size).toBe(all.length);
        for (const c of claims) await db().write((tx) => releaseQueue(tx, c, null, now));
      } finally {
        await other.close();
      }
    });

    test("an idle worker tick costs the same statements with 3 queues as with 43", async () => {
      const idleTick = async () => {
        await worker().drain();
        const count = countQueries();
        try {
          for (let i = 0; i < 5; i++) await worker().tick();
        } finally {
          count.stop();
        }
        return count.total;
      };
      const few = await idleTick();
      for (let i = 0; i < 40; i++) await server.api.ok("createQueue", queueOf(`idle-${i}`));
      const many = await idleTick();
      expect(many).toBe(few);
    });
  }
});
