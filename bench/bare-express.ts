// The baseline of bench:api: a bare Express 5 app that parses a JSON body and answers JSON,
// with nothing else (no auth, no validation, no database).
import { readFileSync } from "node:fs";
import express from "express";

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
const server = app.listen(Number(process.env.PORT), "127.0.0.1", () => process.send?.("ready"));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
