import pg from "pg";

/** The PostgreSQL server tests use; each test suite creates its own database on it. */
export const POSTGRES_ADMIN_URL = process.env.GREENLINE_TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates an empty database and returns its URL and a function that drops it. */
export async function createPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `greenline_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  await admin((c) => c.query(`CREATE DATABASE "${name}"`));
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}
