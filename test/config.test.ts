import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerToken } from "../src/auth/tokens.js";
import { ConfigError, DEFAULT_DATABASE_URL, loadConfig } from "../src/config.js";
import { Database } from "../src/store/database.js";

const root = join(import.meta.dirname, "..");
const noFile = () => {
  throw new Error("no such file");
};

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env, noFile);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe("loadConfig", () => {
  test("defaults: port 3000, embedded SQLite, sandbox code host", () => {
    expect(loadConfig({}, noFile)).toEqual({
      port: 3000,
      host: "0.0.0.0",
      databaseUrl: DEFAULT_DATABASE_URL,
      logLevel: "info",
      githubApp: null,
      bootstrap: null,
      operatorOrg: null,
      sandbox: { ciMs: 5000, failureRate: 0, flakeRate: 0 },
      workerIntervalMs: 250,
      ciPoll: { firstMs: 30_000, maxMs: 300_000 },
      postgresTimeouts: { statementTimeoutMs: 60_000, idleInTransactionTimeoutMs: 60_000 },
      shutdownTimeoutMs: 10_000,
      maxInFlight: 64,
      databaseWaitMs: 5_000,
      retention: { historyDays: 90, effectDays: 7, auditDays: 365 },
      bundleUrls: { secret: undefined, ttlMs: 900_000 },
      webhooks: { allowPrivate: false, timeoutMs: 10_000, retryBaseMs: 5_000, retryMaxMs: 3_600_000, disableAfterMs: 86_400_000, pollMs: 100, secretKey: null },
    });
  });

  test("the sandbox's faults (a testing aid) by owner, and a bad entry named with its rule", () => {
    const { sandbox } = loadConfig({ GREENLINE_SANDBOX_FAULTS: "inst-000=slow:5000, Inst-001=fail,x=fail-writes" }, noFile);
    expect([...(sandbox.faults ?? [])]).toEqual([
      ["inst-000", { kind: "slow", ms: 5000 }],
      ["inst-001", { kind: "fail" }],
      ["x", { kind: "fail-writes" }],
    ]);
    expect(problemsOf({ GREENLINE_SANDBOX_FAULTS: "inst-000=slow" })).toEqual(['GREENLINE_SANDBOX_FAULTS "inst-000=slow" must be owner=slow:MS, owner=fail or owner=fail-writes']);
    expect(problemsOf({ GREENLINE_SANDBOX_FAULTS: "a=fail,A=slow:1" })).toEqual(['GREENLINE_SANDBOX_FAULTS owner "a" is named twice']);
    expect(problemsOf({ GREENLINE_SANDBOX_FAULTS: "a=slow:600001" })).toEqual(['GREENLINE_SANDBOX_FAULTS "a=slow:600001": a slow call takes at most 600000 ms']);
  });

  test("the public address and the bundle URLs' key and lifetime", () => {
    const config = loadConfig({ GREENLINE_PUBLIC_URL: "https://greenline.example.com/", GREENLINE_BUNDLE_URL_SECRET: "k".repeat(32), GREENLINE_BUNDLE_URL_TTL_SECONDS: "60" }, noFile);
    expect(config.publicUrl).toBe("https://greenline.example.com");
    expect(config.bundleUrls).toEqual({ secret: "k".repeat(32), ttlMs: 60_000 });
  });

  test.each([
    [{ PORT: "http" }, "PORT"],
    [{ PORT: "70000" }, "PORT"],
    [{ DATABASE_URL: "mysql://db/greenline" }, "DATABASE_URL"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL"],
    [{ GREENLINE_MAX_IN_FLIGHT: "0" }, "GREENLINE_MAX_IN_FLIGHT"],
    [{ GREENLINE_DB_WAIT_MS: "soon" }, "GREENLINE_DB_WAIT_MS"],
    [{ GREENLINE_API_TOKEN: "short", GREENLINE_ORG: "acme" }, "GREENLINE_API_TOKEN"],
    [{ GREENLINE_API_TOKEN: "long-enough-token-123" }, "GREENLINE_ORG"],
    [{ GREENLINE_API_TOKEN: "long-enough-token-123", GREENLINE_ORG: "not a slug" }, "GREENLINE_ORG"],
    [{ APP_ID: "123" }, "PRIVATE_KEY"],
    [{ APP_ID: "123", PRIVATE_KEY: "k" }, "WEBHOOK_SECRET"],
    [{ APP_ID: "abc", PRIVATE_KEY: "k", WEBHOOK_SECRET: "s" }, "APP_ID"],
    [{ GREENLINE_PG_STATEMENT_TIMEOUT_MS: "soon" }, "GREENLINE_PG_STATEMENT_TIMEOUT_MS"],
    [{ GREENLINE_WEBHOOK_ALLOW_PRIVATE: "yes" }, "GREENLINE_WEBHOOK_ALLOW_PRIVATE"],
    [{ GREENLINE_WEBHOOK_TIMEOUT_MS: "10" }, "GREENLINE_WEBHOOK_TIMEOUT_MS"],
    [{ GREENLINE_SECRET_KEY: "too-short" }, "GREENLINE_SECRET_KEY"],
    [{ GREENLINE_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS: "0" }, "GREENLINE_PG_IDLE_IN_TRANSACTION_TIMEOUT_MS"],
    [{ GREENLINE_SHUTDOWN_TIMEOUT_MS: "-1" }, "GREENLINE_SHUTDOWN_TIMEOUT_MS"],
    [{ GREENLINE_GITHUB_RESERVE_PERCENT: "most" }, "GREENLINE_GITHUB_RESERVE_PERCENT"],
    [{ GREENLINE_PUBLIC_URL: "greenline.example.com" }, "GREENLINE_PUBLIC_URL"],
    [{ GREENLINE_PUBLIC_URL: "https://greenline.example.com/?x=1" }, "GREENLINE_PUBLIC_URL"],
    [{ GREENLINE_BUNDLE_URL_SECRET: "short" }, "GREENLINE_BUNDLE_URL_SECRET"],
    [{ GREENLINE_BUNDLE_URL_TTL_SECONDS: "1" }, "GREENLINE_BUNDLE_URL_TTL_SECONDS"],
    [{ GREENLINE_GITHUB_RESERVE_PERCENT: "95" }, "GREENLINE_GITHUB_RESERVE_PERCENT"],
    [{ APP_ID: "99", PRIVATE_KEY: "k", WEBHOOK_SECRET: "s", GITHUB_CLIENT_ID: "Iv1.abc" }, "GITHUB_CLIENT_SECRET"],
    [{ APP_ID: "99", PRIVATE_KEY: "k", WEBHOOK_SECRET: "s", GITHUB_CLIENT_SECRET: "secret" }, "GITHUB_CLIENT_ID"],
    [{ GITHUB_CLIENT_ID: "Iv1.abc", GITHUB_CLIENT_SECRET: "secret" }, "APP_ID"],
    [{ GITHUB_URL: "github.example.com" }, "GITHUB_URL"],
  ])("%p is refused, naming %s", (env, variable) => {
    const problems = problemsOf(env);
    expect(problems.some((p) => p.startsWith(variable))).toBe(true);
  });

  test("a GitHub App configuration and a bootstrap token are read", () => {
    const config = loadConfig(
      { APP_ID: "99", PRIVATE_KEY: "-----BEGIN KEY-----\\nabc\\n-----END KEY-----", WEBHOOK_SECRET: "s", GREENLINE_API_TOKEN: "0123456789abcdef", GREENLINE_ORG: "Acme", DATABASE_URL: "postgresql://x@y/z" },
      noFile,
    );
    expect(config.githubApp).toMatchObject({ appId: "99", webhookSecret: "s", privateKey: "-----BEGIN KEY-----\nabc\n-----END KEY-----", reservePercent: 20 });
    const reserved = loadConfig({ APP_ID: "99", PRIVATE_KEY: "k", WEBHOOK_SECRET: "s", GREENLINE_GITHUB_RESERVE_PERCENT: "35" }, noFile);
    expect(reserved.githubApp).toMatchObject({ reservePercent: 35 });
    expect(config.githubApp?.oauth).toBeNull();
    expect(config.bootstrap).toEqual({ token: "0123456789abcdef", org: "acme" });
    expect(config.databaseUrl).toBe("postgresql://x@y/z");
  });
});

function startService(env: Record<string, string>): { done: Promise<{ code: number | null; output: string }>; kill(signal: NodeJS.Signals): void; output(): string } {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], { cwd: root, env: { ...process.env, LOG_LEVEL: "info", GREENLINE_ENV_FILE: "", ...env } });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  return {
    done: new Promise((resolve) => child.on("exit", (code) => resolve({ code, output }))),
    kill: (signal) => child.kill(signal),
    output: () => output,
  };
}

