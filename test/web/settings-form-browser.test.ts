import type { Page } from "playwright-core";
import { z } from "zod";
import { ZQueueSettings } from "../../src/api/queues/queue-schemas.js";
import { DEFAULT_QUEUE_SETTINGS } from "../../src/domain/queue-settings.js";
import { SETTING_FIELDS } from "../../src/web/settings-form.js";
import { BACKENDS } from "../support/backends.js";
import { describeWithBrowser, launchChromium, signInWithToken } from "../support/browser.js";
import { queuePath } from "../support/dashboard.js";
import { queueOf, startTestServer, type TestServer } from "../support/harness.js";

type Json = { type?: string; enum?: string[]; minimum?: number; maximum?: number };
const SCHEMA = (z.toJSONSchema(ZQueueSettings, { io: "input", unrepresentable: "any" }) as { properties: Record<string, Json> }).properties;
const DEFAULTS = DEFAULT_QUEUE_SETTINGS as unknown as Record<string, unknown>;
const WAIT = { timeout: 20_000 };

/** Each setting's bounds (integers), values (enums, booleans) and default, as the form's control would hold them. */
function valuesOf(name: string): string[] {
  const schema = SCHEMA[name]!;
  const values: unknown[] = [];
  if (schema.type === "integer" || schema.type === "number") values.push(schema.minimum, schema.maximum);
  else if (schema.type === "boolean") values.push(true, false);
  else if (schema.enum) values.push(...schema.enum.map((v) => v.toLowerCase()));
  else values.push("ci/test\nlint");
  if (name in DEFAULTS && DEFAULTS[name] !== null) values.push(DEFAULTS[name]);
  return [...new Set(values.map(String))];
}

/**
 * Issue 22, item 8, in Chromium: every setting's control accepts (constraint validation, as the
 * browser checks before it submits) its bounds, values and default; pendingFailureDepth goes
 * back to 0 through the form as a person would do it.
 */
describeWithBrowser("the queue settings form in Chromium", () => {
  let server: TestServer;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!, {});
    await server.api.ok("createQueue", { ...queueOf(), pendingFailureDepth: 2 });
    chromium = await launchChromium();
    const context = await chromium.context();
    page = context.pages()[0] ?? (await context.newPage());
    page.on("dialog", (dialog) => void dialog.accept());
    await signInWithToken(page, server.url, server.api.token);
  }, 60_000);
  afterAll(async () => {
    await chromium?.close();
    await server?.close();
  });

  test("every setting's control is valid with each of its bounds, values and its default", async () => {
    await page.goto(`${server.url}${queuePath()}`);
    await page.getByText("Settings", { exact: true }).click();
    const invalid: string[] = [];
    for (const field of SETTING_FIELDS) {
      const control = page.locator(`#setting-${field.name}`);
      for (const value of valuesOf(field.name)) {
        if (field.kind === "boolean" || field.kind === "choice") {
          const options = await control.locator("option").evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value));
          if (!options.includes(value)) invalid.push(`${field.name}=${value}: no such option`);
          continue;
        }
        await control.fill(value);
        const valid = await control.evaluate((el) => (el as unknown as { checkValidity(): boolean }).checkValidity());
        if (!valid) invalid.push(`${field.name}=${value}: the browser refuses it`);
        await control.fill("");
      }
    }
    expect(invalid).toEqual([]);
  });

  test("pendingFailureDepth goes back to its default 0 through the form", async () => {
    await page.goto(`${server.url}${queuePath()}`);
    await page.getByText("Settings", { exact: true }).click();
    await page.getByLabel(/^Pull requests behind a failure to wait for/).fill("0");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Settings saved.").waitFor(WAIT);
    expect((await server.api.ok("getQueue", queueOf())).pendingFailureDepth).toBe(0);
    await page.getByText("Pull requests behind a failure to wait for (now: 0 pull requests)").waitFor(WAIT);
  });
});
