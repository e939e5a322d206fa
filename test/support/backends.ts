import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
