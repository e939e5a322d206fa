// The baselines of bench:api: a bare Express 5 app that parses a JSON body and answers JSON,
// with nothing else (no auth, no validation, no ORM).
import { readFileSync } from "node:fs";
import BetterSqlite3 from "better-sqlite3";
import express from "express";
import pg from "pg";

const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.post("/v1/bare", express.json({ limit: "20mb" }), (req, res) => {
  res.json({ ok: true, echo: typeof req.body });
});
// The same answer as getQueue with 1,000 PRs (captured by bench/api.ts), sent as a ready string:
// the cost of moving that many bytes, with no work behind them.
const large = process.env.LARGE_BODY_FILE ? readFileSync(process.env.LARGE_BODY_FILE, "utf8") : "{}";
app.post("/v1/bare-large", express.json({ limit: "20mb" }), (_req, res) => {
  res.type("application/json").send(large);
});

// The write baseline: one INSERT in one transaction, on the driver and durability settings the
// service uses (SQLite: better-sqlite3, WAL, synchronous FULL; PostgreSQL: a pg pool of 20).
const CREATE = `CREATE TABLE IF NOT EXISTS bare_insert (id INTEGER PRIMARY KEY, body TEXT NOT NULL, at TEXT NOT NULL)`;
let insert: ((body: string) => Promise<void>) | null = null;
if (process.env.BARE_SQLITE_FILE) {
  const db = new BetterSqlite3(process.env.BARE_SQLITE_FILE, { timeout: 10_000 });
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec(CREATE);
  const statement = db.prepare("INSERT INTO bare_insert (body, at) VALUES (?, ?)");
  insert = async (body) => {
    db.exec("BEGIN IMMEDIATE");
    try {
      statement.run(body, new Date().toISOString());
      db.exec("COMMIT");
    } catch (error) {
      if (db.inTransaction) db.exec("ROLLBACK");
      throw error;
    }
  };
} else if (process.env.BARE_POSTGRES_URL) {
  const pool = new pg.Pool({ connectionString: process.env.BARE_POSTGRES_URL, max: 20 });
  await pool.query(CREATE.replace("INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY"));
  insert = async (body) => {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("INSERT INTO bare_insert (body, at) VALUES ($1, $2)", [body, new Date().toISOString()]);
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  };
}
app.post("/v1/bare-insert", express.json({ limit: "20mb" }), async (req, res) => {
  if (!insert) {
    res.status(500).json({ error: "no database configured" });
    return;
  }
  await insert(JSON.stringify(req.body));
  res.json({});
});
const server = app.listen(Number(process.env.PORT), "127.0.0.1", () => process.send?.("ready"));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
