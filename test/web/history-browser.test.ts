import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { MINUTE_MS } from "../../src/domain/time.js";
import { projectRoot } from "../../src/paths.js";
import { BACKENDS } from "../support/backends.js";
import { describeWithBrowser, launchChromium, signInWithToken } from "../support/browser.js";
import { ciFinishes, prOf, queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const SCREENSHOTS = join(projectRoot, "docs/screenshots");
const WAIT = { timeout: 20_000 };

/**
 * The history page in headless Chromium: reached from the navigation, searched through its form
 * (the address then holds the search), a row followed to the PR's page and its timeline; on a
 * desktop, a phone and a wall screen, with no script error and nothing wider than the phone.
 */
describeWithBrowser("the history page in Chromium", () => {
  const clock = new TestClock();
  let server: TestServer;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  const problems: string[] = [];

  async function screenshots(name: string): Promise<void> {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-desktop.png`), fullPage: true });
    await page.setViewportSize({ width: 375, height: 800 });
    // Nothing wider than the phone's screen (no sideways scrolling of the page).
    expect(await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-phone.png`), fullPage: true });
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-wall.png`) });
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!, { now: clock.now, sandbox: { ciMs: 10 * MINUTE_MS } });
    const sandbox = server.greenline.sandbox!;
    const titles = ["Fix the checkout total for discounted carts", "Add dark mode to the settings page", "Speed up the search index rebuild", "Document the billing export", "Retry the webhook delivery on 502"];
    for (const name of ["web", "api"]) await server.api.ok("createQueue", queueOf(name));
    for (const [i, title] of titles.entries()) await sandbox.openPullRequest(repo("api"), { number: 40 + i, targetBranch: "main", files: { [`f${i}.txt`]: title }, title });
    // api: the five PRs merge; web: eight wait in line, one is cancelled.
    for (let n = 40; n < 45; n++) {
      await server.api.ok("submitPullRequest", prOf(n, "api"));
      clock.advance(2 * MINUTE_MS);
    }
    await ciFinishes(server, clock);
    await ciFinishes(server, clock);
    await server.api.ok("updateQueue", { ...queueOf("web"), state: "paused" });
    for (let n = 1; n <= 8; n++) {
      await server.api.ok("submitPullRequest", prOf(n, "web"));
      clock.advance(3 * MINUTE_MS);
    }
    await server.api.ok("cancelPullRequest", prOf(2, "web"));
    chromium = await launchChromium();
    const context = await chromium.context();
    page = context.pages()[0] ?? (await context.newPage());
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));
    await signInWithToken(page, server.url, server.api.token);
  }, 90_000);
  afterAll(async () => {
    await chromium?.close();
    await server?.close();
  });

  test("reached from the navigation, it lists every PR, newest first, with the operator actions a link away", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "History" }).click();
    await page.waitForURL(`${server.url}/history`);
    const rows = page.locator("#history-table tbody tr");
    await rows.first().waitFor(WAIT);
    expect(await rows.count()).toBe(13);
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-pr")))).toEqual(["8", "7", "6", "5", "4", "3", "2", "1", "44", "43", "42", "41", "40"]);
    expect(await page.locator('#history-table tr[data-pr="2"] [data-reason]').getAttribute("title")).toContain("cancelled_by_user");
    expect(await page.getByRole("link", { name: "operator actions (audit log)" }).getAttribute("href")).toBe("/audit");
    await screenshots("history");
  });

  test("searching by title and state puts the search in the address, and a row opens the PR's timeline", async () => {
    await page.goto(`${server.url}/history`);
    await page.getByLabel("PR number or title").fill("CHECKOUT");
    await page.getByLabel("State").selectOption("merged");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/\/history\?q=CHECKOUT&author=&state=merged&reason=&queue=&from=&to=$/);
    const rows = page.locator("#history-table tbody tr");
    await rows.first().waitFor(WAIT);
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-pr")))).toEqual(["40"]);
    expect(await page.getByLabel("PR number or title").inputValue()).toBe("CHECKOUT");
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.screenshot({ path: join(SCREENSHOTS, "history-search-desktop.png"), fullPage: true });
    await page.getByRole("link", { name: "#40 Fix the checkout total for discounted carts" }).click();
    await page.waitForURL(`${server.url}/queues/github.com/acme/api/main/pulls/40`);
    await page.locator("#timeline-list li").first().waitFor(WAIT);
    expect(await page.locator("#pr-state").getAttribute("data-state")).toBe("merged");
    expect(await page.locator("#timeline-list li").count()).toBeGreaterThanOrEqual(3);
  });

  test("a bad parameter in the address shows a 400 page naming it (and the pages before had no script error or CSP refusal)", async () => {
    expect(problems).toEqual([]);
    const response = await page.goto(`${server.url}/history?from=2026-02-30`);
    expect(response!.status()).toBe(400);
    await page.getByRole("alert").getByText("from: must be a day as YYYY-MM-DD").waitFor(WAIT);
  });
});
