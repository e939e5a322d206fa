import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseEnv } from "node:util";
import { ProbotOctokit } from "probot";
import { parse as parseYaml } from "yaml";
import { buildManifest } from "../../src/cli/setup-github.js";
import { loadConfig } from "../../src/config.js";
import { resolveComposeEnvironment } from "../support/compose.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { freePort, ServiceProcess } from "../support/service-process.js";
import { postWebhook } from "../support/webhook-post.js";

const root = join(import.meta.dirname, "../..");
const WEBHOOK_URL = "https://greenline.example.com/api/github/webhooks";

type Finished = { code: number | null; stdout: string; stderr: string };

/** `greenline setup github` in its own process, against the simulator (its web pages and its API). */
class Setup {
  readonly #child: ChildProcess;
  stdout = "";
  stderr = "";
  readonly done: Promise<Finished>;

  constructor(gh: GitHubSimulator, args: string[]) {
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.GITHUB_API_URL;
    this.#child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", "setup", "github", "--port", "0", "--github-url", gh.url, "--api-url", gh.url, ...args], { cwd: root, env });
    this.#child.stdout!.on("data", (d) => (this.stdout += d));
    this.#child.stderr!.on("data", (d) => (this.stderr += d));
    this.done = new Promise((resolve) => this.#child.on("exit", (code) => resolve({ code, stdout: this.stdout, stderr: this.stderr })));
  }

  /** The local setup page's address, once the command printed it (undefined when it exited first). */
  async page(): Promise<string | undefined> {
    let exited = false;
    void this.done.then(() => (exited = true));
    for (;;) {
      const found = /Open (http:\/\/127\.0\.0\.1:\d+)\//.exec(this.stdout)?.[1];
      if (found) return found;
      if (exited) return undefined;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  kill(): void {
    if (this.#child.exitCode === null) this.#child.kill("SIGTERM");
  }
}

const unescapeHtml = (text: string) =>
  text
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** What a browser does on the setup page: read its form and post it to GitHub, which answers with a redirect (not followed). */
async function submitForm(local: string): Promise<{ redirect: URL; manifest: Record<string, any> }> {
  const html = await (await fetch(`${local}/`)).text();
  const action = unescapeHtml(/<form action="([^"]+)" method="post">/.exec(html)![1]!);
  const manifestField = unescapeHtml(/name="manifest" value="([^"]*)"/.exec(html)![1]!);
  const posted = await fetch(action, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ manifest: manifestField }).toString(), redirect: "manual" });
  if (posted.status !== 302) throw new Error(`GitHub's page answered ${posted.status}: ${await posted.text()}`);
  return { redirect: new URL(posted.headers.get("location")!), manifest: JSON.parse(manifestField) as Record<string, any> };
}

