import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "../..");

/**
 * Whether dist/ (`npm run build`) holds a compiled file at least as new as each source under
 * src/: then it runs what src/ says. A source edited or checked out since the build, or one
 * never built, makes it stale.
 */
export function builtServiceIsFresh(projectRoot = root): boolean {
  const src = join(projectRoot, "src");
  for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".ts") || entry.name.endsWith(".d.ts")) continue;
    const source = join(entry.parentPath, entry.name);
    const built = join(projectRoot, "dist", source.slice(projectRoot.length + 1).replace(/\.ts$/, ".js"));
    if (!existsSync(built) || statSync(built).mtimeMs < statSync(source).mtimeMs) return false;
  }
  return true;
}

let command: string[] | undefined;

/**
 * How the service is started: `node dist/src/main.js` (as `npm start` and the Dockerfile run it)
 * when the build is fresh, else src/main.ts compiled by tsx on the fly. The build starts with
 * ~40% less CPU, which tests that restart the service many times feel on a loaded machine
 * (docs/benchmarks.md, "Crash-safety suite time"). GREENLINE_TEST_SERVICE=tsx or dist forces one.
 */
export function serviceCommand(): string[] {
  const forced = process.env.GREENLINE_TEST_SERVICE;
  if (forced !== undefined && forced !== "" && forced !== "tsx" && forced !== "dist") throw new Error(`GREENLINE_TEST_SERVICE must be tsx or dist, not ${forced}`);
  command ??= forced === "dist" || (forced !== "tsx" && builtServiceIsFresh()) ? ["dist/src/main.js"] : ["--import", "tsx", "src/main.ts"];
  return command;
}

export { findFreePort as freePort } from "../../src/net.js";

/**
 * The real service in a process of its own (serviceCommand: the build as `npm start` runs it, or
 * src/main.ts with tsx), which a test can kill with SIGKILL at any instant and start again on the same database.
 */
export class ServiceProcess {
  #child: ChildProcess | null = null;
  output = "";
  readonly url: string;

  constructor(
    readonly port: number,
    private readonly env: Record<string, string>,
    /** Another build of Greenline to run (its `dist/src/main.js`), e.g. the previous release's; this checkout by default. */
    private readonly build: { root: string } | null = null,
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  async start(): Promise<void> {
    // GREENLINE_ENV_FILE "": a developer's .env in the checkout is not read (a test may name one).
    const child = spawn(process.execPath, this.build ? ["dist/src/main.js"] : serviceCommand(), {
      cwd: this.build?.root ?? root,
      env: { ...process.env, LOG_LEVEL: "warn", GREENLINE_ENV_FILE: "", ...this.env, PORT: String(this.port), HOST: "127.0.0.1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.on("data", (d) => (this.output = (this.output + d).slice(-20_000)));
    child.stderr!.on("data", (d) => (this.output = (this.output + d).slice(-20_000)));
    this.#child = child;
    // Starting takes seconds of CPU (more when tsx compiles src/): on a loaded machine that
    // alone can take many seconds, so the bound is generous (a start that fails exits, and is reported at once).
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}:\n${this.output}`);
      const ok = await fetch(`${this.url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`service did not become healthy:\n${this.output}`);
  }

  /**
   * The CPU time (user + system, ms) the running process has spent so far, from /proc (Linux's
   * clock ticks of 10 ms); null when no process runs or /proc cannot tell. Unlike wall time it
   * measures how much the service did whatever the load of the machine.
   */
  cpuMs(): number | null {
    const pid = this.#child?.pid;
    if (pid === undefined || this.#child?.exitCode !== null || this.#child?.signalCode !== null) return null;
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      return (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      return null;
    }
  }

  /** SIGKILL: no shutdown handler runs, nothing is flushed. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    this.#child = null;
  }

  /** Sends SIGTERM and answers the exit code (null when the process was killed by a signal). */
  async terminate(): Promise<number | null> {
    const child = this.#child;
    if (!child) throw new Error("the service is not running");
    if (child.exitCode !== null) return child.exitCode;
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    return exited;
  }

  async stop(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
}
