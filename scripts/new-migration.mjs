#!/usr/bin/env node
// Usage: npm run db:new-migration -- <name>
// Writes prisma/migrations/<provider>/<NNNN>_<name>/migration.sql for SQLite and PostgreSQL:
// the difference between the schema snapshot kept with the latest migration and the current
// schema. The app applies these files itself at start (src/store/migrate.ts).
import { existsSync, mkdirSync, readdirSync, writeFileSync, copyFileSync } from "node:fs";
import { join } from "node:path";
import { providers, prisma, writeSchemas } from "./prisma.mjs";

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error("usage: npm run db:new-migration -- <name in snake_case>");
  process.exit(2);
}
writeSchemas();
for (const provider of Object.keys(providers)) {
  const dir = join("prisma/migrations", provider);
  mkdirSync(dir, { recursive: true });
  const existing = readdirSync(dir)
    .filter((d) => /^\d{4}_/.test(d))
    .sort();
  const last = existing.at(-1);
  const from = last ? ["--from-schema-datamodel", join(dir, last, "schema.prisma")] : ["--from-empty"];
  const sql = prisma(provider, ["migrate", "diff", ...from, "--to-schema-datamodel", `prisma/${provider}/schema.prisma`, "--script"], { capture: true });
  if (!/\b(CREATE|ALTER|DROP)\b/.test(sql)) {
    console.log(`${provider}: no changes`);
    continue;
  }
  const number = String(existing.length + 1).padStart(4, "0");
  const target = join(dir, `${number}_${name}`);
  if (existsSync(target)) throw new Error(`${target} exists`);
  mkdirSync(target);
  writeFileSync(join(target, "migration.sql"), sql);
  copyFileSync(`prisma/${provider}/schema.prisma`, join(target, "schema.prisma"));
  console.log(`${provider}: wrote ${target}/migration.sql`);
}
