import { DEFAULT_QUEUE_SETTINGS } from "../../src/domain/queue-settings.js";
import { Database, sqlOf } from "../../src/store/database.js";
import { appendEffects, completeEffect, nextPendingEffect } from "../../src/store/effects.js";
import { createQueue, lockQueueRow } from "../../src/store/queues.js";
import { queueWritesOf } from "../../src/store/queue-writes.js";
import { rebaseRuns, runOf } from "../../src/store/runs.js";
import { BACKENDS, seedAcmeRepository } from "../support/backends.js";

/**
 * The engine's hot-path writes that skip Prisma's per-row or per-statement cost
 * (docs/benchmarks.md) write what Prisma reads back, on both backends: runs rebased in one
 * statement keep their own stacks, an effect marked done in plain SQL reads as done with its
 * date, and a queue locked with UPDATE … RETURNING answers the row as locked.
 */
describe.each(BACKENDS)("hot-path writes on $name", (backend) => {
  let database: { url: string; drop(): Promise<void> };
  let db: Database;
  const now = new Date("2030-01-10T12:00:00.000Z");

  beforeAll(async () => {
    database = await backend.createDatabase();
    db = await Database.open(database.url);
    await db.transaction(async (tx) => {
      await seedAcmeRepository(tx);
      await createQueue(tx, { id: "q", repositoryId: "repo", branch: "main", settings: DEFAULT_QUEUE_SETTINGS, state: "running", head: "h0" });
    });
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
  });

  test("rebased runs keep their own stacks and take the new base; other runs are left alone", async () => {
    await db.transaction(async (tx) => {
      for (const [n, stack] of [
        [1, [1, 2]],
        [2, [1, 2, 3]],
        [3, [1, 4]],
      ] as const) {
        await tx.testRun.create({
          data: { id: `r${n}`, queueId: "q", runId: `run-${n}`, kind: "main", baseSha: "h0", stack: JSON.stringify(stack), tested: JSON.stringify([stack.at(-1)]), status: "running", startedAt: now },
        });
      }
      await rebaseRuns(tx, "h1", [
        { id: "r1", stack: [2] },
        { id: "r2", stack: [2, 3] },
      ]);
    });
    const runs = await db.read(async (tx) => Promise.all([1, 2, 3].map((n) => runOf(tx, "q", `run-${n}`))));
    expect(runs.map((r) => [r!.baseSha, r!.stack])).toEqual([
      ["h1", [2]],
      ["h1", [2, 3]],
      ["h0", [1, 4]],
    ]);
  });

  test("an effect marked done in plain SQL reads as done, with its date; a queue locked answers its row with the version bumped", async () => {
    await db.transaction((tx) => appendEffects(tx, "q", [{ kind: "cancel_run", runId: "run-1" }], { now, newId: () => "e1" }));
    const pending = await db.read((tx) => nextPendingEffect(tx, "q"));
    expect(pending?.id).toBe("e1");
    await db.write((tx) => completeEffect(tx, "e1", now));
    expect(await db.read((tx) => nextPendingEffect(tx, "q"))).toBeNull();
    expect((await db.read((tx) => tx.effect.findUniqueOrThrow({ where: { id: "e1" } }))).doneAt).toEqual(now);

    const before = await db.read((tx) => tx.queue.findUniqueOrThrow({ where: { id: "q" } }));
    const locked = await db.transaction((tx) => lockQueueRow(tx, "q"));
    expect(locked).toMatchObject({ id: "q", branch: "main", state: "running", baseSha: "h0", version: before.version + 1 });
    expect(await db.transaction((tx) => lockQueueRow(tx, "gone"))).toBeNull();
  });

  test("plain SQL through sqlOf(tx) is in the Prisma transaction: it sees the transaction's writes, and a rollback undoes its own", async () => {
    const before = await db.read((tx) => tx.queue.findUniqueOrThrow({ where: { id: "q" } }));
    await expect(
      db.transaction(async (tx) => {
        await tx.queue.update({ where: { id: "q" }, data: { targetHead: "seen-by-plain-sql" } });
        const [row] = await sqlOf(tx).all<{ targetHead: string }>(`SELECT "targetHead" FROM "Queue" WHERE "id" = ?`, ["q"]);
        expect(row?.targetHead).toBe("seen-by-plain-sql");
        await lockQueueRow(tx, "q");
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    const after = await db.read((tx) => tx.queue.findUniqueOrThrow({ where: { id: "q" } }));
    expect({ targetHead: after.targetHead, version: after.version }).toEqual({ targetHead: before.targetHead, version: before.version });
    // Concurrent transactions each get their own connection's plain SQL (PostgreSQL's pool).
    const heads = await Promise.all(
      ["a", "b", "c"].map((head) =>
        db.transaction(async (tx) => {
          await sqlOf(tx).run(`UPDATE "Queue" SET "targetHead" = ? WHERE "id" = ?`, [head, "q"]);
          return (await tx.queue.findUniqueOrThrow({ where: { id: "q" } })).targetHead;
        }),
      ),
    );
    expect(heads).toEqual(["a", "b", "c"]);
  });

  test("what a transaction wrote under the queue's lock is what the database holds, and another replica's write in between shows in the next lock's version", async () => {
    const other = await Database.open(database.url, { migrate: false });
    try {
      const read = await db.read((tx) => tx.queue.findUniqueOrThrow({ where: { id: "q" } }));
      let n = 0;
      const first = await db.transaction(async (tx) => {
        await lockQueueRow(tx, "q");
        await appendEffects(
          tx,
          "q",
          [
            { kind: "cancel_run", runId: "run-2" },
            { kind: "cancel_run", runId: "run-3" },
          ],
          { now, newId: () => `carry-${++n}` },
        );
        return queueWritesOf(tx, "q");
      });
      // Nothing else wrote since the read: the lock answered its version plus one.
      expect(first?.lockedVersion).toBe(Number(read.version) + 1);
      const stored = await db.read((tx) => tx.effect.findMany({ where: { id: { in: ["carry-1", "carry-2"] } }, orderBy: { seq: "asc" } }));
      expect(first?.appended.map((e) => [e.id, e.seq, e.kind])).toEqual(stored.map((e) => [e.id, e.seq, e.kind]));
      expect(stored[1]!.seq).toBe(stored[0]!.seq + 1);
      // Another replica appends to the same queue under its lock.
      await other.transaction(async (tx) => {
        await lockQueueRow(tx, "q");
        await appendEffects(tx, "q", [{ kind: "cancel_run", runId: "run-4" }], { now, newId: () => "carry-other" });
      });
      const next = await db.transaction(async (tx) => {
        await lockQueueRow(tx, "q");
        return queueWritesOf(tx, "q");
      });
      // The effect runner would carry its copy only at first.version + 1: it reads afresh instead.
      expect(next?.lockedVersion).not.toBe(first!.version + 1);
      expect(next?.lockedVersion).toBe(first!.version + 2);
      // Sequence numbers stay in order across processes.
      const otherRow = await db.read((tx) => tx.effect.findUniqueOrThrow({ where: { id: "carry-other" } }));
      expect(otherRow.seq).toBe(stored[1]!.seq + 1);
    } finally {
      await other.close();
    }
  });

  test("the queue's lock says whether its organization has an enabled webhook endpoint", async () => {
    expect((await db.transaction((tx) => lockQueueRow(tx, "q")))?.webhookEndpointsEnabled).toBe(false);
    await db.transaction((tx) =>
      tx.webhookEndpoint.create({ data: { id: "we1", organizationId: "org", url: "https://example.com/hook", secret: "s", events: JSON.stringify(["*"]), enabled: false, createdAt: now, updatedAt: now } }),
    );
    expect((await db.transaction((tx) => lockQueueRow(tx, "q")))?.webhookEndpointsEnabled).toBe(false);
    await db.transaction((tx) => tx.webhookEndpoint.update({ where: { id: "we1" }, data: { enabled: true } }));
    expect((await db.transaction((tx) => lockQueueRow(tx, "q")))?.webhookEndpointsEnabled).toBe(true);
    await db.transaction((tx) => tx.webhookEndpoint.delete({ where: { id: "we1" } }));
  });
});
