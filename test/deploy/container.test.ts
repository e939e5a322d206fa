import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../src/config.js";
import { BACKENDS } from "../support/backends.js";
import { resolveComposeEnvironment } from "../support/compose.js";
import { freePort, ServiceProcess } from "../support/service-process.js";

/**
 * The container image is not built here (no registry is reachable for its base images), so
 * what can be checked offline is: the image starts Greenline with the README's start command,
 * its HEALTHCHECK command answers on a real server (and fails when none listens), and
 * compose.yaml configures the service only with variables Greenline reads, with values it accepts.
 */

const root = join(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(join(root, path), "utf8");

/** Dockerfile instructions, continuation lines joined, comments dropped; the runtime stage's. */
function runtimeInstructions(): string[] {
  const lines = read("Dockerfile")
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  const stages = lines.map((line, i) => (/^FROM\s/i.test(line) ? i : -1)).filter((i) => i >= 0);
  return lines.slice(stages[stages.length - 1]);
}

function execForm(instruction: string): string[] {
  const json = instruction.slice(instruction.indexOf("["));
  const command = JSON.parse(json) as unknown;
  if (!Array.isArray(command) || !command.every((part) => typeof part === "string")) throw new Error(`not an exec-form command: ${instruction}`);
  return command;
}

function runtimeCommand(): string[] {
  const cmd = runtimeInstructions().filter((line) => /^CMD\s/i.test(line));
  expect(cmd).toHaveLength(1);
  return execForm(cmd[0]!);
}

function healthcheckCommand(): string[] {
  const healthcheck = runtimeInstructions().filter((line) => /^HEALTHCHECK\s/i.test(line));
  expect(healthcheck).toHaveLength(1);
  const cmd = healthcheck[0]!.match(/\sCMD\s+(\[.*\])$/);
  if (!cmd) throw new Error(`HEALTHCHECK has no exec-form CMD: ${healthcheck[0]}`);
  return execForm(`CMD ${cmd[1]}`);
}

/** Runs an image command on this machine (`node` being the image's node), answering its exit code. */
function run(command: string[], env: Record<string, string>): Promise<number | null> {
  const [program, ...args] = command;
  const child = spawn(program === "node" ? process.execPath : program!, args, { cwd: root, env: { ...process.env, ...env }, stdio: "ignore" });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => resolve(code));
  });
}

/** `environment:` of one compose service, as Compose resolves it with nothing set in the shell or .env. */
function composeEnvironment(service: string): Record<string, string> {
  return resolveComposeEnvironment(service, {});
}

describe("the container image (Dockerfile, compose.yaml)", () => {
  test("runs the README's documented start command", () => {
    const deploying = read("README.md")
      .split(/^## /m)
      .find((section) => section.startsWith("Deploying"));
    expect(deploying).toBeDefined();
    const run = deploying!.match(/\*\*Run\*\* `([^`]+)`/);
    expect(run).not.toBeNull();
    const start = run![1]!.split("&&").pop()!.trim();
    expect(runtimeCommand().join(" ")).toBe(start);
  });

  test("runs as a user other than root", () => {
    const users = runtimeInstructions().filter((line) => /^USER\s/i.test(line));
    expect(users.length).toBeGreaterThan(0);
    expect(users[users.length - 1]!.split(/\s+/)[1]).not.toMatch(/^(root|0)(:.*)?$/);
  });

  test("ships the migrations that the start command applies", () => {
    // WORKDIR /app: the migrations must land in /app/prisma/migrations, beside package.json.
    expect(runtimeInstructions()).toContain("WORKDIR /app");
    expect(runtimeInstructions().some((line) => /^COPY\s.*\s(\.\/|\/app\/)?prisma\/migrations\/?$/.test(line))).toBe(true);
  });

  test("ships the protobuf schema of Trunk's bundles, which the service loads at run time, and the build context keeps it", () => {
    expect(runtimeInstructions().some((line) => /^COPY\s.*\s(\.\/|\/app\/)?proto\/?$/.test(line))).toBe(true);
    expect(read(".dockerignore").split("\n")).not.toContain("proto");
    expect(existsSync(join(root, "proto/trunk/test_context.proto"))).toBe(true);
  });

  test("ships the dashboard's own client module and stylesheet, which the service reads at start", () => {
    expect(runtimeInstructions().some((line) => /^COPY\s.*\s(\.\/|\/app\/)?src\/web\/assets\/?$/.test(line))).toBe(true);
    for (const file of ["app.js", "app.css"]) expect(existsSync(join(root, "src/web/assets", file))).toBe(true);
  });

  test("compose.yaml runs PostgreSQL 15 and sets only variables Greenline reads, with values it accepts", () => {
    expect(read("compose.yaml")).toMatch(/^ {4}image: postgres:15$/m);
    const env = composeEnvironment("greenline");
    // The configuration's schema, and what main.ts reads before it (the env file, the heap's growth).
    const known = new Set([...[...read("src/config.ts").matchAll(/^ {4}([A-Z][A-Z0-9_]+):\s/gm)].map((m) => m[1]), ...[...read("src/main.ts").matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1])]);
    expect(known.has("DATABASE_URL")).toBe(true);
    for (const name of Object.keys(env)) expect({ name, known: known.has(name) }).toEqual({ name, known: true });
    expect(env.DATABASE_URL).toMatch(/^postgresql:\/\/.*@postgres:5432\//);
    const config = loadConfig(env, () => "");
    expect(config.databaseUrl).toBe(env.DATABASE_URL);
    expect(config.port).toBe(3000);
  });

  describe.each(BACKENDS)("HEALTHCHECK on $name", (backend) => {
    let database: Awaited<ReturnType<typeof backend.createDatabase>>;
    let service: ServiceProcess;

    beforeAll(async () => {
      database = await backend.createDatabase();
      service = new ServiceProcess(await freePort(), { DATABASE_URL: database.url });
      await service.start();
    });

    afterAll(async () => {
      await service?.stop();
      await database?.drop();
    });

    test("the image's HEALTHCHECK command asks /healthz (liveness: a database outage must not restart every container), which answers 200 on a running service", async () => {
      const command = healthcheckCommand();
      expect(command.join(" ")).toContain("/healthz");
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
      expect(await run(command, { PORT: String(service.port) })).toBe(0);
    });

    test("the HEALTHCHECK command fails when nothing answers on the port", async () => {
      expect(await run(healthcheckCommand(), { PORT: String(await freePort()) })).not.toBe(0);
    });
  });
});
