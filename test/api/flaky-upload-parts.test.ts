import { BACKENDS } from "../support/backends.js";
import { repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const MINUTE = 60_000;

/** A report of tests `from`..`to`-1 of a suite; the ones in `failing` fail. */
function report(suite: string, from: number, to: number, failing: number[] = []): string {
  const cases = Array.from({ length: to - from }, (_, k) => {
    const i = from + k;
    return failing.includes(i) ? `<testcase classname="pkg.${suite}" name="t${i}"><failure message="expected ${i}"/></testcase>` : `<testcase classname="pkg.${suite}" name="t${i}"/>`;
  });
  return `<?xml version="1.0"?><testsuite name="${suite}" timestamp="2026-11-20T12:00:00Z">${cases.join("")}</testsuite>`;
}

/**
 * Issue 25, part 5: an upload sent in parts (each request naming its set, place and count) is
 * stored as one upload when its last part is in — one id, one judgment — exactly as if it had
 * come whole; parts are idempotent; parts that disagree are refused naming the field, and store
 * nothing; parts that stop coming are stored as they are after 30 minutes by the worker.
 */
describe.each(BACKENDS)("an upload in parts on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock(Date.parse("2026-11-20T13:00:00Z"));
  const scope = { repo: repo("parts"), org_url_slug: "acme" };
  const base = { ...scope, commit_sha: "f".repeat(40), branch: "main" };
  const uploads = async () => Number((await server.greenline.services.db.sqlRead((sql) => sql.all<{ n: unknown }>(`SELECT COUNT(*) AS n FROM "TestUpload"`)))[0]!.n);
  /** Parts whose reports are held (a stored set keeps its parts' fields and digests, not their reports). */
  const partRows = async () => Number((await server.greenline.services.db.sqlRead((sql) => sql.all<{ n: unknown }>(`SELECT COUNT(*) AS n FROM "TestUploadPart" WHERE "reports" <> ''`)))[0]!.n);

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
  });
  afterAll(() => server?.close());

  test("three parts are one upload, stored when the last is in; sent again, a part is received once", async () => {
    const part = (index: number) => ({ id: "job-1", index, count: 3 });
    const first = await server.api.ok("flaky-tests/upload", { ...base, junit_xml: [report("a", 0, 10, [3])], part: part(0) });
    expect(first).toMatchObject({ test_cases: 10, failures: 1, part: { index: 0, count: 3, received: 1, complete: false } });
    // Sent again (a retry): still one part.
    expect((await server.api.ok("flaky-tests/upload", { ...base, junit_xml: [report("a", 0, 10, [3])], part: part(0) })).part).toMatchObject({ received: 1, complete: false });
    const before = await uploads();
    const third = await server.api.ok("flaky-tests/upload", { ...base, junit_xml: [report("c", 20, 30)], part: part(2) });
    expect(third).toMatchObject({ upload_id: first.upload_id, part: { received: 2, complete: false } });
    expect(await uploads()).toBe(before);
    const last = await server.api.ok("flaky-tests/upload", { ...base, junit_xml: [report("b", 10, 20, [12, 13])], part: part(1) });
    expect(last).toMatchObject({ upload_id: first.upload_id, test_cases: 30, failures: 3, infrastructure_failure: false, part: { received: 3, complete: true } });
    expect(await uploads()).toBe(before + 1);
    expect(await partRows()).toBe(0);
    // A part sent after the upload was stored gets its answer; nothing is stored again.
    expect(await server.api.ok("flaky-tests/upload", { ...base, junit_xml: [report("c", 20, 30)], part: part(2) })).toMatchObject({ upload_id: first.upload_id, test_cases: 30, part: { complete: true } });
    expect(await uploads()).toBe(before + 1);
    // … but not a part with other reports, nor one naming another commit.
    expect((await server.api.call("flaky-tests/upload", { ...base, junit_xml: [report("c", 20, 31)], part: part(2) })).status).toBe(400);
    expect((await server.api.call("flaky-tests/upload", { ...base, commit_sha: "e".repeat(40), junit_xml: [report("c", 20, 30)], part: part(2) })).status).toBe(400);
    // The tests are the whole's: failing ones listed once each.
    const failing = await server.api.ok("flaky-tests/list-failing-tests", { ...scope, start_time: "2026-11-20T00:00:00Z", end_time: "2026-11-21T00:00:00Z", page_query: { page_size: 100 } });
    expect(failing.tests.map((t: { name: string }) => t.name).sort()).toEqual(["t12", "t13", "t3"]);
  });

  test("parts that disagree are refused naming the field, and store nothing", async () => {
    const part = (index: number, count = 2) => ({ id: "job-2", index, count });
    await server.api.ok("flaky-tests/upload", { ...base, junit_xml: [report("a", 0, 5)], part: part(0) });
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, junit_xml: [report("a", 0, 6)], part: part(0) }, "part.index"],
      [{ ...base, commit_sha: "e".repeat(40), junit_xml: [report("b", 5, 10)], part: part(1) }, "commit_sha"],
      [{ ...base, branch: "other", junit_xml: [report("b", 5, 10)], part: part(1) }, "branch"],
      [{ ...base, junit_xml: [report("b", 5, 10)], part: part(1, 3) }, "part.count"],
      [{ ...base, junit_xml: [report("b", 5, 10)], part: part(2) }, "part.index"],
      [{ ...base, junit_xml: ["<testsuite><testcase name='x'>"], part: part(1) }, "junit_xml[0]"],
      [{ ...base, junit_xml: [report("b", 5, 10)], part: { id: "bad id!", index: 1, count: 2 } }, "part.id"],
      [{ ...base, junit_xml: [report("b", 5, 10)], part: { id: "job-2", index: 1, count: 2, extra: 1 } }, "part"],
    ];
    const rows = await partRows();
    for (const [body, field] of cases) {
      const answer = await server.api.call("flaky-tests/upload", body);
      expect({ field, status: answer.status }).toEqual({ field, status: 400 });
      expect(JSON.stringify(answer.body.error)).toContain(field);
    }
    expect(await partRows()).toBe(rows);
    // The set still completes with the right part.
    expect((await server.api.ok("flaky-tests/upload", { ...base, junit_xml: [report("b", 5, 10)], part: part(1) })).part).toMatchObject({ complete: true });
  });

  test("parts sent at once are stored once", async () => {
    const count = 6;
    const answers = await Promise.all(
      Array.from({ length: count }, (_, index) => server.api.ok("flaky-tests/upload", { ...base, junit_xml: [report(`s${index}`, index * 10, index * 10 + 10)], part: { id: "job-3", index, count } })),
    );
    const complete = answers.filter((a) => a.part.complete);
    expect(complete.length).toBeGreaterThanOrEqual(1);
    expect(complete[0]).toMatchObject({ test_cases: 60 });
    const ids = new Set(answers.map((a) => a.upload_id));
    expect(ids.size).toBe(1);
    const stored = await server.greenline.services.db.sqlRead((sql) => sql.all<{ n: unknown }>(`SELECT COUNT(*) AS n FROM "TestUpload" WHERE "id" = ?`, [[...ids][0]]));
    expect(Number(stored[0]!.n)).toBe(1);
  });

  test("parts that stop coming are stored as they are 30 minutes after the first; another organization cannot add to a set", async () => {
    const part = (index: number) => ({ id: "job-4", index, count: 3 });
    const first = await server.api.ok("flaky-tests/upload", { ...base, junit_xml: [report("a", 0, 4)], part: part(0) });
    await server.api.ok("flaky-tests/upload", { ...base, junit_xml: [report("b", 4, 8)], part: part(1) });
    // Another organization: its parts are its own set (and it cannot claim this repository at all).
    const globex = await server.clientFor("globex");
    expect((await globex.call("flaky-tests/upload", { ...base, org_url_slug: "globex", junit_xml: [report("c", 8, 12)], part: part(2) })).status).toBe(404);
    const before = await uploads();
    clock.advance(20 * MINUTE);
    await server.greenline.worker.tick();
    expect(await uploads()).toBe(before);
    clock.advance(15 * MINUTE);
    await server.greenline.worker.tick();
    expect(await uploads()).toBe(before + 1);
    const late = await server.api.ok("flaky-tests/upload", { ...base, junit_xml: [report("c", 8, 12)], part: part(2) });
    expect(late).toMatchObject({ upload_id: first.upload_id, test_cases: 8, parts_missing: 1, part: { complete: true } });
  });
});
