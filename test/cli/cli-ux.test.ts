import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describeUnreachable } from "../../src/cli/unreachable.js";
import { BACKENDS } from "../support/backends.js";
import { startTestServer, type TestServer } from "../support/harness.js";

const run = promisify(execFile);
const root = join(import.meta.dirname, "../..");
/** tsx by its path: the CLI may run outside the checkout (an `--import tsx` would resolve from its cwd). */
const TSX = pathToFileURL(join(root, "node_modules/tsx/dist/loader.mjs")).href;
const CI_VARIABLE = /^(GITHUB_|GITLAB_|CI_|CI$|BUILDKITE|CIRCLE|JENKINS_|GIT_|CHANGE_|GREENLINE_)/;

/** Runs the real `greenline` CLI in its own process, in `cwd`, with none of this machine's CI variables but `env`. */
async function greenline(args: string[], env: Record<string, string> = {}, cwd = root): Promise<{ code: number; stdout: string; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CI_VARIABLE.test(name)));
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", TSX, join(root, "src/cli/main.ts"), ...args], { cwd, env: { ...clean, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const DAY = 86_400_000;
const STACK_FRAME = /^\s+at /m;

describe("greenline's help, version and usage errors", () => {
  test("--version prints package.json's version", async () => {
    const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
    expect(await greenline(["--version"])).toMatchObject({ code: 0, stdout: `${version}\n` });
  });

  test.each([
    ["token create", "--org <slug>", "--name <label>"],
    ["token revoke", "greenline token revoke <id>", "DATABASE_URL"],
    ["test upload", "--junit <glob>", "--codeowners <path>"],
    ["test run", "-- <command>", "--pr <number>"],
    ["test quarantine", "--always|--never|--auto", "--reason <text>"],
    ["test policy", "backtest [--since 30d]", "--auto-quarantine <on|off>"],
    ["pr submit", "--priority P", "--no-batch"],
    ["pr cancel", "--target-branch B", "--pr <number>"],
    ["pr status", "Exit 1 when it is not in the queue", "--json"],
    ["pr restart", "--pr N", "--target-branch <b>"],
    ["queue show", "--json", "--repo owner/name"],
    ["queue pause", "nothing merges", "--target-branch <b>"],
    ["queue resume", "running again", "--url <url>"],
    ["targets set", "<file|->", "--commit <sha>"],
  ])("help %s, and the command with --help, print its usage and options", async (command, usage, option) => {
    const help = await greenline(["help", ...command.split(" ")]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain(`Usage: greenline ${command}`);
    expect(help.stdout).toContain(usage);
    expect(help.stdout).toContain(option);
    expect(await greenline([...command.split(" "), "--help"])).toMatchObject({ code: 0, stdout: help.stdout });
  });

  test("help alone lists every command; help of an unknown command is a usage error", async () => {
    const all = await greenline(["help"]);
    expect(all.code).toBe(0);
    // The service's own greenline runs every command: none is set apart.
    expect(all.stdout).not.toContain("Run where the service runs");
    for (const command of [
      "token create",
      "token list",
      "token revoke",
      "db migrate",
      "test upload",
      "test run",
      "test quarantine",
      "test policy backtest",
      "pr submit",
      "pr cancel",
      "pr status",
      "pr restart",
      "queue show",
      "queue pause",
      "queue resume",
      "targets set",
    ])
      expect(all.stdout).toContain(`greenline ${command}`);
    expect(await greenline(["help", "frobnicate"])).toMatchObject({ code: 2 });
  });

  test("help alone gives each command a whole sentence, never a summary cut at its first line", async () => {
    const { stdout } = await greenline(["help"]);
    const lines = stdout.split("\n").filter((line) => line.startsWith("  greenline "));
    expect(lines.length).toBeGreaterThanOrEqual(20);
    // Usage, then two spaces or more, then what the command does: ending a sentence.
    const cut = lines.filter((line) => !/\S {2,}[A-Z].*\.$/.test(line));
    expect(cut).toEqual([]);
  });

  test("test quarantine's help says one of --always, --never, --auto is needed: none is a default", async () => {
    const { stdout } = await greenline(["help", "test", "quarantine"]);
    expect(stdout).toContain("One of --always, --never and --auto is required.");
    expect(stdout).not.toContain("default)");
    expect(await greenline(["test", "quarantine", "some-test", "--url", "http://127.0.0.1:9", "--token", "t", "--org", "acme", "--repo", "acme/web"])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("test quarantine needs exactly one of --always, --never, --auto"),
    });
  });

  test("a mistake prints what is wrong, the command's usage line and where to read more: not the manual", async () => {
    const missing = await greenline(["token", "create"]);
    expect(missing.code).toBe(2);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toBe("greenline: --org is required\nUsage: greenline token create --org <slug> [--name <label>] [--role write|admin|read]\nRun 'greenline help token create' for its options.\n");

    const unknownOption = await greenline(["test", "upload", "--frobnicate"]);
    expect(unknownOption.code).toBe(2);
    expect(unknownOption.stderr).toContain("'--frobnicate'");
    expect(unknownOption.stderr).toContain("Run 'greenline help test upload'");
    expect(unknownOption.stderr).not.toContain("token create");

    // One option table serves every command, but each takes only its own options.
    const foreign = await greenline(["queue", "pause", "--target-branch", "main", "--force", "--junit", "x"]);
    expect(foreign).toMatchObject({ code: 2, stdout: "" });
    expect(foreign.stderr).toBe("greenline: queue pause does not take --force, --junit\nUsage: greenline queue pause [--target-branch B] [options]\nRun 'greenline help queue pause' for its options.\n");
    expect((await greenline(["token", "revoke", "x", "--org", "acme"])).stderr).toContain("greenline: token revoke does not take --org");
    expect((await greenline(["pr", "submit", "--org", "acme"])).stderr).toContain("greenline: pr submit does not take --org");

    // --url must be an address; a --codeowners file that cannot be read is named.
    const where = ["--token", "t", "--org", "acme", "--repo", "acme/web", "--commit", "abc1234", "--branch", "main", "--junit", "x.xml"];
    const badUrl = await greenline(["test", "upload", "--url", "not-a-url", ...where]);
    expect(badUrl).toMatchObject({ code: 2, stdout: "" });
    expect(badUrl.stderr).toContain('greenline: --url must be Greenline\'s http or https address, such as https://greenline.example.com (got "not-a-url")');
    expect((await greenline(["queue", "show", "--target-branch", "main", "--repo", "acme/web", "--token", "t"], { GREENLINE_URL: "ftp://x" })).stderr).toContain(
      "greenline: GREENLINE_URL must be Greenline's http or https address",
    );
    const codeowners = await greenline(["test", "upload", "--url", "http://127.0.0.1:9", ...where, "--codeowners", "/nonexistent/CODEOWNERS"]);
    expect(codeowners).toMatchObject({ code: 2, stdout: "" });
    expect(codeowners.stderr).toContain("greenline: --codeowners: cannot read /nonexistent/CODEOWNERS: no such file (ENOENT)\nUsage: greenline test upload");

    for (const args of [[], ["frobnicate"]]) {
      const general = await greenline(args);
      expect(general.code).toBe(2);
      expect(general.stderr).toContain("Run 'greenline help' for the commands");
      expect(general.stderr.split("\n").length).toBeLessThan(5);
    }
  });
});

