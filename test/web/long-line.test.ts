import { LINE_SHOWN, WALL_SHOWN } from "../../src/web/pages/queue-rows.js";
import { BACKENDS } from "../support/backends.js";
import { DashboardClient, queuePath } from "../support/dashboard.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

/**
 * A long line: the queue page draws its first LINE_SHOWN PRs (WALL_SHOWN on the wall display)
 * and says how many more there are, with a link to the page that draws them all; the live
 * stream keeps to the same rows.
 */
describe.each(BACKENDS)("a long line on the queue page on $name", (backend) => {
  let server: TestServer;
  let acme: DashboardClient;
  const PRS = LINE_SHOWN + 12;

  beforeAll(async () => {
    server = await startTestServer(backend);
    acme = await DashboardClient.signIn(server.url, server.api.token);
    await server.api.ok("createQueue", queueOf("long"));
    for (let n = 1; n <= PRS; n++) await server.api.ok("submitPullRequest", prOf(n, "long"));
  });
  afterAll(() => server?.close());

  const rowsIn = (page: string) => [...page.matchAll(/<li [^>]*id="line-pr-(\d+)"/g)].map((m) => Number(m[1]));

  test(`draws the first ${LINE_SHOWN} and links to all ${PRS}`, async () => {
    const { status, text } = await acme.get(queuePath("long"));
    expect(status).toBe(200);
    expect(rowsIn(text)).toEqual(Array.from({ length: LINE_SHOWN }, (_, i) => i + 1));
    expect(text).toContain(`and ${PRS - LINE_SHOWN} more in line`);
    expect(text).toContain(`href="${queuePath("long")}?all">show all ${PRS}</a>`);
  });

  test("?all draws every one, and its stream keeps to all", async () => {
    const { text } = await acme.get(`${queuePath("long")}?all`);
    expect(rowsIn(text)).toHaveLength(PRS);
    expect(text).toContain(`All ${PRS} in line shown.`);
    expect(text).toMatch(/sse-connect="\/events\?[^"]*&amp;all=1"/);
  });

  test("the wall display draws fewer, with no link", async () => {
    const { text } = await acme.get(`${queuePath("long")}?tv`);
    expect(rowsIn(text)).toHaveLength(WALL_SHOWN);
    expect(text).toContain(`and ${PRS - WALL_SHOWN} more in line`);
    expect(text).not.toContain("show all");
  });

  test("a bad value of all is refused, naming it", async () => {
    const { status, text } = await acme.get(`${queuePath("long")}?all=yes`);
    expect(status).toBe(400);
    expect(text).toContain("all: must be given once, empty or 1");
  });

  test("when a PR leaves, the next one comes into the drawn rows", async () => {
    await server.api.ok("cancelPullRequest", prOf(1, "long"));
    const { text } = await acme.get(queuePath("long"));
    expect(rowsIn(text)[LINE_SHOWN - 1]).toBe(LINE_SHOWN + 1);
    expect(text).toContain(`and ${PRS - 1 - LINE_SHOWN} more in line`);
  });
});
