import { unstorableCharacter } from "../domain/text.js";

/** One `<testcase>` of a JUnit report, with what its attempts did. */
export type JUnitCase = {
  name: string;
  classname: string;
  /** The test's file: the testcase's `file` (or `filepath`) attribute, else its suite's; "" if none. */
  file: string;
  /** The outermost enclosing `<testsuite>`'s name (as Trunk keeps it). */
  parent: string;
  /** The testcase's own `id` attribute, "" if none (identity.ts decides whether it is used). */
  explicitId: string;
  /** The nearest enclosing suite's `timestamp`, in ms since the epoch, or null. */
  at: number | null;
  /** Some attempt failed (`failure`, `error`, Surefire's rerun and flaky tags). */
  failed: boolean;
  /** Some attempt passed (no failure, or Surefire's `flakyFailure`: failed, then passed on rerun). */
  passed: boolean;
  /** `<skipped>`, or a `status` of `disabled`, `skipped` or `notrun` (CTest, GoogleTest), and no failure. */
  skipped: boolean;
  /**
   * The report writes a rerun as the testcase again, so a repeat of this testcase can be a
   * retry: a Go report (its suite has the `go.version` property, as gotestsum and
   * go-junit-report write it), where Go makes test names unique within a run. In other
   * reports a repeat is a variant (data-provider rows, theories, `test.each`). Set from the
   * first such property on.
   */
  repeatIsRetry: boolean;
  /** The first failure's message (its `message` attribute, else its first line of text). */
  message: string | null;
  /** The first failure element's `type` attribute (an exception class, for most reporters), or null. */
  failureType: string | null;
  /**
   * The first failure element's text: its stack trace or output (a Surefire `<stackTrace>`
   * child's included, `<system-out>` and `<system-err>` not), at most 4,000 characters, or null.
   * What tells one failure from another (domain/flaky/failures.ts).
   */
  failureText: string | null;
};

export class JUnitError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(message);
  }
}

/** Longest failure message kept; the rest (stack traces, logs) is not read into memory. */
const MAX_MESSAGE = 2000;
/** Longest failure text kept (a stack trace's start: the message, the diff, the first frames). */
const MAX_FAILURE_TEXT = 4000;

/**
 * A suite timestamp as ms since the epoch. Reporters write local time without a zone
 * (jest-junit, Surefire); such times are read as UTC. Unreadable timestamps are ignored.
 */
export function parseTimestamp(value: string | undefined): number | null {
  if (!value) return null;
  const text = value.trim();
  const zoned = /([zZ]|[+-]\d\d:?\d\d)$/.test(text) ? text : `${text}Z`;
  const ms = Date.parse(zoned);
  return Number.isFinite(ms) ? ms : null;
}

/**
 * Reads a JUnit XML report in one pass and calls `onCase` for each testcase, so a large report
 * is never held as a document tree. Accepts `<testsuites>` or `<testsuite>` at the root, suites
 * nested to any depth, and the dialects of jest-junit, pytest, Maven Surefire, go-junit-report
 * and gotestsum (whose reruns repeat a testcase; callers merge repeats, see attempts.ts).
 * Malformed XML throws a JUnitError with the 1-based line and column.
 */
export function parseJUnit(xml: string, onCase: (testCase: JUnitCase) => void): { testCases: number } {
  const reader = new JUnitReader(xml);
  let testCases = 0;
  for (let batch = reader.read(1024); batch.length > 0; batch = reader.read(1024)) {
    testCases += batch.length;
    batch.forEach(onCase);
  }
  return { testCases };
}

/**
 * parseJUnit as a pull reader: `read(max)` answers the next testcases, at most `max` of them,
 * and an empty list at the end of the report (having checked that the report is complete), so
 * a caller can do asynchronous work between batches and hold only a batch at a time.
 */
export class JUnitReader {
  readonly #scanner: JUnitScanner;
  #batch: JUnitCase[] = [];

  constructor(xml: string) {
    this.#scanner = new JUnitScanner(xml, (c) => this.#batch.push(c));
  }

