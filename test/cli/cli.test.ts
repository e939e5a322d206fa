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
function greenline(databaseUrl: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return greenlineWithEnv({}, databaseUrl, ...args);
}

/** The CLI with `env` over this process's environment. */
async function greenlineWithEnv(env: Record<string, string>, databaseUrl: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], {
      cwd: root,
      env: { ...process.env, ...env, DATABASE_URL: databaseUrl },
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

  test("token create --role read makes a viewer's token: it reads, and the API refuses its writes", async () => {
    const created = await greenline(server.databaseUrl, "token", "create", "--org", "acme", "--name", "viewer", "--role", "read");
    expect(created.stdout).toContain("Created read token");
    const viewer = new ApiClient(server.url, created.stdout.trim().split("\n").at(-1)!);
    expect((await viewer.call("getQueue", queueOf())).status).toBe(200);
    expect((await viewer.call("updateQueue", { ...queueOf(), state: "paused" })).status).toBe(403);
    expect((await greenline(server.databaseUrl, "token", "list", "--org", "acme")).stdout).toMatch(/\tviewer\tread\tcreated /);
  });

  test("mistakes are reported with usage and exit code 2", async () => {
    expect((await greenline(server.databaseUrl, "token", "create")).code).toBe(2);
    expect((await greenline(server.databaseUrl, "token", "create", "--org", "acme", "--role", "owner")).code).toBe(2);
    expect((await greenline(server.databaseUrl, "token", "create", "--org", "bad slug!")).code).toBe(2);
    expect((await greenline(server.databaseUrl, "frobnicate")).code).toBe(2);
    const missing = await greenline(server.databaseUrl, "token", "revoke", "no-such-id");
    expect(missing.code).toBe(1);
  });

  test("db migrate is idempotent", async () => {
    const migrated = await greenline(server.databaseUrl, "db", "migrate");
    expect(migrated).toMatchObject({ code: 0, stdout: "database is up to date\n" });
  });

  // An older version's `db migrate` during a rolling upgrade (docs/operations.md, "Upgrades").
  test("db migrate leaves a database a newer release migrated as it is, and says so", async () => {
    await server.greenline.services.db.transaction((tx) =>
      tx.$executeRawUnsafe(`INSERT INTO "_greenline_migrations" ("id", "checksum", "applied_at") VALUES ('9999_from_a_newer_release', '${"0".repeat(64)}', '${new Date().toISOString()}')`),
    );
    try {
      const migrated = await greenline(server.databaseUrl, "db", "migrate");
      expect(migrated).toMatchObject({ code: 0, stdout: "the database has migrations this version does not know (9999_from_a_newer_release): a newer release migrated it; nothing to do\n" });
    } finally {
      await server.greenline.services.db.transaction((tx) => tx.$executeRawUnsafe(`DELETE FROM "_greenline_migrations" WHERE "id" = '9999_from_a_newer_release'`));
    }
  });
});

