import { Writable } from "node:stream";
import type { BrowserContext, Page } from "playwright-core";
import { DEFAULT_POSTGRES_TIMEOUTS, DEFAULT_WEBHOOK_SETTINGS, type Config } from "../../src/config.js";
import { listTokens, revokeToken } from "../../src/auth/tokens.js";
import { createLogger } from "../../src/log.js";
import { freePort } from "../support/service-process.js";
import { type Greenline, startGreenline } from "../../src/server.js";
import { BACKENDS } from "../support/backends.js";
import { describeWithBrowser, launchChromium } from "../support/browser.js";
import { queuePath } from "../support/dashboard.js";
import { ApiClient, queueOf } from "../support/harness.js";

const WAIT = { timeout: 30_000 };
const TOKEN = "live-badge-token-0123456789abcdef";

/**
 * The live badge of every live page (the queue, the overview, a PR's page) says what its stream
 * is doing, in Chromium: "live" while the stream is open, "disconnected" while the server does
 * not answer, "live" again when it is back, and "signed out" — with a notice linking to sign-in
 * — when the server, back under another session key, refuses the page's session (the stream
 * answers 401).
 */
describeWithBrowser("the live badge in Chromium", () => {
  const backend = BACKENDS[0]!;
  let database: Awaited<ReturnType<typeof backend.createDatabase>>;
  let port: number;
  let greenline: Greenline | undefined;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let context: BrowserContext;
  let page: Page;
  /** The overview and PR 1's page, open beside the queue page in the same session. */
  const others: Page[] = [];
  const problems: string[] = [];

  async function start(sessionSecret: string): Promise<void> {
    const config: Config = {
      port,
      host: "127.0.0.1",
      databaseUrl: database.url,
      logLevel: "warn",
      githubApp: null,
      bootstrap: { token: TOKEN, org: "acme" },
      sandbox: { ciMs: 60_000, failureRate: 0, flakeRate: 0 },
      workerIntervalMs: 50,
      postgresTimeouts: DEFAULT_POSTGRES_TIMEOUTS,
      shutdownTimeoutMs: 5_000,
      webhooks: DEFAULT_WEBHOOK_SETTINGS,
      sessionSecret,
    };
    const sink = new Writable({ write: (_chunk, _encoding, callback) => callback() });
    greenline = await startGreenline(config, { log: createLogger("warn", sink), startWorker: false, liveIntervalMs: 50, liveHeartbeatMs: 200 });
  }

  async function stop(): Promise<void> {
    await greenline?.close();
    greenline = undefined;
  }

  const url = () => `http://127.0.0.1:${port}`;
  const badge = () => page.locator(".live-badge");
  /** Waits until every open page's stream is in `state`, and answers their badges' words. */
  async function allLive(state: string): Promise<string[]> {
    const pages = [page, ...others];
    for (const p of pages) await p.locator(`[data-live="${state}"]`).waitFor({ ...WAIT, state: "attached" });
    return Promise.all(pages.map(async (p) => (await p.locator(".live-badge").textContent()) ?? ""));
  }

  beforeAll(async () => {
    database = await backend.createDatabase();
    port = await freePort();
    await start("first-session-secret-0123456789abcdef");
    const api = new ApiClient(url(), TOKEN);
    await api.ok("createQueue", queueOf());
    await api.ok("submitPullRequest", { ...queueOf(), pr: { number: 1 } });
    chromium = await launchChromium();
    context = await chromium.context();
    page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(`${url()}/sign-in?next=${encodeURIComponent(queuePath())}`);
    await page.getByLabel("API token").fill(TOKEN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${url()}${queuePath()}`);
    for (const path of ["/", `${queuePath()}/pulls/1`]) {
      const other = await context.newPage();
      other.on("pageerror", (error) => problems.push(error.message));
      await other.goto(`${url()}${path}`);
      others.push(other);
    }
  }, 120_000);

  afterAll(async () => {
    await chromium?.close();
    await stop();
    await database?.drop();
  });

  test("says live while the stream is open, and disconnected once the server is gone, on every live page", async () => {
    expect(await allLive("open")).toEqual(["live", "live", "live"]);

    await stop();
    expect(await allLive("disconnected")).toEqual(["disconnected", "disconnected", "disconnected"]);
    for (const p of [page, ...others]) expect(await p.locator(".live-badge").isVisible()).toBe(true);
  }, 60_000);

  test("says live again when the server is back under the same session key", async () => {
    await start("first-session-secret-0123456789abcdef");
    expect(await allLive("open")).toEqual(["live", "live", "live"]);
    expect(await page.locator("#signed-out").count()).toBe(0);
  }, 60_000);

  test("says signed out, and links to sign-in, when the server refuses the session", async () => {
    await stop();
    await start("another-session-secret-0123456789abcdef");
    expect(await allLive("signed-out")).toEqual(["signed out", "signed out", "signed out"]);
    for (const p of others) expect(await p.getByRole("alert").textContent()).toContain("You are signed out");
    const notice = page.getByRole("alert");
    expect(await notice.textContent()).toContain("You are signed out");
    const link = notice.getByRole("link", { name: "Sign in again" });
    expect(await link.getAttribute("href")).toBe(`/sign-in?next=${encodeURIComponent(queuePath())}`);

    // Signing in again brings the page back, live.
    await link.click();
    await page.getByLabel("API token").fill(TOKEN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${url()}${queuePath()}`);
    await page.locator('[data-live="open"]').waitFor({ ...WAIT, state: "attached" });
    expect(await badge().textContent()).toBe("live");
    expect(problems).toEqual([]);
  }, 60_000);

  test("says refused, and stops reconnecting, when the stream answers 403", async () => {
    const refusedPage = await context.newPage();
    refusedPage.on("pageerror", (error) => problems.push(error.message));
    let asked = 0;
    await refusedPage.route("**/events?**", (route) => {
      asked++;
      return route.fulfill({ status: 403, contentType: "text/plain", body: "forbidden" });
    });
    await refusedPage.goto(`${url()}${queuePath()}`);
    await refusedPage.locator('[data-live="refused"]').waitFor({ ...WAIT, state: "attached" });
    expect(await refusedPage.locator(".live-badge").textContent()).toBe("refused");
    expect(await refusedPage.getByRole("alert").textContent()).toContain("The server refused this page's live updates (403)");
    // Final: no more attempts.
    const attempts = asked;
    await refusedPage.waitForTimeout(2_500);
    expect(asked).toBe(attempts);
    await refusedPage.close();
    expect(problems).toEqual([]);
  }, 60_000);

  test("says signed out when its token is revoked, with nothing else changing (the server ends the stream at its heartbeat)", async () => {
    expect(await badge().textContent()).toBe("live");
    const db = greenline!.services.db;
    const [bootstrap] = (await listTokens(db, "acme")).filter((t) => t.name.startsWith("bootstrap"));
    await revokeToken(db, bootstrap!.id, new Date());
    await page.locator('[data-live="signed-out"]').waitFor({ ...WAIT, state: "attached" });
    expect(await badge().textContent()).toBe("signed out");
    expect(await page.getByRole("alert").textContent()).toContain("You are signed out");
    expect(problems).toEqual([]);
  }, 60_000);
});
