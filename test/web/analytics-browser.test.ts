import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { projectRoot } from "../../src/paths.js";
import { concluded, MAIN_PRS, MAIN_RUNS, NOW, OTHER_PRS, RELEASE_PRS, RELEASE_RUNS, type SeededPr, type SeededRun, seedPullRequests, seedRuns } from "../support/analytics-history.js";
import { BACKENDS } from "../support/backends.js";
import { describeWithBrowser, launchChromium, signInWithToken } from "../support/browser.js";
import { queueOf, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const SCREENSHOTS = join(projectRoot, "docs/screenshots");
const WAIT = { timeout: 20_000 };
const DAY = 86_400_000;
const MIN = 60_000;

/** Thirty days of a busy queue before the hand-counted history: a few merges a day, a failure now and then, runs (some flaky). */
function busyMonth(): { prs: SeededPr[]; runs: SeededRun[] } {
  const prs: SeededPr[] = [];
  const runs: SeededRun[] = [];
  const first = Date.parse("2029-12-06T00:00:00Z");
  let number = 100;
  for (let d = 0; d < 28; d++) {
    const merges = 3 + ((d * 7) % 6);
    for (let i = 0; i < merges; i++) {
      const submitted = first + d * DAY + (7 + ((i * 5 + d) % 11)) * 3_600_000 + ((i * 13) % 60) * MIN;
      const minutes = 6 + ((d * 13 + i * 17) % 55);
      const failed = (d + i) % 9 === 0;
      const pr = concluded(number++, new Date(submitted).toISOString(), failed ? "failed" : "merged", new Date(submitted + minutes * MIN).toISOString(), failed ? (i % 2 ? "timeout" : "tests_failed") : "merged");
      // Most are told a merge time at submission, off by up to a quarter of an hour either way.
      prs.push(i % 4 === 3 ? pr : { ...pr, estimatedMergeAt: new Date(submitted + (minutes + (((d * 11 + i * 7) % 31) - 15)) * MIN).toISOString() });
      runs.push({ startedAt: new Date(submitted + MIN).toISOString(), status: failed ? "failed" : "passed", ...((d + i) % 7 === 0 ? { flakeVerdict: { retries: 1, infrastructureRetried: false, excused: {} } } : {}) });
    }
  }
  return { prs, runs };
}

/**
 * The analytics page in headless Chromium: reached from the navigation, its charts drawn, the
 * window switched, a queue chosen, its numbers unfolded and a CSV downloaded; screenshots on a
 * desktop, a phone and a wall display.
 */
describeWithBrowser("the analytics page in Chromium", () => {
  let server: TestServer;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  const problems: string[] = [];
  const clock = new TestClock(Date.parse(NOW));

  async function screenshots(name: string, wall = false): Promise<void> {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-desktop.png`), fullPage: true });
    await page.setViewportSize({ width: 375, height: 800 });
    // Nothing wider than the phone's screen (no sideways scrolling of the page).
    expect(await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-phone.png`), fullPage: true });
    if (wall) {
      await page.setViewportSize({ width: 1920, height: 1080 });
      await page.screenshot({ path: join(SCREENSHOTS, `${name}-wall.png`) });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!, { now: clock.now });
    await server.api.ok("createQueue", queueOf("web", "main"));
    await server.api.ok("createQueue", queueOf("web", "release"));
    const globex = await server.clientFor("globex");
    await globex.ok("createQueue", queueOf("web", "main", "globex"));
    const month = busyMonth();
    await server.greenline.services.db.write(async (tx) => {
      const queues = await tx.queue.findMany({ select: { id: true, branch: true, repository: { select: { owner: true } } } });
      const id = (owner: string, branch: string) => queues.find((x) => x.repository.owner === owner && x.branch === branch)!.id;
      await seedPullRequests(tx, id("acme", "main"), [...MAIN_PRS, ...month.prs]);
      await seedRuns(tx, id("acme", "main"), [...MAIN_RUNS, ...month.runs]);
      await seedPullRequests(tx, id("acme", "release"), RELEASE_PRS);
      await seedRuns(tx, id("acme", "release"), RELEASE_RUNS);
      await seedPullRequests(tx, id("globex", "main"), OTHER_PRS);
    });
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

  test("reached from the navigation: the organization's figures, a chart per metric, and the window switched", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Analytics" }).click();
    await page.waitForURL(`${server.url}/analytics`);
    await page.locator("[data-chart] canvas").nth(4).waitFor(WAIT);
    expect(await page.locator("[data-chart] canvas").count()).toBe(6);
    for (const canvas of await page.locator("[data-chart] canvas").all()) expect((await canvas.boundingBox())!.width).toBeGreaterThan(150);
    await page.getByRole("navigation", { name: "Window" }).getByRole("link", { name: "7 days" }).click();
    await page.waitForURL(`${server.url}/analytics?window=7`);
    expect(await page.locator('[data-figure="merged"]').textContent()).toBe("7");
    await page.locator('[data-chart="chart-hours"] canvas').waitFor(WAIT);
    await page.getByRole("navigation", { name: "Window" }).getByRole("link", { name: "30 days" }).click();
    await page.waitForURL(`${server.url}/analytics?window=30`);
    await page.locator('[data-chart="chart-merges"] canvas').waitFor(WAIT);
    await screenshots("analytics", true);
  });

  test("a queue chosen: its own figures; its numbers unfold; the window keeps the queue", async () => {
    await page.getByLabel("Queue", { exact: true }).selectOption({ label: "acme/web · release" });
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/\/analytics\?window=30&queue=github\.com%2Facme%2Fweb%2Frelease$/);
    expect(await page.locator('[data-figure="merged"]').textContent()).toBe("1");
    await page.getByLabel("Queue", { exact: true }).selectOption({ label: "acme/web · main" });
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/queue=github\.com%2Facme%2Fweb%2Fmain$/);
    await page.getByRole("navigation", { name: "Window" }).getByRole("link", { name: "7 days" }).click();
    await page.waitForURL(/\/analytics\?window=7&queue=github\.com%2Facme%2Fweb%2Fmain$/);
    expect(await page.locator('[data-figure="merged"]').textContent()).toBe("6");
    expect(await page.locator('[data-figure="time-in-queue"]').textContent()).toBe("20 min / 1 h");
    const numbers = page.locator("#time_in_queue details.numbers");
    await numbers.locator("summary").click();
    const row = numbers.getByRole("row", { name: /2030-01-09/ });
    await row.waitFor(WAIT);
    expect(await row.locator("td").allTextContents()).toEqual(["4", "20 min", "40 min"]);
    await page.locator("#failures_by_reason").getByText("Tests failed.").waitFor(WAIT);
    expect(await page.locator('[data-figure="estimate-error"]').textContent()).toBe("10 min");
    await screenshots("analytics-queue");
  });

  test("a metric's CSV downloads with its rows", async () => {
    const [download] = await Promise.all([page.waitForEvent("download"), page.locator("#merges_per_day").getByRole("link", { name: "CSV" }).click()]);
    expect(download.suggestedFilename()).toBe("greenline-merges_per_day-github.com_acme_web_main-7d.csv");
    const text = readFileSync((await download.path())!, "utf8");
    expect(text.split("\r\n")).toEqual(["day_utc,merged", "2030-01-04,0", "2030-01-05,0", "2030-01-06,1", "2030-01-07,0", "2030-01-08,0", "2030-01-09,4", "2030-01-10,1", ""]);
    expect(problems).toEqual([]);
  });
});
