import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseEnv } from "node:util";
import { generateKeyPairSync } from "node:crypto";
import { WRITTEN_VARIABLES, writeEnvFile } from "../../src/cli/setup-github.js";
import { CONFIG_VARIABLES, loadConfig } from "../../src/config.js";
import { composeEnvironment, resolveComposeEnvironment } from "../support/compose.js";

/**
 * compose.yaml must hand the container every variable Greenline reads: those of the
 * configuration's schema (src/config.ts), those `greenline setup github` writes to .env, and
 * those the README's "Configuration" documents. Compose is not run here (no container runtime):
 * its resolution of `environment:` is reproduced in test/support/compose.ts.
 */

const root = join(import.meta.dirname, "../..");

/** The variables of the README's "Configuration" table (`A` / `B` rows name two). */
function documentedVariables(): string[] {
  const section = readFileSync(join(root, "README.md"), "utf8")
    .split(/^## /m)
    .find((s) => s.startsWith("Configuration"));
  if (!section) throw new Error("README.md has no Configuration section");
  const names = section
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .flatMap((line) => [...line.split("|")[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
  return names;
}

describe("compose.yaml's environment", () => {
  const passed = new Set(Object.keys(composeEnvironment("greenline")));

  test("passes every variable of the configuration's schema", () => {
    expect(CONFIG_VARIABLES.length).toBeGreaterThan(30);
    expect(CONFIG_VARIABLES.filter((name) => !passed.has(name))).toEqual([]);
  });

  test("passes every variable `greenline setup github` writes", () => {
    expect(WRITTEN_VARIABLES).toContain("PRIVATE_KEY");
    expect(WRITTEN_VARIABLES.filter((name) => !passed.has(name))).toEqual([]);
  });

  test("passes every variable the README documents", () => {
    const documented = documentedVariables();
    expect(documented).toEqual(expect.arrayContaining(["GREENLINE_SESSION_SECRET", "GREENLINE_PUBLIC_URL", "GITHUB_CLIENT_ID", "GREENLINE_HEAP_GROWTH_PERCENT"]));
    expect(documented.filter((name) => !passed.has(name))).toEqual([]);
  });

  test("with nothing set, leaves every default to the service (a variable without a value is unset, not empty)", () => {
    const env = resolveComposeEnvironment("greenline", {});
    expect(Object.keys(env).sort()).toEqual(["DATABASE_URL", "GREENLINE_DATA_DIR", "GREENLINE_ENV_FILE", "HOST", "PORT"]);
    const config = loadConfig(env, () => "");
    expect(config.githubApp).toBeNull();
    expect(config.workerIntervalMs).toBe(250);
    expect(config.logLevel).toBe("info");
  });

  describe("with the .env `greenline setup github` writes", () => {
    let dir: string;
    beforeAll(() => (dir = mkdtempSync(join(tmpdir(), "greenline-compose-"))));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    test("runs as the GitHub App, with its OAuth client, the session key and the public address", () => {
      const envFile = join(dir, ".env");
      const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
      const pem = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
      // What register() writes (every variable it may write), plus what an operator adds.
      writeEnvFile(envFile, {
        APP_ID: "12345",
        PRIVATE_KEY: pem,
        WEBHOOK_SECRET: "whsec-0123456789",
        GITHUB_CLIENT_ID: "Iv1.0123456789abcdef",
        GITHUB_CLIENT_SECRET: "0123456789abcdef0123456789abcdef01234567",
        GITHUB_API_URL: "https://ghe.example.com/api/v3",
        GITHUB_URL: "https://ghe.example.com",
        GREENLINE_PUBLIC_URL: "https://greenline.example.com",
        GREENLINE_SESSION_SECRET: "s".repeat(40),
        GREENLINE_WORKER_INTERVAL_MS: "500",
      } satisfies Record<(typeof WRITTEN_VARIABLES)[number], string> & Record<string, string>);
      const dotenv = parseEnv(readFileSync(envFile, "utf8"));
      const env = resolveComposeEnvironment("greenline", dotenv);
      for (const name of Object.keys(dotenv)) expect({ name, value: env[name] }).toEqual({ name, value: dotenv[name] });

      const config = loadConfig(env, () => {
        throw new Error("no file is read: the key is in PRIVATE_KEY");
      });
      expect(config.githubApp).toMatchObject({ appId: "12345", privateKey: pem, webhookSecret: "whsec-0123456789", apiUrl: "https://ghe.example.com/api/v3" });
      expect(config.githubApp?.oauth).toEqual({ clientId: "Iv1.0123456789abcdef", clientSecret: "0123456789abcdef0123456789abcdef01234567", webUrl: "https://ghe.example.com" });
      expect(config.sessionSecret).toBe("s".repeat(40));
      expect(config.publicUrl).toBe("https://greenline.example.com");
      expect(config.workerIntervalMs).toBe(500);
      expect(config.databaseUrl).toBe("postgresql://greenline:greenline@postgres:5432/greenline");
    });
  });
});
