import type { Page } from "playwright-core";
import { BACKENDS } from "../support/backends.js";
import { describeWithBrowser, launchChromium, signInWithToken } from "../support/browser.js";
import { startGitHubWorld, type GitHubWorld } from "../support/github-world.js";
import { TestClock } from "../support/harness.js";

const WAIT = { timeout: 20_000 };

/**
 * Issue 26, part 1, in Chromium: the queue page's preflight panel loads, on demand, what
 * checkQueueSetup says of the queue's required checks (the GitHub simulator's workflow files and
 * protection), and without script the link opens the same report as a page.
 */
describeWithBrowser("the preflight panel in Chromium", () => {
  const OWNER = "octo-preflight";
  const FULL = `${OWNER}/app`;
  let world: GitHubWorld;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;

  beforeAll(async () => {
    world = await startGitHubWorld(BACKENDS[0]!, new TestClock(), [{ owner: OWNER, installation: 71 }]);
    world.gh.push(FULL, "main", {
      ".github/workflows/ci.yml": "on:\n  pull_request:\njobs:\n  build:\n    runs-on: ubuntu-latest\n",
      ".github/workflows/lint.yml": "on:\n  push:\n    branches: ['greenline/**']\njobs:\n  lint:\n    runs-on: ubuntu-latest\n",
    });
    world.gh.protect(FULL, "main", { requiredChecks: ["build", "lint"] });
    await world.accounts[0]!.api.ok("createQueue", { repo: { host: "github.com", owner: OWNER, name: "app" }, targetBranch: "main" });
    chromium = await launchChromium();
    const context = await chromium.context();
    page = context.pages()[0] ?? (await context.newPage());
    await signInWithToken(page, world.server.url, world.accounts[0]!.api.token);
  }, 60_000);
  afterAll(async () => {
    await chromium?.close();
    await world?.close();
  });

  test("the panel loads the report: each required check, whether it reports, why not and the fix", async () => {
    await page.goto(`${world.server.url}/queues/github.com/${FULL}/main`);
    const reads = () => world.gh.requests.filter((r) => r.path.includes("/contents/.github/workflows")).length;
    const before = reads();
    await page.getByText("Preflight: will every required check report on testing commits?").click();
    // Nothing is asked of GitHub until the person asks.
    expect(reads()).toBe(before);
    await page.locator("[data-preflight]").click();
    const summary = page.locator(".preflight-summary");
    await summary.waitFor(WAIT);
    expect(await summary.getAttribute("data-ok")).toBe("false");
    const build = page.locator("table.preflight tr", { hasText: "build" });
    expect(await build.locator("td").nth(0).textContent()).toBe("never reports");
    expect(await build.textContent()).toContain("Fix: add `push: { branches: ['greenline/**'] }`");
    expect(await page.locator("table.preflight tr", { hasText: "lint" }).locator("td").nth(0).textContent()).toBe("reports");
    expect(reads()).toBeGreaterThan(before);
  });

  test("without script, the link opens the report as a page", async () => {
    await page.goto(`${world.server.url}/preflight/github.com/${FULL}/main`);
    expect(await page.locator("h1").textContent()).toContain(`Preflight of ${FULL}`);
    expect(await page.locator("table.preflight tbody tr").count()).toBe(2);
    const response = await page.goto(`${world.server.url}/preflight/github.com/${FULL}/no-such-branch`);
    expect(response?.status()).toBe(404);
    expect(await page.locator("main").textContent()).toContain(`branch no-such-branch of ${FULL} not found`);
  });
});
