import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { BACKENDS } from "../support/backends.js";
import { startTestServer, type TestServer } from "../support/harness.js";

/**
 * The client CLI as users get it: `npm pack` in packages/cli (its prepack bundles
 * src/cli/client.ts), the tarball installed offline into an empty project outside the checkout,
 * and its `greenline` run there against a real Greenline.
 */

const exec = promisify(execFile);
const root = join(import.meta.dirname, "../..");
const CI_VARIABLE = /^(GITHUB_|GITLAB_|CI_|CI$|BUILDKITE|CIRCLE|JENKINS_|GIT_|CHANGE_|GREENLINE_|npm_)/;
/** This machine's environment without its CI's variables (the test says where the results belong) or npm's of the jest run. */
const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CI_VARIABLE.test(name)));

async function sh(file: string, args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(file, args, { cwd, env: clean });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Record<string, any>;

describe("@greenline/cli, packed and installed into an empty project", () => {
  let dir: string;
  let project: string;
  let tarball: string;
  let server: TestServer;
  const greenline = (...args: string[]) => sh(join(project, "node_modules/.bin/greenline"), args, project);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "greenline-cli-package-"));
    const packed = await sh("npm", ["pack", "--pack-destination", dir], join(root, "packages/cli"));
    if (packed.code !== 0) throw new Error(`npm pack failed:\n${packed.stdout}\n${packed.stderr}`);
    tarball = join(dir, readdirSync(dir).find((f) => f.endsWith(".tgz"))!);
    project = join(dir, "project");
    mkdirSync(project);
    await sh("npm", ["init", "-y"], project);
    // Offline: a package without dependencies needs nothing from a registry.
    const installed = await sh("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], project);
    if (installed.code !== 0) throw new Error(`npm install failed:\n${installed.stdout}\n${installed.stderr}`);
    server = await startTestServer(BACKENDS[0]!);
  }, 180_000);
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("the package: the root's version and license, one bin, no dependencies, a small single-file bundle", () => {
    const pkg = readJson(join(project, "node_modules/@greenline/cli/package.json"));
    const rootPkg = readJson(join(root, "package.json"));
    expect(pkg).toMatchObject({ name: "@greenline/cli", version: rootPkg.version, license: rootPkg.license, engines: rootPkg.engines, bin: { greenline: "dist/greenline.mjs" } });
    for (const field of ["dependencies", "optionalDependencies", "peerDependencies", "bundleDependencies"]) expect(pkg[field]).toBeUndefined();
    // Nothing else was installed: the CLI is one file (plus the notices of the packages it bundles).
    expect(readdirSync(join(project, "node_modules")).filter((f) => !f.startsWith("."))).toEqual(["@greenline"]);
    expect(readdirSync(join(project, "node_modules/@greenline/cli/dist")).sort()).toEqual(["THIRD-PARTY-LICENSES.txt", "greenline.mjs"]);
    expect(readdirSync(join(project, "node_modules/@greenline/cli")).sort()).toEqual(["LICENSE", "README.md", "dist", "package.json"]);
    expect(statSync(tarball).size).toBeLessThan(100_000);
    const bundle = readFileSync(join(project, "node_modules/@greenline/cli/dist/greenline.mjs"), "utf8");
    expect(bundle.startsWith("#!/usr/bin/env node\n")).toBe(true);
    // esbuild names each bundled file in a comment: only the client's sources and tinyglobby's packages, no store, no configuration.
    const sources = [...bundle.matchAll(/^\/\/ (\S+)$/gm)].map((m) => m[1]!);
    const packageOf = (s: string) => /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(s)?.[1];
    expect(new Set(sources.map(packageOf).filter(Boolean))).toEqual(new Set(["tinyglobby", "fdir", "picomatch"]));
    const ours = new Set(sources.filter((s) => !packageOf(s)));
    expect(ours).toContain("src/cli/test-commands.ts");
    expect([...ours].filter((s) => !/^src\/(cli|domain|formats)\/|^src\/defaults\.ts$/.test(s) || s === "src/cli/main.ts")).toEqual([]);
  });

  test("--version and help run from the project", async () => {
    expect(await greenline("--version")).toMatchObject({ code: 0, stdout: `${readJson(join(root, "package.json")).version}\n` });
    const help = await greenline("help");
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("greenline test upload --junit <glob>");
    // The service's commands are listed apart, under where they run: the client cannot run them.
    const [client, service] = help.stdout.split("Run where the service runs (its checkout or container), not in this client:\n");
    for (const command of ["token create", "token list", "token revoke", "setup github", "db migrate"]) {
      expect([command, client!.includes(`greenline ${command}`), service?.includes(`greenline ${command}`)]).toEqual([command, false, true]);
    }
    expect(service).not.toContain("greenline test upload");
    expect((await greenline("help", "test", "run")).stdout).toContain("Usage: greenline test run");
  });

  test("test upload sends a report from the project to a real Greenline; the results arrive", async () => {
    mkdirSync(join(project, "reports"), { recursive: true });
    writeFileSync(
      join(project, "reports/junit.xml"),
      `<testsuites><testsuite name="pkg"><testcase classname="pkg.Tests" name="test_from_package"><failure message="boom"/></testcase><testcase classname="pkg.Tests" name="test_ok"/></testsuite></testsuites>`,
    );
    const scope = ["--org", "acme", "--repo", "acme/packaged", "--commit", "b".repeat(40), "--branch", "main"];
    const uploaded = await greenline("test", "upload", "--junit", "reports/*.xml", "--url", server.url, "--token", server.api.token, ...scope, "--variant", "linux");
    expect(uploaded.stderr).toBe("");
    expect(uploaded).toMatchObject({ code: 0 });
    expect(uploaded.stdout).toMatch(/uploaded 2 tests \(1 failed\) from 1 report\(s\) as [0-9a-f-]{36}/);

    const now = Date.now();
    const failing = await server.api.ok("flaky-tests/list-failing-tests", {
      repo: { host: "github.com", owner: "acme", name: "packaged" },
      org_url_slug: "acme",
      start_time: new Date(now - 3_600_000).toISOString(),
      end_time: new Date(now + 3_600_000).toISOString(),
      page_query: { page_size: 10 },
    });
    expect(failing.tests.map((t: any) => [t.name, t.variant])).toEqual([["test_from_package", "linux"]]);
  });

  test("a command of the service (token create) says where to run it, exit 2; an unknown one is a usage error too", async () => {
    const refused = await greenline("token", "create", "--org", "acme");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("token create works on the service's own database and settings, so it runs where the Greenline service runs");
    expect(refused.stderr).toContain("DATABASE_URL");
    expect((await greenline("db", "migrate")).code).toBe(2);
    const setup = await greenline("setup", "github", "--webhook-url", "https://example.com/api/github/webhooks");
    expect(setup.code).toBe(2);
    expect(setup.stderr).toContain("setup github works on the service's own database and settings");
    const unknown = await greenline("frobnicate");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command: frobnicate");
  });

  test("Greenline unreachable is exit 70 for an upload (with the address), as from the checkout", async () => {
    const offline = await greenline(
      "test",
      "upload",
      "--junit",
      "reports/*.xml",
      "--url",
      "http://127.0.0.1:9",
      "--token",
      "t",
      "--org",
      "acme",
      "--repo",
      "acme/packaged",
      "--commit",
      "c".repeat(40),
      "--branch",
      "main",
    );
    expect(offline.code).toBe(70);
    expect(offline.stdout).toContain("http://127.0.0.1:9");
  });
});