  read(max: number): JUnitCase[] {
    this.#batch = [];
    this.#scanner.scan(() => this.#batch.length >= max);
    return this.#batch;
  }
}

// What an element is to a JUnit reader.
const OTHER = 0;
const SUITE = 1;
const CASE = 2;
/** `failure`, `error`, Surefire's `rerunFailure` / `rerunError`: an attempt failed. */
const FAILURE = 3;
/** Surefire's `flakyFailure` / `flakyError`: an attempt failed, and a rerun passed. */
const FLAKY = 4;
const SKIPPED = 5;
/** `<property>`: a Go report is known by its suite's `go.version` property. */
const PROPERTY = 6;
/** `<system-out>`, `<system-err>`: output, not part of a failure's text. */
const OUTPUT = 7;

/** The kind of the element whose name is the `length` characters at `start`. */
function kindAt(xml: string, start: number, length: number): number {
  const is = (word: string) => xml.startsWith(word, start);
  switch (length) {
    case 5:
      return is("error") ? FAILURE : OTHER;
    case 7:
      return is("failure") ? FAILURE : is("skipped") ? SKIPPED : OTHER;
    case 8:
      return is("testcase") ? CASE : is("property") ? PROPERTY : OTHER;
    case 9:
      return is("testsuite") ? SUITE : OTHER;
    case 10:
      return is("rerunError") ? FAILURE : is("flakyError") ? FLAKY : is("system-out") || is("system-err") ? OUTPUT : OTHER;
    case 12:
      return is("rerunFailure") ? FAILURE : is("flakyFailure") ? FLAKY : OTHER;
    default:
      return OTHER;
  }
}

// The attributes a test case is made of (slots of JUnitScanner.attrs).
const NONE = 0;
const NAME = 1;
const CLASSNAME = 2;
const FILE = 3;
const FILEPATH = 4;
const ID = 5;
const MESSAGE = 6;
const TIMESTAMP = 7;
const STATUS = 8;
const TYPE = 9;
const SLOT_NAMES = ["", "name", "classname", "file", "filepath", "id", "message", "timestamp", "status", "type"];

/** Values of a testcase's `status` attribute that mean it did not run (compared lower-cased). */
const NOT_RUN_STATUSES = new Set(["disabled", "skipped", "notrun"]);

/**
 * Up to this many attributes in a tag, a new one is compared in place with each before it (no
 * string is made: reporters write a handful); beyond, the names go to a set.
 */
const ATTRIBUTES_COMPARED_IN_PLACE = 16;

// Characters the scanner looks ahead for (JUnitScanner.next).
const SOUGHT = ["&", "<", "\n", "\t", "\r", "]]>"];
const AMP = 0;
const LT = 1;
const LF = 2;
const TAB = 3;
const CR = 4;
const CDATA_END = 5;

const XML_DECLARATION = /^<\?xml\s+version\s*=\s*(["'])1\.[0-9]+\1(\s+encoding\s*=\s*(["'])[A-Za-z][A-Za-z0-9._-]*\3)?(\s+standalone\s*=\s*(["'])(yes|no)\5)?\s*\?>$/;

const ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };

type Suite = { name: string; file: string; at: number | null };

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d;
/** XML name characters, leniently: every non-ASCII character is allowed. */
const isNameStart = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || c === 0x3a || c >= 0xc0;
const isNameChar = (c: number) => isNameStart(c) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2e || c === 0xb7;

/**
 * A single-pass reader of the XML a JUnit report is made of: elements, attributes, text,
 * entity and character references, CDATA, comments, processing instructions and a DOCTYPE.
 * It checks well-formedness (names, quoting, nesting, one root, duplicate attributes, known
 * entities), and reads only what a test case needs: attributes it does not use are checked but
 * never copied, and text is looked at only inside a testcase's first failure (its stack trace,
 * at most 4,000 characters) and a failure without a message. Control
 * characters that XML 1.0 forbids are let through: reporters copy test output verbatim, and a
 * report is not refused for an escape sequence in a log line. NUL is not, raw or as `&#0;`,
 * nor is a lone surrogate: no store holds them (see domain/text.ts).
 */
