import { createToken, revokeToken } from "../../src/auth/tokens.js";
import { Assets } from "../../src/web/assets.js";
import { BACKENDS } from "../support/backends.js";
import { DashboardClient, queueForm, queuePath } from "../support/dashboard.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

/** The dashboard's access rules over plain HTTP (the browser suite drives the same pages in Chromium). */
describe.each(BACKENDS)("dashboard access on $name", (backend) => {
  let server: TestServer;
  let acme: DashboardClient;

  beforeAll(async () => {
    server = await startTestServer(backend);
    await server.api.ok("createQueue", queueOf());
    await server.api.ok("submitPullRequest", prOf(1));
    acme = await DashboardClient.signIn(server.url, server.api.token);
  });
  afterAll(() => server?.close());

  const queueState = async () => (await server.api.ok("getQueue", queueOf())).state;

  test("pages need a session: the overview sends a visitor to sign in, and the stream refuses", async () => {
    const page = await fetch(`${server.url}${queuePath()}`, { redirect: "manual" });
    expect([page.status, page.headers.get("location")]).toEqual([303, `/sign-in?next=${encodeURIComponent(queuePath())}`]);
    expect((await fetch(`${server.url}/events?queue=github.com/acme/web/main`)).status).toBe(401);
  });

  test("an unknown token is refused at sign-in; a known one gets an HTTP-only, SameSite=Lax session cookie holding no secret", async () => {
    const refused = await fetch(`${server.url}/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: server.url },
      body: new URLSearchParams({ token: "glt_not-a-token" }),
    });
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain("Unknown or revoked API token.");
    const accepted = await fetch(`${server.url}/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: server.url },
      body: new URLSearchParams({ token: server.api.token }),
    });
    const cookie = accepted.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^greenline_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    expect(cookie).not.toContain(server.api.token);
  });

  test("the overview lists the organization's queues with their figures", async () => {
    const { status, text } = await acme.get("/");
    expect(status).toBe(200);
    expect(text).toContain(`href="${queuePath()}"`);
    expect(text).toMatch(/<dt>In line<\/dt><dd>1<\/dd>/);
  });

  test("every page is served with a CSP allowing no inline script, no framing, nosniff, and no inline script in the page", async () => {
    for (const path of ["/", queuePath(), "/sign-in", "/queues/no-such-page"]) {
      const { text, headers } = await acme.get(path);
      const csp = headers.get("content-security-policy")!;
      expect([path, csp]).toEqual([path, expect.stringContaining("script-src 'self';")]);
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain("unsafe-inline");
      expect(headers.get("x-content-type-options")).toBe("nosniff");
      expect(headers.get("referrer-policy")).toBe("same-origin");
      // Every <script> loads a file of Greenline's, or is data (application/json).
      const scripts = [...text.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1]!);
      expect(scripts.filter((attrs) => !/\bsrc="\/assets\//.test(attrs) && !/type="application\/json"/.test(attrs))).toEqual([]);
      expect(text).not.toMatch(/\son[a-z]+=|hx-on|style="/);
      // htmx writes no style attribute while it swaps (its default settles "style": a CSP violation per update).
      const config = /<meta name="htmx-config" content="([^"]*)">/.exec(text)?.[1];
      if (config) expect(JSON.parse(config.replaceAll("&quot;", '"')).attributesToSettle).toEqual(["class", "width", "height"]);
    }
  });

  test("assets are served under content-hashed URLs, cached for good", async () => {
    const { text } = await acme.get("/");
    const urls = [...text.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(urls.length).toBe(7);
    for (const url of urls) {
      expect(url).toMatch(/\.[0-9a-f]{12}\.(js|css|svg)$/);
      const response = await fetch(`${server.url}${url}`);
      expect([url, response.status, response.headers.get("cache-control")]).toEqual([url, 200, "public, max-age=31536000, immutable"]);
    }
    expect((await fetch(`${server.url}/assets/app.000000000000.js`)).status).toBe(404);
    // The page weight the issue sets a goal for: every script and stylesheet, gzip, under 100 KB.
    expect(new Assets().gzipBytes()).toBeLessThan(100 * 1024);
  });

  test("the page links an icon; /favicon.ico, which browsers ask for on their own, leads to it", async () => {
    const { text } = await acme.get("/");
    const icon = /<link rel="icon" type="image\/svg\+xml" href="(\/assets\/favicon\.[0-9a-f]{12}\.svg)">/.exec(text)?.[1];
    expect(icon).toBeDefined();
    const found = await fetch(`${server.url}/favicon.ico`, { redirect: "manual", headers: { accept: "image/avif,image/webp,image/*,*/*;q=0.8" } });
    expect([found.status, found.headers.get("location")]).toEqual([302, icon]);
    const svg = await fetch(`${server.url}${icon}`);
    expect([svg.status, svg.headers.get("content-type")]).toEqual([200, "image/svg+xml"]);
    expect(await svg.text()).toMatch(/^<svg /);
  });

  test("an unknown address a browser asks for is the dashboard's 404 page; the API's paths keep answering JSON", async () => {
    const browser = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };
    for (const path of ["/no-such-page", "/queue/github.com/acme/web/main", "/settings?x=1"]) {
      const page = await acme.get(path, browser);
      expect([path, page.status, page.headers.get("content-type")]).toEqual([path, 404, "text/html; charset=utf-8"]);
      expect(page.text).toContain("<h1>Not found</h1>");
      // In the layout, with the navigation of the signed-in visitor.
      expect(page.text).toContain('<nav aria-label="Main">');
    }
    const signedOut = await fetch(`${server.url}/no-such-page`, { headers: browser });
    expect([signedOut.status, (await signedOut.text()).includes("<h1>Not found</h1>")]).toEqual([404, true]);
    for (const path of ["/v1/noSuchOperation", "/v1"]) {
      const api = await fetch(`${server.url}${path}`, { headers: browser });
      expect([path, api.status, api.headers.get("content-type")]).toEqual([path, 404, expect.stringMatching(/^application\/json/)]);
    }
    // A program (no text/html in Accept) still gets the API's JSON.
    const program = await fetch(`${server.url}/no-such-page`, { headers: { accept: "application/json" } });
    expect([program.status, ((await program.json()) as { error: { code: string } }).error.code]).toEqual([404, expect.any(String)]);
  });

  test("a POST without the session's CSRF token, with a wrong one, or from another origin is refused (403) and changes nothing", async () => {
    const csrf = await acme.csrf();
    const pause = { ...queueForm(), action: "pause" };
    expect((await acme.post("/actions/queue", pause)).status).toBe(403);
    expect((await acme.post("/actions/queue", { ...pause, csrf: `${csrf.slice(0, -2)}xx` })).status).toBe(403);
    expect((await acme.post("/actions/queue", { ...pause, csrf }, { origin: "https://evil.example" })).status).toBe(403);
    // With neither Origin nor Sec-Fetch-Site (older browsers), another site's Referer is refused too.
    expect((await acme.post("/actions/queue", { ...pause, csrf }, { referer: "https://evil.example/page" })).status).toBe(403);
    // The header htmx sends works as the field does, and only with the right value.
    expect((await acme.post("/actions/queue", pause, { origin: server.url, "x-csrf-token": "forged" })).status).toBe(403);
    expect(await queueState()).toBe("running");
    const done = await acme.post("/actions/queue", { ...pause, csrf });
    expect(done.status).toBe(200);
    expect(done.text).toContain("The queue is paused.");
    expect(await queueState()).toBe("paused");
    expect((await acme.post("/actions/queue", { ...queueForm(), action: "resume" }, { origin: server.url, "x-csrf-token": csrf })).status).toBe(200);
    expect(await queueState()).toBe("running");
  });

  test("an action the application refuses shows its message verbatim", async () => {
    const csrf = await acme.csrf();
    const bad = await acme.post("/actions/queue", { ...queueForm(), action: "settings", concurrency: "0", csrf });
    expect(bad.status).toBe(400);
    // A refused setting shows next to the form, named by the form's label, the typed value kept.
    const form = /<form class="settings"[\s\S]*?<\/form>/.exec(bad.text)![0];
    expect(form).toContain('<p class="notice notice-error" id="settings-error" role="alert">Concurrency: Too small: expected number to be &gt;=1</p>');
    expect(form).toMatch(/<input id="setting-concurrency" name="concurrency" [^>]*value="0" aria-describedby="setting-concurrency-help settings-error" aria-invalid="true">/);
    // Through htmx too: the form comes back out of band with the message, the notice above stays empty.
    const htmx = await acme.post("/actions/queue", { ...queueForm(), action: "settings", concurrency: "0" }, { origin: server.url, "x-csrf-token": csrf, "hx-request": "true" });
    expect(htmx.text).toContain('<details id="settings" class="card" open hx-swap-oob="true">');
    expect(htmx.text).toContain(">Concurrency: Too small: expected number to be &gt;=1</p>");
    expect(htmx.text).toContain('<div id="notice" role="status" aria-live="polite" hx-swap-oob="true"></div>');
    const conflict = await acme.post("/actions/queue", { ...queueForm(), action: "cancel", pr: "99", csrf });
    expect(conflict.status).toBe(404);
  });

  test("a PR's priority, restart and cancel go through the API's operations", async () => {
    const csrf = await acme.csrf();
    const pr = { ...queueForm(), pr: "1", csrf };
    expect((await acme.post("/actions/queue", { ...pr, action: "priority", priority: "urgent" })).text).toContain("#1: Priority changed.");
    expect((await server.api.ok("getSubmittedPullRequest", prOf(1))).priorityName).toBe("urgent");
    const bad = await acme.post("/actions/queue", { ...pr, action: "priority", priority: "soonish" });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("priority:");
    expect((await acme.post("/actions/queue", { ...pr, action: "restart" })).text).toContain("#1: Tests restarted.");
    expect((await acme.post("/actions/queue", { ...pr, action: "cancel" })).text).toContain("#1: Cancelled.");
    const cancelled = await server.api.ok("getSubmittedPullRequest", { ...prOf(1), includeTimeline: true });
    expect(cancelled.state).toBe("cancelled");
    // The timeline says who, and that it was done from the dashboard.
    expect(cancelled.timeline.at(-1)).toMatchObject({ state: "cancelled", actor: { kind: "token" }, evidence: { command: "dashboard (cancelPullRequest)" } });
    await server.api.ok("submitPullRequest", prOf(1));
  });

  test("restarting a PR that never started testing says why nothing restarted", async () => {
    await server.api.ok("createQueue", queueOf("held"));
    // Paused: the PR waits in line and no run starts.
    await server.api.ok("updateQueue", { ...queueOf("held"), state: "paused" });
    await server.api.ok("submitPullRequest", prOf(5, "held"));
    const restart = await acme.post("/actions/queue", { ...queueForm("held"), pr: "5", action: "restart", csrf: await acme.csrf() });
    expect(restart.status).toBe(200);
    expect(restart.text).toMatch(/#5 has not started testing yet: it waits (for its turn in line|until it is ready \(approvals, checks\)), so there was nothing to restart\./);
    expect(restart.text).not.toContain("Tests restarted.");
    // The API answers as for a restart.
    expect(await server.api.ok("restartTestsOnPullRequest", prOf(5, "held"))).toEqual({});
  });

  test("another organization's queue page and live stream are 404, exactly like a queue that does not exist", async () => {
    const { token } = await createToken(server.greenline.services.db, "globex", "test");
    const globex = await DashboardClient.signIn(server.url, token);
    const overview = await globex.get("/");
    expect(overview.text).not.toContain("acme/web");
    const theirs = await globex.get(queuePath());
    const missing = await globex.get(queuePath("nope"));
    expect([theirs.status, missing.status]).toEqual([404, 404]);
    expect(theirs.text).toBe(missing.text);
    expect((await globex.get("/events?queue=github.com/acme/web/main")).status).toBe(404);
    const csrf = await globex.csrf();
    expect((await globex.post("/actions/queue", { ...queueForm(), action: "pause", csrf })).status).toBe(404);
    expect(await queueState()).toBe("running");
  });

  test("a read token sees no action and its forged POST is refused (403)", async () => {
    const { token } = await createToken(server.greenline.services.db, "acme", "viewer", "read");
    const viewer = await DashboardClient.signIn(server.url, token);
    const page = await viewer.get(queuePath());
    expect(page.status).toBe(200);
    expect(page.text).toContain("read-only");
    // Where the actions would be, it says why there are none.
    expect(page.text).toContain('<p class="muted read-only-hint">read-only access: actions need a token with write</p>');
    expect(page.text).not.toContain("data-action=");
    expect(page.text).not.toContain('name="action"');
    const csrf = await viewer.csrf();
    const forged = await viewer.post("/actions/queue", { ...queueForm(), action: "pause", csrf });
    expect(forged.status).toBe(403);
    expect(forged.text).toContain("read-only");
    expect(await queueState()).toBe("running");
    // A row's actions, forged, are refused the same way and change nothing.
    for (const action of ["cancel", "restart", "priority"]) {
      const row = await viewer.post("/actions/queue", { ...queueForm(), action, pr: "1", priority: "urgent", csrf });
      expect([action, row.status]).toEqual([action, 403]);
    }
    expect(await server.api.ok("getSubmittedPullRequest", prOf(1))).toMatchObject({ state: expect.not.stringMatching(/^cancelled$/), priorityName: "medium" });
  });

  test("revoking the token ends its sessions at once", async () => {
    const { id, token } = await createToken(server.greenline.services.db, "acme", "soon revoked");
    const visitor = await DashboardClient.signIn(server.url, token);
    expect((await visitor.get("/")).status).toBe(200);
    await revokeToken(server.greenline.services.db, id, new Date());
    expect((await visitor.get("/")).status).toBe(303);
    // The open page's own htmx requests (its live part, an action) send the whole page to sign in,
    // instead of a sign-in page swapped into a part of it.
    const page = `${server.url}${queuePath()}`;
    const live = await visitor.get(queuePath(), { "hx-request": "true", "hx-current-url": page });
    const action = await visitor.post("/actions/queue", { ...queueForm(), action: "pause" }, { origin: server.url, "hx-request": "true", "hx-current-url": page });
    for (const answer of [live, action]) {
      expect([answer.status, answer.headers.get("hx-redirect"), answer.text]).toEqual([401, `/sign-in?next=${encodeURIComponent(queuePath())}`, ""]);
    }
    expect(await queueState()).toBe("running");
  });

  test("the live stream says when the queue changes", async () => {
    const controller = new AbortController();
    const response = await fetch(`${server.url}/events?queue=github.com/acme/web/main`, { headers: { cookie: acme.cookie }, signal: controller.signal });
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = response.body!.getReader();
    await reader.read(); // the opening comment
    await server.api.ok("updateQueue", { ...queueOf(), concurrency: 2 });
    let received = "";
    while (!received.includes("event: patch")) received += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
  });
});
