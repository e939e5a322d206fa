import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import pg from "pg";
import { loadMigrations, type MigrationOutcome, migratePostgres, migrateSqlite } from "../../src/store/migrate.js";
import { BACKENDS } from "../support/backends.js";

const root = join(import.meta.dirname, "../..");

describe.each(BACKENDS)("migrations on $name", (backend) => {
  let database: { url: string; drop(): Promise<void> };
  beforeEach(async () => {
    database = await backend.createDatabase();
  });
  afterEach(() => database.drop());

  async function migrate(migrations = loadMigrations(backend.name)): Promise<MigrationOutcome> {
    if (backend.name === "sqlite") {
      const db = new BetterSqlite3(database.url.replace(/^file:/, ""));
      try {
        return migrateSqlite(db, migrations);
      } finally {
        db.close();
      }
    }
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      return await migratePostgres(client, migrations);
    } finally {
      await client.end();
    }
  }

  test("apply once, in order, and are recorded", async () => {
    const all = loadMigrations(backend.name).map((m) => m.id);
    expect(all.length).toBeGreaterThan(0);
    expect(await migrate()).toEqual({ applied: all, newer: [] });
    expect(await migrate()).toEqual({ applied: [], newer: [] });
  });

  // A rolling upgrade: a newer release migrated the database while replicas of this one run,
  // and one of them restarts (docs/operations.md, "Upgrades"). It starts, touching nothing.
  test("an older version starts on a database a newer one migrated, and leaves its schema alone", async () => {
    const shipped = loadMigrations(backend.name);
    const newer = [...shipped, { id: "9999_from_a_newer_release", sql: 'CREATE TABLE "FromTheFuture" ("id" TEXT PRIMARY KEY)', checksum: "f".repeat(64) }];
    expect((await migrate(newer)).applied.at(-1)).toBe("9999_from_a_newer_release");
    expect(await migrate(shipped)).toEqual({ applied: [], newer: ["9999_from_a_newer_release"] });
    // Still there: the older version did not undo what it does not know.
    expect(await migrate(newer)).toEqual({ applied: [], newer: [] });
  });

  // Expand/contract keeps one release back working, not two: a contract migration names the
  // oldest migration a replica must know (its floor), and a replica below it refuses the schema.
  test("a contract migration's floor: a version that knows it starts, one older refuses, naming both", async () => {
    const shipped = loadMigrations(backend.name);
    const last = shipped.at(-1)!.id;
    const contract = (floor: string) => ({
      id: "9999_contract",
      sql: `-- greenline:contract drops what the release of ${floor} stopped using\n-- greenline:requires ${floor}\nCREATE TABLE "Contracted" ("id" TEXT PRIMARY KEY)`,
      checksum: "c".repeat(64),
    });
    // The floor is this version's last migration: this version may run on the contracted schema.
    await migrate([...shipped, contract(last)]);
    expect(await migrate(shipped)).toEqual({ applied: [], newer: ["9999_contract"] });
  });

  test("a version below a contract migration's floor refuses to start on its schema", async () => {
    const shipped = loadMigrations(backend.name);
    const next = { id: "9998_next_release", sql: 'CREATE TABLE "Next" ("id" TEXT PRIMARY KEY)', checksum: "d".repeat(64) };
    const contract = { id: "9999_contract", sql: '-- greenline:contract\n-- greenline:requires 9998_next_release\nCREATE TABLE "Contracted" ("id" TEXT PRIMARY KEY)', checksum: "c".repeat(64) };
    await migrate([...shipped, next, contract]);
    await expect(migrate(shipped)).rejects.toThrow("database was contracted by migration 9999_contract, which needs a release that knows migration 9998_next_release");
  });

  test("an older version refuses a database that is ahead of it yet lacks one of its migrations", async () => {
    const shipped = loadMigrations(backend.name);
    const other = [...shipped.slice(0, -1), { id: "9999_other_line", sql: 'CREATE TABLE "OtherLine" ("id" TEXT PRIMARY KEY)', checksum: "e".repeat(64) }];
    await migrate(other);
    await expect(migrate(shipped)).rejects.toThrow(new RegExp(`does not know \\(9999_other_line\\) and lacks ${shipped.at(-1)!.id}`));
  });

  test("a migration changed after it was applied stops the start", async () => {
    await migrate();
    const tampered = loadMigrations(backend.name).map((m, i) => (i === 0 ? { ...m, checksum: "0".repeat(64) } : m));
    await expect(migrate(tampered)).rejects.toThrow(/was changed after it was applied/);
  });

  test("a failing migration leaves nothing behind", async () => {
    const broken = [...loadMigrations(backend.name), { id: "9999_broken", sql: 'CREATE TABLE "Half" ("id" TEXT); SELECT no_such_function();', checksum: "x" }];
    // (toMatchObject, not toThrow: errors of a native module loaded by another test file come from another realm.)
    await expect(migrate(broken)).rejects.toMatchObject({ message: expect.stringMatching(/no_such_function|does not exist|no such function/) });
    // Nothing of the failed run was kept: the good migrations apply again from scratch.
    expect((await migrate()).applied).toEqual(loadMigrations(backend.name).map((m) => m.id));
  });
});

describe("migration files", () => {
  test.each(["sqlite", "postgres"])("the latest %s migration matches the current schema (no drift)", (provider) => {
    const dir = join(root, "prisma/migrations", provider);
    const latest = readdirSync(dir)
      .filter((d) => /^\d{4}_/.test(d))
      .sort()
      .at(-1)!;
    const snapshot = readFileSync(join(dir, latest, "schema.prisma"), "utf8");
    const current = readFileSync(join(root, "prisma", provider, "schema.prisma"), "utf8");
    expect(snapshot).toBe(current);
  });

  test("SQLite and PostgreSQL have the same migrations", () => {
    const ids = (p: string) => readdirSync(join(root, "prisma/migrations", p)).sort();
    expect(ids("sqlite")).toEqual(ids("postgres"));
  });
});