class JUnitScanner {
  private pos = 0;
  /** The open elements, outermost first: where each one's name starts, its length, and the element's kind. */
  private readonly open: number[] = [];
  private readonly suites: Suite[] = [];
  private rootClosed = false;
  private count = 0;
  /** A suite had the `go.version` property: a Go report, from there on (Go reports are Go throughout). */
  private goReport = false;
  /**
   * Where the next `&`, `<`, tab, line feed and carriage return are (xml.length when none), so
   * that text and attribute values are checked with the native string search, each character
   * looked at once, rather than character by character.
   */
  private readonly next = new Int32Array(SOUGHT.length).fill(-1);
  /** Offsets of the current tag's attribute names, for the duplicate check. */
  private readonly attrNames: number[] = [];
  /**
   * Once the current tag has ATTRIBUTES_COMPARED_IN_PLACE attribute names, a hash table of them
   * (open addressing; a slot holds an index into attrNames plus one, 0 when empty), so a tag of
   * n attributes costs n look-ups, not n² comparisons. No string is made: the names are
   * compared in place.
   */
  private attrTable = new Int32Array(0);
  /** A DOCTYPE was read (XML allows one, before the root). */
  private doctype = false;

  // The testcase being read, if any.
  private inCase = false;
  private name = "";
  private classname = "";
  private file: string | undefined;
  private explicitId = "";
  private failed = false;
  private flaky = false;
  private skipped = false;
  private message: string | null = null;
  /** Collecting the text of the first failure element when it has no message attribute. */
  private collecting = false;
  private text = "";
  /** The first failure element: its type, whether it was seen, whether its text is being read, output elements open in it. */
  private failureType: string | null = null;
  private failureSeen = false;
  private detailing = false;
  private outputDepth = 0;
  private detail = "";

  /** The attributes of the tag being read that a test case needs, by slot (see `slotOf`). */
  private readonly attrs: (string | undefined)[] = new Array(TYPE + 1).fill(undefined);

  constructor(
    private readonly xml: string,
    private readonly onCase: (testCase: JUnitCase) => void,
  ) {}

  private finished = false;

  /** Reads on until `enough()` holds after a testcase, or to the end of the document. */
  scan(enough: () => boolean): void {
    const xml = this.xml;
    if (this.finished) return;
    if (this.pos === 0) this.refuseUnstorable();
    if (this.pos === 0 && xml.charCodeAt(0) === 0xfeff) this.pos = 1;
    const count = this.count;
    for (;;) {
      if (this.count !== count && enough()) return;
      const lt = xml.indexOf("<", this.pos);
      const textEnd = lt === -1 ? xml.length : lt;
      if (textEnd > this.pos) this.readText(this.pos, textEnd);
      if (lt === -1) break;
      this.pos = lt;
      const next = xml.charCodeAt(lt + 1);
      if (next === 0x2f /* / */) this.readCloseTag();
      else if (next === 0x21 /* ! */) this.readDeclaration();
      else if (next === 0x3f /* ? */) this.readInstruction();
      else this.readOpenTag();
    }
    if (this.open.length > 0) throw this.error(`unexpected end of document: <${this.openName()}> is not closed`, xml.length);
    if (!this.rootClosed) throw this.error("no root element: expected <testsuites> or <testsuite>", xml.length);
    this.finished = true;
  }

  /** NUL and lone surrogates, which a JSON string can hold and XML cannot, anywhere in the report. */
  private refuseUnstorable(): void {
    const found = unstorableCharacter(this.xml);
    if (found?.kind === "nul") throw this.error("NUL characters are not allowed in XML", found.index);
    if (found) throw this.error(`a lone surrogate (U+${this.xml.charCodeAt(found.index).toString(16).toUpperCase()}) is not a character`, found.index);
  }

  private error(message: string, at = this.pos): JUnitError {
    let line = 1;
    let lineStart = 0;
    for (let nl = this.xml.indexOf("\n"); nl !== -1 && nl < at; nl = this.xml.indexOf("\n", nl + 1)) {
      line++;
      lineStart = nl + 1;
    }
    return new JUnitError(message, line, at - lineStart + 1);
  }

