// Plain JavaScript: Jest loads global setup outside its module transform.
import { existsSync } from "node:fs";
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
/**
 * Decides once whether the browser suites (test/web/*browser*) run: they need Chromium (Debian's
 * `chromium`, or GREENLINE_CHROMIUM). Without it they are skipped with a notice, except where
 * GREENLINE_REQUIRE_BROWSER=1 (CI), where that is a failure.
 */
function checkBrowser() {
  const path = process.env.GREENLINE_CHROMIUM ?? "/usr/bin/chromium";
  const ok = existsSync(path);
  if (!ok && process.env.GREENLINE_REQUIRE_BROWSER === "1") throw new Error(`GREENLINE_REQUIRE_BROWSER=1 but there is no Chromium at ${path} (apt-get install chromium)`);
  process.env.GREENLINE_TEST_BROWSER = ok ? "1" : "0";
  if (!ok) console.warn(`\n*** No Chromium at ${path}: the dashboard's browser suites are SKIPPED. Install Debian's chromium or set GREENLINE_CHROMIUM. ***\n`);
}

export default async function globalSetup() {
  // Every decision that uses a process's copy of its queue's rows checks it against a fresh read (src/store/queue-state.ts).
  process.env.GREENLINE_CHECK_QUEUE_SNAPSHOTS ??= "1";
  // and keeps copies of every queue, however short its line.
  process.env.GREENLINE_QUEUE_COPY_MIN_ROWS ??= "0";
  checkBrowser();
  const ok = await reachable();
  if (!ok && process.env.GREENLINE_REQUIRE_POSTGRES === "1") {
    throw new Error(`GREENLINE_REQUIRE_POSTGRES=1 but PostgreSQL is not reachable at ${url}`);
  }
  process.env.GREENLINE_TEST_POSTGRES = ok ? "1" : "0";
  if (!ok) {
    console.warn(`\n*** PostgreSQL is not reachable at ${url}: the PostgreSQL suites are SKIPPED and only SQLite is tested. ` + `Set GREENLINE_TEST_POSTGRES_URL to point at a server. ***\n`);
  }
}