describe("an unreachable Greenline is named with its URL and the cause, never a stack", () => {
  let closedPort: number;
  let plain: Server;
  let silent: Server;
  let html: Server;
  beforeAll(async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    closedPort = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    plain = createServer((_request, response) => response.end("{}"));
    await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
    silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    // Not Greenline: a login page answering 200 to everything.
    html = createServer((_request, response) => response.writeHead(200, { "content-type": "text/html" }).end("<html><body>Sign in</body></html>"));
    await new Promise<void>((resolve) => html.listen(0, "127.0.0.1", resolve));
  });
  afterAll(async () => {
    for (const s of [plain, silent, html]) s.closeAllConnections();
    await Promise.all([plain, silent, html].map((s) => new Promise((r) => s.close(r))));
  });

  const quarantine = (url: string) => greenline(["test", "quarantine", "some-test", "--never", "--url", url, "--token", "t", "--org", "acme", "--repo", "acme/web"]);

  test("connection refused: exit 69, the URL and ECONNREFUSED", async () => {
    const url = `http://127.0.0.1:${closedPort}`;
    const refused = await quarantine(url);
    expect(refused.code).toBe(69);
    expect(refused.stderr).toContain(`cannot reach Greenline at ${url}/v1/flaky-tests/set-quarantine-setting: connection refused`);
    expect(refused.stderr).toContain("[ECONNREFUSED]");
    expect(refused.stderr).not.toMatch(STACK_FRAME);
  });

  test("an answer that is not JSON (not Greenline at that address): exit 69, the operation, the URL and what came", async () => {
    const url = `http://127.0.0.1:${(html.address() as AddressInfo).port}`;
    const notGreenline = await quarantine(url);
    expect(notGreenline.code).toBe(69);
    expect(notGreenline.stderr).toBe(
      `greenline: flaky-tests/set-quarantine-setting: the answer from ${url}/v1/flaky-tests/set-quarantine-setting (200, text/html) is not JSON, so it is not Greenline's API: is the URL Greenline's address? It begins: <html><body>Sign in</body></html>\n`,
    );
  });

  test("no such host: the DNS failure is named", async () => {
    const dns = await quarantine("http://greenline.invalid");
    expect(dns.code).toBe(69);
    expect(dns.stderr).toMatch(/cannot reach Greenline at http:\/\/greenline\.invalid\/\S+: .*DNS.*\[(ENOTFOUND|EAI_AGAIN)\]/);
    expect(dns.stderr).not.toMatch(STACK_FRAME);
  });

  test("https to a plain-http server: the TLS failure is named", async () => {
    const tls = await quarantine(`https://127.0.0.1:${(plain.address() as AddressInfo).port}`);
    expect(tls.code).toBe(69);
    expect(tls.stderr).toMatch(/cannot reach Greenline at https:\/\/127\.0\.0\.1:\d+\/\S+: TLS/);
    expect(tls.stderr).not.toMatch(STACK_FRAME);
  });

  test("a server that never answers: timed out (the cause fetch reports when its deadline passes)", async () => {
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`;
    const error = await fetch(url, { signal: AbortSignal.timeout(50) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(describeUnreachable(url, error).message).toBe(`cannot reach Greenline at ${url}: timed out`);
  });

  test("test upload says so on its output and exits 70, as before", async () => {
    const dir = mkdtempSync(join(tmpdir(), "greenline-ux-"));
    try {
      writeFileSync(join(dir, "a.xml"), `<testsuite name="s"><testcase classname="c" name="t"/></testsuite>`);
      const url = `http://127.0.0.1:${closedPort}`;
      const upload = await greenline(["test", "upload", "--junit", join(dir, "*.xml"), "--url", url, "--token", "t", "--org", "acme", "--repo", "acme/web", "--commit", "abc1234", "--branch", "main"]);
      expect(upload.code).toBe(70);
      expect(upload.stdout).toContain(`upload failed: cannot reach Greenline at ${url}/v1/flaky-tests/upload: connection refused`);
      expect(upload.stderr).not.toMatch(STACK_FRAME);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("repository, commit, branch and PR from the CI environment (against a real server)", () => {
  let server: TestServer;
  let dir: string;
  const scope = (name: string) => ({ repo: { host: "github.com", owner: "acme", name }, org_url_slug: "acme" });
  const failing = async (name: string) =>
    (
      await server.api.ok("flaky-tests/list-failing-tests", {
        ...scope(name),
        start_time: new Date(Date.now() - 3 * DAY).toISOString(),
        end_time: new Date(Date.now() + 3 * DAY).toISOString(),
        page_query: { page_size: 100 },
      })
    ).tests as { name: string; pull_requests_impacted_last_7d: number }[];

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!);
    dir = mkdtempSync(join(tmpdir(), "greenline-ci-"));
    mkdirSync(join(dir, "reports"));
    writeFileSync(join(dir, "reports", "a.xml"), `<testsuite name="s"><testcase classname="c" name="test_inferred"><failure message="no"/></testcase></testsuite>`);
    writeFileSync(join(dir, "event.json"), JSON.stringify({ pull_request: { number: 42 } }));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });

  const actions = () => ({
    GITHUB_ACTIONS: "true",
    GITHUB_REPOSITORY: "acme/from-env",
    GITHUB_SHA: "a".repeat(40),
    GITHUB_REF: "refs/pull/42/merge",
    GITHUB_HEAD_REF: "feature/x",
    GITHUB_SERVER_URL: "https://github.com",
    GITHUB_EVENT_PATH: join(dir, "event.json"),
    GREENLINE_URL: server.url,
    GREENLINE_API_TOKEN: server.api.token,
    GREENLINE_ORG: "acme",
  });

  test("in GitHub Actions no flag is needed: the upload lands in the repository, with the PR, that the environment names", async () => {
    const upload = await greenline(["test", "upload", "--junit", join(dir, "reports", "*.xml")], actions(), dir);
    expect(upload).toMatchObject({ code: 0 });
    expect(await failing("from-env")).toEqual([expect.objectContaining({ name: "test_inferred", pull_requests_impacted_last_7d: 1 })]);
  });

  test("an explicit flag always wins over the environment", async () => {
    const upload = await greenline(["test", "upload", "--junit", join(dir, "reports", "*.xml"), "--repo", "acme/from-flag"], actions(), dir);
    expect(upload).toMatchObject({ code: 0 });
    expect(await failing("from-flag")).toEqual([expect.objectContaining({ name: "test_inferred" })]);
    expect(await failing("from-env")).toHaveLength(1);
  });

  test("GitLab CI, a project in nested groups: the owner is its groups' full path", async () => {
    const env = {
      GITLAB_CI: "true",
      CI_SERVER_HOST: "gitlab.example.com",
      CI_PROJECT_PATH: "group/sub/proj",
      CI_COMMIT_SHA: "b".repeat(40),
      CI_COMMIT_REF_NAME: "main",
      GREENLINE_URL: server.url,
      GREENLINE_API_TOKEN: server.api.token,
      GREENLINE_ORG: "acme",
    };
    const upload = await greenline(["test", "upload", "--junit", join(dir, "reports", "*.xml")], env, dir);
    expect(upload).toMatchObject({ code: 0 });
    const nested = { repo: { host: "gitlab.example.com", owner: "group/sub", name: "proj" }, org_url_slug: "acme" };
    const listed = await server.api.ok("flaky-tests/list-failing-tests", {
      ...nested,
      start_time: new Date(Date.now() - 3 * DAY).toISOString(),
      end_time: new Date(Date.now() + 3 * DAY).toISOString(),
      page_query: { page_size: 100 },
    });
    expect(listed.tests).toEqual([expect.objectContaining({ name: "test_inferred", repository: { html_url: "https://gitlab.example.com/group/sub/proj" } })]);
    // --repo takes the same path; a path without a name is still refused.
    expect(await greenline(["test", "upload", "--junit", join(dir, "reports", "*.xml"), "--repo", "group/sub/proj"], env, dir)).toMatchObject({ code: 0 });
    const bad = await greenline(["test", "upload", "--junit", join(dir, "reports", "*.xml"), "--repo", "group/"], env, dir);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--repo must be owner/name (or group/subgroup/name for a GitLab project in nested groups; got group/)");
  });

  test("outside CI, from the git remote origin and HEAD", async () => {
    const checkout = join(dir, "checkout");
    mkdirSync(checkout);
    const git = (...args: string[]) => run("git", args, { cwd: checkout });
    await git("init", "-q", "-b", "topic");
    await git("remote", "add", "origin", "git@github.com:acme/from-git.git");
    await git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "x");
    const { GREENLINE_URL, GREENLINE_API_TOKEN, GREENLINE_ORG } = actions();
    const upload = await greenline(["test", "upload", "--junit", join(dir, "reports", "*.xml")], { GREENLINE_URL, GREENLINE_API_TOKEN, GREENLINE_ORG }, checkout);
    expect(upload).toMatchObject({ code: 0 });
    expect(await failing("from-git")).toEqual([expect.objectContaining({ name: "test_inferred", pull_requests_impacted_last_7d: 0 })]);
  });
});
