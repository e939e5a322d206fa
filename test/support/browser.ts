import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";

/** Whether the browser suites run (decided in global-setup.mjs: Chromium present, or required). */
export const describeWithBrowser = process.env.GREENLINE_TEST_BROWSER === "1" ? describe : describe.skip;

/** Headless Chromium (Debian's, or GREENLINE_CHROMIUM) with a throwaway profile. */
export async function launchChromium(): Promise<{ context(options?: { width: number; height: number }): Promise<BrowserContext>; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), "greenline-chromium-"));
  const contexts: BrowserContext[] = [];
  return {
    async context(viewport = { width: 1280, height: 900 }) {
      const context = await chromium.launchPersistentContext(join(profile, String(contexts.length)), {
        executablePath: process.env.GREENLINE_CHROMIUM ?? "/usr/bin/chromium",
        headless: true,
        viewport,
        args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
      });
      contexts.push(context);
      return context;
    },
    async close() {
      await Promise.all(contexts.map((c) => c.close()));
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Signs `page` in to the dashboard at `baseUrl` with an API token, from its front page, and waits to be back there. */
export async function signInWithToken(page: Page, baseUrl: string, token: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await page.getByLabel("API token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${baseUrl}/`);
}
