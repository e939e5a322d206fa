import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { SANDBOX_CI_CONTEXT } from "../../src/adapters/sandbox/code-host.js";
import { projectRoot } from "../../src/paths.js";
import { REASONS } from "../../src/domain/reasons.js";
import { BACKENDS } from "../support/backends.js";
import { describeWithBrowser, launchChromium, signInWithToken } from "../support/browser.js";
import { queuePath } from "../support/dashboard.js";
import { ciFinishes, prOf, queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const SCREENSHOTS = join(projectRoot, "docs/screenshots");
const WAIT = { timeout: 20_000 };
const CI_MS = 60_000;

/** The pull request page in headless Chromium: from the queue page to a failed PR's page, its reason and failing check. */
describeWithBrowser("the pull request page in Chromium", () => {
  let server: TestServer;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  const problems: string[] = [];
  const clock = new TestClock();

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!, { now: clock.now, sandbox: { ciMs: CI_MS } });
    await server.api.ok("createQueue", { ...queueOf("web"), concurrency: 3 });
    await server.greenline.sandbox!.openPullRequest(repo("web"), { number: 2, targetBranch: "main", files: { "src/bad.ts": "syntax error" }, broken: true, title: "Checkout: retry declined cards" });
    for (const n of [1, 2, 3]) await server.api.ok("submitPullRequest", prOf(n, "web"));
    for (let round = 0; round < 6; round++) await ciFinishes(server, clock);
    chromium = await launchChromium();
    const context = await chromium.context();
    page = context.pages()[0] ?? (await context.newPage());
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));
    await signInWithToken(page, server.url, server.api.token);
  }, 60_000);
  afterAll(async () => {
    await chromium?.close();
    await server?.close();
  });

  test("from the queue page, a failed PR's page shows its reason and its failing check", async () => {
    await page.goto(`${server.url}${queuePath("web")}`);
    await page.locator('.concluded [data-pr="2"] a').click();
    await page.waitForURL(`${server.url}${queuePath("web")}/pulls/2`);
    const why = page.getByRole("region", { name: "Why it is here now" });
    await why.waitFor(WAIT);
    expect(await why.locator("#pr-state").textContent()).toBe("failed");
    expect(await why.locator("#pr-reason").textContent()).toBe(`${REASONS.tests_failed} tests_failed`);
    expect(await why.locator(".failing-checks").textContent()).toBe(`Failing checks: ${SANDBOX_CI_CONTEXT} (failure)`);
    // The timeline, latest first, and the run that failed with its check.
    expect(await page.locator(".timeline .event").first().getAttribute("data-reason")).toBe("tests_failed");
    expect(await page.locator(`.pr-runs .check-failure[data-check="${SANDBOX_CI_CONTEXT}"]`).count()).toBeGreaterThan(0);
    // A run link in the evidence leads to the run on the same page.
    await why
      .getByRole("link", { name: /^run-\d+$/ })
      .first()
      .click();
    expect(page.url()).toMatch(/#run-run-\d+$/);

    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.screenshot({ path: join(SCREENSHOTS, "pull-request-desktop.png"), fullPage: true });
    await page.setViewportSize({ width: 375, height: 800 });
    // Nothing is wider than a phone's screen.
    expect(await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(SCREENSHOTS, "pull-request-phone.png"), fullPage: true });
    // No CSP violation or script error (a 4xx for /favicon.ico is the browser's own request).
    expect(problems.filter((p) => !p.startsWith("Failed to load resource: the server responded with a status of 4"))).toEqual([]);
  });
});
