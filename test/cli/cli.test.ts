import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { BACKENDS } from "../support/backends.js";
import { ApiClient, queueOf, startTestServer, type TestServer } from "../support/harness.js";

const run = promisify(execFile);
const root = join(import.meta.dirname, "../..");

/** Runs the real `greenline` CLI in its own process. */
async function greenline(databaseUrl: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: databaseUrl },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe.each(BACKENDS)("greenline CLI on $name", (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
    await server.api.ok("createQueue", queueOf());
  });
  afterAll(() => server?.close());

  test("token create prints a working token as its last line; list shows it; revoke stops it", async () => {
    const created = await greenline(server.databaseUrl, "token", "create", "--org", "acme", "--name", "ci-bot");
    expect(created.code).toBe(0);
    const token = created.stdout.trim().split("\n").at(-1)!;
    expect(token).toMatch(/^glt_[A-Za-z0-9_-]{43}$/);
    const client = new ApiClient(server.url, token);
    expect((await client.call("getQueue", queueOf())).status).toBe(200);

    const listed = await greenline(server.databaseUrl, "token", "list", "--org", "acme");
    expect(listed.code).toBe(0);
    const line = listed.stdout.split("\n").find((l) => l.includes("ci-bot"))!;
    expect(line).toContain("active");
    expect(listed.stdout).not.toContain(token);
    const id = line.split("\t")[0]!;

    const revoked = await greenline(server.databaseUrl, "token", "revoke", id);
    expect(revoked).toMatchObject({ code: 0 });
    expect((await client.call("getQueue", queueOf())).status).toBe(401);
    expect((await greenline(server.databaseUrl, "token", "list", "--org", "acme")).stdout).toMatch(/ci-bot\t.*revoked/);
  });

  test("a token created for a new organization sees only that organization", async () => {
    const created = await greenline(server.databaseUrl, "token", "create", "--org", "initech");
    const client = new ApiClient(server.url, created.stdout.trim().split("\n").at(-1)!);
    expect((await client.call("getQueue", queueOf())).status).toBe(404);
  });

  test("mistakes are reported with usage and exit code 2", async () => {
    expect((await greenline(server.databaseUrl, "token", "create")).code).toBe(2);
    expect((await greenline(server.databaseUrl, "token", "create", "--org", "bad slug!")).code).toBe(2);
    expect((await greenline(server.databaseUrl, "frobnicate")).code).toBe(2);
    const missing = await greenline(server.databaseUrl, "token", "revoke", "no-such-id");
    expect(missing.code).toBe(1);
  });

  test("db migrate is idempotent", async () => {
    const migrated = await greenline(server.databaseUrl, "db", "migrate");
    expect(migrated).toMatchObject({ code: 0, stdout: "database is up to date\n" });
  });
});