describe("greenline setup github", () => {
  let gh: GitHubSimulator;
  let dir: string;
  const running: Setup[] = [];
  const start = (...args: string[]) => {
    const setup = new Setup(gh, args);
    running.push(setup);
    return setup;
  };

  beforeAll(async () => {
    gh = await new GitHubSimulator().start();
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "greenline-setup-"));
  });
  afterEach(() => {
    for (const setup of running.splice(0)) setup.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  afterAll(async () => {
    await gh?.stop();
  });

  test("registers the App from app.yml, writes its credentials (mode 600, nothing printed) and they authenticate", async () => {
    const envFile = join(dir, ".env");
    writeFileSync(envFile, "# mine\nDATABASE_URL=file:./data/mine.db\n");
    const setup = start("--webhook-url", WEBHOOK_URL, "--dotenv", envFile);
    const local = (await setup.page())!;
    const { redirect, manifest } = await submitForm(local);

    // The manifest GitHub receives is app.yml's, with the webhook and callback of this setup.
    const appYml = parseYaml(readFileSync(join(root, "app.yml"), "utf8")) as Record<string, any>;
    expect(manifest).toEqual({
      ...appYml,
      hook_attributes: { url: WEBHOOK_URL, active: true },
      redirect_url: `${local}/callback`,
      callback_urls: [new URL("/sign-in/github/callback", WEBHOOK_URL).href],
      public: false,
    });
    expect(gh.registeredApps.at(-1)).toMatchObject({ owner: "octocat", ownerType: "User", manifest });
    expect(`${redirect.origin}${redirect.pathname}`).toBe(`${local}/callback`);

    const callback = await fetch(redirect);
    expect(callback.status).toBe(200);
    expect(await callback.text()).toContain("https://github.com/apps/greenline/installations/new");
    const finished = await setup.done;
    expect(finished.code).toBe(0);

    expect(statSync(envFile).mode & 0o777).toBe(0o600);
    const written = parseEnv(readFileSync(envFile, "utf8"));
    expect(written).toMatchObject({ DATABASE_URL: "file:./data/mine.db", APP_ID: gh.appId, WEBHOOK_SECRET: gh.webhookSecret, GITHUB_API_URL: gh.url });
    expect(written.GITHUB_CLIENT_ID).toMatch(/^Iv1\./);
    expect(written.GITHUB_CLIENT_SECRET).toMatch(/^[0-9a-f]{40}$/);
    expect(readFileSync(envFile, "utf8")).toContain("# mine\n");

    // Printed: the App's page and where to install it; never a secret.
    expect(finished.stdout).toContain("https://github.com/apps/greenline");
    expect(finished.stdout).toContain("https://github.com/apps/greenline/installations/new");
    const output = finished.stdout + finished.stderr;
    for (const secret of [gh.webhookSecret, written.GITHUB_CLIENT_SECRET!, gh.privateKey.split("\n")[1]!, "PRIVATE KEY"]) expect(output).not.toContain(secret);

    // The service's configuration reads them as the App, and its key authenticates with GitHub.
    const config = loadConfig(written, () => "");
    expect(config.githubApp).toMatchObject({ appId: gh.appId, webhookSecret: gh.webhookSecret, apiUrl: gh.url });
    expect(config.githubApp!.privateKey).toBe(gh.privateKey);
    gh.installApp(71, "acme-setup");
    const app = new ProbotOctokit({ auth: { appId: Number(config.githubApp!.appId), privateKey: config.githubApp!.privateKey }, baseUrl: gh.url, retry: { enabled: false }, throttle: { enabled: false } });
    expect((await app.rest.apps.getRepoInstallation({ owner: "acme-setup", repo: "web" })).data.id).toBe(71);

    // compose.yaml, reading this .env as Compose does, hands the container the same App and its OAuth client.
    const composed = loadConfig(resolveComposeEnvironment("greenline", written), () => {
      throw new Error("the key is in PRIVATE_KEY: no file is read");
    });
    expect(composed.githubApp).toMatchObject({ appId: gh.appId, webhookSecret: gh.webhookSecret, apiUrl: gh.url, privateKey: gh.privateKey });
    expect(composed.githubApp!.oauth).toMatchObject({ clientId: written.GITHUB_CLIENT_ID, clientSecret: written.GITHUB_CLIENT_SECRET });

    // The service started with the file (as .env is read) runs as that App: GitHub's signed deliveries are accepted.
    const service = new ServiceProcess(await freePort(), { GREENLINE_ENV_FILE: envFile, DATABASE_URL: `file:${join(dir, "greenline.db")}` });
    try {
      await service.start();
      expect((await postWebhook(service.url, gh, "ping", { zen: "Keep it logically awesome.", hook_id: 1 })).status).toBe(200);
      expect(service.output).not.toContain("sandbox");
    } finally {
      await service.stop();
    }
  }, 120_000);

  test("--org registers the App under the organization", async () => {
    const envFile = join(dir, "app.env");
    const setup = start("--webhook-url", WEBHOOK_URL, "--dotenv", envFile, "--org", "acme-corp", "--name", "Greenline Acme");
    const { redirect, manifest } = await submitForm((await setup.page())!);
    expect(manifest.name).toBe("Greenline Acme");
    expect(gh.registeredApps.at(-1)).toMatchObject({ owner: "acme-corp", ownerType: "Organization" });
    expect((await fetch(redirect)).status).toBe(200);
    expect(await setup.done).toMatchObject({ code: 0 });
    expect((await setup.done).stdout).toContain("https://github.com/apps/greenline-acme/installations/new");
  }, 60_000);

  test("a callback whose state is not this setup's is refused, writes nothing, and the setup goes on", async () => {
    const envFile = join(dir, ".env");
    const setup = start("--webhook-url", WEBHOOK_URL, "--dotenv", envFile);
    const { redirect } = await submitForm((await setup.page())!);
    const forged = new URL(redirect);
    forged.searchParams.set("state", "0".repeat(48));
    expect((await fetch(forged)).status).toBe(400);
    const missing = new URL(redirect);
    missing.searchParams.delete("state");
    expect((await fetch(missing)).status).toBe(400);
    expect(() => statSync(envFile)).toThrow();
    expect(setup.stdout).toContain("state does not match");

    expect((await fetch(redirect)).status).toBe(200);
    expect(await setup.done).toMatchObject({ code: 0 });
    expect(parseEnv(readFileSync(envFile, "utf8")).APP_ID).toBe(gh.appId);
    // Single use: the link does nothing once the setup is done (the server is gone).
    await expect(fetch(redirect)).rejects.toThrow();
  }, 60_000);

  test("credentials already in the env file are not replaced without --force", async () => {
    const envFile = join(dir, ".env");
    const before = "LOG_LEVEL=debug\nAPP_ID=1\nWEBHOOK_SECRET=old\nPRIVATE_KEY_PATH=/keys/old.pem\n";
    writeFileSync(envFile, before);
    const refused = start("--webhook-url", WEBHOOK_URL, "--dotenv", envFile);
    expect(await refused.page()).toBeUndefined();
    const finished = await refused.done;
    expect(finished.code).toBe(1);
    expect(finished.stdout).toContain("already holds GitHub App credentials (APP_ID, PRIVATE_KEY_PATH, WEBHOOK_SECRET)");
    expect(finished.stdout).toContain("--force");
    expect(readFileSync(envFile, "utf8")).toBe(before);

    const forced = start("--webhook-url", WEBHOOK_URL, "--dotenv", envFile, "--force");
    const { redirect } = await submitForm((await forced.page())!);
    expect((await fetch(redirect)).status).toBe(200);
    expect(await forced.done).toMatchObject({ code: 0 });
    const written = parseEnv(readFileSync(envFile, "utf8"));
    expect(written).toMatchObject({ LOG_LEVEL: "debug", APP_ID: gh.appId, WEBHOOK_SECRET: gh.webhookSecret });
    expect(written.PRIVATE_KEY_PATH).toBeUndefined();
    expect(written.PRIVATE_KEY).toBe(gh.privateKey);
  }, 60_000);

  test("a code GitHub no longer accepts (used, unknown) is reported, and nothing is written", async () => {
    const envFile = join(dir, ".env");
    const setup = start("--webhook-url", WEBHOOK_URL, "--dotenv", envFile);
    const { redirect } = await submitForm((await setup.page())!);
    // Someone else exchanged the code first: GitHub answers 404 to the second exchange.
    const code = redirect.searchParams.get("code")!;
    expect((await fetch(`${gh.url}/app-manifests/${code}/conversions`, { method: "POST" })).status).toBe(201);
    const callback = await fetch(redirect);
    expect(callback.status).toBe(502);
    expect(await callback.text()).toContain("404");
    const finished = await setup.done;
    expect(finished.code).toBe(1);
    expect(finished.stderr).toContain("GitHub refused the App's code: 404 Not Found (the code is unknown, already used, or older than an hour: run the command again)");
    expect(() => statSync(envFile)).toThrow();
  }, 60_000);

  test("help, and the mistakes a usage error names", async () => {
    const help = start("--help");
    const helped = await help.done;
    expect(helped.code).toBe(0);
    expect(helped.stdout).toContain("Usage: greenline setup github --webhook-url <url>");
    for (const option of ["--org <login>", "--dotenv <path>", "--force", "--port <port>", "--github-url <url>", "--api-url <url>", "--name <name>"]) expect(helped.stdout).toContain(option);
    const missing = await start().done;
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--webhook-url is required");
    const bad = await start("--webhook-url", "greenline.example.com").done;
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.stderr).toContain('--webhook-url must be an http(s) URL, not "greenline.example.com"');
  }, 60_000);
});

