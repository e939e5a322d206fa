import { DAY_MS, MINUTE_MS } from "../../src/domain/time.js";
import { BACKENDS } from "../support/backends.js";
import { DashboardClient } from "../support/dashboard.js";
import { ciFinishes, prOf, queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/** The PR numbers (with their queue) a history page lists, in order. */
function rowsOf(text: string): string[] {
  return [...text.matchAll(/<tr data-pr="(\d+)" data-state="\w+">\n<td data-label="Queue"[^>]*><a href="\/queues\/github\.com\/\w+\/(\w+)\/main">/g)].map(([, pr, name]) => `${name}#${pr}`);
}

/** The page's Older or Newer link, decoded ("" when it has none). */
function linkOf(text: string, rel: "next" | "prev"): string {
  const href = new RegExp(`<a href="([^"]+)" rel="${rel}">`).exec(text)?.[1];
  return href ? href.replaceAll("&amp;", "&") : "";
}

/**
 * The history page (/history) over HTTP on a real service and database: every PR through the
 * organization's queues, searched by number, title, author, state, reason, queue and submission
 * date, paged by key both ways; another organization's PRs never appear; bad parameters answer
 * 400 naming the field and its rule.
 */
describe.each(BACKENDS)("the history page on $name", (backend) => {
  const clock = new TestClock();
  let server: TestServer;
  let acme: DashboardClient;
  let globexToken: string;
  /** Every acme PR, newest submission first, as the page should list them unfiltered. */
  const all: string[] = [];

  const submit = async (name: string, number: number) => {
    await server.api.ok("submitPullRequest", prOf(number, name));
    all.unshift(`${name}#${number}`);
    clock.advance(MINUTE_MS);
  };
  const page = async (query: string, client = acme) => {
    const { status, text } = await client.get(`/history${query}`);
    return { status, text, rows: rowsOf(text) };
  };

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: 10 * MINUTE_MS } });
    const sandbox = server.greenline.sandbox!;
    await server.api.ok("createQueue", queueOf("web"));
    await server.api.ok("createQueue", queueOf("api"));
    // Day one: web's PRs 1–8 wait in a paused queue; api's PR 20 merges.
    await server.api.ok("updateQueue", { ...queueOf("web"), state: "paused" });
    await sandbox.openPullRequest(repo("web"), { number: 3, targetBranch: "main", files: { "a.txt": "3" }, title: "Fix the CHECKOUT total (100% off)" });
    for (let n = 1; n <= 8; n++) await submit("web", n);
    await submit("api", 20);
    await ciFinishes(server, clock);
    // Day two: PRs 9–12 on web, and 4 cancelled.
    clock.advance(DAY_MS);
    for (let n = 9; n <= 12; n++) await submit("web", n);
    await server.api.ok("cancelPullRequest", prOf(4, "web"));
    // Another organization, with a PR of the same number and title words.
    const globex = await server.clientFor("globex");
    globexToken = globex.token;
    await globex.ok("createQueue", queueOf("web", "main", "globex"));
    await globex.ok("submitPullRequest", { ...queueOf("web", "main", "globex"), pr: { number: 3 } });
    acme = await DashboardClient.signIn(server.url, server.api.token);
  }, 60_000);
  afterAll(() => server?.close());

  test("lists every PR through the organization's queues, live and concluded, newest submission first", async () => {
    const { status, text, rows } = await page("");
    expect(status).toBe(200);
    expect(rows).toEqual(all);
    expect(text).toContain('data-pr="20" data-state="merged"');
    expect(text).toContain('data-pr="4" data-state="cancelled"');
    // The reason as a sentence, its code in the tooltip; the PR page linked; the audit linked.
    expect(text).toMatch(/title="Reason code cancelled_by_user \(docs\/reasons\.md\)" data-reason="cancelled_by_user">/);
    expect(text).toContain('href="/queues/github.com/acme/api/main/pulls/20">#20 ');
    expect(text).toContain('<a href="/audit">');
    expect(text).toContain('<a href="/history" aria-current="page">History</a>');
  });

  test("the page's scripts, styles and icon weigh under 100 KB (no chart library: it draws none)", async () => {
    const { text } = await page("");
    const assets = [...text.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map(([, path]) => path!);
    expect(assets.some((a) => a.includes("uplot"))).toBe(false);
    let bytes = 0;
    for (const path of assets) {
      const response = await fetch(`${server.url}${path}`);
      expect([path, response.status]).toEqual([path, 200]);
      bytes += (await response.arrayBuffer()).byteLength;
    }
    expect(assets.length).toBeGreaterThanOrEqual(4);
    expect(bytes).toBeLessThan(100 * 1024);
  });

  test("a concluded PR's link opens its page, with its timeline", async () => {
    for (const path of ["/queues/github.com/acme/api/main/pulls/20", "/queues/github.com/acme/web/main/pulls/4"]) {
      const { status, text } = await acme.get(path);
      expect([path, status]).toEqual([path, 200]);
      expect(text).toMatch(/<h2 id="timeline-h">Timeline \([1-9]\d*\)<\/h2>/);
    }
  });

  test("searches by number, title (any case, its % taken literally), author, state, reason, queue and submission date", async () => {
    expect((await page("?q=%233")).rows).toEqual(["web#3"]);
    expect((await page("?q=12")).rows).toEqual(["web#12"]);
    expect((await page("?q=checkout+total")).rows).toEqual(["web#3"]);
    expect((await page("?q=100%25+OFF")).rows).toEqual(["web#3"]);
    expect((await page("?q=100%25%25")).rows).toEqual([]);
    // Sandbox PRs are by sandbox-author-<n mod 7 + 1>; PR 3 was opened by hand (sandbox-author).
    expect((await page("?author=Sandbox-Author-2")).rows).toEqual(["web#8", "web#1"]);
    expect((await page("?author=%40sandbox-author-2")).rows).toEqual(["web#8", "web#1"]);
    expect((await page("?state=cancelled")).rows).toEqual(["web#4"]);
    expect((await page("?state=merged")).rows).toEqual(["api#20"]);
    expect((await page("?reason=cancelled_by_user")).rows).toEqual(["web#4"]);
    expect((await page("?queue=github.com%2Facme%2Fapi%3Amain")).rows).toEqual(["api#20"]);
    expect((await page("?queue=github.com%2Facme%2Fweb")).rows).toEqual(all.filter((r) => r.startsWith("web")));
    const dayOne = new Date(Date.parse("2026-11-22T00:00:00Z")).toISOString().slice(0, 10);
    const dayTwo = new Date(Date.parse(dayOne) + DAY_MS).toISOString().slice(0, 10);
    expect((await page(`?to=${dayOne}`)).rows).toEqual(all.slice(4));
    expect((await page(`?from=${dayTwo}&to=${dayTwo}`)).rows).toEqual(["web#12", "web#11", "web#10", "web#9"]);
    // Filters together: all of them hold.
    expect((await page(`?from=${dayTwo}&queue=github.com%2Facme%2Fweb%3Amain&q=%2311`)).rows).toEqual(["web#11"]);
    expect((await page(`?from=${dayTwo}&state=cancelled`)).rows).toEqual([]);
  });

  test("pages by key: Older to the end, Newer back, each page the next rows, the filters kept", async () => {
    const seen: string[] = [];
    let next = "/history?size=5";
    const pages: string[][] = [];
    const links: string[] = [];
    while (next !== "") {
      const { status, text, rows } = await page(next.slice("/history".length));
      expect(status).toBe(200);
      expect(rows.length).toBeLessThanOrEqual(5);
      seen.push(...rows);
      pages.push(rows);
      links.push(next);
      next = linkOf(text, "next");
      expect(next === "" || next.includes("size=5")).toBe(true);
    }
    expect(seen).toEqual(all);
    expect(pages.length).toBe(Math.ceil(all.length / 5));
    // Back from the last page, Newer gives each page before it, to the first (which has no Newer).
    let back = linkOf((await page(links.at(-1)!.slice("/history".length))).text, "prev");
    for (let i = pages.length - 2; i >= 0; i--) {
      const { text, rows } = await page(back.slice("/history".length));
      expect(rows).toEqual(pages[i]);
      back = linkOf(text, "prev");
    }
    expect(back).toBe("");
    // A filter is kept by the links.
    const web = await page("?queue=github.com%2Facme%2Fweb&size=3");
    expect(linkOf(web.text, "next")).toMatch(/^\/history\?queue=github\.com%2Facme%2Fweb&size=3&before=\d+\.[\w-]+$/);
    expect((await page(linkOf(web.text, "next").slice("/history".length))).rows).toEqual(all.filter((r) => r.startsWith("web")).slice(3, 6));
  });

  test("another organization sees only its own PRs, and naming acme's queue is refused like a queue that does not exist", async () => {
    const globex = await DashboardClient.signIn(server.url, globexToken);
    const theirs = await page("", globex);
    expect(theirs.rows).toEqual(["web#3"]);
    expect(theirs.text).toContain("/queues/github.com/globex/web/main/pulls/3");
    expect(theirs.text).not.toContain("acme/");
    expect((await page("?q=checkout", globex)).rows).toEqual([]);
    const acmeQueue = await page("?queue=github.com%2Facme%2Fapi%3Amain", globex);
    const missing = await page("?queue=github.com%2Fglobex%2Fnope%3Amain", globex);
    expect([acmeQueue.status, missing.status]).toEqual([400, 400]);
    expect(acmeQueue.text.replaceAll("acme", "globex").replaceAll("api", "nope")).toBe(missing.text.replaceAll("api", "nope"));
    // acme never sees globex's PR 3 either.
    expect((await page("?q=%233")).text).not.toContain("globex");
  });

  test.each([
    ["?state=bogus", "state: must be one of not_ready, pending, testing"],
    ["?reason=bogus", "reason: must be a reason code"],
    ["?size=0", "size: must be a whole number from 1 to 200"],
    ["?size=201", "size: must be a whole number from 1 to 200"],
    ["?size=ten", "size: must be a whole number from 1 to 200"],
    ["?from=2026-13-01", "from: must be a day as YYYY-MM-DD"],
    ["?to=2026-02-30", "to: must be a day as YYYY-MM-DD"],
    ["?from=2026-11-23&to=2026-11-22", "to: must not be before from"],
    ["?before=not-a-token", "before: must be a page token"],
    ["?before=1.a&after=1.b", "before: must not be given with after"],
    ["?q=a&q=b", "q: must be given once, as text"],
    ["?q=<201 characters>", "q: must be at most 200 characters"],
    ["?author=%3Cscript%3E", "author: must be a login"],
    // Out of what both databases store as a time (PostgreSQL answered 500), or text it cannot hold.
    ["?from=0000-01-01", "from: must be a day from 0001-01-01 to 9998-12-31"],
    ["?to=9999-12-31", "to: must be a day from 0001-01-01 to 9998-12-31"],
    ["?before=999999999999999.abc", "before: must be a page token"],
    ["?after=999999999999999.abc", "after: must be a page token"],
    ["?q=a%00b", "q: must be text without control characters"],
    ["?queue=github.com%2Facme%2Fnope", "queue: must be one of the organization's queues"],
  ])("%s answers 400 naming the field and its rule", async (query, message) => {
    const { status, text } = await page(query.replace("<201 characters>", "x".repeat(201)));
    expect(status).toBe(400);
    expect(text).toContain(message.replaceAll("'", "&#39;"));
  });

  test("a visitor without a session is sent to sign in", async () => {
    const response = await fetch(`${server.url}/history?q=1`, { redirect: "manual" });
    expect([response.status, response.headers.get("location")]).toEqual([303, `/sign-in?next=${encodeURIComponent("/history?q=1")}`]);
  });
});