  private readText(start: number, end: number): void {
    const xml = this.xml;
    if (this.open.length === 0) {
      for (let i = start; i < end; i++) {
        if (!isSpace(xml.charCodeAt(i))) throw this.error(this.rootClosed ? "text after the root element" : "text before the root element", i);
      }
      return;
    }
    for (let amp = this.nextOf(AMP, start); amp < end; amp = this.nextOf(AMP, this.entityEnd(amp)));
    const cdataEnd = this.nextOf(CDATA_END, start);
    if (cdataEnd < end) throw this.error("]]> is not allowed in text", cdataEnd);
    if (this.collecting) this.collect(start, end, true);
    if (this.detailing && this.outputDepth === 0) this.collectDetail(start, end, true);
  }

  /** The first SOUGHT[which] at or after `from`, or xml.length. */
  private nextOf(which: number, from: number): number {
    const known = this.next[which]!;
    if (known >= from) return known;
    const at = this.xml.indexOf(SOUGHT[which]!, from);
    return (this.next[which] = at === -1 ? this.xml.length : at);
  }

  /** Checks the entity or character reference at `amp` and answers where it ends. */
  private entityEnd(amp: number): number {
    const semicolon = this.xml.indexOf(";", amp + 1);
    if (semicolon === -1 || semicolon - amp > 32) throw this.error("& must start an entity reference (write &amp; for a literal &)", amp);
    this.entity(amp, semicolon);
    return semicolon + 1;
  }

