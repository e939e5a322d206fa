import { isQuarantined, type FlakySettings } from "../../src/domain/flaky/detection.js";
import { BACKENDS } from "../support/backends.js";
import { queueOf, repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";
import { callOnce, expectOnly, times } from "./parallel.js";

/** A JUnit report where each named test passes or fails. */
function report(at: Date, cases: { name: string; failed: boolean }[]): string {
  const body = cases.map((c) => (c.failed ? `<testcase classname="pkg.Tests" name="${c.name}"><failure message="boom">trace</failure></testcase>` : `<testcase classname="pkg.Tests" name="${c.name}"/>`)).join("\n");
  return `<testsuites><testsuite name="suite" timestamp="${at.toISOString()}">\n${body}\n</testsuite></testsuites>`;
}

/** Settings that differ in every field from the defaults and from every other round's. */
function roundSettings(round: number): FlakySettings {
  return {
    autoQuarantine: round % 2 === 1,
    windowDays: 1 + round,
    minSamples: 20 + round,
    flakyRate: 0.1 + round / 100,
    brokenRate: 0.5 + round / 100,
    recoveryDays: 2 + round,
  };
}

describe.each(BACKENDS)("concurrent flaky-test writes on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock();
  const scope = { repo: repo("flaky"), org_url_slug: "acme" };
  let sha = 0;
  const nextSha = () => (++sha).toString(16).padStart(40, "c");
  const call = (operation: string, body: unknown) => callOnce(server.api, operation, body);
  const upload = (cases: { name: string; failed: boolean }[], commit_sha = nextSha()) => call("flaky-tests/upload", { ...scope, commit_sha, branch: "main", junit_xml: [report(clock.now(), cases)] });
  const idsOf = async (names: string[]): Promise<string[]> => {
    const answers = await Promise.all(names.map((name) => server.api.ok("flaky-tests/check-quarantine", { ...scope, tests: [{ name, classname: "pkg.Tests", parent: "suite" }] })));
    return answers.map((a, i) => {
      const details = a.quarantined_test_ids[0];
      if (!details) throw new Error(`${names[i]} is not quarantined`);
      return details;
    });
  };

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
    // The repository is registered by its first use.
    await server.api.ok("createQueue", queueOf("flaky"));
  });
  afterAll(() => server?.close());

  test("update-settings of disjoint fields fired together: every answer 200, no field lost", async () => {
    const fields = Object.keys(roundSettings(0)) as (keyof FlakySettings)[];
    for (let round = 0; round < 4; round++) {
      const wanted = roundSettings(round);
      // Each field is written by three requests, each request writes one field.
      const answers = await times(fields.length * 3, (i) => {
        const field = fields[i % fields.length]!;
        return call("flaky-tests/update-settings", { ...scope, settings: { [field]: wanted[field] } });
      });
      expectOnly(answers);
      expect((await server.api.ok("flaky-tests/get-settings", scope)).settings).toEqual(wanted);
    }
  });

  test("quarantine overrides, settings changes and uploads together: every test's quarantine follows its status, override and the settings", async () => {
    const names = Array.from({ length: 6 }, (_, i) => `test_racy_${i}`);
    await server.api.ok("flaky-tests/update-settings", { ...scope, settings: { autoQuarantine: true } });
    // Failed, then passed on the same commit: flaky, and quarantined.
    const commit = nextSha();
    expectOnly([
      await upload(
        names.map((name) => ({ name, failed: true })),
        commit,
      ),
    ]);
    expectOnly([
      await upload(
        names.map((name) => ({ name, failed: false })),
        commit,
      ),
    ]);
    const ids = await idsOf(names);
    const overrides = ["never", "always", "auto"] as const;
    for (let round = 0; round < 6; round++) {
      const answers = await Promise.all([
        times(4, (i) => call("flaky-tests/update-settings", { ...scope, settings: { autoQuarantine: (i + round) % 2 === 0 } })),
        times(12, (i) => call("flaky-tests/set-quarantine-setting", { ...scope, test_id: ids[i % ids.length], setting: overrides[(i + round) % overrides.length] })),
        times(2, () => upload(names.map((name) => ({ name, failed: false })))),
      ]);
      expectOnly(answers.flat());
      const settings: FlakySettings = (await server.api.ok("flaky-tests/get-settings", scope)).settings;
      for (const id of ids) {
        const { test } = await server.api.ok("flaky-tests/get-test-details", { ...scope, test_id: id });
        expect({ id, quarantined: test.quarantined }).toEqual({ id, quarantined: isQuarantined(test.status.value, test.quarantine_setting, settings) });
      }
    }
  });

  test("link-ticket of one test fired with 10 links: every answer 200, one of them stored", async () => {
    await server.api.ok("flaky-tests/update-settings", { ...scope, settings: { autoQuarantine: true } });
    const commit = nextSha();
    expectOnly([await upload([{ name: "test_ticketed", failed: true }], commit)]);
    expectOnly([await upload([{ name: "test_ticketed", failed: false }], commit)]);
    const [id] = await idsOf(["test_ticketed"]);
    const links = Array.from({ length: 10 }, (_, i) => `https://tickets.example.com/T-${i}`);
    expectOnly(await times(10, (i) => call("flaky-tests/link-ticket-to-test-case", { ...scope, test_case_id: id, ticket_url: links[i] })));
    const { test } = await server.api.ok("flaky-tests/get-test-details", { ...scope, test_id: id });
    expect(links).toContain(test.ticket.html_url);
  });

  test("no request of this suite was logged as unhandled", () => {
    expect(server.logs.filter((line) => line.includes("unhandled error"))).toEqual([]);
  });
});