describe("the service process", () => {
  test("the App's OAuth client turns on Sign in with GitHub; GitHub's web address follows the API's unless GITHUB_URL is set", () => {
    const app = { APP_ID: "99", PRIVATE_KEY: "k", WEBHOOK_SECRET: "s", GITHUB_CLIENT_ID: "Iv1.abc", GITHUB_CLIENT_SECRET: "secret" };
    expect(loadConfig(app, noFile).githubApp?.oauth).toEqual({ clientId: "Iv1.abc", clientSecret: "secret", webUrl: "https://github.com" });
    expect(loadConfig({ ...app, GITHUB_API_URL: "https://api.github.com" }, noFile).githubApp?.oauth?.webUrl).toBe("https://github.com");
    expect(loadConfig({ ...app, GITHUB_API_URL: "https://ghe.example.com/api/v3" }, noFile).githubApp?.oauth?.webUrl).toBe("https://ghe.example.com");
    expect(loadConfig({ ...app, GITHUB_API_URL: "https://ghe.example.com/api/v3", GITHUB_URL: "https://code.example.com/" }, noFile).githubApp?.oauth?.webUrl).toBe("https://code.example.com");
  });

  test("a bad variable stops the start with a message naming it", async () => {
    const { code, output } = await startService({ PORT: "eighty" }).done;
    expect(code).toBe(78);
    expect(output).toContain("PORT");
    expect(output).toContain("Invalid configuration");
  });

  test("the env file GREENLINE_ENV_FILE names is read, variables already set win, and a missing one stops the start", async () => {
    const dir = mkdtempSync(join(tmpdir(), "greenline-envfile-"));
    try {
      const file = join(dir, "greenline.env");
      writeFileSync(file, "PORT=eighty\nGREENLINE_HEAP_GROWTH_PERCENT=lots\n");
      const read = await startService({ GREENLINE_ENV_FILE: file, GREENLINE_HEAP_GROWTH_PERCENT: "25" }).done;
      expect(read.code).toBe(78);
      expect(read.output).toContain("PORT");
      expect(read.output).not.toContain("GREENLINE_HEAP_GROWTH_PERCENT");
      const missing = await startService({ GREENLINE_ENV_FILE: join(dir, "nope.env") }).done;
      expect(missing.code).toBe(78);
      expect(missing.output).toContain(`GREENLINE_ENV_FILE cannot be read (${join(dir, "nope.env")})`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("GREENLINE_API_TOKEN already another organization's token stops the start naming both variables and that organization", async () => {
    const dir = mkdtempSync(join(tmpdir(), "greenline-token-org-"));
    try {
      const url = `file:${join(dir, "g.db")}`;
      const token = "0123456789abcdef0123456789abcdef";
      const db = await Database.open(url);
      try {
        await registerToken(db, "globex", token, "theirs");
      } finally {
        await db.close();
      }
      const { code, output } = await startService({ DATABASE_URL: url, PORT: "0", GREENLINE_API_TOKEN: token, GREENLINE_ORG: "acme" }).done;
      expect(code).toBe(78);
      expect(output).toContain('GREENLINE_API_TOKEN is already the API token of organization "globex", not of GREENLINE_ORG ("acme")');
      expect(output).not.toContain("Greenline failed to start");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a heap growth that is not a percentage stops the start naming the variable", async () => {
    const { code, output } = await startService({ GREENLINE_HEAP_GROWTH_PERCENT: "lots" }).done;
    expect(code).toBe(78);
    expect(output).toContain("GREENLINE_HEAP_GROWTH_PERCENT must be an integer from 0 to 1000, not lots");
  });

  test("starts on the embedded default, answers /healthz, and stops cleanly on SIGTERM", async () => {
    const dir = mkdtempSync(join(tmpdir(), "greenline-start-"));
    const port = String(20000 + Math.floor(Math.random() * 20000));
    const service = startService({ PORT: port, HOST: "127.0.0.1", DATABASE_URL: `file:${join(dir, "g.db")}` });
    let status = 0;
    for (let attempt = 0; attempt < 100 && status !== 200; attempt++) {
      status = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.status,
        () => 0,
      );
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
    expect(service.output()).toContain("sandbox code host");
    service.kill("SIGTERM");
    expect((await service.done).code).toBe(0);
  });
});
