// Plain JavaScript: Jest loads global setup outside its module transform.
import pg from "pg";

const url = process.env.GREENLINE_TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

async function reachable() {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Decides once whether the PostgreSQL suites run. Without a server they are skipped with a
 * notice, except where GREENLINE_REQUIRE_POSTGRES=1 (CI), where that is a failure.
 */
export default async function globalSetup() {
  const ok = await reachable();
  if (!ok && process.env.GREENLINE_REQUIRE_POSTGRES === "1") {
    throw new Error(`GREENLINE_REQUIRE_POSTGRES=1 but PostgreSQL is not reachable at ${url}`);
  }
  process.env.GREENLINE_TEST_POSTGRES = ok ? "1" : "0";
  if (!ok) {
    console.warn(`\n*** PostgreSQL is not reachable at ${url}: the PostgreSQL suites are SKIPPED and only SQLite is tested. ` + `Set GREENLINE_TEST_POSTGRES_URL to point at a server. ***\n`);
  }
}
