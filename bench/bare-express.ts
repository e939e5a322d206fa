// The baseline of bench:api: a bare Express 5 app that parses a JSON body and answers JSON,
// with nothing else (no auth, no validation, no database).
import express from "express";

const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.post("/v1/bare", express.json({ limit: "20mb" }), (req, res) => {
  res.json({ ok: true, echo: typeof req.body });
});
const server = app.listen(Number(process.env.PORT), "127.0.0.1", () => process.send?.("ready"));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