describe("greenline test: uploads, quarantine-aware exit codes, overrides (against a real server)", () => {
  let server: TestServer;
  let dir: string;
  const report = (name: string, cases: [string, "pass" | "fail", message?: string][]) => {
    const body = cases.map(([test, outcome, message]) => `<testcase classname="api.Tests" name="${test}">${outcome === "fail" ? `<failure message="${message ?? `${test} failed`}"/>` : ""}</testcase>`).join("");
    writeFileSync(join(dir, "reports", name), `<testsuites><testsuite name="api">${body}</testsuite></testsuites>`);
  };
  /** `greenline test <command> <options> [-- command]`: the options go before any `--`. */
  const cli = (command: string, ...args: string[]) =>
    greenline("file:/nonexistent/unused.db", "test", command, "--org", "acme", "--repo", "acme/web", "--branch", "main", "--junit", join(dir, "reports", "*.xml"), ...args);
  const withServer = (command: string, ...args: string[]) => cli(command, "--url", server.url, "--token", server.api.token, ...args);
  /** A command that writes its report (the one report() staged: a report from before the command is ignored) and exits with `code`. */
  const writesReportAndExits = (code: number) => [
    process.execPath,
    "-e",
    `const fs = require("node:fs"), p = ${JSON.stringify(join(dir, "reports", "a.xml"))}; fs.writeFileSync(p, fs.readFileSync(p)); process.exit(${code})`,
  ];

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!);
    dir = mkdtempSync(join(tmpdir(), "greenline-cli-"));
    mkdirSync(join(dir, "reports"));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });

  test("upload says when the results read as an infrastructure failure", async () => {
    report(
      "a.xml",
      Array.from({ length: 10 }, (_, i): [string, "pass" | "fail"] => [`test_infra_${i}`, i < 6 ? "fail" : "pass"]),
    );
    const uploaded = await withServer("upload", "--commit", "badc0de");
    expect(uploaded.code).toBe(0);
    expect(uploaded.stdout).toContain("greenline: read as an infrastructure failure (6 of 10 tests failed (60%;");
    expect(uploaded.stdout).toContain("no test is marked flaky or broken by it");
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
    const masked = await withServer("run", "--commit", "c0ffee1", "--", ...writesReportAndExits(3));
    expect(masked.code).toBe(0);
    expect(masked.stdout).toContain("every failure is a quarantined test; exiting 0 instead of 3");

    report("a.xml", [
      ["test_flaky", "fail"],
      ["test_solid", "fail"],
    ]);
    const real = await withServer("run", "--commit", "c0ffee2", "--", ...writesReportAndExits(3));
    expect(real.code).toBe(3);
    expect(real.stdout).toContain("2 failing test(s), 1 quarantined");

    // A test.each row failing after a passing one is a failing variant, not a pass on retry: it is not masked.
    report("a.xml", [
      ["test_flaky", "fail"],
      ["test_each", "pass"],
      ["test_each", "fail"],
    ]);
    const variant = await withServer("run", "--commit", "c0ffee5", "--", ...writesReportAndExits(3));
    expect(variant.code).toBe(3);
    expect(variant.stdout).toContain("2 failing test(s), 1 quarantined");

    // Quarantined by detection for the way it failed then: failing another way (a flaky test that broke) counts (issue 25).
    report("a.xml", [["test_flaky", "fail", "AssertionError: expected 3 to equal 4"]]);
    const newWay = await withServer("run", "--commit", "c0ffee6", "--", ...writesReportAndExits(3));
    expect(newWay.code).toBe(3);
    expect(newWay.stdout).toContain("greenline: 1 failing test(s), 0 quarantined");
    expect(newWay.stdout).toContain("greenline: failed, quarantined as flaky but failing in a way first seen after its quarantine (it counts): api.Tests test_flaky");
    // … and the way it failed before is still excused.
    report("a.xml", [["test_flaky", "fail"]]);
    expect((await withServer("run", "--commit", "c0ffee7", "--", ...writesReportAndExits(3))).code).toBe(0);

    // Unreachable: the command's code stands.
    report("a.xml", [["test_flaky", "fail"]]);
    const offline = await cli("run", "--commit", "c0ffee3", "--url", "http://127.0.0.1:9", "--token", "x", "--", ...writesReportAndExits(4));
    expect(offline.code).toBe(4);
    expect(offline.stdout).toContain("exit code 4 stands");

    // Never quarantine it: the same failure now fails the job.
    const id = (await server.api.ok("flaky-tests/list-quarantined-tests", { repo: { host: "github.com", owner: "acme", name: "web" }, org_url_slug: "acme", page_query: { page_size: 10 } })).quarantined_tests[0]
      .test_case_id;
    const connection = ["--url", server.url, "--token", server.api.token, "--org", "acme", "--repo", "acme/web"];
    const never = await greenline("file:/nonexistent/unused.db", "test", "quarantine", id, "--never", "--reason", "a real bug, see #12", ...connection);
    expect(never.code).toBe(0);
    expect(never.stdout).toContain("never (reason: a real bug, see #12); quarantined no");
    // The reason is the API's, shown with the test.
    const stored = await server.api.ok("flaky-tests/get-test-details", { repo: { host: "github.com", owner: "acme", name: "web" }, org_url_slug: "acme", test_id: id });
    expect(stored.test).toMatchObject({ quarantine_setting: "never", quarantine_reason: "a real bug, see #12" });
    const unmasked = await withServer("run", "--commit", "c0ffee4", "--", ...writesReportAndExits(3));
    expect(unmasked.code).toBe(3);
  });

  test("test policy backtest prints what other settings would have changed; a setting out of range is the server's refusal naming the field", async () => {
    const connection = ["--url", server.url, "--token", server.api.token, "--org", "acme", "--repo", "acme/web"];
    const backtest = (...args: string[]) => greenline("file:/nonexistent/unused.db", "test", "policy", "backtest", ...connection, ...args);
    const same = await backtest();
    expect(same.code).toBe(0);
    expect(same.stdout).toContain("replayed under its own settings (no option changes one)");
    expect(same.stdout).toMatch(/tests quarantined at some time\s+\d+\s+\d+/);
    expect(same.stdout).toContain("queue ejections avoided: 0, added: 0");
    const json = await backtest("--since", "7d", "--threshold", "0.5", "--auto-quarantine", "off", "--min-samples", "5", "--json");
    expect(json.code).toBe(0);
    const answer = JSON.parse(json.stdout);
    expect(answer.proposed.settings).toMatchObject({ flakyRate: 0.5, autoQuarantine: false, minSamples: 5 });
    expect(answer.proposed.outcome).toMatchObject({ tests_quarantined: 0, failures_excused: 0 });
    expect(Date.parse(answer.period.to) - Date.parse(answer.period.from)).toBe(7 * 86_400_000);
    const text = await backtest("--threshold", "0.5");
    expect(text.stdout).toContain("replayed under flakyRate 0.3 → 0.5");
    const outOfRange = await backtest("--threshold", "2");
    expect(outOfRange.code).not.toBe(0);
    expect(outOfRange.stderr).toContain("settings.flakyRate");
    expect(await backtest("--since", "a month")).toMatchObject({ code: 2, stderr: expect.stringContaining("--since must be a number of days") });
    expect(await backtest("--auto-quarantine", "maybe")).toMatchObject({ code: 2, stderr: expect.stringContaining("--auto-quarantine must be on or off") });
    expect(await backtest("--threshold", "high")).toMatchObject({ code: 2, stderr: expect.stringContaining("--threshold must be a number") });
    expect(await greenline("file:/nonexistent/unused.db", "test", "policy", "rewind", ...connection)).toMatchObject({ code: 2, stderr: expect.stringContaining("test policy needs a command: backtest") });
  });

  test("--check and --check-run-id (or GREENLINE_CHECK, GREENLINE_CHECK_RUN_ID) name the check the upload comes from; never guessed from GITHUB_JOB", async () => {
    /** The check stored with the upload the CLI's output names. */
    const checkOf = async (stdout: string) => {
      const id = / as (\S+)$/m.exec(stdout)?.[1];
      const [row] = await server.greenline.services.db.sqlRead((sql) => sql.all<{ checkName: string | null; checkRunId: unknown }>(`SELECT "checkName", "checkRunId" FROM "TestUpload" WHERE "id" = ?`, [id]));
      return { name: row!.checkName, runId: row!.checkRunId === null ? null : Number(row!.checkRunId) };
    };
    report("a.xml", [["test_checked", "fail"]]);
    const flags = await withServer("upload", "--commit", "c4ec000", "--check", "tests (ubuntu, 22)", "--check-run-id", "51725241954");
    expect(flags.code).toBe(0);
    expect(flags.stdout).toContain('greenline: from check "tests (ubuntu, 22)", run 51725241954');
    expect(await checkOf(flags.stdout)).toEqual({ name: "tests (ubuntu, 22)", runId: 51725241954 });

    const fromEnv = await greenlineWithEnv(
      { GREENLINE_CHECK: "e2e", GREENLINE_CHECK_RUN_ID: "77" },
      "file:/nonexistent/unused.db",
      "test",
      "run",
      "--org",
      "acme",
      "--repo",
      "acme/web",
      "--branch",
      "main",
      "--commit",
      "c4ec001",
      "--junit",
      join(dir, "reports", "*.xml"),
      "--url",
      server.url,
      "--token",
      server.api.token,
      "--",
      ...writesReportAndExits(1),
    );
    expect(fromEnv.code).toBe(1);
    expect(await checkOf(fromEnv.stdout)).toEqual({ name: "e2e", runId: 77 });

    // In GitHub Actions without the inputs: GITHUB_JOB is the job's id, not its check's name, so nothing is attributed.
    const unnamed = await greenlineWithEnv(
      { GITHUB_ACTIONS: "true", GITHUB_JOB: "test", GREENLINE_CHECK_RUN_ID: "" },
      "file:/nonexistent/unused.db",
      "test",
      "upload",
      "--org",
      "acme",
      "--repo",
      "acme/web",
      "--host",
      "github.com",
      "--branch",
      "main",
      "--commit",
      "c4ec002",
      "--junit",
      join(dir, "reports", "*.xml"),
      "--url",
      server.url,
      "--token",
      server.api.token,
    );
    expect(unnamed.code).toBe(0);
    expect(unnamed.stdout).not.toContain("from check");
    expect(await checkOf(unnamed.stdout)).toEqual({ name: null, runId: null });

    // A check run id that is not one: a usage error naming the option (or the variable), nothing uploaded.
    const bad = await withServer("upload", "--commit", "c4ec003", "--check-run-id", "12x");
    expect(bad).toMatchObject({ code: 2, stdout: "" });
    expect(bad.stderr).toContain('greenline: --check-run-id must be a check run id, a positive integer (got "12x")');
    const badEnv = await greenlineWithEnv(
      { GREENLINE_CHECK_RUN_ID: "5.5e3" },
      "file:/nonexistent/unused.db",
      "test",
      "upload",
      "--org",
      "acme",
      "--repo",
      "acme/web",
      "--branch",
      "main",
      "--commit",
      "c4ec003",
      "--junit",
      join(dir, "reports", "*.xml"),
      "--url",
      server.url,
      "--token",
      server.api.token,
    );
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toContain("GREENLINE_CHECK_RUN_ID (--check-run-id) must be a check run id");
    // And other commands refuse the options (each command takes the options its help lists).
    expect((await greenline("file:/nonexistent/unused.db", "test", "quarantine", "x", "--never", "--check", "tests")).stderr).toContain("test quarantine does not take --check");
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

describe("greenline test run is safe: stale reports, commands that cannot start, failing tests named (against a real server)", () => {
  let server: TestServer;
  let dir: string;
  const scope = (name: string) => ({ repo: { host: "github.com", owner: "acme", name }, org_url_slug: "acme" });
  const xml = (cases: [string, "pass" | "fail"][]) =>
    `<testsuites><testsuite name="api">${cases.map(([test, outcome]) => `<testcase classname="api.Tests" name="${test}">${outcome === "fail" ? `<failure message="${test} failed"/>` : ""}</testcase>`).join("")}</testsuite></testsuites>`;
  const report = (cases: [string, "pass" | "fail"][]) => writeFileSync(join(dir, "reports", "a.xml"), xml(cases));
  /** `greenline test <command>` for the repository acme/<repo>, its reports in the directory's reports/*.xml. */
  const cli = (repo: string, command: string, ...args: string[]) =>
    greenline("file:/nonexistent/unused.db", "test", command, "--org", "acme", "--repo", repo, "--branch", "main", "--junit", join(dir, "reports", "*.xml"), "--url", server.url, "--token", server.api.token, ...args);
  /** A node command that writes `cases` as the report and exits with `code`. */
  const writesReportAndExits = (cases: [string, "pass" | "fail"][], code: number) => [
    process.execPath,
    "-e",
    `require("node:fs").writeFileSync(${JSON.stringify(join(dir, "reports", "a.xml"))}, ${JSON.stringify(xml(cases))}); process.exit(${code})`,
  ];

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!);
    dir = mkdtempSync(join(tmpdir(), "greenline-cli-safe-"));
    mkdirSync(join(dir, "reports"));
    // test_flaky failed and passed on one commit: flaky, and quarantined.
    report([["test_flaky", "fail"]]);
    expect((await cli("acme/safe", "upload", "--commit", "c0ffee0")).code).toBe(0);
    report([["test_flaky", "pass"]]);
    expect((await cli("acme/safe", "upload", "--commit", "c0ffee0")).code).toBe(0);
    const quarantined = await server.api.ok("flaky-tests/list-quarantined-tests", { ...scope("safe"), page_query: { page_size: 10 } });
    expect(quarantined.quarantined_tests.map((t: { name: string }) => t.name)).toEqual(["test_flaky"]);
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });

  test("a report left from before the command never decides the build: it is ignored, said so, and the command's code stands", async () => {
    // The stale report holds only a quarantined failure: read, it would turn exit 3 into 0.
    report([["test_flaky", "fail"]]);
    const run = await cli("acme/safe", "run", "--commit", "c0ffee1", "--", process.execPath, "-e", "process.exit(3)");
    expect(run.code).toBe(3);
    expect(run.stdout).toContain(`greenline: ignored 1 report(s) older than the command`);
    expect(run.stdout).toContain(join(dir, "reports", "a.xml"));
    expect(run.stdout).toContain("the command wrote no JUnit report; exit code 3 stands");
    expect(run.stdout).not.toContain("uploaded");
  });

  test("the same report rewritten by the command counts", async () => {
    report([["test_solid", "fail"]]);
    const run = await cli("acme/safe", "run", "--commit", "c0ffee2", "--", ...writesReportAndExits([["test_flaky", "fail"]], 3));
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain("ignored");
    expect(run.stdout).toContain("every failure is a quarantined test; exiting 0 instead of 3");
  });

  test.each([
    ["a command that does not exist exits 127", () => join(dir, "no-such-command"), 127, "no such command or file (ENOENT)"],
    [
      "a file that is not executable exits 126",
      () => {
        writeFileSync(join(dir, "not-executable.sh"), "#!/bin/sh\nexit 0\n", { mode: 0o644 });
        return join(dir, "not-executable.sh");
      },
      126,
      "permission denied: not an executable file (EACCES)",
    ],
  ])("%s, never 0, and nothing is uploaded", async (_name, command, code, why) => {
    // Were the stale report (only a quarantined failure) read, the verdict would be 0.
    report([["test_flaky", "fail"]]);
    const path = command();
    const run = await cli("acme/safe", "run", "--commit", "c0ffee3", "--", path, "--flag");
    expect(run.code).toBe(code);
    expect(run.stdout).toBe(`greenline: cannot start ${path}: ${why}; exiting ${code}, nothing uploaded\n`);
  });

  test.each([
    ["acme/safe", "the repository as registered"],
    ["ACME/Safe", "the repository in another casing (each test asked for on its own)"],
  ])("every failing test is named, the quarantined ones apart (%s: %s)", async (repo) => {
    report([]);
    const run = await cli(
      repo,
      "run",
      "--commit",
      "c0ffee4",
      "--",
      ...writesReportAndExits(
        [
          ["test_flaky", "fail"],
          ["test_solid", "fail"],
          ["test_other", "fail"],
          ["test_fine", "pass"],
        ],
        3,
      ),
    );
    expect(run.code).toBe(3);
    const lines = run.stdout.split("\n");
    expect(lines).toEqual(
      expect.arrayContaining(["greenline: 3 failing test(s), 1 quarantined", "greenline: failed: api.Tests test_solid", "greenline: failed: api.Tests test_other", "greenline: failed, quarantined: api.Tests test_flaky"]),
    );
    expect(run.stdout).not.toContain("test_fine");
  });

  test.each([4, 0])("a malformed report the command wrote: its code %i stands, the file and the place are named, nothing is uploaded", async (code) => {
    report([]);
    const before = await server.api.ok("flaky-tests/list-failing-tests", {
      ...scope("safe"),
      start_time: new Date(Date.now() - 86_400_000).toISOString(),
      end_time: new Date(Date.now() + 86_400_000).toISOString(),
      page_query: { page_size: 100 },
    });
    const good = join(dir, "reports", "a.xml");
    const bad = join(dir, "reports", "b.xml");
    const script = `const fs = require("node:fs"); fs.writeFileSync(${JSON.stringify(good)}, ${JSON.stringify(xml([["test_new_failure", "fail"]]))}); fs.writeFileSync(${JSON.stringify(bad)}, "<testsuite><testcase name=x"); process.exit(${code})`;
    try {
      const run = await cli("acme/safe", "run", "--commit", "c0ffee6", "--", process.execPath, "-e", script);
      expect(run.code).toBe(code);
      expect(run.stdout).toMatch(new RegExp(`^greenline: ${bad.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: not a JUnit report: line \\d+, column \\d+: .+; exit code ${code} stands, nothing uploaded\n$`));
      expect(run.stderr).toBe("");
      const after = await server.api.ok("flaky-tests/list-failing-tests", {
        ...scope("safe"),
        start_time: new Date(Date.now() - 86_400_000).toISOString(),
        end_time: new Date(Date.now() + 86_400_000).toISOString(),
        page_query: { page_size: 100 },
      });
      expect(after).toEqual(before);
    } finally {
      rmSync(bad, { force: true });
    }
  });

  test("--no-quarantine: the reports the command wrote are uploaded, and its code stands even when every failure is quarantined", async () => {
    report([]);
    const run = await cli("acme/safe", "run", "--commit", "c0ffee7", "--no-quarantine", "--", ...writesReportAndExits([["test_flaky", "fail"]], 3));
    expect(run.code).toBe(3);
    expect(run.stdout).toMatch(/uploaded 1 tests \(1 failed\)/);
    expect(run.stdout).not.toContain("quarantined");
  });

  test("Greenline refusing (a wrong token): the command's code stands and the failing tests are still named", async () => {
    report([]);
    const run = await greenline(
      "file:/nonexistent/unused.db",
      "test",
      "run",
      "--org",
      "acme",
      "--repo",
      "acme/safe",
      "--branch",
      "main",
      "--commit",
      "c0ffee5",
      "--junit",
      join(dir, "reports", "*.xml"),
      "--url",
      server.url,
      "--token",
      "glt_wrong",
      "--",
      ...writesReportAndExits([["test_flaky", "fail"]], 3),
    );
    expect(run.code).toBe(3);
    expect(run.stdout).toContain("flaky-tests/upload answered 401");
    expect(run.stdout).toContain("exit code 3 stands");
    expect(run.stdout).toContain("greenline: failed (quarantine unknown): api.Tests test_flaky");
  });
});