  /** The text of the reference `&…;` spanning [amp, semicolon]. */
  private entity(amp: number, semicolon: number): string {
    const body = this.xml.slice(amp + 1, semicolon);
    if (!/^(#x?[0-9a-fA-F]+|[A-Za-z_][\w.-]*)$/.test(body)) throw this.error("& must start an entity reference (write &amp; for a literal &)", amp);
    if (body.charCodeAt(0) === 0x23 /* # */) {
      const hex = body.charCodeAt(1) === 0x78; /* x */
      const digits = body.slice(hex ? 2 : 1);
      const code = (hex ? /^[0-9a-fA-F]+$/ : /^[0-9]+$/).test(digits) ? parseInt(digits, hex ? 16 : 10) : NaN;
      if (!(code > 0 && code <= 0x10ffff) || (code >= 0xd800 && code <= 0xdfff)) throw this.error(`&${body}; is not a valid character reference`, amp);
      return String.fromCodePoint(code);
    }
    const text = ENTITIES[body];
    if (text === undefined) throw this.error(`unknown entity &${body};`, amp);
    return text;
  }

  /**
   * Text with its references replaced, up to `limit` characters, line ends normalized as XML
   * does; in attribute values, literal tabs and line ends become spaces (character references
   * are kept as written).
   */
  private decode(start: number, end: number, limit: number, attribute: boolean): string {
    // Searched within the slice (a view of the document, not a copy): a search in the document
    // would run past `end` to its next & each time, which made n such values cost n² (issue 22).
    const text = this.xml.slice(start, end);
    let out = "";
    for (let i = 0; i < text.length && out.length < limit; ) {
      let amp = text.indexOf("&", i);
      if (amp === -1) amp = text.length;
      const stop = Math.min(amp, i + (limit - out.length));
      const raw = text.slice(i, stop);
      out += attribute ? raw.replace(/\r\n?|[\t\n]/g, " ") : raw.replace(/\r\n?/g, "\n");
      if (stop < amp || amp === text.length) break;
      const semicolon = text.indexOf(";", amp);
      out += this.entity(start + amp, start + semicolon);
      i = semicolon + 1;
    }
    return out;
  }

  private collect(start: number, end: number, references: boolean): void {
    const room = MAX_MESSAGE - this.text.length;
    if (room <= 0) return;
    this.text += references ? this.decode(start, end, room, false) : this.xml.slice(start, Math.min(end, start + room));
  }

  private collectDetail(start: number, end: number, references: boolean): void {
    const room = MAX_FAILURE_TEXT - this.detail.length;
    if (room <= 0) return;
    this.detail += references ? this.decode(start, end, room, false) : this.xml.slice(start, Math.min(end, start + room));
  }

  /** The end of the XML name starting at `start` (`start` itself when there is none). */
  private nameEnd(start: number): number {
    const xml = this.xml;
    if (!isNameStart(xml.charCodeAt(start))) return start;
    let i = start + 1;
    while (isNameChar(xml.charCodeAt(i))) i++;
    return i;
  }

  private skipSpace(i: number): number {
    while (isSpace(this.xml.charCodeAt(i))) i++;
    return i;
  }

  private readOpenTag(): void {
    const xml = this.xml;
    const nameStart = this.pos + 1;
    const nameEnd = this.nameEnd(nameStart);
    if (nameEnd === nameStart) throw this.error("< must start a tag (write &lt; for a literal <)");
    if (this.open.length === 0) {
      const name = xml.slice(nameStart, nameEnd);
      if (this.rootClosed) throw this.error(`a second root element <${name}>`);
      if (name !== "testsuites" && name !== "testsuite") throw this.error(`root element is <${name}>, expected <testsuites> or <testsuite>`);
    }
    const kind = kindAt(xml, nameStart, nameEnd - nameStart);
    if (kind !== OTHER) for (let k = NAME; k <= TYPE; k++) this.attrs[k] = undefined;
    this.attrNames.length = 0;

    let i = nameEnd;
    let selfClosing = false;
    for (;;) {
      const afterSpace = this.skipSpace(i);
      const c = xml.charCodeAt(afterSpace);
      if (c === 0x3e /* > */) {
        i = afterSpace + 1;
        break;
      }
      if (c === 0x2f /* / */ && xml.charCodeAt(afterSpace + 1) === 0x3e) {
        i = afterSpace + 2;
        selfClosing = true;
        break;
      }
      if (afterSpace >= xml.length) throw this.error(`unexpected end of document in the tag <${xml.slice(nameStart, nameEnd)}>`, afterSpace);
      const attrEnd = this.nameEnd(afterSpace);
      if (attrEnd === afterSpace) throw this.error(`unexpected ${JSON.stringify(xml[afterSpace])} in the tag <${xml.slice(nameStart, nameEnd)}>`, afterSpace);
      if (afterSpace === i) throw this.error(`attributes of <${xml.slice(nameStart, nameEnd)}> must be separated by whitespace`, afterSpace);
      i = this.readAttribute(kind, nameStart, nameEnd, afterSpace, attrEnd);
    }
    this.pos = i;
    if (!selfClosing) this.open.push(nameStart, nameEnd - nameStart, kind);
    this.openElement(kind);
    if (selfClosing) this.closeElement(kind);
  }

  /** Reads the attribute whose name spans [start, end), keeping its value if a test case needs it; answers where it ends. */
  private readAttribute(kind: number, tagStart: number, tagEnd: number, start: number, end: number): number {
    const xml = this.xml;
    const length = end - start;
    const names = this.attrNames;
    if (names.length < 2 * ATTRIBUTES_COMPARED_IN_PLACE) {
      for (let k = 0; k < names.length; k += 2) {
        if (names[k + 1]! - names[k]! === length && this.sameAt(start, names[k]!, length)) {
          throw this.error(`the attribute ${xml.slice(start, end)} appears twice in <${xml.slice(tagStart, tagEnd)}>`, start);
        }
      }
      names.push(start, end);
      if (names.length === 2 * ATTRIBUTES_COMPARED_IN_PLACE) this.rehashAttributes();
    } else {
      if (this.findAttribute(start, end) !== -1) throw this.error(`the attribute ${xml.slice(start, end)} appears twice in <${xml.slice(tagStart, tagEnd)}>`, start);
      names.push(start, end);
      if (names.length > this.attrTable.length / 2) this.rehashAttributes();
      else this.attrTable[this.emptySlotOf(start, end)] = names.length / 2;
    }
    let i = this.skipSpace(end);
    if (xml.charCodeAt(i) !== 0x3d /* = */) throw this.error(`the attribute ${xml.slice(start, end)} of <${xml.slice(tagStart, tagEnd)}> has no value (expected =)`, i);
    i = this.skipSpace(i + 1);
    const quote = xml.charCodeAt(i);
    if (quote !== 0x22 && quote !== 0x27) throw this.error(`the value of the attribute ${xml.slice(start, end)} of <${xml.slice(tagStart, tagEnd)}> must be quoted`, i);
    const valueStart = i + 1;
    const valueEnd = xml.indexOf(quote === 0x22 ? '"' : "'", valueStart);
    if (valueEnd === -1) throw this.error(`unexpected end of document in the value of the attribute ${xml.slice(start, end)}`, xml.length);
    const lt = this.nextOf(LT, valueStart);
    if (lt < valueEnd) throw this.error(`< is not allowed in an attribute value (write &lt;)`, lt);
    let plain = true;
    for (let amp = this.nextOf(AMP, valueStart); amp < valueEnd; amp = this.nextOf(AMP, this.entityEnd(amp))) plain = false;
    if (plain) plain = this.nextOf(LF, valueStart) > valueEnd && this.nextOf(TAB, valueStart) > valueEnd && this.nextOf(CR, valueStart) > valueEnd;
    const slot = kind === OTHER ? NONE : this.slotOf(kind, start, length);
    if (slot !== NONE) this.attrs[slot] = plain ? xml.slice(valueStart, valueEnd) : this.decode(valueStart, valueEnd, Infinity, true);
    return valueEnd + 1;
  }

  /** The hash of the name spanning [start, end) (FNV-1a over its UTF-16 code units). */
  private hashAt(start: number, end: number): number {
    let hash = 0x811c9dc5;
    for (let k = start; k < end; k++) hash = Math.imul(hash ^ this.xml.charCodeAt(k), 0x01000193);
    return hash >>> 0;
  }

  /** The slot of attrTable holding the name spanning [start, end), or -1. */
  private findAttribute(start: number, end: number): number {
    const table = this.attrTable;
    const names = this.attrNames;
    const mask = table.length - 1;
    for (let slot = this.hashAt(start, end) & mask; table[slot] !== 0; slot = (slot + 1) & mask) {
      const k = 2 * (table[slot]! - 1);
      if (names[k + 1]! - names[k]! === end - start && this.sameAt(start, names[k]!, end - start)) return slot;
    }
    return -1;
  }

  /** The empty slot where the name spanning [start, end) goes. */
  private emptySlotOf(start: number, end: number): number {
    const table = this.attrTable;
    const mask = table.length - 1;
    let slot = this.hashAt(start, end) & mask;
    while (table[slot] !== 0) slot = (slot + 1) & mask;
    return slot;
  }

  /** Makes attrTable four times the names it holds (at most half full after doubling), holding them all. */
  private rehashAttributes(): void {
    const names = this.attrNames;
    let size = 64;
    while (size < names.length * 2) size *= 2;
    this.attrTable = new Int32Array(size);
    for (let k = 0; k < names.length; k += 2) this.attrTable[this.emptySlotOf(names[k]!, names[k + 1]!)] = k / 2 + 1;
  }

  /** Which of the attributes a test case needs the one at `start` is, for an element of `kind`. */
  private slotOf(kind: number, start: number, length: number): number {
    // Told apart by length and first letter; the name is compared only then.
    const first = this.xml.charCodeAt(start);
    let slot = NONE;
    if (kind === CASE || kind === SUITE) {
      if (length === 4) slot = first === 0x6e /* n */ ? NAME : first === 0x66 /* f */ ? FILE : NONE;
      else if (length === 8 && first === 0x66) slot = FILEPATH;
      else if (kind === CASE && length === 9 && first === 0x63 /* c */) slot = CLASSNAME;
      else if (kind === CASE && length === 2 && first === 0x69 /* i */) slot = ID;
      else if (kind === CASE && length === 6 && first === 0x73 /* s */) slot = STATUS;
      else if (kind === SUITE && length === 9 && first === 0x74 /* t */) slot = TIMESTAMP;
    } else if (kind === PROPERTY) {
      if (length === 4 && first === 0x6e /* n */) slot = NAME;
    } else if (kind === FAILURE || kind === FLAKY) {
      if (length === 7 && first === 0x6d /* m */) slot = MESSAGE;
      else if (length === 4 && first === 0x74 /* t */) slot = TYPE;
    }
    return slot !== NONE && this.isAt(SLOT_NAMES[slot]!, start) ? slot : NONE;
  }

  // String comparisons in place (startsWith costs more than these for the short names compared).
  private sameAt(a: number, b: number, length: number): boolean {
    for (let k = 0; k < length; k++) if (this.xml.charCodeAt(a + k) !== this.xml.charCodeAt(b + k)) return false;
    return true;
  }

  private isAt(word: string, at: number): boolean {
    for (let k = 0; k < word.length; k++) if (this.xml.charCodeAt(at + k) !== word.charCodeAt(k)) return false;
    return true;
  }

  private openElement(kind: number): void {
    if (kind === SUITE) {
      const outer = this.suites.at(-1);
      const a = this.attrs;
      this.suites.push({
        name: a[NAME] ?? "",
        file: a[FILE] ?? a[FILEPATH] ?? outer?.file ?? "",
        at: parseTimestamp(a[TIMESTAMP]) ?? outer?.at ?? null,
      });
    } else if (kind === CASE) {
      this.inCase = true;
      const a = this.attrs;
      this.name = a[NAME] ?? "";
      this.classname = a[CLASSNAME] ?? "";
      this.file = a[FILE] ?? a[FILEPATH];
      this.explicitId = a[ID] ?? "";
      this.failed = this.flaky = this.collecting = false;
      this.skipped = a[STATUS] !== undefined && NOT_RUN_STATUSES.has(a[STATUS].toLowerCase());
      this.message = null;
      this.text = "";
      this.failureType = null;
      this.failureSeen = this.detailing = false;
      this.outputDepth = 0;
      this.detail = "";
    } else if (this.inCase && (kind === FAILURE || kind === FLAKY)) {
      if (kind === FAILURE) this.failed = true;
      else this.flaky = true;
      if (!this.failureSeen) {
        this.failureSeen = this.detailing = true;
        this.failureType = this.attrs[TYPE]?.trim() || null;
      }
      if (this.message === null && !this.collecting) {
        const message = this.attrs[MESSAGE]?.trim();
        if (message) this.message = message.slice(0, MAX_MESSAGE);
        else this.collecting = true;
      }
    } else if (this.inCase && kind === SKIPPED) {
      this.skipped = true;
    } else if (this.detailing && kind === OUTPUT) {
      this.outputDepth++;
    } else if (kind === PROPERTY && !this.inCase && this.suites.length > 0 && this.attrs[NAME] === "go.version") {
      this.goReport = true;
    }
  }

  private closeElement(kind: number): void {
    if (this.open.length === 0) this.rootClosed = true;
    if (kind === SUITE) {
      this.suites.pop();
    } else if (kind === CASE && this.inCase) {
      this.inCase = false;
      const suite = this.suites.at(-1);
      const failed = this.failed || this.flaky;
      this.count++;
      this.onCase({
        name: this.name,
        classname: this.classname,
        file: this.file ?? suite?.file ?? "",
        parent: this.suites[0]?.name ?? "",
        explicitId: this.explicitId,
        at: suite?.at ?? null,
        failed,
        passed: !this.failed && !(this.skipped && !this.flaky),
        skipped: this.skipped && !failed,
        repeatIsRetry: this.goReport,
        message: failed ? (this.message ?? firstLine(this.text)) : null,
        failureType: failed ? this.failureType : null,
        failureText: failed ? this.detail.trim() || null : null,
      });
    } else if (this.detailing && kind === OUTPUT) {
      this.outputDepth--;
    }
    if (kind === FAILURE || kind === FLAKY) {
      this.detailing = false;
      if (this.collecting) {
        this.collecting = false;
        this.message = firstLine(this.text);
      }
    }
  }

  private readCloseTag(): void {
    const xml = this.xml;
    const nameStart = this.pos + 2;
    const nameEnd = this.nameEnd(nameStart);
    const open = this.open;
    if (open.length === 0) throw this.error(`</${xml.slice(nameStart, nameEnd)}> closes no open element`);
    const [openStart, openLength, kind] = [open[open.length - 3]!, open[open.length - 2]!, open[open.length - 1]!];
    if (nameEnd - nameStart !== openLength || !this.sameAt(nameStart, openStart, openLength)) {
      throw this.error(`</${xml.slice(nameStart, nameEnd)}> where </${this.openName()}> was expected`);
    }
    const end = this.skipSpace(nameEnd);
    if (xml.charCodeAt(end) !== 0x3e) throw this.error(`expected > to end </${xml.slice(nameStart, nameEnd)}`, end);
    this.pos = end + 1;
    open.length -= 3;
    this.closeElement(kind);
  }

  /** The name of the innermost open element. */
  private openName(): string {
    const start = this.open[this.open.length - 3]!;
    return this.xml.slice(start, start + this.open[this.open.length - 2]!);
  }

  /** `<!--…-->`, `<![CDATA[…]]>` or `<!DOCTYPE …>`. */
  private readDeclaration(): void {
    const xml = this.xml;
    const at = this.pos;
    if (xml.startsWith("<!--", at)) {
      const end = xml.indexOf("-->", at + 4);
      if (end === -1) throw this.error("unterminated comment");
      const dashes = xml.indexOf("--", at + 4);
      if (dashes < end) throw this.error("-- is not allowed in a comment", dashes);
      this.pos = end + 3;
    } else if (xml.startsWith("<![CDATA[", at)) {
      if (this.open.length === 0) throw this.error("CDATA outside the root element");
      const end = xml.indexOf("]]>", at + 9);
      if (end === -1) throw this.error("unterminated CDATA section");
      if (this.collecting) this.collect(at + 9, end, false);
      if (this.detailing && this.outputDepth === 0) this.collectDetail(at + 9, end, false);
      this.pos = end + 3;
    } else if (xml.startsWith("<!DOCTYPE", at) && this.open.length === 0 && !this.rootClosed && !this.doctype) {
      // Skipped, internal subset included; entities it declares stay unknown. There is one, so
      // the searches to the document's end below happen once.
      this.doctype = true;
      const close = xml.indexOf(">", at);
      if (close === -1) throw this.error("unterminated DOCTYPE");
      let bracket = at;
      while (bracket < close && xml.charCodeAt(bracket) !== 0x5b /* [ */) bracket++;
      const subsetEnd = bracket < close ? xml.indexOf("]", bracket) : at;
      const end = subsetEnd === -1 ? -1 : xml.indexOf(">", subsetEnd);
      if (end === -1) throw this.error("unterminated DOCTYPE");
      this.pos = end + 1;
    } else if (xml.startsWith("<!DOCTYPE", at) && this.doctype && this.open.length === 0 && !this.rootClosed) {
      throw this.error("a second DOCTYPE (a document has at most one)");
    } else {
      throw this.error("<! must start a comment, a CDATA section or the DOCTYPE");
    }
  }

  /** `<?target …?>`, the XML declaration included. */
  private readInstruction(): void {
    const nameStart = this.pos + 2;
    const nameEnd = this.nameEnd(nameStart);
    if (nameEnd === nameStart) throw this.error("<? must start a processing instruction");
    const end = this.xml.indexOf("?>", nameStart);
    if (end === -1) throw this.error("unterminated processing instruction");
    if (nameEnd - nameStart === 3 && this.xml.slice(nameStart, nameEnd).toLowerCase() === "xml") {
      if (this.pos > (this.xml.charCodeAt(0) === 0xfeff ? 1 : 0)) throw this.error("the XML declaration is allowed only at the start of the document");
      if (!XML_DECLARATION.test(this.xml.slice(this.pos, end + 2))) throw this.error('malformed XML declaration (expected <?xml version="1.x" encoding="…"?>)');
    } else if (nameEnd < end && !isSpace(this.xml.charCodeAt(nameEnd))) {
      throw this.error("a processing instruction's target must be followed by whitespace", nameEnd);
    }
    this.pos = end + 2;
  }
}

function firstLine(text: string): string | null {
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed) return trimmed.slice(0, MAX_MESSAGE);
  }
  return null;
}
