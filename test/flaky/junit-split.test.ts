import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type JUnitCase, parseJUnit } from "../../src/formats/junit.js";
import { splitJUnitReport } from "../../src/formats/junit-split.js";
import { projectRoot } from "../../src/paths.js";

const FIXTURES = join(projectRoot, "test/fixtures/junit");
const cases = (xml: string) => {
  const out: JUnitCase[] = [];
  parseJUnit(xml, (c) => out.push(c));
  return out;
};

describe("splitting a JUnit report at testcase boundaries", () => {
  const fixtures = readdirSync(FIXTURES).filter((f) => f.endsWith(".xml"));

  test.each(fixtures)("%s: every piece is well formed and within the size, and together they read as the whole", (name) => {
    const xml = readFileSync(join(FIXTURES, name), "utf8");
    const whole = cases(xml);
    for (const maxBytes of [600, 1500, 4000]) {
      const pieces = splitJUnitReport(xml, maxBytes);
      const read = pieces.flatMap(cases);
      expect(read).toEqual(whole);
      // Within the size unless one testcase (with what surrounds it) is larger.
      for (const piece of pieces) if (cases(piece).length > 1) expect(Buffer.byteLength(piece)).toBeLessThanOrEqual(maxBytes);
      if (Buffer.byteLength(xml) > maxBytes && whole.length > 1) expect(pieces.length).toBeGreaterThan(1);
    }
  });

  test("a report within the size is answered whole", () => {
    const xml = readFileSync(join(FIXTURES, "surefire.xml"), "utf8");
    expect(splitJUnitReport(xml, 10_000_000)).toEqual([xml]);
  });

  test("a Go report's pieces keep the suite's go.version property, so a rerun is read as a retry in every piece", () => {
    const xml = readFileSync(join(FIXTURES, "gotestsum-rerun.xml"), "utf8");
    const pieces = splitJUnitReport(xml, 700);
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) if (cases(piece).length > 0) expect(piece).toContain("go.version");
    expect(pieces.flatMap(cases).map((c) => c.repeatIsRetry)).toEqual(cases(xml).map((c) => c.repeatIsRetry));
  });

  test("attribute values with '>' and '<testcase' in CDATA and comments do not move the cuts", () => {
    const tc = (i: number) => `<testcase classname="a>b" name="t${i}"><failure message="x &gt; y"><![CDATA[<testcase name="fake"> </testcase>]]></failure><!-- </testcase> --></testcase>`;
    const xml = `<?xml version="1.0"?><testsuites><testsuite name="s" timestamp="2026-11-01T00:00:00Z"><properties><property name="k" value="v"/></properties>${Array.from({ length: 40 }, (_, i) => tc(i)).join("\n")}<system-out>suite output</system-out></testsuite></testsuites>`;
    const pieces = splitJUnitReport(xml, 800);
    expect(pieces.length).toBeGreaterThan(3);
    expect(pieces.flatMap(cases)).toEqual(cases(xml));
    expect(pieces.flatMap(cases).map((c) => c.name)).toEqual(Array.from({ length: 40 }, (_, i) => `t${i}`));
  });

  test("a DOCTYPE or a report the scanner cannot follow is answered whole (the server judges it)", () => {
    const doctype = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><testsuite>${"<testcase name='t'/>".repeat(100)}</testsuite>`;
    expect(splitJUnitReport(doctype, 200)).toEqual([doctype]);
    const broken = `<testsuite>${"<testcase name='t'/>".repeat(100)}`;
    expect(splitJUnitReport(broken, 200)).toEqual([broken]);
  });
});
