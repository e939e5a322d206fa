// npm run bench:api-load [-- --requests <n>] [--connections <n>] [--prs <n>] [--cycles <n>] [--backend sqlite|postgres] [--before <dir>] [--server-errors]
//
// The API under a generated mix of valid and invalid requests over a few connections (issue 22,
// item 10), on SQLite and on PostgreSQL: the service in its own process, as `npm start` runs
// it, on a world of queues whose metrics window holds submit/cancel histories. Reports per
// operation p50/p95/p99, the answers over 1 s and over 5 s, the 503s (and whether each had
// Retry-After), other 5xx and the connections that got no answer. With --before, the build of
// another checkout (its dist/src/main.js, e.g. the commit before a change) is measured first in
// the same run, on the same seeded world, so the two can be compared on the same machine load.
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { reportTable, runLoad, seedWorld } from "./load-mix.js";
import { freePort, machine, postgresReachable, startProcess, withAdmin } from "./support.js";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "4000" },
    connections: { type: "string", default: "4" },
    repos: { type: "string", default: "4" },
    prs: { type: "string", default: "40" },
    cycles: { type: "string", default: "5" },
    backend: { type: "string" },
    before: { type: "string" },
    "server-errors": { type: "boolean", default: false },
  },
});
const here = dirname(fileURLToPath(import.meta.url));
const mainScript = join(here, "../src/main.js");
const POSTGRES_ADMIN = process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const TOKEN = "bench-token-0123456789abcdef";

async function measure(backend: string, databaseUrl: string, script = mainScript, label = "this build"): Promise<void> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = { PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: databaseUrl, GREENLINE_API_TOKEN: TOKEN, GREENLINE_ORG: "load", LOG_LEVEL: values["server-errors"] ? "error" : "fatal" };
  const server = await startProcess(script, env, `${base}/healthz`, [], values["server-errors"]);
  try {
    const seedStarted = performance.now();
    const world = await seedWorld(base, TOKEN, { repos: Number(values.repos), prs: Number(values.prs), cycles: Number(values.cycles) });
    const seeded = ((performance.now() - seedStarted) / 1000).toFixed(1);
    const report = await runLoad(base, TOKEN, world, { requests: Number(values.requests), connections: Number(values.connections) });
    console.log(`\n### ${backend}, ${label}: ${values.requests} requests, ${values.connections} connections; seeded ${values.repos} × ${values.prs} PRs × ${values.cycles} submit/cancel rounds in ${seeded} s\n`);
    console.log(reportTable("operation", report));
    console.log(JSON.stringify({ backend, label, report }));
  } finally {
    await server.stop();
  }
}

console.log(
  `bench:api-load — ${machine()}; load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(" ")}`,
);
/** The builds to measure, each on a fresh database: the one given by --before first, then this one. */
const builds: [string, string][] = [...(values.before ? ([[join(values.before, "dist/src/main.js"), `before (${values.before})`]] as [string, string][]) : []), [mainScript, "this build"]];
if (values.backend !== "postgres") {
  for (const [script, label] of builds) {
    const dir = mkdtempSync(join(tmpdir(), "greenline-load-"));
    try {
      await measure("sqlite", `file:${join(dir, "load.db")}`, script, label);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
if (values.backend !== "sqlite") {
  if (await postgresReachable(POSTGRES_ADMIN)) {
    for (const [script, label] of builds) {
      const name = `greenline_load_${process.pid}`;
      await withAdmin(POSTGRES_ADMIN, (c) => c.query(`CREATE DATABASE "${name}"`));
      try {
        const url = new URL(POSTGRES_ADMIN);
        url.pathname = `/${name}`;
        await measure("postgres", url.toString(), script, label);
      } finally {
        await withAdmin(POSTGRES_ADMIN, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
      }
    }
  } else {
    console.warn(`PostgreSQL not reachable at ${POSTGRES_ADMIN}: PostgreSQL skipped`);
  }
}
console.log(
  `load average after: ${loadavg()
    .map((n) => n.toFixed(2))
    .join(" ")}`,
);
