import { createHash } from "node:crypto";

const MAX_SUMMARY = 200;
/** Lines of a failure's body kept, and characters of its description (`what`) hashed. */
const MAX_BODY_LINES = 8;
const MAX_WHAT = 1000;

// biome-ignore lint/suspicious/noControlCharactersInRegex: ESC (\x1b) starts the colour codes removed here
const COLOUR = /\x1b\[[0-9;]*[A-Za-z]/g;
const TIME = /\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?/g;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const ADDRESS = /\b0x[0-9a-f]+\b/gi;
const HEX_ID = /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b/gi;
const PATH = /(?:[A-Za-z]:)?(?:[\w.@-]*[/\\])+[\w.@-]+(?::\d+)*/g;
/** Temporary directories: their names change from run to run (mkdtemp, pytest's tmp_path, macOS's per-user folders, Windows' Temp). */
const TEMP_PATH = /(?:\/private)?\/(?:tmp|var\/folders|var\/tmp)\/[^\s'"`)\]>,;]*|[A-Za-z]:\\Users\\[^\\\s]+\\AppData\\Local\\Temp\\[^\s'"`)\]>,;]*/g;

/** Times, UUIDs, memory addresses and generated ids: what differs between two runs of one failure. */
function normalizeVolatile(text: string): string {
  return text.replace(TIME, "<time>").replace(UUID, "<uuid>").replace(ADDRESS, "<hex>").replace(HEX_ID, "<hex>");
}

/**
 * One line of an error that is no assertion, reduced to its kind: besides times, ids and
 * addresses, file paths (with their line and column), durations and other numbers become
 * placeholders (a port, a pid, a timeout's length say nothing of the failure).
 */
function normalizeErrorLine(line: string): string {
  return normalizeVolatile(line)
    .replace(PATH, "<path>")
    .replace(/\d+(\.\d+)?/g, "<n>")
    .replace(/\s+/g, " ")
    .trim();
}

/**
 * One line of an assertion failure: times, ids, addresses and temporary paths become
 * placeholders, but the values compared stay (expected 108, received 107.99 is another failure
 * than expected 2, received 3).
 */
function normalizeAssertionLine(line: string): string {
  return normalizeVolatile(line.replace(TEMP_PATH, "<tmp>")).replace(/\s+/g, " ").trim();
}

/** The start of a line a shape reads (the rest rarely tells one way of failing from another). */
const SHAPE_LINE_MAX = 500;

/**
 * One line of a failure as its shape reads it: an error line's placeholders, and every value a
 * line can compare — quoted strings, booleans and nulls — a placeholder too ("Expected: \"done\",
 * Received: \"pending\"" and "… \"running\"" are one way of failing).
 */
function shapeOfLine(line: string): string {
  // Quotes pair within a bounded stretch, a single quote only outside a word (not an apostrophe): linear, and "can't … 'x'" keeps its words.
  return normalizeErrorLine(line.slice(0, SHAPE_LINE_MAX).replace(/"[^"\n]{0,200}"|(?<!\w)'[^'\n]{0,200}'(?!\w)|`[^`\n]{0,200}`/g, "<v>"))
    .replace(/\b(?:true|false|True|False|null|nil|None|undefined)\b/g, "<v>")
    .trim();
}

const stripColour = (text: string) => text.replace(COLOUR, "");

/**
 * A failure message reduced to its kind, so that the same failure in different runs reads the
 * same: colour codes go, and timestamps, UUIDs, long hex ids, file paths (with their line and
 * column), quoted durations and other numbers become placeholders. The first non-empty line is
 * kept, at most 200 characters. (The summary of a failure with nothing but a one-line message
 * that is no assertion; `readFailure` reads whole failures.)
 */
export function normalizeFailure(message: string): string {
  const line =
    stripColour(message)
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l !== "") ?? "";
  return normalizeErrorLine(line).slice(0, MAX_SUMMARY);
}

/** A short stable key for a normalized failure. */
export function failureSignature(summary: string): string {
  return createHash("sha256").update(summary).digest("base64url").slice(0, 22);
}

/** A failed testcase as a report gives it (formats/junit.ts). */
export type FailureReport = {
  /** Its failure's `message` attribute (else the first line of its text). */
  message: string | null;
  /** Its failure's `type` attribute. */
  type?: string | null;
  /** Its failure's text: a stack trace, the test's output. */
  text?: string | null;
  /** The test's file, "" when the report names none. */
  file?: string;
  /** The test's classname (a Java class, a Python module, a Go package). */
  classname?: string;
};

/**
 * - assertion: an assertion of the test's own failed (an `expect`, an `assert`, a comparison):
 *   whatever else it says, it is the tests' business, never infrastructure;
 * - infrastructure: the failure reads as a known infrastructure failure (`INFRASTRUCTURE_PATTERNS`);
 * - error: any other error (a TypeError, a failed setup, a timeout).
 */
export type FailureKind = "assertion" | "infrastructure" | "error";

/**
 * A test's own timeout: the test framework's limit on one test (Jest, Mocha, Go's -timeout,
 * JUnit 4 and 5, pytest-timeout), or a request to the test's own server on this machine timing
 * out. Slow code or a slow runner: the test's timing, not an outage (infrastructure.ts does not
 * read one shared by several tests as one incident).
 */
const TEST_TIMEOUT =
  /\bExceeded timeout of \d+ ?ms\b|\btest timed out after\b|\bTimeout of \d+ ?ms exceeded\b|\bexecution timed out after\b|\bTestTimedOutException\b|\bTimeoutFailedException\b|\bFailed: Timeout >|\bReadTimeout\b[\s\S]*\bhost='(?:localhost|127\.0\.0\.1)'/i;

export type Failure = {
  kind: FailureKind;
  /** The test's own timeout (TEST_TIMEOUT), not an assertion nor an infrastructure failure. */
  testTimeout: boolean;
  /** For an infrastructure failure: the name of the pattern it matched. */
  pattern: string | null;
  /** The error's type (an exception class), "" when the report does not say. */
  type: string;
  /** The message's body, normalized, its lines joined with " | ". */
  body: string;
  /** The first stack frame in the test's own file, as `file:line` (its base name), "" if none. */
  frame: string;
  /** What failed, wherever it failed: the type and the body. What unrelated tests can share. */
  what: string;
  /** What is shown: `what`, and where, at most 200 characters; "" when the report says nothing. */
  summary: string;
  /** The failure's identity for its test: the type, the body and the frame, hashed. */
  signature: string;
  /**
   * The way it failed, coarser than the signature: the type, the body with every number, quoted
   * string, boolean and null a placeholder (the values an assertion compared too), and the file
   * of the frame without its line, hashed. A flaky assertion comparing other values each time keeps one shape; a timeout
   * and an assertion of one test are two. What an automatic quarantine covers (verdict.ts).
   */
  shape: string;
};

/**
 * Known infrastructure failures: the environment, not the code under test. Each is a name and
 * what a message or stack trace says of it (Node's error codes, Java's, Python's and Go's
 * wording, npm's, pip's, GitHub Actions' runner).
 */
export const INFRASTRUCTURE_PATTERNS: readonly { name: string; pattern: RegExp; unless?: RegExp }[] = [
  {
    name: "connection refused",
    pattern: /\bECONNREFUSED\b|\bERR_CONNECTION_REFUSED\b|\bconnection refused\b|\bConnection to \S+ refused\b|\bConnectionRefusedError\b|\bcould not connect to server\b/i,
  },
  { name: "no space left on device", pattern: /\bENOSPC\b|\bno space left on device\b|\bnot enough space on the disk\b/i },
  {
    name: "out of memory",
    pattern: /\bout of memory\b|\bOutOfMemoryError\b|\bOOMKilled\b|\bENOMEM\b|\bCannot allocate memory\b|\bheap limit\b|\bAllocation failed - JavaScript heap\b|^\s*(?:E\s+)?MemoryError\b/im,
  },
  { name: "DNS resolution failed", pattern: /\bENOTFOUND\b|\bEAI_AGAIN\b|\bERR_NAME_NOT_RESOLVED\b|\bgetaddrinfo\b|\bTemporary failure in name resolution\b|\bUnknownHostException\b|\bno such host\b/i },
  {
    name: "network or registry timeout",
    pattern:
      /\bETIMEDOUT\b|\bESOCKETTIMEDOUT\b|\bnpm ERR! network\b|\bnpm error network\b|\bReadTimeoutError\b|\bReadTimeout\b|\bConnectTimeout(?:Error)?\b|\bi\/o timeout\b|\bTLS handshake timeout\b|\bSocketTimeoutException\b|\bConnect(?:ion)? timed out\b/i,
    // A request to the test's own server on this machine that timed out is the test's (slow
    // under load: timing-dependent), not the network's (issue 25: the corpus's flaky tests
    // timing out on localhost hid every failure of their uploads).
    // (npm's own network errors stay the network's, a registry mirror on localhost included.)
    unless: /^(?![\s\S]*\bnpm (?:ERR!|error) network\b)[\s\S]*(?:\bhost='(?:localhost|127\.0\.0\.1|\[?::1\]?)'|\bhttps?:\/\/(?:localhost|127\.0\.0\.1|\[::1\])[:/])/i,
  },
  {
    name: "runner lost",
    pattern: /\bThe runner has received a shutdown signal\b|\blost communication with the server\b|\bThe hosted runner\b.*\blost\b|\brunner .*\bwas lost\b/i,
  },
];

/**
 * Exception types that are assertions: Node's and Chai's AssertionError, Jest's, JUnit 4's and
 * 5's, AssertJ's and Hamcrest's (java.lang.AssertionError), opentest4j's, TestNG's, RSpec's
 * expectations, minitest's.
 */
const ASSERTION_TYPE =
  /(?:^|[.:$])(?:AssertionError|AssertionFailedError|ComparisonFailure|ComparisonCompactor|AssertionFailure|JestAssertionError|ExpectationNotMetError|MultipleExpectationsNotMetError|MultipleFailuresError|AssertionException|Minitest::Assertion|Test::Unit::AssertionFailedError)$/;

/**
 * What an assertion failure says, by library: Jest's and Vitest's `expect(received)…`, Chai's
 * `expected … to …`, pytest's `assert …`, testify's `Error Trace:`, Go's `got …, want …` (on
 * a `_test.go` line), RSpec's `expected: … got: …` and `Failure/Error: expect(…)`, Hamcrest's
 * `Expected: … but: …`, JUnit's `expected: <…> but was: <…>`, xUnit's `Assert.Equal() Failure`.
 */
const ASSERTION_TEXT = [
  /(?:^|\s)expect\((?:received|jest\.fn\(\)|value|string|element|locator|page)\)/m,
  /^(?:AssertionError: )?expected .+ (?:to|not to) (?:be|equal|deep|have|include|contain|match|throw|satisfy|eql|exist|respond|receive)\b/im,
  /^\s*(?:E\s+)?(?:AssertionError: )?assert\b/m,
  /\bError Trace:/,
  /_test\.go:\d+: .*\b(?:got|want|wanted|expected|actual)\b/i,
  /^\s*expected:? .*\n\s*got:/im,
  /Failure\/Error: *(?:expect|is_expected|should)\b/,
  /^\s*Expected: .*\n\s*but: /m,
  /\bexpected:? ?<.*> but was:? ?<.*>/,
  /^Assert\.\w+\(\) Failure\b/m,
];

/** testify's `require.NoError` / `assert.NoError`: an error reported through an assertion helper, no values compared. */
const UNEXPECTED_ERROR = /\bError:\s+Received unexpected error:/;

/** A stack frame: where, in which file and at which line. */
type Frame = { path: string; line: string };

const FRAME_PATTERNS: readonly RegExp[] = [
  // JavaScript: "at fn (/path/to/a.test.ts:12:5)", "at /path/a.test.ts:12:5", Vitest's "❯ src/a.test.ts:12:5".
  /^\s*(?:at|❯)\s+(?:[^()]*\()?((?:file:\/\/)?[^\s()]+\.[cm]?[jt]sx?):(\d+)(?::\d+)?\)?\s*$/,
  // Java, Kotlin, Scala: "at com.acme.CartTest.adds(CartTest.java:23)".
  /^\s*at [\w$.<>/-]+\(([\w$-]+\.(?:java|kt|scala|groovy)):(\d+)\)/,
  // Python: pytest's "tests/test_cart.py:12: AssertionError", a traceback's 'File "tests/test_cart.py", line 12'.
  /^([^\s:]+\.py):(\d+):/,
  /^\s*File "([^"]+\.py)", line (\d+)/,
  // Go: "    cart_test.go:14: …", testify's "Error Trace: /path/cart_test.go:14", a panic's "\t/path/cart_test.go:40 +0x2b".
  /^\s*([\w./-]+\.go):(\d+):/,
  /Error Trace:\s*(\S+\.go):(\d+)/,
  /^\s*(\/\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?$/,
  // Ruby: "# ./spec/models/cart_spec.rb:14:in `block (2 levels)…'", "./spec/cart_spec.rb:14".
  /^\s*#?\s*((?:\.\/)?[^\s:#]+\.rb):(\d+)(?::in\b|$)/,
];

/** Lines that are a stack frame, a test runner's bookkeeping or code shown by pytest: not the message. */
const NOISE = [
  /^\s*at\s/,
  /^\s*❯\s/,
  /^\s*\.\.\. \d+ more$/,
  /^\s*#\s*\.?\/?\S+:\d+/,
  /^=== (?:RUN|PAUSE|CONT|NAME)\b/,
  /^\s*--- (?:FAIL|PASS|SKIP):/,
  /^(?:FAIL|PASS|ok)\s*(?:\t|$)/,
  /^exit status \d+$/,
  /^\s*(?:\/\S+\.go):\d+(?: \+0x[0-9a-f]+)?$/,
  /^goroutine \d+ \[/,
  /^\s*\.?\/?[^\s:]+\.rb:\d+:in\b/,
];

const basename = (path: string) => path.slice(Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\")) + 1);

/** A frame's path, comparable with a report's file: no file://, no leading ./ . */
const cleanPath = (path: string) => path.replace(/^file:\/\//, "").replace(/^\.\//, "");

function framesOf(lines: readonly string[]): Frame[] {
  const frames: Frame[] = [];
  for (const line of lines) {
    for (const pattern of FRAME_PATTERNS) {
      const m = pattern.exec(line);
      if (m) {
        frames.push({ path: cleanPath(m[1]!), line: m[2]! });
        break;
      }
    }
  }
  return frames;
}

/** Whether a path names a test file, by the conventions of the test runners read here. */
const TEST_FILE = /(?:^|[/\\])(?:test_[^/\\]*\.py|[^/\\]*_test\.(?:py|go)|[^/\\]*[._-](?:test|spec)\.[cm]?[jt]sx?|[^/\\]*_spec\.rb|[^/\\]*Tests?\.(?:java|kt|scala|groovy)|Test[^/\\]*\.(?:java|kt))$/;
const VENDORED = /(?:^|[/\\])(?:node_modules|site-packages|dist-packages|vendor|gems)[/\\]/;

/**
 * Where the test's own file is in a stack: the frame whose path ends with the report's file;
 * without one, the file a classname names (a Java class's `Name.java`, a Python module's
 * `a/b.py`, a spec's `spec/x_spec.rb`); else the first frame in a test file outside vendored code.
 */
function ownFrame(frames: readonly Frame[], file: string, classname: string): Frame | undefined {
  const own = cleanPath(file);
  if (own !== "") {
    const hit = frames.find((f) => f.path === own || f.path.endsWith(`/${own}`) || own.endsWith(`/${f.path}`));
    if (hit) return hit;
  }
  if (classname !== "") {
    const parts = classname.split(/[.$]/).filter((p) => p !== "");
    const candidates = new Set<string>();
    for (let n = parts.length; n > 0; n--) {
      const stem = parts.slice(0, n).join("/");
      candidates.add(`${stem}.py`).add(`${stem}.rb`);
    }
    for (const part of parts) candidates.add(`${part}.java`).add(`${part}.kt`).add(`${part}.scala`);
    const hit = frames.find((f) => [...candidates].some((c) => f.path === c || f.path.endsWith(`/${c}`)));
    if (hit) return hit;
  }
  return frames.find((f) => TEST_FILE.test(f.path) && !VENDORED.test(f.path));
}

/** A type named at the start of a line: "TypeError: …", "java.net.ConnectException: …", "E   ValueError: …", "AssertionError [ERR_ASSERTION]: …". */
const TYPE_PREFIX = /^(?:E\s+)?((?:[A-Za-z_$][\w$]*(?:\.|::))*[A-Za-z_$][\w$]*(?:Error|Exception|Failure|Failed|Fault|Interrupt|Exit))(?: \[[A-Z_]+\])?:\s?/;
/** The exception named after pytest's last location: "tests/test_cart.py:12: AssertionError". */
const PYTEST_TRAILER = /^[^\s:]+\.py:\d+: ([A-Za-z_][\w.]*)$/;

/** Messages that say only that something failed (gotestsum's, go-junit-report's): the text says what. */
const GENERIC_MESSAGE = /^(?:failed|failure|error|build failed|test failed|)$/i;

/** The message's lines, trimmed, without colour codes. */
const linesOf = (text: string | null | undefined) =>
  text == null
    ? []
    : stripColour(text)
        .split(/\r?\n/)
        .map((l) => l.trimEnd());

/**
 * Reads a failure: its type, its body (the message, or the report's text when the message is
 * missing, generic, or only its first line), the first stack frame in the test's own file, its
 * kind, and its signature. Pure.
 */
export function readFailure(report: FailureReport): Failure {
  const message = report.message?.trim() ?? "";
  const textLines = linesOf(report.text);
  const frames = framesOf(textLines.length > 0 ? textLines : linesOf(message));
  const frame = ownFrame(frames, report.file ?? "", report.classname ?? "");

  // The text's message lines: frames and runner bookkeeping left out; pytest's "E" lines when it has them (the rest is code).
  let bodyLines = textLines.filter((l) => l.trim() !== "" && !NOISE.some((n) => n.test(l)));
  const pytestErrors = bodyLines.filter((l) => /^E\s/.test(l));
  let trailerType = "";
  if (pytestErrors.length > 0) {
    trailerType = bodyLines.map((l) => PYTEST_TRAILER.exec(l.trim())?.[1]).find((t) => t !== undefined) ?? "";
    bodyLines = pytestErrors.map((l) => l.replace(/^E\s+/, ""));
  }
  const pytest = pytestErrors.length > 0;
  /** What assertions and infrastructure patterns are looked for in: the message and the text (for pytest, its "E" lines, not the test's code). */
  const said = [message, ...bodyLines].join("\n");
  const searched = pytest ? said : [message, ...textLines].join("\n");
  // Go's "file_test.go:14: message": the place is the frame, the rest the message.
  bodyLines = bodyLines.map((l) => l.trim().replace(/^[\w.-]+\.go:\d+: ?/, "")).filter((l) => l !== "" && !/^Error Trace:/.test(l));
  const messageLines = linesOf(message)
    .filter((l) => !NOISE.some((n) => n.test(l)))
    .map((l) => l.trim())
    .filter((l) => l !== "");
  const first = messageLines[0] ?? "";
  const useText = bodyLines.length > 0 && (pytest || first === "" || GENERIC_MESSAGE.test(first) || bodyLines.some((l) => l.includes(first)));
  let lines = useText ? bodyLines : messageLines;

  // The type: the report's, else one the first line starts with (taken off the line), else pytest's trailer.
  let type = report.type?.trim() ?? "";
  const named = TYPE_PREFIX.exec(lines[0] ?? "");
  if (named) {
    if (type === "" || type === named[1] || type.endsWith(`.${named[1]}`) || named[1]!.endsWith(`.${type}`)) {
      if (type === "") type = named[1]!;
      lines = [lines[0]!.slice(named[0].length), ...lines.slice(1)];
    }
  } else if (lines[0] === "Error" || lines[0]?.startsWith("Error: ")) {
    // A plain JavaScript Error (what Jest's failed `expect` prints itself as).
    if (type === "") type = "Error";
    lines = [lines[0]!.replace(/^Error:? ?/, ""), ...lines.slice(1)];
  }
  if (type === "" && trailerType !== "") type = trailerType;
  // RSpec's "Failure/Error: <the failing line>" and, for an error, the line naming its type ("NoMethodError:").
  lines = lines.map((l) => l.replace(/^Failure\/Error: */, "")).filter((l) => l.trim() !== "" && l.trim() !== `${type}:`);
  lines = lines.slice(0, MAX_BODY_LINES);

  // testify's NoError ("Error: Received unexpected error: …") compares nothing: the error it reports decides.
  const compared = UNEXPECTED_ERROR.test(said) ? said.replace(/Error Trace:/g, "") : said;
  const assertion = ASSERTION_TYPE.test(type) || ASSERTION_TEXT.some((p) => p.test(compared));
  const known = assertion ? undefined : INFRASTRUCTURE_PATTERNS.find((p) => p.pattern.test(searched) && !p.unless?.test(searched));
  const normalize = assertion ? normalizeAssertionLine : normalizeErrorLine;
  const body = lines
    .map(normalize)
    .filter((l) => l !== "")
    .join(" | ");
  const what = (type !== "" && body !== "" ? `${type}: ${body}` : type || body).slice(0, MAX_WHAT);
  const where = frame ? `${basename(frame.path)}:${frame.line}` : "";
  const summary = (where === "" ? what : `${what.slice(0, Math.max(0, MAX_SUMMARY - where.length - 6))} (at ${where})`).slice(0, MAX_SUMMARY);
  // A failure with nothing but a one-line message keeps the signature it had before types and frames were read.
  const signature = failureSignature(where === "" ? what : `${what}\n${where}`);
  const shape = failureSignature(
    `shape\n${type}\n${lines
      .map(shapeOfLine)
      .filter((l) => l !== "")
      .join(" | ")}\n${frame ? basename(frame.path) : ""}`,
  );
  const kind = assertion ? "assertion" : known ? "infrastructure" : "error";
  return { kind, testTimeout: kind === "error" && TEST_TIMEOUT.test(searched), pattern: known?.name ?? null, type, body, frame: where, what, summary, signature, shape };
}
