import { BACKENDS } from "../support/backends.js";
import { DashboardClient } from "../support/dashboard.js";
import { repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * Issue 25, part 6: list-failing-tests (and the repository's tests page) filter by name or
 * file, status and owner, and sort by failure rate, PRs impacted, last failure or name; pages
 * of a sorted list follow its order. Real server, real database.
 */
const HOUR = 3600_000;
const web = { repo: repo("web"), org_url_slug: "acme" };
const CODEOWNERS = "* @acme/everyone\n/src/billing/ @acme/billing\n/src/payments/ @acme/payments\n";

type Case = { name: string; file: string; fail?: boolean };
const FILES = { invoices: "src/billing/invoices.test.ts", refunds: "src/payments/refunds.test.ts" };

function report(at: Date, cases: Case[]): string {
  const body = cases
    .map((c) => {
      const classname = c.file === FILES.invoices ? "billing.Invoices" : "payments.Refunds";
      return `<testcase classname="${classname}" name="${c.name}" file="${c.file}">${c.fail ? `<failure message="${c.name} failed">trace</failure>` : ""}</testcase>`;
    })
    .join("");
  return `<?xml version="1.0"?><testsuites><testsuite name="suite" timestamp="${at.toISOString()}">${body}</testsuite></testsuites>`;
}

describe.each(BACKENDS)("failing tests filtered and sorted on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock(Date.parse("2026-11-22T12:00:00Z"));
  let sha = 0;
  const upload = (cases: Case[], extra: Record<string, unknown> = {}) =>
    server.api.ok("flaky-tests/upload", { ...web, commit_sha: (++sha).toString(16).padStart(40, "d"), branch: "main", junit_xml: [report(clock.now(), cases)], codeowners: CODEOWNERS, ...extra });
  const list = (extra: Record<string, unknown>, page_query: Record<string, unknown> = { page_size: 10 }) =>
    server.api.call("flaky-tests/list-failing-tests", {
      ...web,
      start_time: new Date(clock.ms + 1 - 24 * HOUR).toISOString(),
      end_time: new Date(clock.ms + 1).toISOString(),
      page_query,
      ...extra,
    });
  const names = async (extra: Record<string, unknown>) => {
    const answer = await list(extra);
    expect(answer.status).toBe(200);
    return answer.body.tests.map((t: { name: string }) => t.name);
  };

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
    // Each order differs from the others and from the first-seen one (invoice_total, refund_partial, refund_full):
    // invoice_total fails 2 of 3 runs (healthy: too few runs), last at +1 h, on PR 7;
    // refund_partial fails 3 of 5, last at +2 h 10, on PRs 7 and 8, and passes on the commit it failed on (flaky);
    // refund_full fails both its runs (broken), last at +2 h 20, on no PR.
    await upload([
      { name: "invoice_total", file: FILES.invoices, fail: true },
      { name: "refund_partial", file: FILES.refunds },
      { name: "refund_full", file: FILES.refunds, fail: true },
    ]);
    clock.advance(HOUR);
    await upload(
      [
        { name: "invoice_total", file: FILES.invoices, fail: true },
        { name: "refund_partial", file: FILES.refunds, fail: true },
      ],
      { pr_number: 7 },
    );
    clock.advance(HOUR);
    await upload(
      [
        { name: "invoice_total", file: FILES.invoices },
        { name: "refund_partial", file: FILES.refunds, fail: true },
      ],
      { pr_number: 8 },
    );
    clock.advance(HOUR / 6);
    await upload([{ name: "refund_partial", file: FILES.refunds, fail: true }], { commit_sha: "e".repeat(40) });
    clock.advance(HOUR / 6);
    await upload([{ name: "refund_full", file: FILES.refunds, fail: true }]);
    clock.advance(HOUR / 3);
    await upload([{ name: "refund_partial", file: FILES.refunds }], { commit_sha: "e".repeat(40) });
  });
  afterAll(() => server?.close());

  test("unfiltered: every failing test, in the order they were first seen; each with when it last failed", async () => {
    expect(await names({})).toEqual(["invoice_total", "refund_partial", "refund_full"]);
    const all = (await list({})).body.tests as { name: string; last_failure_at: string | null; status: { value: string } }[];
    const at = (minutesAgo: number) => new Date(clock.ms - minutesAgo * 60_000).toISOString();
    expect(Object.fromEntries(all.map((t) => [t.name, [t.status.value, t.last_failure_at]]))).toEqual({
      invoice_total: ["healthy", at(100)],
      refund_partial: ["flaky", at(30)],
      refund_full: ["broken", at(20)],
    });
  });

  test("filters: status (any case), owner (any case), a text in the name, class or file", async () => {
    expect(await names({ status: "broken" })).toEqual(["refund_full"]);
    expect(await names({ status: "FLAKY" })).toEqual(["refund_partial"]);
    expect(await names({ owner: "@ACME/payments" })).toEqual(["refund_partial", "refund_full"]);
    // CODEOWNERS' last matching rule owns a file: "*" owns none of these.
    expect(await names({ owner: "@acme/billing" })).toEqual(["invoice_total"]);
    expect(await names({ owner: "@acme/everyone" })).toEqual([]);
    expect(await names({ search: "BILLING" })).toEqual(["invoice_total"]);
    expect(await names({ search: "refund_f" })).toEqual(["refund_full"]);
    expect(await names({ search: "refunds", status: "healthy" })).toEqual([]);
    expect(await names({ search: "nothing like it" })).toEqual([]);
  });

  test("sorts: failure rate, PRs impacted and last failure highest first, name A to Z", async () => {
    expect(await names({ sort: "failure_rate" })).toEqual(["refund_full", "invoice_total", "refund_partial"]);
    expect(await names({ sort: "pull_requests_impacted" })).toEqual(["refund_partial", "invoice_total", "refund_full"]);
    expect(await names({ sort: "last_failure" })).toEqual(["refund_full", "refund_partial", "invoice_total"]);
    expect(await names({ sort: "name" })).toEqual(["invoice_total", "refund_full", "refund_partial"]);
    expect(await names({ sort: "name", owner: "@acme/payments" })).toEqual(["refund_full", "refund_partial"]);
  });

  test("a sorted or filtered list pages in its order, forward, back and to its end; a token of another list is refused", async () => {
    const page = async (extra: Record<string, unknown>, token: string) => {
      const answer = await list(extra, { page_size: 1, page_token: token });
      expect(answer.status).toBe(200);
      return { names: answer.body.tests.map((t: { name: string }) => t.name), page: answer.body.page };
    };
    for (const [extra, order] of [
      [{ sort: "pull_requests_impacted" }, ["refund_partial", "invoice_total", "refund_full"]],
      [{ owner: "@acme/payments" }, ["refund_partial", "refund_full"]],
    ] as const) {
      const seen: string[] = [];
      let token = "";
      let last = { names: [] as string[], page: { total_rows: 0, next_page_token: "", prev_page_token: "", last_page_token: "" } };
      for (let i = 0; i < 5; i++) {
        last = await page(extra, token);
        expect(last.page.total_rows).toBe(order.length);
        seen.push(...last.names);
        token = last.page.next_page_token;
        if (!token) break;
      }
      expect(seen).toEqual(order);
      expect((await page(extra, last.page.prev_page_token)).names).toEqual([order.at(-2)]);
      expect((await page(extra, last.page.last_page_token)).names).toEqual([order.at(-1)]);
    }
    // A token names its list: reused with another order or filter, or none, it is refused, naming the field.
    const sorted = await page({ sort: "name" }, "");
    const unsorted = await page({}, "");
    for (const [extra, token] of [
      [{ sort: "failure_rate" }, sorted.page.next_page_token],
      [{}, sorted.page.next_page_token],
      [{ sort: "name" }, unsorted.page.next_page_token],
      [{ sort: "name", status: "flaky" }, sorted.page.next_page_token],
    ] as const) {
      const answer = await list(extra, { page_size: 1, page_token: token });
      expect(answer.status).toBe(400);
      expect(answer.text).toContain("page_query.page_token");
    }
  });

  test("a bad filter or order is a 400 naming the field", async () => {
    for (const [field, value] of [
      ["sort", "random"],
      ["status", "sometimes"],
      ["search", "x".repeat(201)],
      ["owner", "x".repeat(201)],
    ] as const) {
      const answer = await list({ [field]: value });
      expect(answer.status).toBe(400);
      expect(answer.text).toContain(field);
    }
  });

  test("the repository's tests page carries the same filters and order, in a form that keeps them", async () => {
    const acme = await DashboardClient.signIn(server.url, server.api.token);
    const page = await acme.get("/tests/github.com/acme/web?search=refunds&sort=name&owner=%40acme%2Fpayments");
    expect(page.status).toBe(200);
    const table = /<table class="tests" id="failing-tests">[\s\S]*?<\/table>/.exec(page.text)![0];
    expect([...table.matchAll(/<tr data-test="[^"]+">\s*<th scope="row"><a [^>]*>([^<]+)<\/a>/g)].map((m) => m[1])).toEqual(["refund_full", "refund_partial"]);
    expect(page.text).toContain('<input id="search" name="search" type="search" maxlength="200" value="refunds">');
    expect(page.text).toContain('<option value="name" selected>Name</option>');
    expect(page.text).toContain('value="@acme/payments"');
    expect(page.text).toContain("Failing in the last 24 hours, filtered (2)");
    expect(table).toMatch(/<td data-label="Last failure"><time datetime="[^"]+">/);
    const none = await acme.get("/tests/github.com/acme/web?search=zzz");
    expect(none.text).toContain("No failing test in this range matches.");
    // Variants of one test (another matrix leg) sit under it, labelled; a test between them in the order moves below.
    await upload([{ name: "invoice_total", file: FILES.invoices, fail: true }], { variant: "macos" });
    const grouped = await acme.get("/tests/github.com/acme/web");
    const rows = [...grouped.text.matchAll(/<tr data-test="[^"]+"( data-variant-of="[^"]+" class="variant")?>\s*<th scope="row"><a [^>]*>([^<]+)<\/a>( <span class="badge variant">variant ([^<]+)<\/span>)?/g)].map(
      (m) => [m[2], m[4] ?? "", Boolean(m[1])],
    );
    expect(rows).toEqual([
      ["invoice_total", "", false],
      ["invoice_total", "macos", true],
      ["refund_partial", "", false],
      ["refund_full", "", false],
    ]);
    const bad = await acme.get("/tests/github.com/acme/web?sort=random");
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("sort: must be one of failure_rate, pull_requests_impacted, last_failure, name");
    // A parameter given twice is refused, not read as absent.
    for (const query of ["status=flaky&status=broken", "sort=name&sort=name", "range=7d&range=1h", "search=a&search=b"]) {
      const twice = await acme.get(`/tests/github.com/acme/web?${query}`);
      expect(twice.status).toBe(400);
      expect(twice.text).toMatch(/(status|sort|range|search): must be given once, as text/);
    }
  });
});
