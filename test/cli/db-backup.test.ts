import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BACKENDS } from "../support/backends.js";
import { runGreenlineCli } from "../support/cli-process.js";
import { ciFinishes, prOf, queueOf, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const sqlite = BACKENDS.find((b) => b.name === "sqlite")!;

/**
 * `greenline db backup` (issue 27, part 5; docs/operations.md): a consistent copy of the SQLite
 * database taken while the service runs, by the real CLI in its own process; a service started
 * on the restored copy picks the queue up where the backup left it and merges its PRs.
 */
describe("backup and restore, sqlite", () => {
  let dir: string;
  let first: TestServer | undefined;
  let restored: TestServer | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "greenline-backup-"));
  });
  afterAll(async () => {
    await restored?.close();
    await first?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("backed up while PRs are tested, restored: the queue resumes, every PR merges once; an existing file and PostgreSQL are refused", async () => {
    const clock = new TestClock();
    first = await startTestServer(sqlite, { now: clock.now });
    await first.api.ok("createQueue", queueOf("kept"));
    for (const n of [1, 2, 3]) await first.api.ok("submitPullRequest", prOf(n, "kept"));
    await first.greenline.worker.drain();
    const before = await first.api.ok("getQueue", queueOf("kept"));
    expect(before.enqueuedPullRequests.map((pr: { state: string }) => pr.state)).toContain("testing");

    const file = join(dir, "greenline-backup.db");
    const made = await runGreenlineCli(["db", "backup", "--to", file], { DATABASE_URL: first.databaseUrl });
    expect([made.code, made.stdout]).toEqual([0, expect.stringContaining(`backed up the database to ${file}`)]);
    expect(existsSync(file)).toBe(true);
    // Never over a file that exists; PostgreSQL is pg_dump's.
    const again = await runGreenlineCli(["db", "backup", "--to", file], { DATABASE_URL: first.databaseUrl });
    expect([again.code, again.stdout]).toEqual([1, expect.stringContaining("exists")]);
    const pg = await runGreenlineCli(["db", "backup", "--to", join(dir, "x.db")], { DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/none" });
    expect([pg.code, pg.stdout]).toEqual([1, expect.stringContaining("pg_dump")]);

    // The first service goes on after the backup (its later work is not in the copy), then stops.
    await first.close();
    first = undefined;
    restored = await startTestServer(sqlite, { databaseFile: file, now: clock.now });
    const resumed = await restored.api.ok("getQueue", queueOf("kept"));
    expect(resumed.enqueuedPullRequests.map((pr: { prNumber: number }) => pr.prNumber).sort()).toEqual([1, 2, 3]);
    // The sandbox's CI answers on the restored copy: the runs finish and the PRs merge.
    for (let i = 0; i < 6; i++) await ciFinishes(restored, clock);
    for (const n of [1, 2, 3]) expect((await restored.api.ok("getSubmittedPullRequest", prOf(n, "kept"))).state).toBe("merged");
  }, 60_000);
});
