import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import pg from "pg";
import { loadMigrations, migratePostgres, migrateSqlite } from "../../src/store/migrate.js";
import { BACKENDS } from "../support/backends.js";

const root = join(import.meta.dirname, "../..");

describe.each(BACKENDS)("migrations on $name", (backend) => {
  let database: { url: string; drop(): Promise<void> };
  beforeEach(async () => {
    database = await backend.createDatabase();
  });
  afterEach(() => database.drop());

  async function migrate(migrations = loadMigrations(backend.name)): Promise<string[]> {
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
    expect(await migrate()).toEqual(all);
    expect(await migrate()).toEqual([]);
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
    expect(await migrate()).toEqual(loadMigrations(backend.name).map((m) => m.id));
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
