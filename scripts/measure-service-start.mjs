// Usage: node scripts/measure-service-start.mjs <checkout> <tsx|dist> [n] — the service's start-up: wall time and CPU time (user+sys, /proc) to /healthz on a fresh SQLite database, then its CPU per second idle (3-8 s after start, 20 ms ticks).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cpuMsOf, spawnService } from "./service-child.mjs";
const [root, mode, n = "5", dbArg] = process.argv.slice(2);
const cpu = cpuMsOf;
const dir = mkdtempSync(join(tmpdir(), "startup-"));
const db = dbArg ?? `file:${dir}/g.db`;
for (let i = 0; i < Number(n); i++) {
  const port = 40000 + Math.floor(Math.random() * 20000);
  const t0 = performance.now();
  const child = spawnService(root, mode, { url: db, port, token: "crash-test-token-0123456789", stdio: ["ignore", "ignore", "inherit"] });

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
