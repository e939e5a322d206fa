// What the measuring scripts share: a service process started from a checkout, and its CPU time.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

/** CPU time (user + system, ms) the process `pid` has used so far, from /proc (CLK_TCK = 100). */
export function cpuMsOf(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * Starts the service of checkout `root` (`mode` tsx: from its sources; dist: from its build) on
 * `port` with database `url`, a bootstrap token of organization acme, 20 ms worker ticks and
 * `env` on top.
 */
export function spawnService(root, mode, { url, port, token, env = {}, stdio = ["ignore", "ignore", "ignore"] }) {
  const args = mode === "tsx" ? ["--import", "tsx", "src/main.ts"] : ["dist/src/main.js"];
  return spawn(process.execPath, args, {
    cwd: root,
    env: {
      ...process.env,
      LOG_LEVEL: "warn",
      GREENLINE_ENV_FILE: "",
      DATABASE_URL: url,
      GREENLINE_API_TOKEN: token,
      GREENLINE_ORG: "acme",
      PORT: String(port),
      HOST: "127.0.0.1",
      GREENLINE_WORKER_INTERVAL_MS: "20",
      ...env,
    },
    stdio,
  });
}
