import { Database } from "../../src/store/database.js";
import { claimDueSweeps } from "../../src/store/worker-sweeps.js";
import { SWEEPS } from "../../src/worker/worker.js";
import { BACKENDS } from "../support/backends.js";

/**
 * The worker's sweeps are shared by the replicas (issue 23, goal 3): on PostgreSQL a sweep due
 * is claimed by one replica, not again before its next due time, and made again when its row is
 * gone (the table is UNLOGGED: a crash empties it). SQLite serves one process: every sweep is
 * due at every tick, and claiming writes nothing.
 */
describe.each(BACKENDS)("the worker's sweeps on $name", (backend) => {
  let database: { url: string; drop(): Promise<void> };
  let db: Database;
  const at = (ms: number) => new Date(Date.UTC(2030, 0, 10, 12) + ms);

  beforeAll(async () => {
    database = await backend.createDatabase();
    db = await Database.open(database.url);
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
  });

  const claim = (now: Date, until: Date) => db.write((tx) => claimDueSweeps(tx, SWEEPS, now, until));
  const rows = () => db.read((tx) => tx.workerSweep.count());

  if (backend.name === "sqlite") {
    test("every sweep is due at every tick, and nothing is written", async () => {
      expect([...(await claim(at(0), at(200)))].sort()).toEqual([...SWEEPS].sort());
      expect([...(await claim(at(1), at(201)))].sort()).toEqual([...SWEEPS].sort());
      expect(await rows()).toBe(0);
    });
    return;
  }

  test("a sweep due is claimed once, whoever asks, until it is due again", async () => {
    expect([...(await claim(at(0), at(200)))].sort()).toEqual([...SWEEPS].sort());
    // Another replica's tick before the due time: nothing.
    expect([...(await claim(at(100), at(300)))]).toEqual([]);
    // Five replicas at once, once it is due: each sweep goes to exactly one of them.
    const claims = await Promise.all(Array.from({ length: 5 }, () => claim(at(250), at(450))));
    expect(claims.flatMap((names) => [...names]).sort()).toEqual([...SWEEPS].sort());
  });

  test("rows lost (an UNLOGGED table after a crash) are made again by the next claim, and claimed by it", async () => {
    await db.write((tx) => tx.workerSweep.deleteMany({ where: { name: { in: ["runs-in-flight", "blocked-reasons"] } } }));
    expect([...(await claim(at(300), at(500)))].sort()).toEqual(["blocked-reasons", "runs-in-flight"]);
    expect(await rows()).toBe(SWEEPS.length);
  });
});
