import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { partsOf } from "../../src/cli/test-commands.js";
import { BACKENDS } from "../support/backends.js";
import { startTestServer, type TestServer } from "../support/harness.js";

const run = promisify(execFile);
const root = join(import.meta.dirname, "../..");
const MiB = 1024 * 1024;

/**
 * A Surefire report of `classes` test classes, `perClass` tests each, written as one file as a
 * merged report is: each testcase with its captured output (~1.9 KB), every 97th failing with its
 * stack trace, every 89th flaky (failed, then passed on Surefire's rerun). Over 100 MiB for
 * 520 × 105.
 */
function surefireReport(classes: number, perClass: number): { xml: string; tests: number; failed: number } {
  const out: string[] = ['<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n'];
  const output = `${"DEBUG com.acme.store.Pool - connection checked out; pool stats: active=3 idle=7 waiting=0 <&> ".repeat(19)}\n`;
  let tests = 0;
  let failed = 0;
  for (let c = 0; c < classes; c++) {
    const cls = `com.acme.module${c % 17}.Service${c}Test`;
    out.push(
      `<testsuite name="${cls}" time="12.5" tests="${perClass}" errors="0" skipped="0" failures="0" timestamp="${new Date().toISOString().slice(0, 19)}">\n<properties><property name="java.version" value="21.0.5"/><property name="surefire.rerunFailingTestsCount" value="1"/></properties>\n`,
    );
    for (let t = 0; t < perClass; t++) {
      const n = tests++;
      const head = `<testcase name="test${t}_handles_case_${n}" classname="${cls}" time="0.0${t % 10}">`;
      const sysout = `<system-out><![CDATA[${output}]]></system-out>`;
      if (n % 97 === 0) {
        failed++;
        out.push(
          `${head}<failure message="expected: &lt;${n}&gt; but was: &lt;${n + 1}&gt;" type="org.opentest4j.AssertionFailedError">org.opentest4j.AssertionFailedError: expected: &lt;${n}&gt; but was: &lt;${n + 1}&gt;\n\tat ${cls}.test${t}(Service${c}Test.java:${40 + t})\n</failure>${sysout}</testcase>\n`,
        );
      } else if (n % 89 === 0) {
        failed++;
        out.push(
          `${head}<flakyFailure message="expected: &lt;ready&gt; but was: &lt;pending&gt;" type="org.opentest4j.AssertionFailedError">org.opentest4j.AssertionFailedError\n\tat ${cls}.test${t}(Service${c}Test.java:${40 + t})</flakyFailure>${sysout}</testcase>\n`,
        );
      } else out.push(`${head}${sysout}</testcase>\n`);
    }
    out.push(`<system-out><![CDATA[suite ${cls} done]]></system-out>\n</testsuite>\n`);
  }
  out.push("</testsuites>\n");
  return { xml: out.join(""), tests, failed };
}

describe("a 100 MiB Surefire report through `greenline test upload`", () => {
  let server: TestServer;
  let dir: string;

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!);
    dir = mkdtempSync(join(tmpdir(), "greenline-large-"));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });

  test("is split into parts at testcase boundaries, each within a request, and stored as one upload holding every test", async () => {
    const { xml, tests, failed } = surefireReport(520, 105);
    const file = join(dir, "TEST-merged.xml");
    writeFileSync(file, xml);
    expect(statSync(file).size).toBeGreaterThan(100 * MiB);
    const parts = partsOf([xml]);
    expect(parts.length).toBeGreaterThanOrEqual(7);
    expect(parts.length).toBeLessThanOrEqual(8);
    for (const part of parts) expect(Buffer.byteLength(JSON.stringify(part))).toBeLessThanOrEqual(16 * MiB + 2);
    const { stdout } = await run(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "test", "upload", "--url", server.url, "--token", server.api.token, "--org", "acme", "--repo", "acme/big", "--commit", "b".repeat(40), "--branch", "main", "--junit", file],
      { cwd: root, maxBuffer: 10 * MiB },
    );
    expect(stdout).toContain(`sending them in ${parts.length} parts`);
    expect(stdout).toContain(`uploaded ${tests} tests (${failed} failed) from 1 report(s)`);
    expect(stdout).not.toContain("infrastructure failure");
    const stored = await server.greenline.services.db.sqlRead((sql) =>
      sql.all<{ uploads: unknown; results: unknown }>(`SELECT (SELECT COUNT(*) FROM "TestUpload") AS uploads, (SELECT COUNT(*) FROM "TestResult") AS results`),
    );
    expect({ uploads: Number(stored[0]!.uploads), results: Number(stored[0]!.results) }).toEqual({ uploads: 1, results: tests });
    // Surefire's rerun that passed is a flake found within the run: those tests are flaky (and quarantined).
    const flaky = await server.api.ok("flaky-tests/list-unhealthy-tests", { repo: { host: "github.com", owner: "acme", name: "big" }, org_url_slug: "acme", status: "FLAKY", page_query: { page_size: 100 } });
    expect(flaky.page.total_rows).toBe(Array.from({ length: tests }, (_, n) => n % 89 === 0 && n % 97 !== 0).filter(Boolean).length);
  }, 300_000);
});
