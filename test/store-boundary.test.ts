import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { projectRoot } from "../src/paths.js";

/**
 * SQL and Prisma live in src/store (docs/decisions.md, "Storage"): everything above it calls
 * named store functions that answer domain types, and holds a transaction only as an opaque
 * handle. This scans src/ for the ways that rule gets broken; the probes prove each pattern
 * catches what it is meant to.
 */

const MODELS = [...readFileSync(join(projectRoot, "prisma/schema.base.prisma"), "utf8").matchAll(/^model (\w+) \{/gm)].map(([, name]) => name![0]!.toLowerCase() + name!.slice(1));
const METHODS = ["findUnique", "findUniqueOrThrow", "findFirst", "findFirstOrThrow", "findMany", "create", "createMany", "update", "updateMany", "upsert", "delete", "deleteMany", "count", "groupBy", "aggregate"];

const CROSSINGS: { name: string; pattern: RegExp }[] = [
  { name: "a Prisma model method", pattern: new RegExp(`\\.(${MODELS.join("|")})\\s*\\.\\s*(${METHODS.join("|")})\\s*\\(`) },
  { name: "raw SQL through Prisma", pattern: /\$(queryRaw|executeRaw)\w*/ },
  { name: "a generated Prisma client", pattern: /(from|import\()\s*["'][^"']*(\/generated\/|@prisma\/)/ },
  { name: "SQL text on a table", pattern: /\b(SELECT\b[^;]*?\bFROM|INSERT INTO|UPDATE|DELETE FROM)\s+"[A-Z]\w*"/ },
];

/** Files allowed to cross, each with its reason: none today. A listed file that no longer crosses must leave the list. */
const ALLOWED = new Set<string>([]);

function crossingsIn(source: string): string[] {
  return CROSSINGS.filter(({ pattern }) => pattern.test(source)).map(({ name }) => name);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return ["generated", "store"].includes(entry.name) && dir.endsWith("src") ? [] : sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

describe("SQL and Prisma only in src/store", () => {
  test.each([
    ["a model method", `await tx.queueEntry.findMany({ where: { queueId } });`, "a Prisma model method"],
    ["a model method across lines", `tx.testRun\n  .update({ where: { id } })`, "a Prisma model method"],
    ["a raw query", "await tx.$queryRawUnsafe(`SELECT 1`);", "raw SQL through Prisma"],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the probe is source text holding a template.
    ["a raw statement", 'await tx.$executeRaw`INSERT INTO "Repository" ("id") VALUES (${id})`;', "raw SQL through Prisma"],
    ["a generated type", `import type { Queue } from "../generated/sqlite/client.js";`, "a generated Prisma client"],
    ["Prisma's client", `import { Prisma } from "@prisma/client";`, "a generated Prisma client"],
    ["a select", 'await sql.all(`SELECT "key" FROM "TestCase" WHERE "id" = ?`, [id]);', "SQL text on a table"],
    ["an update", 'await sql.run(`UPDATE "TestCase" SET "ticketUrl" = ?`, [url]);', "SQL text on a table"],
  ])("the check finds %s", (_what, source, crossing) => {
    expect(crossingsIn(source)).toContain(crossing);
  });

  test.each([
    ["a store call", `const queue = await lockQueueRow(tx, id);`],
    ["a transaction", `await services.db.transaction((tx) => completeEffect(tx, id, now));`],
    ["prose", `// Two first uses may race: the insert does nothing for the loser.`],
    ["a field named like a model", `const merged = queue.mergedPrs; entry.state.update;`],
  ])("the check lets %s through", (_what, source) => {
    expect(crossingsIn(source)).toEqual([]);
  });

  test("no file of src/ outside src/store crosses, but the listed ones", () => {
    const found: string[] = [];
    for (const path of sourceFiles(join(projectRoot, "src"))) {
      const file = relative(projectRoot, path);
      const crossings = crossingsIn(readFileSync(path, "utf8"));
      if (ALLOWED.has(file)) {
        if (crossings.length === 0) found.push(`${file} no longer crosses: take it off the allow-list`);
      } else {
        found.push(...crossings.map((crossing) => `${file} uses ${crossing}`));
      }
    }
    expect(found).toEqual([]);
  });
});