describe("the manifest built from app.yml", () => {
  const options = { webhookUrl: WEBHOOK_URL, redirectUrl: "http://127.0.0.1:3456/callback" };

  test("keeps GitHub's keys, sets the webhook and callback, and is private unless app.yml says public", () => {
    const manifest = buildManifest("name: G\nurl: https://g.example\ndefault_permissions:\n  issues: write\ndefault_events: [issue_comment]\n", options);
    expect(manifest).toEqual({
      name: "G",
      url: "https://g.example",
      default_permissions: { issues: "write" },
      default_events: ["issue_comment"],
      hook_attributes: { url: WEBHOOK_URL, active: true },
      redirect_url: options.redirectUrl,
      callback_urls: [new URL("/sign-in/github/callback", WEBHOOK_URL).href],
      public: false,
    });
    expect(buildManifest("url: https://g.example\npublic: true\n", { ...options, name: "Other" })).toMatchObject({ name: "Other", public: true });
  });

  test("refuses keys GitHub's manifest does not have, and a missing homepage", () => {
    expect(() => buildManifest("url: https://g.example\npermissions:\n  issues: write\n", options)).toThrow("app.yml: permissions is not a GitHub App manifest key");
    expect(() => buildManifest("name: G\n", options)).toThrow("app.yml: url (the App's homepage) is required");
  });
});
