import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
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

describe("greenline test: uploads, quarantine-aware exit codes, overrides (against a real server)", () => {
  let server: TestServer;
  let dir: string;
  const report = (name: string, cases: [string, "pass" | "fail"][]) => {
    const body = cases.map(([test, outcome]) => `<testcase classname="api.Tests" name="${test}">${outcome === "fail" ? `<failure message="${test} failed"/>` : ""}</testcase>`).join("");
    writeFileSync(join(dir, "reports", name), `<testsuites><testsuite name="api">${body}</testsuite></testsuites>`);
  };
  /** `greenline test <command> <options> [-- command]`: the options go before any `--`. */
  const cli = (command: string, ...args: string[]) =>
    greenline("file:/nonexistent/unused.db", "test", command, "--org", "acme", "--repo", "acme/web", "--branch", "main", "--junit", join(dir, "reports", "*.xml"), ...args);
  const withServer = (command: string, ...args: string[]) => cli(command, "--url", server.url, "--token", server.api.token, ...args);

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!);
    dir = mkdtempSync(join(tmpdir(), "greenline-cli-"));
    mkdirSync(join(dir, "reports"));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });

  test("upload, then run: a command failing only through quarantined tests exits 0; any other failure keeps its code", async () => {
    // The same commit fails and passes test_flaky: it is found flaky and quarantined.
    report("a.xml", [
      ["test_flaky", "fail"],
      ["test_solid", "pass"],
    ]);
    const first = await withServer("upload", "--commit", "c0ffee0");
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/uploaded 2 tests \(1 failed\) from 1 report\(s\)/);
    report("a.xml", [
      ["test_flaky", "pass"],
      ["test_solid", "pass"],
    ]);
    expect((await withServer("upload", "--commit", "c0ffee0")).code).toBe(0);

    report("a.xml", [
      ["test_flaky", "fail"],
      ["test_solid", "pass"],
    ]);
    const masked = await withServer("run", "--commit", "c0ffee1", "--", process.execPath, "-e", "process.exit(3)");
    expect(masked.code).toBe(0);
    expect(masked.stdout).toContain("every failure is a quarantined test; exiting 0 instead of 3");

    report("a.xml", [
      ["test_flaky", "fail"],
      ["test_solid", "fail"],
    ]);
    const real = await withServer("run", "--commit", "c0ffee2", "--", process.execPath, "-e", "process.exit(3)");
    expect(real.code).toBe(3);
    expect(real.stdout).toContain("2 failing test(s), 1 quarantined");

    // A test.each row failing after a passing one is a failing variant, not a pass on retry: it is not masked.
    report("a.xml", [
      ["test_flaky", "fail"],
      ["test_each", "pass"],
      ["test_each", "fail"],
    ]);
    const variant = await withServer("run", "--commit", "c0ffee5", "--", process.execPath, "-e", "process.exit(3)");
    expect(variant.code).toBe(3);
    expect(variant.stdout).toContain("2 failing test(s), 1 quarantined");

    // Unreachable: the command's code stands.
    report("a.xml", [["test_flaky", "fail"]]);
    const offline = await cli("run", "--commit", "c0ffee3", "--url", "http://127.0.0.1:9", "--token", "x", "--", process.execPath, "-e", "process.exit(4)");
    expect(offline.code).toBe(4);
    expect(offline.stdout).toContain("exit code 4 stands");

    // Never quarantine it: the same failure now fails the job.
    const id = (await server.api.ok("flaky-tests/list-quarantined-tests", { repo: { host: "github.com", owner: "acme", name: "web" }, org_url_slug: "acme", page_query: { page_size: 10 } })).quarantined_tests[0]
      .test_case_id;
    const never = await greenline("file:/nonexistent/unused.db", "test", "quarantine", id, "--never", "--url", server.url, "--token", server.api.token, "--org", "acme", "--repo", "acme/web");
    expect(never.code).toBe(0);
    expect(never.stdout).toContain("never; quarantined no");
    const unmasked = await withServer("run", "--commit", "c0ffee4", "--", process.execPath, "-e", "process.exit(3)");
    expect(unmasked.code).toBe(3);
  });

  test("mistakes: no reports matched is exit 70 for upload; a missing repository is a usage error", async () => {
    const none = await greenline(
      "file:/nonexistent/unused.db",
      "test",
      "upload",
      "--junit",
      join(dir, "nothing", "*.xml"),
      "--url",
      server.url,
      "--token",
      "t",
      "--org",
      "acme",
      "--repo",
      "acme/web",
      "--commit",
      "abc1234",
      "--branch",
      "main",
    );
    expect(none.code).toBe(70);
    const usage = await greenline("file:/nonexistent/unused.db", "test", "upload", "--junit", "x.xml", "--url", server.url, "--token", "t", "--org", "acme", "--repo", "nope");
    expect(usage.code).toBe(2);
  });
});
