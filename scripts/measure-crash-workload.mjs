// Usage: node scripts/measure-crash-workload.mjs <checkout> <tsx|dist> <sqlite|pg> — the crash-safety workload (3 queues x 60 PRs, sandbox CI 150 ms,
// 20 ms ticks) without kills: service CPU (from /proc) at start, after submissions and after draining; PG transactions.
import { execSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cpuMsOf, spawnService } from "./service-child.mjs";
const [root, mode, backend] = process.argv.slice(2);
const cpu = cpuMsOf;
const psql = (sql, db = "postgres") => execSync(`psql -h 127.0.0.1 -U postgres -d ${db} -Atqc "${sql}"`).toString().trim();
let url;
if (backend === "pg") {
  psql("drop database if exists crash_work");
  psql("create database crash_work");
  url = "postgresql://postgres@127.0.0.1:5432/crash_work";
} else url = `file:${mkdtempSync(join(tmpdir(), "work-"))}/g.db`;
const TOKEN = "crash-test-token-0123456789";
const port = 40000 + Math.floor(Math.random() * 20000);
const child = spawnService(root, mode, {
  url,
  port,
  token: TOKEN,
  env: { GREENLINE_SANDBOX_CI_MS: "150", GREENLINE_SANDBOX_FAILURE_RATE: "0.05", GREENLINE_SANDBOX_FLAKE_RATE: "0.05" },
});
const base = `http://127.0.0.1:${port}`;
const t0 = performance.now();
for (;;) {
  if (
    await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    )
  )
    break;
  await new Promise((r) => setTimeout(r, 20));
}
const xact = () => (backend === "pg" ? Number(psql("select xact_commit from pg_stat_database where datname='crash_work'")) : 0);
const marks = [["healthy", performance.now() - t0, cpu(child.pid), xact()]];
const call = async (op, body) => {
  const r = await fetch(`${base}/v1/${op}`, { method: "POST", headers: { "content-type": "application/json", "x-api-token": TOKEN }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json().catch(() => null) };
};
const repo = (name) => ({ host: "github.com", owner: "acme", name });
const QUEUES = [
  { name: "chain", settings: { concurrency: 4, canOptimisticallyMerge: true, pendingFailureDepth: 1 } },
  { name: "batches", settings: { concurrency: 2, batch: true, batchingMinSize: 1, bisectionConcurrency: 2, optimizationMode: "bisection_skip_redundant_tests" } },
  { name: "lanes", settings: { mode: "parallel", concurrency: 4, batch: true, batchingMinSize: 1, bisectionConcurrency: 2, canOptimisticallyMerge: true, pendingFailureDepth: 1 } },
];
const targetsOf = (n) => (n % 3 === 0 ? [`//t${n % 5}`, `//t${(n + 1) % 5}`] : [`//t${n % 5}`]);
for (const q of QUEUES) {
  const r = await call("createQueue", { repo: repo(q.name), targetBranch: "main", ...q.settings });
  if (r.status !== 200) throw new Error(JSON.stringify(r));
}
for (let n = 1; n <= 60; n++)
  for (const q of QUEUES) {
    const address = { repo: repo(q.name), targetBranch: "main", pr: { number: n } };
    if (q.settings.mode === "parallel") {
      const r = await call("setImpactedTargets", { ...address, impactedTargets: targetsOf(n) });
      if (r.status !== 200) throw new Error(JSON.stringify(r));
    }
    const r = await call("submitPullRequest", address);
    if (r.status !== 200) throw new Error(JSON.stringify(r));
  }
marks.push(["submitted", performance.now() - t0, cpu(child.pid), xact()]);
for (;;) {
  const qs = await Promise.all(QUEUES.map((q) => call("getQueue", { repo: repo(q.name), targetBranch: "main" })));
  if (qs.every((r) => r.status === 200 && r.body.enqueuedPullRequests.length === 0)) break;
  await new Promise((r) => setTimeout(r, 200));
}
marks.push(["drained", performance.now() - t0, cpu(child.pid), xact()]);
await new Promise((r) => setTimeout(r, 3000));
marks.push(["idle+3s", performance.now() - t0, cpu(child.pid), xact()]);
child.kill("SIGKILL");
let prev = [0, 0, 0];
for (const [name, wall, c, x] of marks) {
  console.log(`${name.padEnd(10)} wall ${(wall / 1000).toFixed(1).padStart(6)} s  service cpu ${(c / 1000).toFixed(2).padStart(6)} s (+${((c - prev[1]) / 1000).toFixed(2)})  pg xacts +${x - prev[2]}`);
  prev = [wall, c, x];
}
console.log(
  `load ${(await import("node:os"))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
