import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { BACKENDS } from "../support/backends.js";
import { freePort, ServiceProcess } from "../support/service-process.js";

/**
 * Without GREENLINE_SESSION_SECRET (the quick start), the dashboard's session key is generated
 * once and kept in the data directory, so a restart keeps everyone signed in.
 */

const root = join(import.meta.dirname, "../..");
const TOKEN = "session-restart-token-0123456789";

/** Signs in with the bootstrap token; answers the session cookie. */
async function signIn(url: string): Promise<string> {
  const response = await fetch(`${url}/sign-in`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: url },
    body: new URLSearchParams({ token: TOKEN, next: "/" }),
    redirect: "manual",
  });
  expect(response.status).toBe(303);
  const cookie = response.headers.getSetCookie().find((c) => c.startsWith("greenline_session="));
  expect(cookie).toBeDefined();
  return cookie!.split(";")[0]!;
}

/** The overview with this cookie: 200 when the session holds, 303 to sign-in when it does not. */
async function overviewStatus(url: string, cookie: string): Promise<number> {
  return (await fetch(`${url}/`, { headers: { cookie }, redirect: "manual" })).status;
}

describe.each(BACKENDS)("the generated session key on $name", (backend) => {
  let database: Awaited<ReturnType<typeof backend.createDatabase>>;
  let dataDir: string;
  let service: ServiceProcess | undefined;

  beforeEach(async () => {
    database = await backend.createDatabase();
    dataDir = mkdtempSync(join(tmpdir(), "greenline-data-"));
  });
  afterEach(async () => {
    await service?.stop();
    service = undefined;
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const env = (extra: Record<string, string> = {}) => ({ DATABASE_URL: database.url, GREENLINE_API_TOKEN: TOKEN, GREENLINE_ORG: "acme", GREENLINE_SESSION_SECRET: "", GREENLINE_DATA_DIR: dataDir, ...extra });

  test("is written to the data directory (mode 600) and keeps a session across a restart", async () => {
    const port = await freePort();
    service = new ServiceProcess(port, env());
    await service.start();
    const cookie = await signIn(service.url);
    expect(await overviewStatus(service.url, cookie)).toBe(200);

    const file = join(dataDir, "session-secret");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const secret = readFileSync(file, "utf8").trim();
    expect(secret.length).toBeGreaterThanOrEqual(32);

    await service.stop();
    service = new ServiceProcess(port, env());
    await service.start();
    expect(await overviewStatus(service.url, cookie)).toBe(200);
    expect(readFileSync(file, "utf8").trim()).toBe(secret);
  }, 240_000);

  test("GREENLINE_SESSION_SECRET, when set, is the key, and no file is written", async () => {
    const secret = "given-session-secret-0123456789abcdef";
    service = new ServiceProcess(await freePort(), env({ GREENLINE_SESSION_SECRET: secret }));
    await service.start();
    expect(await overviewStatus(service.url, await signIn(service.url))).toBe(200);
    expect(existsSync(join(dataDir, "session-secret"))).toBe(false);
  }, 120_000);

  test("a file that holds no key stops the start with a message naming it", async () => {
    writeFileSync(join(dataDir, "session-secret"), "short\n", { mode: 0o600 });
    service = new ServiceProcess(await freePort(), env());
    const failed = await service.start().then(
      () => "",
      (error: Error) => error.message,
    );
    expect(failed).toContain(join(dataDir, "session-secret"));
    expect(failed).toContain("does not hold a session key");
    expect(readFileSync(join(dataDir, "session-secret"), "utf8")).toBe("short\n");
  }, 120_000);

  if (backend.name === "sqlite") {
    test("without GREENLINE_DATA_DIR, it is kept beside the SQLite database", async () => {
      service = new ServiceProcess(await freePort(), { ...env(), GREENLINE_DATA_DIR: "" });
      await service.start();
      const file = join(dirname(database.url.replace(/^file:/, "")), "session-secret");
      expect(statSync(file).mode & 0o777).toBe(0o600);
    }, 120_000);
  }
});

describe("processes starting together on one data directory", () => {
  test("all end with the same key, whole", async () => {
    const dir = mkdtempSync(join(tmpdir(), "greenline-data-"));
    try {
      const script = `import { persistedSessionSecret } from "./src/session-secret.ts"; process.stdout.write(JSON.stringify(persistedSessionSecret(${JSON.stringify(dir)})));`;
      const runs = Array.from({ length: 6 }, () => {
        const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
        let out = "";
        child.stdout.on("data", (d) => (out += d));
        return new Promise<{ secret: string; created: boolean }>((resolve, reject) => child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`exit ${code}`)))));
      });
      const kept = await Promise.all(runs);
      expect(new Set(kept.map((k) => k.secret)).size).toBe(1);
      expect(kept.filter((k) => k.created)).toHaveLength(1);
      expect(readFileSync(join(dir, "session-secret"), "utf8").trim()).toBe(kept[0]!.secret);
      expect(statSync(join(dir, "session-secret")).mode & 0o777).toBe(0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
