import { authenticate, createToken, type Principal } from "../../src/auth/tokens.js";
import { DAY_MS } from "../../src/domain/time.js";
import { backtestFlakyPolicy } from "../../src/flaky/backtest.js";
import { BACKENDS } from "../support/backends.js";
import { repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const HOUR = 3600_000;

type Outcome = "pass" | "fail" | "retry";

/** A JUnit report run at `at`; a retry is the testcase failed, then passed (a Go report: repeated testcases are reruns). */
function report(at: Date, cases: [string, Outcome][]): string {
  const body = cases
    .map(([name, outcome]) => {
      const tc = `<testcase classname="pkg" name="${name}"`;
      if (outcome === "pass") return `${tc}/>`;
      const failure = `${tc}><failure message="expected 1, got 2">at pkg/${name}.go:12</failure></testcase>`;
      return outcome === "fail" ? failure : `${failure}\n${tc}/>`;
    })
    .join("\n");
  return `<?xml version="1.0"?>\n<testsuites><testsuite name="pkg" timestamp="${at.toISOString()}"><properties><property name="go.version" value="go1.23.2 linux/amd64"/></properties>\n${body}\n</testsuite></testsuites>`;
}

/** A deterministic generator (mulberry32). */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe.each(BACKENDS)("a flaky policy's backtest on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock(Date.parse("2026-11-01T08:00:00Z"));
  const scope = { repo: repo("backtest"), org_url_slug: "acme" };
  const start = clock.ms;

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
    // 14 days of CI, six commits a day on main, each PR's run beside it now and then: tests of known behaviour.
    const rand = random(25);
    const failsAt = (p: number): Outcome => (rand() < p ? "fail" : "pass");
    for (let i = 0; i < 84; i++) {
      clock.ms = start + i * 4 * HOUR;
      const at = clock.now();
      const sha = i.toString(16).padStart(40, "c");
      const cases: [string, Outcome][] = [
        ["steady", "pass"],
        ["flaky_20", failsAt(0.2)],
        ["flaky_45", failsAt(0.45)],
        ["retrying", i % 9 === 4 ? "retry" : "pass"],
        ["breaks", i < 50 ? failsAt(0.05) : "fail"],
        ["fixed", i >= 10 && i < 25 ? "fail" : "pass"],
      ];
      await server.api.ok("flaky-tests/upload", { ...scope, commit_sha: sha, branch: "main", junit_xml: [report(at, cases)] });
      if (i % 7 === 3) {
        // A pull request's run: a failure there counts in the rates, never in a streak.
        await server.api.ok("flaky-tests/upload", {
          ...scope,
          commit_sha: sha.replace(/^c/, "d"),
          branch: "feature",
          pr_number: 7,
          junit_xml: [
            report(at, [
              ["flaky_20", "fail"],
              ["breaks", "fail"],
            ]),
          ],
        });
      }
    }
  }, 120_000);
  afterAll(() => server?.close());

  const storedTest = async (id: string) => (await server.api.ok("flaky-tests/get-test-details", { ...scope, test_id: id })).test;

  test("under the repository's own settings the replay ends where detection is: every test's status and quarantine", async () => {
    const { result } = await backtestFlakyPolicy(server.greenline.services, await principalOf(server), { ...scope, since_days: 30, settings: {} });
    expect(result.replays.size).toBe(5);
    const byName = new Map<string, { status: string; quarantined: boolean }>();
    for (const { test, current } of result.replays.values()) {
      const stored = await storedTest(test.id);
      expect(stored.name).toBe(test.name);
      // The replay's end, under the same settings, is the stored judgement.
      expect({ name: test.name, status: current.status, quarantined: current.quarantined }).toEqual({ name: test.name, status: stored.status.value, quarantined: stored.quarantined });
      byName.set(test.name, { status: stored.status.value, quarantined: stored.quarantined });
    }
    // What detection concluded, test by test, as the scenario says.
    expect(Object.fromEntries(byName)).toEqual({
      flaky_20: { status: "flaky", quarantined: true },
      flaky_45: { status: "flaky", quarantined: true },
      retrying: { status: "flaky", quarantined: true },
      breaks: { status: "broken", quarantined: false },
      fixed: { status: "healthy", quarantined: false },
    });
    const answer = await server.api.ok("flaky-tests/backtest-policy", { ...scope, since_days: 30 });
    expect(answer.current.outcome).toEqual(answer.proposed.outcome);
    expect(answer.current.outcome).toMatchObject({ tests_quarantined: 3, tests_broken: 1 });
    expect(answer.changes).toMatchObject({ newly_quarantined: { total: 0 }, no_longer_quarantined: { total: 0 }, ejections_avoided: 0, ejections_added: 0 });
  });

  test("other settings: what would have changed", async () => {
    // A stricter rate: flaky_20 (about 20%, and its pull requests' failures) is no longer flaky by rate.
    const off = await server.api.ok("flaky-tests/backtest-policy", { ...scope, settings: { autoQuarantine: false } });
    expect(off.proposed.outcome).toMatchObject({ tests_quarantined: 0, tests_ever_quarantined: 0, failures_excused: 0, quarantines_started: 0 });
    expect(off.changes.no_longer_quarantined.total).toBe(off.current.outcome.tests_ever_quarantined);
    expect(off.changes.no_longer_quarantined.tests.map((t: any) => t.name).sort()).toEqual(expect.arrayContaining(["flaky_45", "retrying"]));
    // The current quarantine hid some of "breaks"' first failures in a row (it was quarantined, by a pass-on-retry or its rate, when it broke)?
    // Whatever it did, quarantine off hides no regression.
    expect(off.proposed.outcome.regressions_excused).toBe(0);
    expect(off.changes.regressions_hidden.total).toBe(0);
    // A lenient broken rate keeps the broken test flaky, and quarantined, longer: its break hidden.
    const lenient = await server.api.ok("flaky-tests/backtest-policy", { ...scope, settings: { brokenRate: 1, flakyRate: 0.05 } });
    expect(lenient.proposed.outcome.tests_ever_quarantined).toBeGreaterThanOrEqual(lenient.current.outcome.tests_ever_quarantined);
    expect(lenient.proposed.settings).toMatchObject({ brokenRate: 1, flakyRate: 0.05, windowDays: 7 });
    // A shorter period counts less.
    const day = await server.api.ok("flaky-tests/backtest-policy", { ...scope, since_days: 1 });
    expect(Date.parse(day.period.to) - Date.parse(day.period.from)).toBe(DAY_MS);
    expect(day.current.outcome.failures_excused).toBeLessThanOrEqual(off.current.outcome.failures_excused);
  });

  test("bad input is refused naming the field; another organization learns nothing", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ since_days: 0 }, "since_days"],
      [{ since_days: 91 }, "since_days"],
      [{ since_days: 1.5 }, "since_days"],
      [{ settings: { flakyRate: 0.9 } }, "settings.flakyRate"],
      [{ settings: { minSamples: 0 } }, "settings.minSamples"],
      [{ settings: { threshold: 0.1 } }, "settings"],
      [{ settings: { ticketUrlTemplate: "https://x/{id}" } }, "settings"],
    ];
    for (const [body, field] of cases) {
      const answer = await server.api.call("flaky-tests/backtest-policy", { ...scope, ...body });
      expect(answer.status).toBe(400);
      expect(JSON.stringify(answer.body)).toContain(field);
    }
    const other = await server.clientFor("globex");
    const theirs = await other.ok("flaky-tests/backtest-policy", { repo: scope.repo, org_url_slug: "globex" });
    expect(theirs.current.outcome).toMatchObject({ tests_flaky: 0, tests_ever_quarantined: 0, failures_excused: 0 });
  });
});

async function principalOf(server: TestServer): Promise<Principal> {
  const db = server.greenline.services.db;
  const { token } = await createToken(db, "acme", "backtest-check");
  return (await authenticate(db, token))!;
}
