import { SANDBOX_CI_CONTEXT } from "../../src/adapters/sandbox/code-host.js";
import { createToken } from "../../src/auth/tokens.js";
import { REASONS } from "../../src/domain/reasons.js";
import { BACKENDS } from "../support/backends.js";
import { DashboardClient, queuePath } from "../support/dashboard.js";
import { ApiClient, ciFinishes, prOf, queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const CI_MS = 60_000;

/** The pull request's page over plain HTTP, on the sandbox (its CI fails a PR opened as broken). */
describe.each(BACKENDS)("the pull request page on $name", (backend) => {
  let server: TestServer;
  let acme: DashboardClient;
  const clock = new TestClock();
  const pullPath = (n: number, name = "fail") => `${queuePath(name)}/pulls/${n}`;

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: CI_MS } });
    acme = await DashboardClient.signIn(server.url, server.api.token);
    await server.api.ok("createQueue", { ...queueOf("fail"), concurrency: 3 });
    await server.greenline.sandbox!.openPullRequest(repo("fail"), { number: 2, targetBranch: "main", files: { "src/bad.ts": "syntax error" }, broken: true });
    for (const n of [1, 2, 3]) await server.api.ok("submitPullRequest", prOf(n, "fail"));
    for (let round = 0; round < 6; round++) await ciFinishes(server, clock);
    expect((await server.api.ok("getSubmittedPullRequest", prOf(2, "fail"))).state).toBe("failed");
  });
  afterAll(() => server?.close());

  test("a failed PR's page says why it is there: the reason, its sentence, the failing check, its timeline and runs", async () => {
    const { status, text } = await acme.get(pullPath(2));
    expect(status).toBe(200);
    const why = /<section class="card why"[\s\S]*?<\/section>/.exec(text)![0];
    expect(why).toContain('data-state="failed"');
    expect(why).toContain(REASONS.tests_failed);
    expect(why).toContain('<code class="reason" title="Reason code (docs/reasons.md)">tests_failed</code>');
    // The failing check, named in the latest event's evidence.
    expect(why).toMatch(new RegExp(`class="failing-checks">Failing checks: <span class="check check-failure" data-check="${SANDBOX_CI_CONTEXT}">`));
    // The timeline, latest first, from the submission on, with who did it.
    const reasons = [...text.matchAll(/<li class="event event-[a-z_]+" id="event-\d+" data-reason="([a-z_]+)">/g)].map((m) => m[1]);
    expect(reasons.at(0)).toBe("tests_failed");
    expect(reasons.at(-1)).toBe("submitted");
    expect(text).toContain("API token <strong>bootstrap (GREENLINE_API_TOKEN)</strong>");
    expect(text).toContain("the code host <strong>sandbox</strong>");
    // Its runs, each with its testing branch and checks (the sandbox has no branch pages: no link).
    expect(text).toMatch(/<li class="run card" id="run-run-\d+" data-run="run-\d+">/);
    expect(text).toMatch(/Testing branch: <code>greenline\/main\/run-\d+<\/code>/);
    expect(text).toContain(`<li class="check check-failure" data-check="${SANDBOX_CI_CONTEXT}">${SANDBOX_CI_CONTEXT}: failure</li>`);
    // PR numbers link to their own pages.
    expect(text).toContain(`<a href="${pullPath(1)}">#1</a>`);
  });

  test("a waiting PR's page shows its place in line; the queue page links each PR to its page", async () => {
    await server.api.ok("createQueue", queueOf("wait"));
    for (const n of [1, 2]) await server.api.ok("submitPullRequest", prOf(n, "wait"));
    await server.greenline.worker.drain();
    const { text } = await acme.get(pullPath(2, "wait"));
    expect(/<p id="pr-place">([^<]*)/.exec(text)?.[1]).toBe("2nd in line");
    const queue = await acme.get(queuePath("wait"));
    // Each row's reason is its sentence (the code only in the tooltip).
    const reasons = [...queue.text.matchAll(/<span class="reason-words" title="([a-z_]+) \(docs\/reasons.md\)">([^<]*)<\/span>/g)].map((m) => [m[1], m[2]]);
    expect(reasons).toEqual(expect.arrayContaining([["testing", "on top of the pull requests ahead of it"]]));
    expect(reasons.filter(([, shown]) => shown!.includes("_"))).toEqual([]);
    // Each row's number and title lead to the PR's page (the whole title in the tooltip: the row may cut it).
    expect(queue.text).toContain(`<a href="${pullPath(1, "wait")}" title="#1 Sandbox pull request #1 (by sandbox-author-2)"><strong>#1</strong>`);
    expect(queue.text).toMatch(new RegExp(`<a href="${pullPath(2, "wait")}" title="#2 [^"]*"><strong>#2</strong>`));
  });

  test("a waiting PR's page says when its queue is paused, and gives no estimate then", async () => {
    await server.api.ok("createQueue", queueOf("halted"));
    await server.api.ok("submitPullRequest", prOf(1, "halted"));
    await server.greenline.worker.drain();
    expect((await acme.get(pullPath(1, "halted"))).text).not.toContain('id="pr-queue-blocked"');
    await server.api.ok("updateQueue", { ...queueOf("halted"), state: "paused" });
    const { text } = await acme.get(pullPath(1, "halted"));
    expect(/<p class="blocked" id="pr-queue-blocked">([^<]*)/.exec(text)?.[1]).toBe("The queue: Paused: nothing starts testing and nothing merges until it is resumed.");
    expect(text).not.toContain("estimated merge");
  });

  test("a PR cancelled through the API says so, naming the token, on its page and in the queue's concluded list", async () => {
    const { token } = await createToken(server.greenline.services.db, "acme", "release-bot");
    const bot = new ApiClient(server.url, token);
    await server.api.ok("createQueue", queueOf("called-off"));
    await server.api.ok("submitPullRequest", prOf(1, "called-off"));
    await bot.ok("cancelPullRequest", prOf(1, "called-off"));
    const page = (await acme.get(pullPath(1, "called-off"))).text;
    expect(/<p class="reason-line" id="pr-reason">([^<]*)/.exec(page)?.[1]).toBe("Cancelled through the API (token release-bot). ");
    expect(page).not.toContain("by user");
    const row = /<li id="done-[^"]*" data-pr="1">[\s\S]*?<\/li>/.exec((await acme.get(queuePath("called-off"))).text)![0];
    expect(row.replace(/<[^>]+>/g, "").replace(/\s+/g, " ")).toMatch(/^#1 Sandbox pull request #1 cancelled through the API \(token release-bot\), \d+ s ago$/);
  });

  test("the concluded list shows the latest 10 and says how many concluded in all", async () => {
    await server.api.ok("createQueue", queueOf("many-done"));
    for (let n = 1; n <= 12; n++) {
      await server.api.ok("submitPullRequest", prOf(n, "many-done"));
      await server.api.ok("cancelPullRequest", prOf(n, "many-done"));
    }
    const { text } = await acme.get(queuePath("many-done"));
    expect(/<h2 id="done-h">([^<]*)<\/h2>/.exec(text)?.[1]).toBe("Concluded in the last 24 h (the latest 10 of 12)");
    expect(text.match(/<li id="done-/g)).toHaveLength(10);
    // Ten or fewer: the heading alone.
    expect(/<h2 id="done-h">([^<]*)<\/h2>/.exec((await acme.get(queuePath("called-off"))).text)?.[1]).toBe("Concluded in the last 24 h");
  });

  test("no page says a word twice in a row (a state followed by a reason repeating it)", async () => {
    await server.api.ok("createQueue", queueOf("held"));
    await server.api.ok("updateQueue", { ...queueOf("held"), state: "paused" });
    await server.api.ok("submitPullRequest", prOf(1, "held"));
    for (const path of ["/", queuePath("fail"), queuePath("held"), pullPath(1), pullPath(2), pullPath(3)]) {
      const { text } = await acme.get(path);
      const visible = text
        .replace(/<head>[\s\S]*?<\/head>|<script[\s\S]*?<\/script>/g, " ")
        // A block's end ends a sentence; inline elements (a state badge, a link) sit within one.
        .replace(/<\/?(?:h[1-6]|p|li|ul|ol|div|section|article|header|nav|main|dt|dd|dl|tr|td|th|figure|figcaption|form|label|option|select|details|summary|blockquote)\b[^>]*>/g, " | ")
        .replace(/<[^>]+>/g, " ")
        .replace(/\s+/g, " ");
      // ("Run run-1" names a run: an id, not a repeated word.)
      const twice = /\b([a-z]+) \1\b(?!-)/i.exec(visible);
      expect([path, twice && visible.slice(twice.index - 40, twice.index + 40)]).toEqual([path, null]);
    }
  });

  test("another organization's PR is not found, exactly like a missing one", async () => {
    const { token } = await createToken(server.greenline.services.db, "globex", "viewer");
    const globex = await DashboardClient.signIn(server.url, token);
    const theirs = await globex.get(pullPath(2));
    const missing = await acme.get(pullPath(99));
    const noQueue = await acme.get(`${queuePath("nope")}/pulls/2`);
    expect([theirs.status, missing.status, noQueue.status]).toEqual([404, 404, 404]);
    // The same address is acme's PR page.
    expect((await acme.get(pullPath(2))).status).toBe(200);
    const body = (text: string) => text.replace(/<meta name="csrf-token"[^>]*>/, "").replace(/<div class="who">[\s\S]*?<\/div>/, "");
    expect(body(theirs.text)).toBe(body(missing.text));
    expect(theirs.text).not.toContain("fail");
    expect(theirs.text).not.toContain(REASONS.tests_failed);
  });
});
