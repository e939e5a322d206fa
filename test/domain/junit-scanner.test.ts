import { rng } from "../../bench/random.js";
import { JUnitError, JUnitReader, parseJUnit, type JUnitCase } from "../../src/formats/junit.js";
import { parseJUnitReference } from "../support/junit-reference.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { projectRoot } from "../../src/paths.js";

// Greenline reads JUnit with its own single-pass scanner. These tests hold it to a conformant
// XML parser (saxes, through the reader Greenline used before): on generated reports of every
// shape the dialects produce, both read the same testcases; on those reports mutated at random,
// both refuse the same malformed ones.

const fixture = (name: string) => readFileSync(join(projectRoot, "test/fixtures/junit", name), "utf8");

type Outcome = { cases: JUnitCase[] } | { error: JUnitError };

function read(parse: typeof parseJUnit, xml: string): Outcome {
  const cases: JUnitCase[] = [];
  try {
    parse(xml, (c) => cases.push(c));
    return { cases };
  } catch (error) {
    if (error instanceof JUnitError) return { error };
    throw error;
  }
}

/** Random JUnit reports: nested suites, every kind of child, references, CDATA, comments, both quotes, attributes in any order. */
function generator(seed: number) {
  const next = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const chance = (p: number) => next() < p;
  const space = () => pick(["", " ", "\n  ", "\t", "\r\n"]);
  const words = ["alpha", "beta gamma", "a &amp; b", "x &lt; y", "&quot;quoted&quot;", "it&apos;s", "caf&#233;", "&#x1F600; smile", "tab\there", "line\nbreak", "[param-1]", "über", ">"];
  const text = () => Array.from({ length: 1 + Math.floor(next() * 3) }, () => pick(words)).join(" ");
  const attr = (name: string, value: string) => {
    const quote = chance(0.5) ? '"' : "'";
    const escaped = quote === '"' ? value.replace(/"/g, "&quot;") : value.replace(/'/g, "&apos;");
    return ` ${name}${chance(0.1) ? " = " : "="}${quote}${escaped}${quote}`;
  };
  const attrs = (pairs: [string, string][]) =>
    pairs
      .sort(() => next() - 0.5)
      .map(([n, v]) => attr(n, v))
      .join("") + space();
  const misc = () => (chance(0.1) ? `<!-- ${pick(["note", "a > b", "x"])} -->` : chance(0.05) ? "<?pi data?>" : "") + space();

  const testcase = (): string => {
    const pairs: [string, string][] = [["name", text()]];
    if (chance(0.9)) pairs.push(["classname", text()]);
    if (chance(0.3)) pairs.push([chance(0.5) ? "file" : "filepath", `src/${pick(["a", "b"])}.ts`]);
    if (chance(0.1)) pairs.push(["id", pick(["a6e84936-3ee9-57d5-b041-ae124896f654", "trunk:x", ""])]);
    if (chance(0.5)) pairs.push(["time", "0.01"]);
    if (chance(0.15)) pairs.push(["status", pick(["disabled", "notrun", "Skipped", "run", "fail"])]);
    const children: string[] = [];
    if (chance(0.05)) children.push(`<properties><property name="go.version" value="go1.23"/></properties>`);
    for (let i = Math.floor(next() * 3); i > 0; i--) {
      const tag = pick(["failure", "error", "skipped", "flakyFailure", "flakyError", "rerunFailure", "system-out", "properties"]);
      const withMessage = (chance(0.5) ? attr("message", text()) : "") + (chance(0.3) ? attr("type", pick(["AssertionError", " java.net.ConnectException ", ""])) : "");
      const body = pick([
        "",
        text(),
        `<![CDATA[${pick(["stack\n  at x", "a < b && c", ""])}]]>`,
        `${text()}<!-- c -->${text()}`,
        `<stackTrace>${text()}</stackTrace><system-out>${text()}</system-out>${text()}`,
        `<system-err/>${text()}<system-out><system-err>${text()}</system-err></system-out>`,
      ]);
      children.push(body === "" && chance(0.5) ? `<${tag}${withMessage}/>` : `<${tag}${withMessage}>${body}</${tag}>`);
    }
    return children.length === 0 && chance(0.5) ? `<testcase${attrs(pairs)}/>` : `<testcase${attrs(pairs)}>${space()}${children.join(space())}${space()}</testcase>`;
  };

  const suite = (depth: number): string => {
    const pairs: [string, string][] = [];
    if (chance(0.9)) pairs.push(["name", text()]);
    if (chance(0.5)) pairs.push(["timestamp", pick(["2026-11-20T10:00:00", "2026-11-20T10:00:00.5Z", "2026-11-20T10:00:00+02:00", "not a time"])]);
    if (chance(0.3)) pairs.push(["file", "spec/x_spec.rb"]);
    if (chance(0.5)) pairs.push(["tests", "3"]);
    const children = Array.from({ length: Math.floor(next() * 4) }, () => (depth < 3 && chance(0.2) ? suite(depth + 1) : testcase()));
    const properties = chance(0.3)
      ? `<properties>${space()}<property${attrs([
          ["name", pick(["go.version", "java.version"])],
          ["value", "1"],
        ])}/></properties>${space()}`
      : "";
    return `<testsuite${attrs(pairs)}>${space()}${properties}${children.map((c) => c + misc()).join("")}</testsuite>`;
  };

  return (): string => {
    const prolog = chance(0.5) ? `<?xml version="1.0" encoding="UTF-8"?>${space()}` : "";
    const root = chance(0.5) ? `<testsuites${attrs([["name", "all"]])}>${space()}${Array.from({ length: 1 + Math.floor(next() * 3) }, () => suite(1) + misc()).join("")}</testsuites>` : suite(1);
    return `${prolog}${misc()}${root}${misc()}`;
  };
}

test("on 2,000 generated reports the scanner reads exactly the testcases a conformant XML parser reads", () => {
  const report = generator(11);
  let cases = 0;
  for (let i = 0; i < 2000; i++) {
    const xml = report();
    const expected = read(parseJUnitReference, xml);
    expect(["cases" in expected, xml]).toEqual([true, xml]);
    expect(read(parseJUnit, xml)).toEqual(expected);
    cases += (expected as { cases: JUnitCase[] }).cases.length;
  }
  expect(cases).toBeGreaterThan(4000);
});

test("on 5,000 randomly broken reports the scanner refuses exactly what a conformant XML parser refuses, with a position", () => {
  const report = generator(12);
  const next = rng(13);
  let refused = 0;
  for (let i = 0; i < 5000; i++) {
    const xml = report();
    const at = Math.floor(next() * xml.length);
    const mutated = [
      () => xml.slice(0, at) + xml.slice(at + 1), // a character lost
      () => xml.slice(0, at) + "<>&\"'/=]-?!x"[Math.floor(next() * 13)] + xml.slice(at), // one too many
      () => xml.slice(0, at), // cut short
    ][i % 3]!();
    const expected = read(parseJUnitReference, mutated);
    const actual = read(parseJUnit, mutated);
    // The one leniency: character references to control characters (reporters escape ANSI colours so).
    if ("error" in expected && /malformed character entity/.test(expected.error.message) && /&#x?0*(1?[0-9a-fA-F]|[0-2]?[0-9]|3[01]);/.test(mutated) && !("error" in actual)) continue;
    // Where saxes is the lenient one: a processing instruction's target followed by "?" but not "?>"
    // (`<?x?ml …?>`), which XML 1.0 (production 16) refuses and the scanner does too.
    if ("error" in actual && !("error" in expected) && /target must be followed by whitespace/.test(actual.error.message) && /<\?[^\s?]+\?(?!>)/.test(mutated)) continue;
    expect(["error" in actual, mutated]).toEqual(["error" in expected, mutated]);
    if ("error" in actual) {
      refused++;
      expect(actual.error.line).toBeGreaterThan(0);
      expect(actual.error.column).toBeGreaterThan(0);
    } else {
      expect(actual).toEqual(expected);
    }
  }
  expect(refused).toBeGreaterThan(1000);
});

test("the pull reader hands out batches of at most the size asked, and the whole report across them", () => {
  const xml = fixture("gotestsum-rerun.xml");
  const all = read(parseJUnit, xml) as { cases: JUnitCase[] };
  const reader = new JUnitReader(xml);
  const batches: JUnitCase[][] = [];
  for (let batch = reader.read(1); batch.length > 0; batch = reader.read(1)) batches.push(batch);
  expect(batches.every((b) => b.length === 1)).toBe(true);
  expect(batches.flat()).toEqual(all.cases);
  // A malformed end is found by the read that reaches it.
  const truncated = new JUnitReader(xml.slice(0, xml.lastIndexOf("</testsuite>")));
  expect(() => {
    while (truncated.read(100).length > 0);
  }).toThrow(JUnitError);
});

test("what the scanner lets through that XML 1.0 does not: control characters copied from test output", () => {
  const cases = read(parseJUnit, `<testsuite><testcase name="t"><failure>\u001b[31mred\u001b[0m</failure></testcase></testsuite>`);
  expect(cases).toMatchObject({ cases: [{ name: "t", failed: true, message: "\u001b[31mred\u001b[0m" }] });
});

test("NUL and lone surrogates are refused with their position, raw or as references: XML cannot hold them, nor can PostgreSQL", () => {
  const refusals = [
    [`<testsuite><testcase name="a\u0000b"/></testsuite>`, /NUL/],
    [`<testsuite>\n<testcase name="t"><failure>out\u0000put</failure></testcase></testsuite>`, /NUL/],
    [`<testsuite><!-- \u0000 --><testcase name="t"/></testsuite>`, /NUL/],
    [`<testsuite><testcase name="a&#0;b"/></testsuite>`, /not a valid character reference/],
    [`<testsuite><testcase name="t">\n<failure>&#x000;</failure></testcase></testsuite>`, /not a valid character reference/],
    [`<testsuite><testcase name="a\ud800b"/></testsuite>`, /lone surrogate \(U\+D800\)/],
    [`<testsuite><testcase name="t" classname="\udfff"/></testsuite>`, /lone surrogate \(U\+DFFF\)/],
    [`<testsuite><testcase name="t"><failure>\ude00\ud83d</failure></testcase></testsuite>`, /lone surrogate \(U\+DE00\)/],
    [`<testsuite><testcase name="a&#xD800;"/></testsuite>`, /not a valid character reference/],
  ] as const;
  for (const [xml, message] of refusals) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the NUL is what the probe looks for.
    const at = xml.search(/\u0000|&#|[\ud800-\udfff]/);
    const line = xml.slice(0, at).split("\n").length;
    const column = at - xml.lastIndexOf("\n", at - 1);
    const outcome = read(parseJUnit, xml);
    expect([xml, "error" in outcome && { line: outcome.error.line, column: outcome.error.column, message: outcome.error.message }]).toEqual([xml, { line, column, message: expect.stringMatching(message) }]);
  }
  // A surrogate pair is one character, and other control characters keep their leniency.
  expect(read(parseJUnit, `<testsuite><testcase name="\ud83d\ude00 &#1;\u0001"/></testsuite>`)).toMatchObject({ cases: [{ name: "\ud83d\ude00 \u0001\u0001" }] });
});

// Issue 22: a report's cost is linear in its size whatever its shape, so one upload cannot
// hold the service. Each shape below cost n² before (40,000 attributes on one tag: 22 s).

/**
 * The least time of reading each document, over `runs` rounds that read them in turn (the least
 * is the read the machine disturbed least; alternating spreads the disturbance over both).
 */
function leastTimes(xmls: string[], runs = 7): number[] {
  const least = xmls.map(() => Infinity);
  for (let i = 0; i < runs; i++) {
    xmls.forEach((xml, k) => {
      const started = performance.now();
      read(parseJUnit, xml);
      least[k] = Math.min(least[k]!, performance.now() - started);
    });
  }
  return least;
}

const HOSTILE_SHAPES: [string, (n: number) => string][] = [
  ["n attributes on one testcase", (n) => `<testsuite><testcase name="t"${Array.from({ length: n }, (_, i) => ` a${i}="${i}"`).join("")}/></testsuite>`],
  ["n testcases whose names hold a tab (decoded)", (n) => `<testsuite>${`<testcase name="a\tb" classname="c\td"/>`.repeat(n)}</testsuite>`],
  ["n DOCTYPEs before the root (refused at the second)", (n) => `${"<!DOCTYPE a>".repeat(n)}<testsuite/>`],
];

test.each(HOSTILE_SHAPES)("reading %s grows linearly: 4 times the input costs well under 16 times the time", (_shape, make) => {
  // Measured on the same machine in the same run: a ratio, not a time. Linear is 4; quadratic 16.
  const n = 10_000;
  const [small, large] = leastTimes([make(n), make(4 * n)]);
  expect(large! / small!).toBeLessThan(8);
});

test("duplicate attributes are refused as a conformant parser refuses them, in a tag of a few attributes or of thousands", () => {
  const many = (n: number) => Array.from({ length: n }, (_, i) => ` a${i}="${i}"`).join("");
  const reports = [
    `<testsuite><testcase name="t"${many(40)}/></testsuite>`,
    `<testsuite><testcase name="t"${many(40)} a39="again"/></testsuite>`,
    `<testsuite><testcase name="t"${many(40)} a3="again"/></testsuite>`,
    `<testsuite><testcase name="t"${many(14)} a3="again"/></testsuite>`,
    `<testsuite><testcase name="t"${many(15)} a15="x" a15="again"/></testsuite>`,
    `<testsuite><testcase name="t"${many(40)} name="again"/></testsuite>`,
    `<testsuite name="s"${many(3000)}><testcase${many(20)} classname="c" name="t"/><testcase${many(20)} name="u"/></testsuite>`,
    `<testsuite name="s"${many(3000)}><testcase${many(20)} classname="c" name="t" a0="again"/></testsuite>`,
  ];
  const outcomes = reports.map((xml) => {
    const expected = read(parseJUnitReference, xml);
    const actual = read(parseJUnit, xml);
    expect("error" in actual ? actual.error.message : actual).toEqual("error" in expected ? expect.stringMatching(/appears twice/) : expected);
    return "error" in actual;
  });
  expect(outcomes).toEqual([false, true, true, true, true, true, false, true]);
});

test("a second DOCTYPE is refused, as a conformant parser refuses it", () => {
  const xml = `<!DOCTYPE testsuite><!DOCTYPE testsuite><testsuite><testcase name="t"/></testsuite>`;
  expect("error" in read(parseJUnitReference, xml)).toBe(true);
  expect(read(parseJUnit, xml)).toMatchObject({ error: { message: "a second DOCTYPE (a document has at most one)", line: 1, column: 21 } });
  expect(read(parseJUnit, `<!DOCTYPE testsuite [<!ENTITY x "y">]><testsuite><testcase name="t"/></testsuite>`)).toMatchObject({ cases: [{ name: "t" }] });
});
