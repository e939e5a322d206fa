import { BACKENDS } from "../support/backends.js";
import { describeWithBrowser, launchChromium } from "../support/browser.js";
import { queuePath } from "../support/dashboard.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { startTestServer, type TestServer } from "../support/harness.js";
import { githubAppOf, postWebhook } from "../support/webhook-post.js";

const WAIT = { timeout: 20_000 };
const queue = { repo: { host: "github.com", owner: "octo-org", name: "app" }, targetBranch: "main" };

/**
 * "Sign in with GitHub" in headless Chromium: the button, GitHub's redirects (the simulator's
 * consent page) and the callback, with the cookies a browser keeps and the page's CSP in force.
 */
describeWithBrowser("sign in with GitHub in Chromium", () => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    server = await startTestServer(BACKENDS[0]!, {
      githubApp: githubAppOf(gh, { oauth: { clientId: gh.clientId, clientSecret: gh.clientSecret, webUrl: gh.url } }),
    });
    gh.callbackUrls = [`${server.url}/sign-in/github/callback`];
    gh.installApp(42, "octo-org");
    await postWebhook(server.url, gh, "installation", {
      action: "created",
      installation: { id: 42, account: { login: "octo-org", id: 420, type: "Organization" } },
      repositories: [],
      sender: { login: "admin", id: 1, type: "User" },
    });
    await server.greenline.worker.drain();
    await (await server.clientFor("octo-org")).ok("createQueue", queue);
    gh.grant("octo-org/app", "alice", "write");
    gh.webUser = "alice";
    chromium = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await chromium?.close();
    await server?.close();
    await gh?.stop();
  });

  test("the button takes a member through GitHub and back to the page asked for, signed in with write access", async () => {
    const context = await chromium.context();
    const tab = context.pages()[0] ?? (await context.newPage());
    const problems: string[] = [];
    tab.on("pageerror", (error) => problems.push(error.message));
    tab.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    const target = queuePath("app", "main", "octo-org");
    await tab.goto(`${server.url}${target}`);
    await tab.waitForURL(`${server.url}/sign-in?next=${encodeURIComponent(target)}`, WAIT);
    await tab.getByRole("link", { name: "Sign in with GitHub" }).click();
    await tab.waitForURL(`${server.url}${target}`, WAIT);
    await tab.getByText("alice ·").waitFor(WAIT);
    expect(await tab.getByText("read-only").count()).toBe(0);
    expect(await tab.getByRole("button", { name: "Pause" }).count()).toBe(1);
    // The browser keeps the session cookie, and not the flow's (it was used up).
    const cookies = await context.cookies(server.url);
    expect(cookies.map((c) => c.name).sort()).toEqual(["greenline_session"]);
    expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: "Lax" });
    // No script error and no CSP violation (a missing favicon's 404 is not one).
    expect(problems.filter((p) => !p.startsWith("Failed to load resource: the server responded with a status of 4"))).toEqual([]);
  }, 60_000);
});
