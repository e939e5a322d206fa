// Usage: node scripts/measure-service-start.mjs <checkout> <tsx|dist> [n] — the service's start-up: wall time and CPU time (user+sys, /proc) to /healthz on a fresh SQLite database, then its CPU per second idle (3-8 s after start, 20 ms ticks).
import { spawn } from "node:child_process";
import { readFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const [root, mode, n = "5", dbArg] = process.argv.slice(2);
const tick = 100; // CLK_TCK
const cpu = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / tick;
};
const dir = mkdtempSync(join(tmpdir(), "startup-"));
const db = dbArg ?? `file:${dir}/g.db`;
for (let i = 0; i < Number(n); i++) {
  const port = 40000 + Math.floor(Math.random() * 20000);
  const args = mode === "tsx" ? ["--import", "tsx", "src/main.ts"] : ["dist/src/main.js"];
  const t0 = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: {
      ...process.env,
      LOG_LEVEL: "warn",
      GREENLINE_ENV_FILE: "",
      DATABASE_URL: db,
      GREENLINE_API_TOKEN: "crash-test-token-0123456789",
      GREENLINE_ORG: "acme",
      PORT: String(port),
      HOST: "127.0.0.1",
      GREENLINE_WORKER_INTERVAL_MS: "20",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const wall = performance.now() - t0;
  const c = cpu(child.pid);
  await new Promise((r) => setTimeout(r, 3000));
  const c2 = cpu(child.pid);
  await new Promise((r) => setTimeout(r, 5000));
  const idle = (cpu(child.pid) - c2) / 5;
  console.log(`${mode} start: wall ${wall.toFixed(0)} ms, cpu ${c} ms; idle (3-8 s after start): ${idle} ms cpu per s`);
  child.kill("SIGKILL");
  await new Promise((r) => child.once("exit", r));
}
