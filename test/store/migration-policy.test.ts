import { floorOf } from "../../src/store/migrate.js";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type CodeTree, reviewMigration, stillUsed, tablesOfPrismaSchema } from "../support/migration-policy.js";
import { previousReleaseCommit, previousReleaseFile } from "../support/previous-release.js";

/**
 * Every PostgreSQL migration keeps the previous release's replicas working while it is applied
 * (docs/operations.md, "Upgrades"): it only expands, or it is a contract step, marked so, that
 * removes only what neither the previous release nor this code uses.
 */
const root = join(import.meta.dirname, "../..");
const migrationsDir = join(root, "prisma/migrations/postgres");

const kinds = (sql: string) => reviewMigration(sql).findings.map((f) => f.kind);

describe("the expand/contract review of a migration", () => {
  test.each([
    ["a new nullable column", `ALTER TABLE "QueueEntry" ADD COLUMN "stackBelowPr" INTEGER;`],
    ["a new required column with a default", `ALTER TABLE "Queue" ADD COLUMN "flakeHandling" TEXT NOT NULL DEFAULT 'quarantined',\nADD COLUMN "flakyRetries" BIGINT NOT NULL DEFAULT 1;`],
    [
      "a new table, its unique index and foreign key",
      `CREATE TABLE "N" ("id" TEXT NOT NULL, "a" TEXT NOT NULL, CONSTRAINT "N_pkey" PRIMARY KEY ("id"));\nCREATE UNIQUE INDEX "N_a_key" ON "N"("a");\nALTER TABLE "N" ADD CONSTRAINT "N_a_fkey" FOREIGN KEY ("a") REFERENCES "A"("id") ON DELETE CASCADE ON UPDATE CASCADE;`,
    ],
    ["a foreign key on a column added by the same migration", `ALTER TABLE "A" ADD COLUMN "b" TEXT;\nALTER TABLE "A" ADD CONSTRAINT "A_b_fkey" FOREIGN KEY ("b") REFERENCES "B"("id");`],
    ["a plain or partial index", `CREATE INDEX "Effect_pending_createdAt_idx" ON "Effect"("createdAt") WHERE "doneAt" IS NULL;`],
    ["a trigger function whose body deletes", `CREATE FUNCTION "f"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN DELETE FROM "X"; DROP TABLE "Y"; RETURN NEW; END $$;`],
    ["a comment that says DROP", `-- DROP TABLE "Queue"; would be wrong here\nCREATE INDEX "i" ON "A"("b");`],
    ["a renamed constraint", `ALTER TABLE "A" RENAME CONSTRAINT "a" TO "b";`],
  ])("expands: %s", (_name, sql) => {
    expect(kinds(sql)).toEqual([]);
  });

  test.each([
    ["a required column without a default", `ALTER TABLE "A" ADD COLUMN "b" TEXT NOT NULL;`],
    ["a renamed column", `ALTER TABLE "A" RENAME COLUMN "b" TO "c";`],
    ["a renamed table", `ALTER TABLE "A" RENAME TO "B";`],
    ["a changed type", `ALTER TABLE "A" ALTER COLUMN "b" SET DATA TYPE BIGINT;`],
    ["a changed type (short form)", `ALTER TABLE "A" ALTER "b" TYPE BIGINT USING "b"::bigint;`],
    ["a renamed enum value", `ALTER TYPE "State" RENAME VALUE 'a' TO 'b';`],
  ])("is refused: %s", (_name, sql) => {
    expect(kinds(sql)).toEqual(["refused"]);
  });

  test.each([
    ["a dropped table", `DROP TABLE "A";`, [{ table: "A", column: null }]],
    ["a dropped column among other actions", `ALTER TABLE "A" DROP COLUMN "x",\nADD COLUMN "y" TEXT;`, [{ table: "A", column: "x" }]],
    ["a dropped index", `DROP INDEX "A_b_key";`, []],
    ["a dropped constraint", `ALTER TABLE "A" DROP CONSTRAINT "A_b_fkey";`, []],
    ["a column made required", `ALTER TABLE "A" ALTER COLUMN "b" SET NOT NULL;`, []],
    ["a dropped default", `ALTER TABLE "A" ALTER COLUMN "b" DROP DEFAULT;`, []],
    ["existing columns made unique", `CREATE UNIQUE INDEX "A_b_key" ON "A"("b");`, []],
    ["a foreign key on an existing column", `ALTER TABLE "A" ADD CONSTRAINT "A_b_fkey" FOREIGN KEY ("b") REFERENCES "B"("id");`, []],
    ["deleted rows", `DELETE FROM "A" WHERE "b" IS NULL;`, []],
  ])("is a contract step: %s", (_name, sql, removals) => {
    const review = reviewMigration(sql);
    expect(review.findings.map((f) => f.kind)).toEqual(["contract"]);
    expect(review.removals).toEqual(removals);
    expect(review.contract).toBe(false);
    expect(reviewMigration(`-- greenline:contract the previous release stopped reading it\n${sql}`)).toMatchObject({ contract: true, contractReason: "the previous release stopped reading it" });
  });

  const tree = (name: string, prismaSchema: string, files: Record<string, string> = {}): CodeTree => ({
    name,
    prismaSchema,
    filesMentioning: (text) => Object.keys(files).filter((path) => files[path]!.includes(text)),
  });

  test("a removal is refused while a release still has it in its Prisma schema or names it in its SQL", () => {
    const schema = `model A {\n  id  String @id\n  x   Int?\n  bee String @map("b")\n  c   C      @relation(fields: [cId], references: [id])\n  cId String\n}\n\nmodel Gone {\n  id String @id\n  @@map("Old")\n}\n`;
    expect(tablesOfPrismaSchema(schema)).toEqual(
      new Map([
        ["A", new Set(["id", "x", "b", "cId"])],
        ["Old", new Set(["id"])],
      ]),
    );
    const clean = `model A {\n  id String @id\n}\n`;
    expect(stillUsed([{ table: "A", column: "x" }], [tree("the previous release", schema)])).toEqual(['the previous release still has column "A"."x" in its Prisma schema']);
    expect(stillUsed([{ table: "A", column: "b" }], [tree("the previous release", schema)])).toEqual(['the previous release still has column "A"."b" in its Prisma schema']);
    expect(stillUsed([{ table: "Old", column: null }], [tree("the previous release", schema)])).toEqual(['the previous release still has table "Old" in its Prisma schema']);
    expect(stillUsed([{ table: "A", column: "x" }], [tree("this code", clean, { "src/store/a.ts": 'SELECT "x" FROM "A"', "src/other.ts": "x" })])).toEqual(['this code names column "A"."x" in src/store/a.ts']);
    expect(stillUsed([{ table: "A", column: "x" }], [tree("the previous release", clean), tree("this code", clean)])).toEqual([]);
  });
});

