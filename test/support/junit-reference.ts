import { SaxesParser } from "saxes";
import { JUnitError, parseTimestamp, type JUnitCase } from "../../src/formats/junit.js";

// The JUnit reader Greenline had before its own scanner, on saxes (a conformant XML parser),
// kept as the oracle of test/domain/junit-scanner.test.ts: both must read the same testcases
// from a report, and refuse the same malformed ones.

const FAILURE_TAGS = new Set(["failure", "error", "rerunFailure", "rerunError"]);
const FLAKY_TAGS = new Set(["flakyFailure", "flakyError"]);
/** Longest failure message kept; the rest (stack traces, logs) is not read into memory. */
const MAX_MESSAGE = 2000;
const MAX_FAILURE_TEXT = 4000;
const OUTPUT_TAGS = new Set(["system-out", "system-err"]);
const CHUNK = 1 << 20;

type Suite = { name: string; file: string; at: number | null };
const NOT_RUN_STATUSES = new Set(["disabled", "skipped", "notrun"]);
type Open = {
  attrs: Record<string, string>;
  failed: boolean;
  flaky: boolean;
  skipped: boolean;
  message: string | null;
  /** Collecting the text of the first failure element when it has no message attribute. */
  collecting: boolean;
  text: string;
  /** The first failure element's type and text (its output elements' text left out). */
  failureType: string | null;
  failureSeen: boolean;
  detailing: boolean;
  outputDepth: number;
  detail: string;
};

/**
 * Reads a JUnit XML report as a stream of SAX events and calls `onCase` for each testcase, so a
 * large report is never held as a document tree. Accepts `<testsuites>` or `<testsuite>` at the
 * root, suites nested to any depth, and the dialects of jest-junit, pytest, Maven Surefire,
 * go-junit-report and gotestsum (whose reruns repeat a testcase; callers merge repeats).
 * Malformed XML throws a JUnitError with the 1-based line and column.
 */
export function parseJUnitReference(xml: string, onCase: (testCase: JUnitCase) => void): { testCases: number } {
  const parser = new SaxesParser<{ position: true; xmlns: false }>({ position: true, xmlns: false });
  const suites: Suite[] = [];
  let current: Open | null = null;
  let depth = 0;
  let count = 0;
  let goReport = false;
  let failure: Error | null = null;
  const fail = (message: string) => new JUnitError(message, parser.line, parser.column + 1);

  parser.on("error", (error) => {
    // saxes prefixes its messages with the position; the position is reported separately.
    failure ??= fail(error.message.replace(/^\d+:\d+: /, ""));
  });
  parser.on("opentag", (tag) => {
    depth++;
    const name = tag.name;
    const attrs = tag.attributes as Record<string, string>;
    if (depth === 1 && name !== "testsuites" && name !== "testsuite") {
      failure ??= fail(`root element is <${name}>, expected <testsuites> or <testsuite>`);
      return;
    }
    if (name === "testsuite") {
      const outer = suites.at(-1);
      suites.push({
        name: attrs.name ?? "",
        file: attrs.file ?? attrs.filepath ?? outer?.file ?? "",
        at: parseTimestamp(attrs.timestamp) ?? outer?.at ?? null,
      });
    } else if (name === "testcase") {
      const skipped = attrs.status !== undefined && NOT_RUN_STATUSES.has(attrs.status.toLowerCase());
      current = { attrs, failed: false, flaky: false, skipped, message: null, collecting: false, text: "", failureType: null, failureSeen: false, detailing: false, outputDepth: 0, detail: "" };
    } else if (name === "property" && !current) {
      if (attrs.name === "go.version" && suites.length > 0) goReport = true;
    } else if (current) {
      const failing = FAILURE_TAGS.has(name);
      if (failing || FLAKY_TAGS.has(name)) {
        if (failing) current.failed = true;
        else current.flaky = true;
        if (!current.failureSeen) {
          current.failureSeen = current.detailing = true;
          current.failureType = attrs.type?.trim() || null;
        }
        if (current.message === null && !current.collecting) {
          const message = attrs.message?.trim();
          if (message) current.message = message.slice(0, MAX_MESSAGE);
          else current.collecting = true;
        }
      } else if (name === "skipped") {
        current.skipped = true;
      } else if (current.detailing && OUTPUT_TAGS.has(name)) {
        current.outputDepth++;
      }
    }
  });
  const onText = (text: string) => {
    if (current?.collecting && current.text.length < MAX_MESSAGE) current.text += text.slice(0, MAX_MESSAGE - current.text.length);
    if (current?.detailing && current.outputDepth === 0 && current.detail.length < MAX_FAILURE_TEXT) current.detail += text.slice(0, MAX_FAILURE_TEXT - current.detail.length);
  };
  parser.on("text", onText);
  parser.on("cdata", onText);
  parser.on("closetag", (tag) => {
    depth--;
    const name = tag.name;
    if (name === "testsuite") {
      suites.pop();
    } else if (name === "testcase" && current) {
      const open: Open = current;
      current = null;
      const suite = suites.at(-1);
      const failed = open.failed || open.flaky;
      count++;
      onCase({
        name: open.attrs.name ?? "",
        classname: open.attrs.classname ?? "",
        file: open.attrs.file ?? open.attrs.filepath ?? suite?.file ?? "",
        parent: suites[0]?.name ?? "",
        explicitId: open.attrs.id ?? "",
        at: suite?.at ?? null,
        failed,
        passed: !open.failed && !(open.skipped && !open.flaky),
        skipped: open.skipped && !failed,
        repeatIsRetry: goReport,
        message: failed ? (open.message ?? firstLine(open.text)) : null,
        failureType: failed ? open.failureType : null,
        failureText: failed ? open.detail.trim() || null : null,
      });
    } else if (current?.detailing && OUTPUT_TAGS.has(name)) {
      current.outputDepth--;
    }
    if (current && (FAILURE_TAGS.has(name) || FLAKY_TAGS.has(name))) {
      current.detailing = false;
      if (current.collecting) {
        current.collecting = false;
        current.message = firstLine(current.text);
      }
    }
  });

  for (let offset = 0; offset < xml.length && !failure; offset += CHUNK) parser.write(xml.slice(offset, offset + CHUNK));
  if (!failure) parser.close();
  if (failure) throw failure;
  if (depth !== 0) throw fail("unexpected end of document");
  return { testCases: count };
}

function firstLine(text: string): string | null {
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed) return trimmed.slice(0, MAX_MESSAGE);
  }
  return null;
}
