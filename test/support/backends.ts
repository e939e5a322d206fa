import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Tx } from "../../src/store/database.js";
import { createPostgresDatabase } from "./postgres.js";

export type Backend = {
  name: "sqlite" | "postgres";
  /** A fresh, empty database for one suite. */
  createDatabase(): Promise<{ url: string; drop(): Promise<void> }>;
};

const sqlite: Backend = {
  name: "sqlite",
  async createDatabase() {
    const dir = mkdtempSync(join(tmpdir(), "greenline-test-"));
    return { url: `file:${join(dir, "greenline.db")}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  },
};

const postgres: Backend = { name: "postgres", createDatabase: createPostgresDatabase };

/** The backends every database test runs against: SQLite always, PostgreSQL when reachable. */
export const BACKENDS: Backend[] = process.env.GREENLINE_TEST_POSTGRES === "1" ? [sqlite, postgres] : [sqlite];

/** The rows store tests build on: organization "org" (slug acme) and its repository "repo", github.com/acme/web. */
export async function seedAcmeRepository(tx: Tx): Promise<void> {
  await tx.organization.create({ data: { id: "org", slug: "acme" } });
  await tx.repository.create({ data: { id: "repo", organizationId: "org", host: "github.com", owner: "acme", name: "web", key: "github.com/acme/web" } });
}
