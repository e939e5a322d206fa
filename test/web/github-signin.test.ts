import { BACKENDS } from "../support/backends.js";
import { DashboardClient, queueForm, queuePath } from "../support/dashboard.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, type TestServer } from "../support/harness.js";
import { postWebhook } from "../support/webhook-post.js";

const octoQueue = { repo: { host: "github.com", owner: "octo-org", name: "app" }, targetBranch: "main" };
const globexQueue = { repo: { host: "github.com", owner: "globex-gh", name: "site" }, targetBranch: "main" };

/** What the browser is left with after GitHub sent it back to Greenline. */
type Landing = { status: number; location: string | null; cookies: string[]; text: string };

/**
 * "Sign in with GitHub" against the GitHub simulator's OAuth web flow, over plain HTTP with the
 * cookies carried by hand as a browser would: Greenline → GitHub's authorize page → Greenline's
 * callback, which exchanges the code server-side and reads the user's installations.
 */
describe.each(BACKENDS)("sign in with GitHub on $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let octo: ApiClient;

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    server = await startTestServer(backend, {
      githubApp: {
        appId: gh.appId,
        privateKey: gh.privateKey,
        webhookSecret: gh.webhookSecret,
        apiUrl: gh.url,
        throttle: false,
        oauth: { clientId: gh.clientId, clientSecret: gh.clientSecret, webUrl: gh.url },
      },
    });
    gh.callbackUrls = [`${server.url}/sign-in/github/callback`];
    for (const [id, account] of [
      [42, "octo-org"],
      [43, "globex-gh"],
    ] as const) {
      gh.installApp(id, account);
      const delivered = await postWebhook(server.url, gh, "installation", {
        action: "created",
        installation: { id, account: { login: account, id: id * 10, type: "Organization" } },
        repositories: [],
        sender: { login: "admin", id: 1, type: "User" },
      });
      expect(delivered.status).toBe(200);
    }
    await server.greenline.worker.drain();
    octo = await server.clientFor("octo-org");
    await octo.ok("createQueue", octoQueue);
    await (await server.clientFor("globex-gh")).ok("createQueue", globexQueue);
    gh.grant("octo-org/app", "alice", "write");
    gh.grant("octo-org/app", "bob", "read");
    // Push to a repository without a queue gives no say over the queues.
    gh.grant("octo-org/docs", "bob", "write");
    gh.grant("octo-org/app", "dave", "admin");
    gh.grant("globex-gh/site", "dave", "read");
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  /** Clicks "Sign in with GitHub" as `login` (signed in on GitHub); `tamper` may change the URL GitHub sends the browser back to. */
  async function signIn(login: string, tamper: (callback: URL) => void = () => {}): Promise<Landing> {
    gh.webUser = login;
    const start = await fetch(`${server.url}/sign-in/github?next=${encodeURIComponent(queuePath("app", "main", "octo-org"))}`, { redirect: "manual" });
    expect(start.status).toBe(303);
    const oauthCookie = start.headers.getSetCookie().find((c) => c.startsWith("greenline_oauth="))!;
    expect(oauthCookie).toMatch(/; Path=\/sign-in\/github; HttpOnly; SameSite=Lax; Max-Age=600$/);
    const consent = await fetch(start.headers.get("location")!, { redirect: "manual" });
    expect(consent.status).toBe(302);
    const callback = new URL(consent.headers.get("location")!);
    tamper(callback);
    return land(callback.href, oauthCookie.split(";")[0]!);
  }

  async function land(url: string, cookie: string | undefined): Promise<Landing> {
    const response = await fetch(url, { redirect: "manual", headers: cookie ? { cookie } : {} });
    return { status: response.status, location: response.headers.get("location"), cookies: response.headers.getSetCookie(), text: await response.text() };
  }

  const sessionOf = (landing: Landing) => landing.cookies.find((c) => c.startsWith("greenline_session="))?.split(";")[0];
  const queueState = async () => (await octo.ok("getQueue", octoQueue)).state;

  test("the sign-in page offers GitHub only when the App's OAuth client is configured (never in the sandbox)", async () => {
    const page = await fetch(`${server.url}/sign-in`);
    expect(await page.text()).toContain('<a class="button" href="/sign-in/github?next=%2F">Sign in with GitHub</a>');
    const sandbox = await startTestServer(backend);
    try {
      const text = await (await fetch(`${sandbox.url}/sign-in`)).text();
      expect(text).toContain('name="token"');
      expect(text).not.toContain("Sign in with GitHub");
      expect(text).not.toContain("/sign-in/github");
      expect((await fetch(`${sandbox.url}/sign-in/github`, { redirect: "manual" })).status).toBe(404);
      expect((await fetch(`${sandbox.url}/sign-in/github/callback?code=x&state=y`, { redirect: "manual" })).status).toBe(404);
    } finally {
      await sandbox.close();
    }
  });

  test("the flow sends GitHub the client id, the callback, a state and a PKCE challenge", async () => {
    const start = await fetch(`${server.url}/sign-in/github`, { redirect: "manual" });
    const authorize = new URL(start.headers.get("location")!);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${gh.url}/login/oauth/authorize`);
    expect(authorize.searchParams.get("client_id")).toBe(gh.clientId);
    expect(authorize.searchParams.get("redirect_uri")).toBe(`${server.url}/sign-in/github/callback`);
    expect(authorize.searchParams.get("state")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(authorize.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
    // Neither the state nor the verifier can be read from the cookie's name or attributes alone; the cookie is signed.
    expect(start.headers.getSetCookie()[0]).not.toContain(authorize.searchParams.get("state")!);
  });

  test("a member who can push to a queued repository signs in with write access and can pause the queue; actions name the GitHub login", async () => {
    const landing = await signIn("alice");
    expect([landing.status, landing.location]).toEqual([303, queuePath("app", "main", "octo-org")]);
    const session = sessionOf(landing)!;
    expect(landing.cookies.find((c) => c.startsWith("greenline_session="))).toMatch(/; Path=\/; HttpOnly; SameSite=Lax; Max-Age=3600$/);
    // The user's GitHub token is in no cookie and no log line.
    const issued = gh.requests.filter((r) => r.path === "/login/oauth/access_token").map((r) => (r.response as { access_token?: string }).access_token!);
    expect(issued.at(-1)).toMatch(/^ghu_/);
    // The cookie holds the GitHub login, the organization and the role: no secret.
    expect(Buffer.from(session.split("=")[1]!.split(".")[0]!, "base64url").toString()).toMatch(/^\[\["github","alice","write"\],"[^"]+",\d+\]$/);
    expect(server.logs.join("")).not.toContain(issued.at(-1)!);
    // GitHub was asked with the user's token, not the App's.
    expect(gh.requests.filter((r) => r.path === "/user/installations").at(-1)!.authorization).toBe(`Bearer ${issued.at(-1)}`);

    const alice = new DashboardClient(server.url, session);
    const page = await alice.get(queuePath("app", "main", "octo-org"));
    expect(page.status).toBe(200);
    expect(page.text).toContain("alice ·");
    expect(page.text).not.toContain("read-only");
    expect(page.text).toContain('name="action"');
    const done = await alice.post("/actions/queue", { ...queueForm("app", "main", "octo-org"), action: "pause", csrf: await alice.csrf() });
    expect(done.status).toBe(200);
    expect(done.text).toContain("The queue is paused.");
    expect(await queueState()).toBe("paused");
    const logged = server.logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === "dashboard action" && line.action === "pause");
    expect(logged).toMatchObject({ actor: "github:alice", queue: "octo-org/app/main", outcome: "done" });
    await octo.ok("updateQueue", { ...octoQueue, state: "running" });
  });

  test("a member who can only read (or push only where there is no queue) signs in read-only, sees no actions, and a forged POST is refused", async () => {
    const landing = await signIn("bob");
    expect(landing.status).toBe(303);
    const bob = new DashboardClient(server.url, sessionOf(landing)!);
    const page = await bob.get(queuePath("app", "main", "octo-org"));
    expect(page.status).toBe(200);
    expect(page.text).toContain("read-only");
    expect(page.text).not.toContain('name="action"');
    expect(page.text).not.toContain("data-action=");
    const forged = await bob.post("/actions/queue", { ...queueForm("app", "main", "octo-org"), action: "pause", csrf: await bob.csrf() });
    expect(forged.status).toBe(403);
    expect(await queueState()).toBe("running");
  });

  test("a GitHub user with no installation of the App is refused with a clear page and no session", async () => {
    const landing = await signIn("carol");
    expect(landing.status).toBe(403);
    expect(landing.text).toContain("GitHub user carol is not a member of any account where Greenline&#39;s GitHub App is installed");
    expect(sessionOf(landing)).toBeUndefined();
  });

  test("a state that does not match the browser's, a callback without the browser's cookie, and a replayed callback are refused", async () => {
    const forged = await signIn("alice", (callback) => callback.searchParams.set("state", "x".repeat(43)));
    expect(forged.status).toBe(403);
    expect(forged.text).toContain("state: does not match the sign-in this browser started");
    expect(sessionOf(forged)).toBeUndefined();

    // GitHub's redirect followed in another browser (login CSRF): no cookie, no sign-in.
    gh.webUser = "alice";
    const start = await fetch(`${server.url}/sign-in/github`, { redirect: "manual" });
    const consent = await fetch(start.headers.get("location")!, { redirect: "manual" });
    const elsewhere = await land(consent.headers.get("location")!, undefined);
    expect(elsewhere.status).toBe(400);
    expect(sessionOf(elsewhere)).toBeUndefined();

    // The same callback, with the same cookie, twice: the state is single-use.
    const cookie = start.headers.getSetCookie()[0]!.split(";")[0]!;
    const first = await land(consent.headers.get("location")!, cookie);
    expect(first.status).toBe(303);
    const again = await land(consent.headers.get("location")!, cookie);
    expect(again.status).toBe(403);
    expect(sessionOf(again)).toBeUndefined();
  });

  test("a code GitHub does not know is refused (bad_verification_code), and so is a denied consent", async () => {
    const bad = await signIn("alice", (callback) => callback.searchParams.set("code", "0123456789abcdef0123"));
    expect(bad.status).toBe(401);
    expect(bad.text).toContain("bad_verification_code");
    expect(sessionOf(bad)).toBeUndefined();
    gh.consentDenied = true;
    try {
      const denied = await signIn("alice");
      expect(denied.status).toBe(403);
      expect(denied.text).toContain("access_denied");
    } finally {
      gh.consentDenied = false;
    }
  });

  test("another installation's organization is not found: its queue page, live stream and actions are 404", async () => {
    const alice = new DashboardClient(server.url, sessionOf(await signIn("alice"))!);
    const overview = await alice.get("/");
    expect(overview.text).toContain("octo-org/app");
    expect(overview.text).not.toContain("globex-gh/site");
    const theirs = await alice.get(queuePath("site", "main", "globex-gh"));
    const missing = await alice.get(queuePath("nope", "main", "globex-gh"));
    expect([theirs.status, missing.status]).toEqual([404, 404]);
    expect(theirs.text).toBe(missing.text);
    expect((await alice.get("/events?queue=github.com/globex-gh/site/main")).status).toBe(404);
    const csrf = await alice.csrf();
    expect((await alice.post("/actions/queue", { ...queueForm("site", "main", "globex-gh"), action: "pause", csrf })).status).toBe(404);
    expect((await (await server.clientFor("globex-gh")).ok("getQueue", globexQueue)).state).toBe("running");
  });

  test("a user admitted by two organizations picks one, with the role GitHub gives there", async () => {
    const landing = await signIn("dave");
    expect(landing.status).toBe(200);
    expect(sessionOf(landing)).toBeUndefined();
    expect(landing.text).toContain("Choose an organization");
    const choice = landing.cookies.find((c) => c.startsWith("greenline_choice="))!.split(";")[0]!;
    const choose = (organization: string, origin = server.url) =>
      fetch(`${server.url}/sign-in/github/choose`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: choice, origin },
        body: new URLSearchParams({ organization }),
      });
    expect((await choose("acme")).status).toBe(400);
    expect((await choose("globex-gh", "https://evil.example")).status).toBe(403);
    const picked = await choose("globex-gh");
    expect(picked.status).toBe(303);
    const dave = new DashboardClient(
      server.url,
      picked.headers
        .getSetCookie()
        .find((c) => c.startsWith("greenline_session="))!
        .split(";")[0]!,
    );
    const page = await dave.get(queuePath("site", "main", "globex-gh"));
    expect(page.status).toBe(200);
    expect(page.text).toContain("read-only");
    expect((await dave.get(queuePath("app", "main", "octo-org"))).status).toBe(404);
  });

  test("uninstalling the App ends its organization's GitHub sessions", async () => {
    const alice = new DashboardClient(server.url, sessionOf(await signIn("alice"))!);
    expect((await alice.get("/")).status).toBe(200);
    gh.uninstallApp(43);
    await postWebhook(server.url, gh, "installation", {
      action: "deleted",
      installation: { id: 43, account: { login: "globex-gh", id: 430, type: "Organization" } },
      repositories: [],
      sender: { login: "admin", id: 1, type: "User" },
    });
    await server.greenline.worker.drain();
    // octo-org keeps its installation: alice stays signed in.
    expect((await alice.get("/")).status).toBe(200);
    gh.uninstallApp(42);
    await postWebhook(server.url, gh, "installation", {
      action: "deleted",
      installation: { id: 42, account: { login: "octo-org", id: 420, type: "Organization" } },
      repositories: [],
      sender: { login: "admin", id: 1, type: "User" },
    });
    await server.greenline.worker.drain();
    const after = await alice.get("/");
    expect([after.status, after.headers.get("location")]).toEqual([303, "/sign-in?next=%2F"]);
  });
});