describe("the migrations", () => {
  const ids = readdirSync(migrationsDir)
    .filter((name) => /^\d{4}_/.test(name))
    .sort();
  const previous = previousReleaseCommit();
  const inPrevious = new Set(
    execFileSync("git", ["-C", root, "ls-tree", "--name-only", previous, "--", "prisma/migrations/postgres/"], { encoding: "utf8" })
      .split("\n")
      .map((path) => path.split("/").at(-1)!),
  );

  test.each(ids)("%s keeps the previous release working", (id) => {
    const review = reviewMigration(readFileSync(join(migrationsDir, id, "migration.sql"), "utf8"));
    expect(review.findings.filter((f) => f.kind === "refused")).toEqual([]);
    const contractSteps = review.findings.filter((f) => f.kind === "contract");
    if (!review.contract) {
      // Mark it `-- greenline:contract <why>` once nothing uses what it removes (docs/operations.md, "Upgrades").
      expect(contractSteps).toEqual([]);
      return;
    }
    expect(contractSteps.length).toBeGreaterThan(0);
    expect(review.contractReason).not.toBe("");
    // And its floor: the oldest migration a replica must know to run on what it leaves (src/store/migrate.ts, floorOf).
    const floor = floorOf(readFileSync(join(migrationsDir, id, "migration.sql"), "utf8"));
    expect([id, floor !== null && ids.includes(floor) && floor < id]).toEqual([id, true]);
    // Applied while the previous release runs: neither it nor this code may use what it removes.
    // (One the previous release already shipped was checked against its own previous release.)
    if (inPrevious.has(id)) return;
    expect(stillUsed(review.removals, [gitTree(previous), workingTree()])).toEqual([]);
  });
});

function gitTree(commit: string): CodeTree {
  return {
    name: `the previous release (${commit.slice(0, 12)})`,
    prismaSchema: previousReleaseFile("prisma/schema.base.prisma", commit) ?? "",
    filesMentioning(text) {
      try {
        return execFileSync("git", ["-C", root, "grep", "-l", "-F", "-e", text, commit, "--", "src"], { encoding: "utf8" })
          .split("\n")
          .filter((line) => line !== "")
          .map((line) => line.slice(commit.length + 1));
      } catch (error) {
        if ((error as { status?: number }).status === 1) return []; // git grep: no match
        throw error;
      }
    },
  };
}

function workingTree(): CodeTree {
  const src = join(root, "src");
  const files = readdirSync(src, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts") && !join(entry.parentPath, entry.name).includes(join("src", "generated")))
    .map((entry) => join(entry.parentPath, entry.name));
  return {
    name: "this code",
    prismaSchema: readFileSync(join(root, "prisma/schema.base.prisma"), "utf8"),
    filesMentioning: (text) => files.filter((file) => readFileSync(file, "utf8").includes(text)).map((file) => file.slice(root.length + 1)),
  };
}
