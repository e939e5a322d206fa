import { sqlOf } from "../../src/store/database.js";
import { loadQueueState, snapshotLoads, type Loaded } from "../../src/store/queue-state.js";
import { getQueue, lockQueueRow, QueueGoneError } from "../../src/store/queues.js";
import { snapshotsHeld } from "../../src/store/queue-snapshots.js";
import { lineOf } from "../../src/queue/queues.js";
import { toAppError } from "../../src/api/errors.js";
import { createLogger } from "../../src/log.js";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

/**
 * A decision holding a copy of its queue's rows reads again only those that changed
 * (src/store/queue-snapshots.ts, issue 23 goal 2). The copy must be exactly what a fresh read
 * gives, whoever wrote in between: this process's decisions, a write no code path notes (plain
 * SQL from another connection), another replica's decisions, a transaction rolled back.
 */
describe.each(BACKENDS)("a process's copy of a queue's rows on $name", (backend) => {
  let server: TestServer;
  let queueId: string;

  beforeAll(async () => {
    server = await startTestServer(backend);
    await server.api.ok("createQueue", { ...queueOf(), concurrency: 2 });
    for (let n = 1; n <= 12; n++) await server.api.ok("submitPullRequest", prOf(n));
    queueId = (await server.greenline.services.db.read((tx) => tx.queue.findFirstOrThrow())).id;
  });
  afterAll(async () => {
    await server.close();
  });

  const db = () => server.greenline.services.db;
  /** What a decision would see (the copy used when valid), and a fresh read in the same transaction. */
  const loadBoth = (options: { rollback?: boolean } = {}) =>
    db()
      .transaction(async (tx) => {
        const queue = (await lockQueueRow(tx, queueId))!;
        const taken = await loadQueueState(tx, queue, [], { take: true });
        const fresh = await loadQueueState(tx, queue);
        if (options.rollback) throw Object.assign(new Error("rolled back"), { loads: { taken, fresh } });
        return { taken, fresh };
      })
      .catch((error: { loads?: { taken: Loaded; fresh: Loaded } }) => {
        if (!error.loads) throw error;
        return error.loads;
      });
  const view = (loaded: Loaded) => ({ engine: loaded.engine, entries: [...loaded.entries.values()], runs: [...loaded.runs.values()] });
  const counted = async <T>(work: () => Promise<T>) => {
    const before = { ...snapshotLoads };
    const result = await work();
    return { result, fresh: snapshotLoads.fresh - before.fresh, fromCopy: snapshotLoads.fromCopy - before.fromCopy };
  };

  test("decisions one after another use the copy, and it is what a fresh read gives", async () => {
    await loadBoth();
    const { result, fresh, fromCopy } = await counted(async () => {
      await server.api.ok("submitPullRequest", prOf(13));
      await server.api.ok("cancelPullRequest", prOf(4));
      return loadBoth();
    });
    expect({ fresh, fromCopy }).toEqual({ fresh: 0, fromCopy: 3 });
    expect(view(result.taken)).toEqual(view(result.fresh));
    expect(result.taken.entries.has(13)).toBe(true);
    expect(result.taken.entries.has(4)).toBe(false);
  });

  test("a write no code path notes (plain SQL on another connection) is seen by the next decision", async () => {
    await loadBoth();
    await db().write((tx) => sqlOf(tx).run(`UPDATE "QueueEntry" SET "priorityValue" = 0, "prTitle" = 'renamed' WHERE "queueId" = ? AND "prNumber" = 9`, [queueId]));
    await db().write((tx) => sqlOf(tx).run(`UPDATE "QueueEntry" SET "state" = 'cancelled' WHERE "queueId" = ? AND "prNumber" = 10`, [queueId]));
    const { result, fromCopy } = await counted(() => loadBoth());
    expect(fromCopy).toBe(1);
    expect(view(result.taken)).toEqual(view(result.fresh));
    expect(result.taken.entries.get(9)).toMatchObject({ priorityValue: 0, prTitle: "renamed" });
    expect(result.taken.entries.has(10)).toBe(false);
  });

  test("changes taken by a transaction that rolled back come back with it; the copy stays usable", async () => {
    await loadBoth();
    await db().write((tx) => sqlOf(tx).run(`UPDATE "QueueEntry" SET "prTitle" = 'before the rollback' WHERE "queueId" = ? AND "prNumber" = 11`, [queueId]));
    const rolledBack = await loadBoth({ rollback: true });
    expect(rolledBack.taken.entries.get(11)?.prTitle).toBe("before the rollback");
    const { result, fresh, fromCopy } = await counted(() => loadBoth());
    expect({ fresh, fromCopy }).toEqual({ fresh: 0, fromCopy: 1 });
    expect(result.taken.entries.get(11)?.prTitle).toBe("before the rollback");
    expect(view(result.taken)).toEqual(view(result.fresh));
  });

  test("after another process's decision this process reads everything again", async () => {
    await loadBoth();
    // What another replica's decision does to the database: takes the queue's changes, puts its
    // own token, writes rows (this test's processes share one module registry, hence plain SQL).
    await db().transaction(async (tx) => {
      await lockQueueRow(tx, queueId);
      await sqlOf(tx).run(`DELETE FROM "QueueRowChange" WHERE "queueId" = ?`, [queueId]);
      await sqlOf(tx).run(`UPDATE "Queue" SET "stateToken" = 'another-process:1' WHERE "id" = ?`, [queueId]);
      await sqlOf(tx).run(`UPDATE "QueueEntry" SET "prTitle" = 'other replica' WHERE "queueId" = ? AND "prNumber" = 12`, [queueId]);
    });
    const { result, fresh, fromCopy } = await counted(() => loadBoth());
    expect({ fresh, fromCopy }).toEqual({ fresh: 1, fromCopy: 0 });
    expect(result.taken.entries.get(12)?.prTitle).toBe("other replica");
    expect(view(result.taken)).toEqual(view(result.fresh));
  });

  test("a reader uses the copy without taking the changes, and sees the rows changed since", async () => {
    await loadBoth();
    await db().write((tx) => sqlOf(tx).run(`UPDATE "QueueEntry" SET "prTitle" = 'seen by a reader' WHERE "queueId" = ? AND "prNumber" = 8`, [queueId]));
    const before = snapshotLoads.readFromCopy;
    const read = await db().read(async (tx) => {
      const queue = await getQueue(tx, queueId);
      return { peeked: await loadQueueState(tx, queue, [], { peek: true }), fresh: await loadQueueState(tx, queue) };
    });
    expect(snapshotLoads.readFromCopy - before).toBe(1);
    expect(read.peeked.entries.get(8)?.prTitle).toBe("seen by a reader");
    expect(view(read.peeked)).toEqual(view(read.fresh));
    // Not taken: the next decision still reads that row again.
    const { result } = await counted(() => loadBoth());
    expect(result.taken.entries.get(8)?.prTitle).toBe("seen by a reader");
    expect(view(result.taken)).toEqual(view(result.fresh));
  });

  test("a reader facing more changed rows than its copy holds reads afresh, and the same rows (rows written outside decisions: 4 s a read at 100,000)", async () => {
    await loadBoth();
    // Rows written outside any decision (an import, as bench/history-seed.ts writes): each insert is noted.
    const many = 200;
    await db().write((tx) =>
      sqlOf(tx).run(
        `INSERT INTO "QueueEntry" ("id", "queueId", "prNumber", "prTitle", "prSha", "prBaseBranch", "prAuthor", "state", "stateChangedAt", "stateReason", "priorityValue", "priorityName", "noBatch", "isCurrentlySubmitted", "mergeability", "submittedAt")
         SELECT 'imported-' || n, ?, 1000 + n, 'imported', 'abc', 'main', 'someone', 'merged', ?, 'merged', 100, 'medium', ?, ?, 'mergeable', ? FROM (WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ${many}) SELECT n FROM s) x`,
        [queueId, new Date(), false, false, new Date()],
      ),
    );
    await db().write((tx) => sqlOf(tx).run(`UPDATE "QueueEntry" SET "prTitle" = 'seen afresh' WHERE "queueId" = ? AND "prNumber" = 7`, [queueId]));
    const before = { ...snapshotLoads };
    const read = await db().read(async (tx) => {
      const queue = await getQueue(tx, queueId);
      return { peeked: await loadQueueState(tx, queue, [], { peek: true }), fresh: await loadQueueState(tx, queue) };
    });
    expect(snapshotLoads.readFromCopy - before.readFromCopy).toBe(0);
    expect(read.peeked.entries.get(7)?.prTitle).toBe("seen afresh");
    expect(view(read.peeked)).toEqual(view(read.fresh));
    // The decision after it takes the notes, reads afresh too, and its copy is used again after.
    const { result, fresh } = await counted(() => loadBoth());
    expect(fresh).toBe(1);
    expect(view(result.taken)).toEqual(view(result.fresh));
    expect((await counted(() => loadBoth())).fromCopy).toBe(1);
  });

  test("runs the worker starts and finishes are seen, and the copy follows them", async () => {
    await server.greenline.worker.drain();
    const { result } = await counted(() => loadBoth());
    expect(result.taken.runs.size).toBeGreaterThan(0);
    expect(view(result.taken)).toEqual(view(result.fresh));
    // A run's row changed behind the engine's back (its status), as an effect's write would.
    const run = [...result.taken.runs.values()][0]!;
    await db().write((tx) => sqlOf(tx).run(`UPDATE "TestRun" SET "testBranch" = 'greenline/changed' WHERE "id" = ?`, [run.id]));
    const after = await loadBoth();
    expect(after.taken.runs.get(run.runId)?.testBranch).toBe("greenline/changed");
    expect(view(after.taken)).toEqual(view(after.fresh));
  });

  test("a snapshot reads one state, whatever commits while it reads (the line's reading)", async () => {
    const title = (tx: Parameters<Parameters<ReturnType<typeof db>["snapshot"]>[0]>[0]) =>
      sqlOf(tx)
        .all<{ prTitle: string }>(`SELECT "prTitle" FROM "QueueEntry" WHERE "queueId" = ? AND "prNumber" = 7`, [queueId])
        .then((rows) => rows[0]!.prTitle);
    await db().write((tx) => sqlOf(tx).run(`UPDATE "QueueEntry" SET "prTitle" = 'first' WHERE "queueId" = ? AND "prNumber" = 7`, [queueId]));
    const seen = await db().snapshot(async (tx) => {
      const before = await title(tx);
      // A decision commits between two statements of the reading.
      await db().transaction(async (w) => {
        await lockQueueRow(w, queueId);
        await sqlOf(w).run(`UPDATE "QueueEntry" SET "prTitle" = 'second' WHERE "queueId" = ? AND "prNumber" = 7`, [queueId]);
      });
      return { before, after: await title(tx) };
    });
    expect(seen).toEqual({ before: "first", after: "first" });
    expect(await db().read((tx) => title(tx))).toBe("second");
    // The line is read in one: its PR 7 and its version agree.
    const version = (await db().read((tx) => getQueue(tx, queueId))).version;
    const line = await lineOf(server.greenline.services, queueId, version);
    expect(line.queue.version).toBe(version);
    expect(line.entries.get(7)?.prTitle).toBe("second");
  });

  test("a queue deleted while a reader reads it answers not found, and its copy is dropped", async () => {
    await server.api.ok("createQueue", { ...queueOf(), targetBranch: "gone" });
    for (let n = 1; n <= 3; n++) await server.api.ok("submitPullRequest", { ...prOf(100 + n), targetBranch: "gone" });
    const gone = (await db().read((tx) => tx.queue.findFirstOrThrow({ where: { branch: "gone" } }))).id;
    for (let n = 1; n <= 3; n++) await server.api.ok("cancelPullRequest", { ...prOf(100 + n), targetBranch: "gone" });
    const held = snapshotsHeld().queues;
    await server.api.ok("deleteQueue", { ...queueOf(), targetBranch: "gone" });
    expect(snapshotsHeld().queues).toBe(held - 1);
    const error = await lineOf(server.greenline.services, gone, 0).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(QueueGoneError);
    expect(toAppError(error, createLogger("silent")).code).toBe("not_found");
  });
});
