import { createToken, revokeToken } from "../../src/auth/tokens.js";
import { BACKENDS } from "../support/backends.js";
import { DashboardClient, queuePath } from "../support/dashboard.js";
import { type ApiClient, prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

/**
 * The live stream over raw server-sent events: what each update carries (only what changed),
 * how a page that missed changes is brought back in step, and that a stream carries only its
 * own organization's changes.
 */
describe.each(BACKENDS)("the dashboard's live stream on $name", (backend) => {
  let server: TestServer;
  let acme: DashboardClient;
  let globexApi: ApiClient;
  let globex: DashboardClient;

  beforeAll(async () => {
    // Short heartbeats: a stream whose session ended is ended within one.
    server = await startTestServer(backend, { liveHeartbeatMs: 200 });
    await server.api.ok("createQueue", queueOf());
    // Paused: nothing starts testing, so each change here is the test's own.
    await server.api.ok("updateQueue", { ...queueOf(), state: "paused" });
    for (const n of [1, 2, 3]) await server.api.ok("submitPullRequest", prOf(n));
    acme = await DashboardClient.signIn(server.url, server.api.token);
    globexApi = await server.clientFor("globex");
    globex = await DashboardClient.signIn(server.url, globexApi.token);
    await globexApi.ok("createQueue", queueOf("site", "main", "globex"));
  });
  // The streams stay open until the server closes them (an aborted fetch leaves undici's
  // connection pool holding a fresh idle socket that delays the server's shutdown).
  afterAll(() => server?.close());

  /** A stream opened as the page would open it; `next()` waits for its next `patch` event and answers it. */
  async function open(client: DashboardClient, path: string, headers: Record<string, string> = {}) {
    const response = await fetch(`${server.url}${path}`, { headers: { cookie: client.cookie, ...headers } });
    expect([response.status, response.headers.get("content-type")]).toEqual([200, "text/event-stream; charset=utf-8"]);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let closed = false;
    /** Every event received so far, in order, each as its fields. */
    const events: { id?: string; event?: string; data: string }[] = [];
    void (async () => {
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) {
          closed = true;
          return;
        }
        buffer += decoder.decode(value, { stream: true });
        let end = buffer.indexOf("\n\n");
        while (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = block.split("\n").filter((line) => !line.startsWith(":"));
          if (fields.length > 0) {
            const id = fields.find((f) => f.startsWith("id: "))?.slice(4);
            const event = fields.find((f) => f.startsWith("event: "))?.slice(7);
            const data = fields.flatMap((f) => (f.startsWith("data: ") ? [f.slice(6)] : [])).join("\n");
            events.push({ ...(id !== undefined ? { id } : {}), ...(event ? { event } : {}), data });
          }
          end = buffer.indexOf("\n\n");
        }
      }
    })();
    let seen = 0;
    return {
      events,
      /** Whether the server ended the stream. */
      isClosed: () => closed,
      /** Waits (up to 10 s) for the server to end the stream. */
      async ended(): Promise<void> {
        const deadline = Date.now() + 10_000;
        while (!closed) {
          if (Date.now() > deadline) throw new Error(`${path} is still open; received ${JSON.stringify(events)}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      },
      /** The next patch event after those already answered (waits up to 10 s). */
      async next(): Promise<{ id?: string; data: string }> {
        const deadline = Date.now() + 10_000;
        for (;;) {
          const index = events.findIndex((e, i) => i >= seen && e.event === "patch");
          if (index >= 0) {
            seen = index + 1;
            return events[index]!;
          }
          if (Date.now() > deadline) throw new Error(`no patch on ${path}; received ${JSON.stringify(events)}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      },
      /** Patches received so far. */
      patches: () => events.filter((e) => e.event === "patch"),
    };
  }

  const versionOf = (page: string) => /&amp;since=(\d+)"/.exec(page)?.[1];

  test("a change of one PR sends that row alone, not the line", async () => {
    const page = (await acme.get(queuePath())).text;
    const stream = await open(acme, `/events?queue=github.com/acme/web/main&since=${versionOf(page)}`);
    // The page is current: nothing to send at once.
    await new Promise((r) => setTimeout(r, 500));
    expect(stream.patches()).toEqual([]);
    await server.api.ok("submitPullRequest", { ...prOf(2), priority: "low" });
    const { data } = await stream.next();
    expect(data).toContain('id="line-pr-2"');
    expect(data).toContain(`data-priority="low"`);
    expect(data).not.toContain('id="line-pr-1"');
    expect(data).not.toContain('id="line-pr-3"');
    expect(data).not.toContain('id="queue-live"');
    // #2 moved behind #3: deleted where it was, inserted after #3.
    expect(data).toContain('<div id="line-pr-2" hx-swap-oob="delete"></div>');
    expect(data).toContain('hx-swap-oob="afterend:#line-pr-3"');
  });

  test("a cancelled PR is deleted from the line; a new one is inserted after the last, and the count follows", async () => {
    const page = (await acme.get(queuePath())).text;
    const stream = await open(acme, `/events?queue=github.com/acme/web/main&since=${versionOf(page)}`);
    await server.api.ok("cancelPullRequest", prOf(1));
    const cancelled = (await stream.next()).data;
    expect(cancelled).toContain('<div id="line-pr-1" hx-swap-oob="delete"></div>');
    expect(cancelled).toContain("The line (2)");
    expect(cancelled).not.toContain('id="line-pr-3"');
    // Medium priority: after #3, ahead of #2 (low since the test before).
    await server.api.ok("submitPullRequest", prOf(4));
    const added = (await stream.next()).data;
    expect(added).toContain('hx-swap-oob="afterend:#line-pr-3"');
    expect(added).toContain('id="line-pr-4"');
    expect(added).not.toContain('id="line-pr-3"');
  });

  test("a page that missed changes (an older version, or a reconnect's Last-Event-ID) first gets the whole live part; a current one does not", async () => {
    const page = (await acme.get(queuePath())).text;
    const version = Number(versionOf(page));
    await server.api.ok("updateQueue", { ...queueOf(), concurrency: 3 });
    const missed = await open(acme, `/events?queue=github.com/acme/web/main&since=${version}`);
    const whole = await missed.next();
    expect(whole.data).toMatch(/^<div hx-swap-oob="true" id="queue-live">/);
    expect(whole.data).toContain('id="line-pr-3"');
    expect(whole.data).toContain("concurrency 3");
    expect(Number(whole.id)).toBeGreaterThan(version);
    // The browser reconnecting on its own sends the id it last saw, which wins over the page's own `since`.
    const current = await open(acme, `/events?queue=github.com/acme/web/main&since=${version}`, { "last-event-id": whole.id! });
    const stale = await open(acme, `/events?queue=github.com/acme/web/main&since=${whole.id}`, { "last-event-id": String(version) });
    expect((await stale.next()).data).toContain('id="queue-live"');
    await new Promise((r) => setTimeout(r, 500));
    expect(current.patches()).toEqual([]);
  });

  test("the PR page's stream sends the PR's changes: its state, its new timeline event on top", async () => {
    const page = (await acme.get(`${queuePath()}/pulls/3`)).text;
    const stream = await open(acme, `/events?queue=github.com/acme/web/main&pr=3&since=${versionOf(page)}`);
    await server.api.ok("cancelPullRequest", prOf(3));
    const { data } = await stream.next();
    expect(data).toContain('id="pr-why"');
    expect(data).toContain('data-state="cancelled"');
    // The events before it are not sent again.
    expect(data).toContain('hx-swap-oob="afterbegin:#timeline-list"');
    expect(data).not.toContain('id="event-0"');
  });

  test("an organization's overview stream carries its own queues' changes, never another organization's", async () => {
    const ours = await open(acme, `/events?overview=1&since=${/&amp;since=([\w-]*)"/.exec((await acme.get("/")).text)![1]}`);
    const theirs = await open(globex, `/events?overview=1&since=${/&amp;since=([\w-]*)"/.exec((await globex.get("/")).text)![1]}`);
    await server.api.ok("submitPullRequest", prOf(5));
    const mine = (await ours.next()).data;
    expect(mine).toContain("acme/web");
    // #2, #4 and #5 (#1 and #3 were cancelled above).
    expect(mine).toMatch(/<dt>In line<\/dt><dd>3<\/dd>/);
    // Then globex's own change: its first patch, in order after anything acme's change could have sent it.
    await globexApi.ok("submitPullRequest", { ...queueOf("site", "main", "globex"), pr: { number: 1 } });
    const theirFirst = await theirs.next();
    expect(theirFirst.data).toContain("globex/site");
    expect(
      theirs
        .patches()
        .map((p) => p.data)
        .join(""),
    ).not.toContain("acme");
    // And acme's stream never saw globex's.
    await server.api.ok("cancelPullRequest", prOf(5));
    expect((await ours.next()).data).not.toContain("globex");
    expect(
      ours
        .patches()
        .map((p) => p.data)
        .join(""),
    ).not.toContain("globex");
  });

  test("a stream whose token is revoked ends at the next heartbeat, nothing having changed; opened again, it is refused (401)", async () => {
    const { id, token } = await createToken(server.greenline.services.db, "acme", "soon-revoked");
    const viewer = await DashboardClient.signIn(server.url, token);
    const path = `/events?queue=github.com/acme/web/main&since=${versionOf((await viewer.get(queuePath())).text)}`;
    const stream = await open(viewer, path);
    // Beats go on while the session holds (several heartbeats pass here).
    await new Promise((r) => setTimeout(r, 600));
    expect([stream.isClosed(), stream.patches()]).toEqual([false, []]);
    await revokeToken(server.greenline.services.db, id, new Date());
    await stream.ended();
    expect(stream.patches()).toEqual([]);
    expect((await viewer.get(path)).status).toBe(401);
  });

  test("the wall display's stream (tv=1) sends its rows without controls; a wrong tv is refused (400), naming it", async () => {
    await server.api.ok("createQueue", queueOf("tv"));
    await server.api.ok("updateQueue", { ...queueOf("tv"), state: "paused" });
    for (const n of [1, 2]) await server.api.ok("submitPullRequest", prOf(n, "tv"));
    const page = (await acme.get(`${queuePath("tv")}?tv`)).text;
    expect(page).toContain("&amp;tv=1");
    expect(page).not.toMatch(/<(form|button|select|input|textarea|details|nav)\b/);
    const version = /&amp;since=(\d+)&amp;tv=1"/.exec(page)?.[1];
    expect(version).toBeDefined();
    const stream = await open(acme, `/events?queue=github.com/acme/tv/main&tv=1&since=${version}`);
    await server.api.ok("submitPullRequest", { ...prOf(3, "tv"), priority: "high" });
    const { data } = await stream.next();
    expect(data).toContain('id="line-pr-3"');
    expect(data).toContain('data-priority="high"');
    expect(data).not.toMatch(/<(form|button|select|input|textarea|details)\b/);
    // The rows whose data did not change are not sent again.
    expect(data).not.toContain('id="line-pr-1"');
    expect(data).not.toContain('id="line-pr-2"');
    // The ordinary page's stream, for the same viewer, carries the row's menu.
    const ordinary = await open(acme, `/events?queue=github.com/acme/tv/main&since=${version}`);
    expect((await ordinary.next()).data).toContain('<details class="row-menu">');
    for (const path of [`${queuePath("tv")}?tv=yes`, `${queuePath("tv")}?tv=1&tv=1`, "/events?queue=github.com/acme/tv/main&tv=on"]) {
      const refused = await acme.get(path);
      expect([path, refused.status]).toEqual([path, 400]);
      expect(refused.text).toContain("tv: must be given once, empty or 1");
    }
  });

  test("another organization's queue stream is refused before it opens", async () => {
    expect((await globex.get("/events?queue=github.com/acme/web/main")).status).toBe(404);
    expect((await globex.get("/events?queue=github.com/acme/web/main&pr=1")).status).toBe(404);
  });
});
