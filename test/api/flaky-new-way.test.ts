import { authenticate, createToken } from "../../src/auth/tokens.js";
import { backtestFlakyPolicy } from "../../src/flaky/backtest.js";
import { BACKENDS } from "../support/backends.js";
import { repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const HOUR = 3600_000;

/**
 * Issue 25: a flaky test that broke was listed quarantined, as flaky, until 8 failed runs in a row
 * made it broken. Failing a way it had not failed before, 3 runs in a row off pull requests on
 * more than one commit, it is broken at once: quarantine lifted, the regression counted.
 */
describe.each(BACKENDS)("a flaky test that fails a new way on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock(Date.parse("2026-11-20T08:00:00Z"));
  const scope = { repo: repo("newway"), org_url_slug: "acme" };
  let sha = 0;

  /** One main-branch run: `racy` passes, times out then passes on a retry, times out, or fails an assertion. */
  async function run(outcome: "pass" | "retry" | "timeout" | "assert", extra: Record<string, unknown> = {}) {
    clock.advance(HOUR);
    const timeout = `<testcase classname="pkg.Orders" name="racy" file="orders_test.go"><failure message="panic: test timed out after 30s">panic: test timed out after 30s</failure></testcase>`;
    const assertion = `<testcase classname="pkg.Orders" name="racy" file="orders_test.go"><failure message="got 41, want 42">orders_test.go:88: got 41, want 42</failure></testcase>`;
    const pass = `<testcase classname="pkg.Orders" name="racy" file="orders_test.go"/>`;
    const cases = { pass: [pass], retry: [timeout, pass], timeout: [timeout], assert: [assertion] }[outcome];
    const xml = `<?xml version="1.0"?><testsuite name="pkg" timestamp="${clock.now().toISOString()}"><properties><property name="go.version" value="go1.23.2"/></properties>${cases.join("")}<testcase classname="pkg.Orders" name="steady" file="orders_test.go"/></testsuite>`;
    await server.api.ok("flaky-tests/upload", { ...scope, commit_sha: (++sha).toString(16).padStart(40, "a"), branch: "main", junit_xml: [xml], ...extra });
  }
  const racy = async () => {
    const [t] = (
      await server.api.ok("flaky-tests/list-failing-tests", { ...scope, start_time: new Date(clock.ms + 1 - 7 * 24 * HOUR).toISOString(), end_time: new Date(clock.ms + 1).toISOString(), page_query: { page_size: 10 } })
    ).tests;
    return t as { id: string; status: { value: string; reason: string }; quarantined: boolean };
  };

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
  });
  afterAll(() => server?.close());

  test("flaky and quarantined on its timeouts; its own way three times in a row changes nothing", async () => {
    for (const outcome of ["pass", "retry", "pass", "pass", "timeout", "pass", "retry", "pass"] as const) await run(outcome);
    expect(await racy()).toMatchObject({ status: { value: "flaky" }, quarantined: true });
    for (let i = 0; i < 3; i++) await run("timeout");
    expect(await racy()).toMatchObject({ status: { value: "flaky" }, quarantined: true });
    await run("pass");
  });

  test("a new way, twice: still flaky; a pull request's failures do not count; the third run off pull requests makes it broken", async () => {
    await run("assert");
    await run("assert");
    await run("assert", { pr_number: 5, branch: "feature" });
    expect(await racy()).toMatchObject({ status: { value: "flaky" }, quarantined: true });
    await run("assert");
    const broken = await racy();
    expect(broken).toMatchObject({ status: { value: "broken" }, quarantined: false });
    expect(broken.status.reason).toContain("failed its last 3 runs, on 3 commits, in a way it had not failed before (");
    // The backtest, under the repository's own settings, ends where detection is.
    const db = server.greenline.services.db;
    const principal = (await authenticate(db, (await createToken(db, "acme", "newway")).token))!;
    const { result } = await backtestFlakyPolicy(server.greenline.services, principal, { ...scope, since_days: 30, settings: {} }, { now: clock.now() });
    const replay = [...result.replays.values()].find((r) => r.test.name === "racy")!;
    expect({ status: replay.current.status, quarantined: replay.current.quarantined }).toEqual({ status: "broken", quarantined: false });
  });

  test("fixed (it passes again), it is judged by its rates and retries again", async () => {
    await run("pass");
    expect((await racy()).status.value).not.toBe("broken");
  });
});
