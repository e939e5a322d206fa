import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { createToken } from "../../src/auth/tokens.js";
import { projectRoot } from "../../src/paths.js";
import { BACKENDS } from "../support/backends.js";
import { describeWithBrowser, launchChromium, signInWithToken } from "../support/browser.js";
import { queuePath } from "../support/dashboard.js";
import { prOf, queueOf, repo, startTestServer, type TestServer } from "../support/harness.js";

const SCREENSHOTS = join(projectRoot, "docs/screenshots");
const WAIT = { timeout: 20_000 };

/**
 * The dashboard driven in headless Chromium against the real service in sandbox mode, its worker
 * running on its own and simulated CI taking a moment: what a person sees, live.
 */
describeWithBrowser("the dashboard in Chromium", () => {
  let server: TestServer;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let acme: BrowserContext;
  let page: Page;
  /** Errors the page reported (a CSP violation shows here). */
  const problems: string[] = [];

  async function signIn(context: BrowserContext, token: string): Promise<Page> {
    const tab = context.pages()[0] ?? (await context.newPage());
    tab.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    tab.on("pageerror", (error) => problems.push(error.message));
    tab.on("dialog", (dialog) => void dialog.accept());
    await signInWithToken(tab, server.url, token);
    return tab;
  }

  /** How far the page is wider than its viewport (0: no horizontal scrolling). */
  const overflow = (tab: Page) => tab.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") as Promise<number>;

  /**
   * Desktop (1280 px) and phone (375 px) screenshots of the page as it is, into docs/screenshots.
   * `fits`: the page must not scroll sideways on either (the queue's pages).
   */
  async function screenshots(tab: Page, name: string, options: { fits?: boolean } = {}): Promise<void> {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await tab.setViewportSize({ width: 1280, height: 900 });
    await tab.screenshot({ path: join(SCREENSHOTS, `${name}-desktop.png`), fullPage: true });
    if (options.fits) expect([name, "desktop", await overflow(tab)]).toEqual([name, "desktop", 0]);
    await tab.setViewportSize({ width: 375, height: 800 });
    await tab.screenshot({ path: join(SCREENSHOTS, `${name}-phone.png`), fullPage: true });
    if (options.fits) expect([name, "phone", await overflow(tab)]).toEqual([name, "phone", 0]);
    await tab.setViewportSize({ width: 1280, height: 900 });
  }

  /** The font size (px) of the first row of the line. */
  const rowFontSize = (tab: Page) =>
    tab
      .locator("#line-list > li")
      .first()
      .evaluate((row) => Number.parseFloat((globalThis as unknown as { getComputedStyle(e: unknown): { fontSize: string } }).getComputedStyle(row).fontSize));

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!, { startWorker: true, sandbox: { ciMs: 1500 } });
    chromium = await launchChromium();
    await server.api.ok("createQueue", { ...queueOf(), concurrency: 2 });
    await server.api.ok("createQueue", queueOf("api"));
    acme = await chromium.context();
    const first = acme.pages()[0] ?? (await acme.newPage());
    await first.goto(`${server.url}/sign-in`);
    await screenshots(first, "sign-in");
    page = await signIn(acme, server.api.token);
  }, 60_000);
  afterAll(async () => {
    await chromium?.close();
    await server?.close();
  });

  test("signing in with a token shows the organization's queues, with their charts", async () => {
    await page.getByRole("link", { name: /acme\/web/ }).waitFor(WAIT);
    await page.locator("[data-chart] .uplot").first().waitFor(WAIT);
    expect(await page.locator(".queue-card").count()).toBe(2);
    // The y axis says what it counts, in whole numbers (no PR is counted in halves).
    expect(await page.locator("[data-chart]").first().getAttribute("data-y-axis")).toMatch(/^PRs per hour: 0( \d+)+$/);
  });

  test("a pull request goes from queued to merged on the queue page, live, without a reload", async () => {
    await page.goto(`${server.url}${queuePath()}`);
    await page.evaluate(() => {
      (globalThis as unknown as { notReloaded: boolean }).notReloaded = true;
    });
    // The stream is open before anything happens.
    await page.locator('[data-live="open"]').waitFor({ ...WAIT, state: "attached" });
    for (const n of [1, 2, 3]) await server.api.ok("submitPullRequest", prOf(n));
    await page.locator('.line [data-pr="1"] [data-state="testing"]').waitFor(WAIT);
    await page.locator(".runs [data-run]").first().waitFor(WAIT);
    // One line per PR on a desktop (a row no taller than about two lines of text).
    const heights = await page.locator("#line-list > li").evaluateAll((rows) => rows.map((row) => (row as unknown as { getBoundingClientRect(): { height: number } }).getBoundingClientRect().height));
    expect(heights.every((h) => h <= 44)).toBe(true);
    // The runs drawn as what each tests on top of what, said in words to assistive technology.
    expect(await page.locator(".runs .stack").first().getAttribute("aria-label")).toMatch(/^run-\d+ tests #\d+ (on the target branch|on top of #\d+(, #\d+)*)$/);
    await screenshots(page, "queue", { fits: true });
    await page.locator('.concluded [data-pr="1"] [data-state="merged"]').waitFor(WAIT);
    await page.locator('.concluded [data-pr="3"] [data-state="merged"]').waitFor(WAIT);
    expect(await page.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    expect((await server.api.ok("getSubmittedPullRequest", prOf(3))).state).toBe("merged");
  });

  test("pausing asks for confirmation, then the page shows the queue paused; resuming runs it again", async () => {
    await page.goto(`${server.url}${queuePath()}`);
    let asked = "";
    page.once("dialog", (dialog) => {
      asked = dialog.message();
    });
    await page.getByRole("button", { name: "Pause" }).click();
    await page.locator('#queue-state[data-state="paused"]').waitFor(WAIT);
    expect(asked).toContain("Pause the queue of acme/web main?");
    await page.getByText("The queue is paused.").waitFor(WAIT);
    expect((await server.api.ok("getQueue", queueOf())).state).toBe("paused");
    await page.getByRole("button", { name: "Resume" }).click();
    await page.locator('#queue-state[data-state="running"]').waitFor(WAIT);
  });

  test("freezing from the page holds merges and says so; unfreezing merges what passed", async () => {
    await page.goto(`${server.url}${queuePath("api")}`);
    await page.locator('[data-live="open"]').waitFor({ ...WAIT, state: "attached" });
    await page.getByText("Freeze…").click();
    await page.locator("#freeze-reason").fill("release 4.2");
    await page.getByRole("button", { name: "Freeze merges" }).click();
    await page.getByText("The queue is frozen: only hotfixes merge.").waitFor(WAIT);
    await page.getByText("Frozen until it is unfrozen (release 4.2): only hotfixes merge").waitFor(WAIT);
    await server.api.ok("submitPullRequest", prOf(7, "api"));
    await page.locator('.line [data-pr="7"] [data-state="tests_passed"]').waitFor(WAIT);
    await screenshots(page, "queue-frozen", { fits: true });
    expect((await server.api.ok("getSubmittedPullRequest", prOf(7, "api"))).state).toBe("tests_passed");
    await page.getByRole("button", { name: "Unfreeze" }).click();
    await page.locator('.concluded [data-pr="7"] [data-state="merged"]').waitFor(WAIT);
    expect(await page.getByText("Frozen until").count()).toBe(0);
    // The audit log says it was done on the dashboard.
    const audit = await server.api.ok("getAuditLog", { page_query: { page_size: 50, page_token: "" }, repo: repo("api") });
    expect(audit.entries.slice(0, 2).map((e: { action: string; channel: string }) => [e.action, e.channel])).toEqual([
      ["queue.freeze_removed", "dashboard"],
      ["queue.freeze_added", "dashboard"],
    ]);
    // The audit page lists it, with who and how.
    await page.getByRole("link", { name: "Audit log" }).click();
    await page.locator('tr[data-audit="queue.freeze_added"]').first().waitFor(WAIT);
    const row = await page.locator('tr[data-audit="queue.freeze_added"]').first().textContent();
    expect(row ?? "").toContain("github.com/acme/api");
    expect(row ?? "").toContain("dashboard");
    expect(row ?? "").toContain("release 4.2");
    await screenshots(page, "audit");
  });

  test("a weekly freeze set from the page is listed with its time zone, and removed from there", async () => {
    await page.goto(`${server.url}${queuePath("api")}`);
    await page.locator('[data-live="open"]').waitFor({ ...WAIT, state: "attached" });
    await page.getByText("Freeze…").click();
    await page.locator("#weekly-reason").fill("weekends");
    await page.locator("#weekly-days").fill("fri, sat, sun");
    await page.locator("#weekly-from").fill("18:00");
    await page.locator("#weekly-until").fill("08:00");
    await page.locator("#weekly-zone").fill("Europe/Berlin");
    await page.getByRole("button", { name: "Freeze every week" }).click();
    await page.getByText("The weekly freeze is set.").waitFor(WAIT);
    const listed = page.locator("#queue-freezes li").filter({ hasText: "weekends" });
    await listed.waitFor(WAIT);
    expect(await listed.textContent()).toContain("every fri, sat, sun 18:00–08:00 Europe/Berlin");
    // A time zone that does not exist is the API's refusal, named, on the page (the panel, redrawn live, is folded again).
    if (!(await page.locator("#weekly-reason").isVisible())) await page.getByText("Freeze…").click();
    await page.locator("#weekly-reason").fill("nope");
    await page.locator("#weekly-days").fill("mon");
    await page.locator("#weekly-from").fill("08:00");
    await page.locator("#weekly-until").fill("09:00");
    await page.locator("#weekly-zone").fill("Mars/Olympus");
    await page.getByRole("button", { name: "Freeze every week" }).click();
    await page.getByText("weekly.timeZone: must be an IANA time zone").waitFor(WAIT);
    await listed.getByRole("button", { name: "Remove" }).click();
    await page.getByText("The freeze is removed.").waitFor(WAIT);
    await page
      .locator("#queue-freezes li")
      .filter({ hasText: "weekends" })
      .waitFor({ ...WAIT, state: "detached" });
    expect((await server.api.ok("listQueueFreezes", queueOf("api"))).freezes).toEqual([]);
  });

  test("a change made elsewhere (the API) shows without a reload", async () => {
    await page.goto(`${server.url}${queuePath()}`);
    await page.locator('[data-live="open"]').waitFor({ ...WAIT, state: "attached" });
    await server.api.ok("updateQueue", { ...queueOf(), state: "draining" });
    await page.locator('#queue-state[data-state="draining"]').waitFor(WAIT);
    await server.api.ok("updateQueue", { ...queueOf(), state: "running" });
    await page.locator('#queue-state[data-state="running"]').waitFor(WAIT);
  });

  test("a failed pull request shows its state and reason", async () => {
    await server.greenline.sandbox!.openPullRequest(repo(), { number: 7, targetBranch: "main", files: { "src/bad.ts": "syntax error" }, broken: true });
    await page.goto(`${server.url}${queuePath()}`);
    await server.api.ok("submitPullRequest", prOf(7));
    const failed = page.locator('.concluded li[data-pr="7"]');
    await failed.locator('[data-state="failed"]').waitFor(WAIT);
    // The reason's sentence, not its code.
    expect(await failed.textContent()).toContain("failed Tests failed, ");
  });

  test("the settings form changes a setting; a refusal shows the API's words", async () => {
    await page.goto(`${server.url}${queuePath()}`);
    await page.getByText("Settings", { exact: true }).click();
    await page.getByLabel(/^Concurrency/).fill("3");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Settings saved.").waitFor(WAIT);
    expect((await server.api.ok("getQueue", queueOf())).concurrency).toBe(3);
    await page.getByText("Concurrency (now: 3 runs)").waitFor(WAIT);
    await page.getByLabel(/^Required checks/).fill("ci/build");
    await page.getByLabel(/^Clear the required checks/).selectOption("true");
    await page.getByRole("button", { name: "Save settings" }).click();
    // Next to the form, in the form's words (the API says "deleteRequiredStatuses: … requiredStatuses …").
    await page.locator("#settings").getByRole("alert").getByText("Clear the required checks: cannot be true while Required checks is also given").waitFor(WAIT);
    expect(await page.getByLabel(/^Required checks/).inputValue()).toBe("ci/build");
    expect(await page.getByLabel(/^Clear the required checks/).getAttribute("aria-invalid")).toBe("true");
    await page.screenshot({ path: join(SCREENSHOTS, "queue-settings-desktop.png"), fullPage: true });
  });

  test("another organization sees none of these queues, and its live stream is refused", async () => {
    const { token } = await createToken(server.greenline.services.db, "globex", "test");
    const globex = await chromium.context();
    const theirs = await signIn(globex, token);
    expect(await theirs.locator(".queue-card").count()).toBe(0);
    const response = await theirs.goto(`${server.url}${queuePath()}`);
    expect(response!.status()).toBe(404);
    expect(await theirs.locator("body").textContent()).not.toContain("acme/web");
    const stream = await theirs.evaluate(async () => (await fetch("/events?queue=github.com/acme/web/main")).status);
    expect(stream).toBe(404);
    // Its audit log holds none of acme's actions.
    await theirs.goto(`${server.url}/audit`);
    expect(await theirs.locator("body").textContent()).not.toContain("acme");
    await screenshots(theirs, "not-found");
  });

  test('times since ("for 3 s") count on while the page is open, without a refresh', async () => {
    await server.api.ok("createQueue", queueOf("still"));
    // Paused: nothing changes, so no live refresh re-renders the line.
    await server.api.ok("updateQueue", { ...queueOf("still"), state: "paused" });
    await server.api.ok("submitPullRequest", prOf(20, "still"));
    await page.goto(`${server.url}${queuePath("still")}`);
    const elapsed = page.locator('.line [data-pr="20"] time[data-elapsed]');
    const first = await elapsed.textContent();
    expect(first).toMatch(/^\d+ s$/);
    // The same element (not a re-rendered one) says a later time.
    await elapsed.evaluate((el) => el.setAttribute("data-marked", "1"));
    await page.waitForFunction(
      (before) => {
        const el = (globalThis as unknown as { document: { querySelector(s: string): { textContent: string } | null } }).document.querySelector('.line [data-pr="20"] time[data-elapsed][data-marked]');
        return el !== null && el.textContent !== before;
      },
      first,
      WAIT,
    );
    expect(Number.parseInt((await elapsed.textContent())!, 10)).toBeGreaterThan(Number.parseInt(first!, 10));
  });

  test("a transition of one PR changes that row live; the other rows stay the same elements, through moves, removals and additions", async () => {
    await server.api.ok("createQueue", queueOf("rows"));
    // Paused: only the changes made here happen.
    await server.api.ok("updateQueue", { ...queueOf("rows"), state: "paused" });
    for (const n of [30, 31, 32]) await server.api.ok("submitPullRequest", prOf(n, "rows"));
    await page.goto(`${server.url}${queuePath("rows")}`);
    await page.locator('[data-live="open"]').waitFor({ ...WAIT, state: "attached" });
    const order = () => page.locator("#line-list > li").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-pr")));
    expect(await order()).toEqual(["30", "31", "32"]);
    // Marks on the elements themselves: a re-rendered row would come without them.
    await page.locator("#line-list > li").evaluateAll((rows) => {
      for (const row of rows) (row as unknown as { marked: boolean }).marked = true;
    });
    const marked = () => page.locator("#line-list > li").evaluateAll((rows) => rows.filter((row) => (row as unknown as { marked?: boolean }).marked).map((row) => row.getAttribute("data-pr")));
    // #31 goes to the front with a higher priority: its row changes and moves; #30 and #32 stay.
    await server.api.ok("submitPullRequest", { ...prOf(31, "rows"), priority: "high" });
    await page.locator('#line-pr-31 [data-priority="high"]').waitFor(WAIT);
    expect(await order()).toEqual(["31", "30", "32"]);
    expect(await marked()).toEqual(["30", "32"]);
    // #30 leaves, #33 arrives last: #32 is still the same element.
    await server.api.ok("cancelPullRequest", prOf(30, "rows"));
    await server.api.ok("submitPullRequest", prOf(33, "rows"));
    await page.locator("#line-pr-33").waitFor(WAIT);
    await page.locator("#line-pr-30").waitFor({ ...WAIT, state: "detached" });
    expect(await order()).toEqual(["31", "32", "33"]);
    expect(await marked()).toEqual(["32"]);
    await page.getByRole("heading", { name: "The line (3)" }).waitFor(WAIT);
  });

  test("a read token sees the queue without any action", async () => {
    const { token } = await createToken(server.greenline.services.db, "acme", "viewer", "read");
    const viewer = await signIn(await chromium.context(), token);
    await viewer.goto(`${server.url}${queuePath("rows")}`);
    await viewer.getByText("read-only", { exact: true }).waitFor(WAIT);
    // Where the actions would be, why there are none.
    await viewer.getByText("read-only access: actions need a token with write").waitFor(WAIT);
    expect(await viewer.getByRole("button", { name: /Pause|Drain|Resume|Cancel|Restart|Set priority|Save settings/ }).count()).toBe(0);
    // No row has a menu of actions.
    await viewer.locator("#line-list > li").first().waitFor(WAIT);
    expect(await viewer.locator("details.row-menu, .row-menu").count()).toBe(0);
  });

  test("a PR's actions are behind its row's ⋯ menu: priority, restart and cancel, each confirmed, with the keyboard too", async () => {
    await server.api.ok("createQueue", queueOf("menu"));
    // Paused: nothing starts testing, only what is done here happens.
    await server.api.ok("updateQueue", { ...queueOf("menu"), state: "paused" });
    for (const n of [40, 41, 42]) await server.api.ok("submitPullRequest", prOf(n, "menu"));
    await page.goto(`${server.url}${queuePath("menu")}`);
    await page.locator('[data-live="open"]').waitFor({ ...WAIT, state: "attached" });
    const row = (n: number) => page.locator(`#line-pr-${n}`);
    const asked: string[] = [];
    const listen = (dialog: { message(): string }) => void asked.push(dialog.message());
    page.on("dialog", listen);
    try {
      // Closed, the menu shows nothing but its ⋯.
      await expect(row(41).getByRole("button", { name: "Cancel" }).isVisible()).resolves.toBe(false);
      await row(41).getByLabel("Actions for #41").click();
      await page.screenshot({ path: join(SCREENSHOTS, "queue-menu-desktop.png") });
      // Open on a phone, the menu stays within the screen.
      await page.setViewportSize({ width: 375, height: 800 });
      expect(await overflow(page)).toBe(0);
      await page.screenshot({ path: join(SCREENSHOTS, "queue-menu-phone.png") });
      await page.setViewportSize({ width: 1280, height: 900 });
      await row(41).getByLabel("Priority").selectOption("high");
      await row(41).getByRole("button", { name: "Set priority" }).click();
      await page.getByText("#41: Priority changed.").waitFor(WAIT);
      await row(41).locator('[data-priority="high"]').waitFor(WAIT);
      expect((await server.api.ok("getSubmittedPullRequest", prOf(41, "menu"))).priorityName).toBe("high");
      // By keyboard: focus the ⋯, open it with Enter, Escape closes it again.
      await row(40).getByLabel("Actions for #40").focus();
      await page.keyboard.press("Enter");
      await row(40).getByRole("button", { name: "Restart" }).waitFor(WAIT);
      await page.keyboard.press("Escape");
      await expect(row(40).locator("details.row-menu").getAttribute("open")).resolves.toBeNull();
      await page.keyboard.press("Enter");
      await row(40).getByRole("button", { name: "Restart" }).click();
      // Paused: #40 never started testing, and the page says so.
      await page.getByText(/#40 has not started testing yet/).waitFor(WAIT);
      await row(42).getByLabel("Actions for #42").click();
      await row(42).getByRole("button", { name: "Cancel" }).click();
      await row(42).waitFor({ ...WAIT, state: "detached" });
      expect((await server.api.ok("getSubmittedPullRequest", prOf(42, "menu"))).state).toBe("cancelled");
      expect(asked).toEqual(["Change the priority of #41?", "Restart the tests of #40?", "Remove #42 from the queue?"]);
    } finally {
      page.off("dialog", listen);
    }
  });

  test("the wall display (?tv) at 1920×1080: larger type, no controls at all, and still live", async () => {
    // The queue with a history (its runs' durations make the ETAs).
    const wall = await (await chromium.context({ width: 1920, height: 1080 })).newPage();
    await wall.context().addCookies(await acme.cookies());
    wall.on("pageerror", (error) => problems.push(error.message));
    // The queue page links to it.
    await page.goto(`${server.url}${queuePath()}`);
    expect(await page.getByRole("link", { name: "Wall display" }).getAttribute("href")).toBe(`${queuePath()}?tv`);
    await server.api.ok("updateQueue", { ...queueOf(), state: "paused" });
    for (const n of [50, 51, 52, 53]) await server.api.ok("submitPullRequest", prOf(n));
    await page.goto(`${server.url}${queuePath()}`);
    const desktop = await rowFontSize(page);
    await wall.goto(`${server.url}${queuePath()}?tv`);
    await wall.locator('[data-live="open"]').waitFor({ ...WAIT, state: "attached" });
    expect(await wall.locator("form, button, select, input, textarea, details, summary, nav").count()).toBe(0);
    expect(await rowFontSize(wall)).toBeGreaterThan(desktop * 1.4);
    expect(await overflow(wall)).toBe(0);
    // Live: the queue resumes, runs start and PRs merge, without a reload.
    await server.api.ok("updateQueue", { ...queueOf(), state: "running" });
    await wall.locator(".runs [data-run]").first().waitFor(WAIT);
    await wall.locator('.line [data-pr="50"] [data-state="testing"]').waitFor(WAIT);
    // Its runs so far give the PRs in line an estimated merge time, counting down.
    expect(await wall.locator('.line [data-pr="53"] .eta time[data-remaining]').textContent()).toMatch(/^(~\d+ min|< 1 min|due)$/);
    await wall.screenshot({ path: join(SCREENSHOTS, "queue-tv.png") });
    await wall.locator('.concluded [data-pr="50"] [data-state="merged"]').waitFor(WAIT);
    // What the stream swapped in has no controls either.
    expect(await wall.locator("form, button, select, input, textarea, details, summary").count()).toBe(0);
    // A wrong value is refused, naming the parameter.
    const refused = await wall.goto(`${server.url}${queuePath()}?tv=yes`);
    expect(refused!.status()).toBe(400);
    expect(await wall.locator("body").textContent()).toContain("tv: must be given once, empty or 1");
    await wall.close();
  });

  test("the overview and a PR's page update live, without a reload", async () => {
    await page.goto(`${server.url}/`);
    await page.locator('[data-live="open"]').waitFor({ ...WAIT, state: "attached" });
    const card = page.locator('[data-queue="acme/rows:main"]');
    await card.locator("[data-chart] .uplot").waitFor(WAIT);
    expect(await card.locator("dt:text-is('In line') + dd").textContent()).toBe("3");
    await server.api.ok("submitPullRequest", prOf(34, "rows"));
    await card.locator("dt:text-is('In line') + dd:text-is('4')").waitFor(WAIT);
    // The replaced card draws its chart again.
    await card.locator("[data-chart] .uplot").waitFor(WAIT);

    await page.goto(`${server.url}${queuePath("rows")}/pulls/34`);
    await page.locator('[data-live="open"]').waitFor({ ...WAIT, state: "attached" });
    await page.locator('#pr-state[data-state="pending"]').waitFor(WAIT);
    await server.api.ok("cancelPullRequest", prOf(34, "rows"));
    await page.locator('#pr-state[data-state="cancelled"]').waitFor(WAIT);
    await page.locator('#timeline-list > li[data-reason="cancelled_by_user"]').first().waitFor(WAIT);
  });

  test("the overview, after all this, and no page reported an error (no CSP violation)", async () => {
    await page.goto(`${server.url}/`);
    await page.locator("[data-chart] .uplot").first().waitFor(WAIT);
    await screenshots(page, "overview");
    // Answers with an error status (the 404 and the refused settings above) are expected; nothing else is.
    expect(problems.filter((p) => !p.startsWith("Failed to load resource: the server responded with a status of 4"))).toEqual([]);
  });
});
