/**
 * Splits a JUnit XML report larger than `maxBytes` into well-formed reports of at most that size
 * (the CLI sends a report larger than one request in parts: src/cli/test-commands.ts). The cut
 * falls between `<testcase>` elements; each piece repeats the elements around its testcases (the
 * XML declaration, `<testsuites>`, each `<testsuite>` start tag with its attributes — name,
 * timestamp — and its `<properties>`, which say a Go report is one), so every testcase reads the
 * same in its piece as in the whole: the same test, time, and attempts (a Go report's later
 * suites carry its first suite's `go.version` property, as the reader holds a report Go from there on). A suite's own
 * `<system-out>` and `<system-err>` (output no testcase owns, which the reader ignores) and
 * comments are left out. A testcase larger than `maxBytes` is a piece of its own. A report with a
 * DOCTYPE, or one this scanner cannot follow, is answered whole: the server judges it.
 */
export function splitJUnitReport(xml: string, maxBytes: number): string[] {
  if (byteLength(xml) <= maxBytes) return [xml];
  const scanned = scan(xml);
  if (!scanned || scanned.units.length === 0) return [xml];
  const { prolog, units } = scanned;
  const pieces: string[] = [];
  let open: Frame[] = [];
  let parts: string[] = [];
  let size = 0;
  const closing = (frames: Frame[]) => frames.reduce((n, f) => n + f.name.length + 3, 0);
  const begin = () => {
    parts = [prolog];
    size = byteLength(prolog);
    open = [];
  };
  const finish = () => {
    for (let i = open.length - 1; i >= 0; i--) parts.push(`</${open[i]!.name}>`);
    pieces.push(parts.join(""));
  };
  /** The frames to close and open to go from the open ones to `context`, and what that costs. */
  const move = (context: Frame[]) => {
    let common = 0;
    while (common < open.length && common < context.length && open[common] === context[common]) common++;
    const closed = open.slice(common);
    const opened = context.slice(common);
    return { common, opened, cost: closing(closed) + opened.reduce((n, f) => n + f.openBytes, 0) };
  };
  begin();
  let units_in_piece = 0;
  for (const unit of units) {
    let step = move(unit.context);
    if (units_in_piece > 0 && size + step.cost + unit.bytes + closing(unit.context) > maxBytes) {
      finish();
      begin();
      units_in_piece = 0;
      step = move(unit.context);
    }
    for (let i = open.length - 1; i >= step.common; i--) parts.push(`</${open[i]!.name}>`);
    open = open.slice(0, step.common);
    for (const frame of step.opened) {
      parts.push(frame.open);
      open.push(frame);
    }
    parts.push(unit.text);
    size += step.cost + unit.bytes;
    units_in_piece++;
  }
  finish();
  return pieces;
}

type Frame = { name: string; open: string; openBytes: number };
type Unit = { context: Frame[]; text: string; bytes: number };

const byteLength = (text: string) => Buffer.byteLength(text, "utf8");

/** The report's declaration and its testcases, each with the frames around it; null when the scanner cannot follow it. */
function scan(xml: string): { prolog: string; units: Unit[] } | null {
  let prolog = "";
  const units: Unit[] = [];
  const stack: { name: string; start: string; properties: string[]; frame: Frame | null }[] = [];
  // A report is Go throughout once a suite has the go.version property (the reader's rule): a
  // later suite's pieces carry that property too, or they would read as another kind of report.
  let goProperties: string | null = null;
  const frameOf = (depth: number): Frame[] => {
    const frames: Frame[] = [];
    for (let d = 0; d <= depth; d++) {
      const entry = stack[d]!;
      if (!entry.frame) {
        const own = entry.properties.join("");
        if (goProperties === null && own.includes("go.version")) goProperties = own;
        const open = entry.start + (entry.name === "testsuite" && goProperties !== null && !own.includes("go.version") ? own + goProperties : own);
        entry.frame = { name: entry.name, open, openBytes: byteLength(open) };
      }
      frames.push(entry.frame);
    }
    return frames;
  };
  let i = 0;
  while (i < xml.length) {
    const lt = xml.indexOf("<", i);
    if (lt === -1) break;
    const opaque = opaqueEnd(xml, lt);
    if (xml.startsWith("<?", lt)) {
      const end = xml.indexOf("?>", lt);
      if (end === -1) return null;
      if (stack.length === 0 && units.length === 0) prolog += xml.slice(lt, end + 2);
      i = end + 2;
    } else if (opaque !== null) {
      if (opaque === -1) return null;
      i = opaque;
    } else if (xml.startsWith("<!", lt)) {
      // A DOCTYPE (entities, perhaps): not split.
      return null;
    } else if (xml.startsWith("</", lt)) {
      const end = xml.indexOf(">", lt);
      if (end === -1) return null;
      const name = xml.slice(lt + 2, end).trim();
      const top = stack.pop();
      if (!top || top.name !== name) return null;
      i = end + 1;
    } else {
      const tag = startTag(xml, lt);
      if (!tag) return null;
      if (tag.name === "testcase") {
        // The whole testcase, its failures, reruns and output included.
        let end = tag.end;
        if (!tag.selfClosing) {
          const close = closeOf(xml, tag.end, "testcase");
          if (close === -1) return null;
          end = close;
        }
        if (stack.length === 0) return null;
        const text = xml.slice(lt, end);
        units.push({ context: frameOf(stack.length - 1), text, bytes: byteLength(text) });
        i = end;
      } else if (tag.name === "properties" && stack.length > 0 && !stack.at(-1)!.frame) {
        // A suite's properties, before its first testcase: in every piece of it.
        const end = tag.selfClosing ? tag.end : closeOf(xml, tag.end, "properties");
        if (end === -1) return null;
        stack.at(-1)!.properties.push(xml.slice(lt, end));
        i = end;
      } else if (tag.name === "testsuite" || tag.name === "testsuites") {
        if (tag.selfClosing) {
          i = tag.end;
          continue;
        }
        stack.push({ name: tag.name, start: xml.slice(lt, tag.end), properties: [], frame: null });
        i = tag.end;
      } else {
        // Anything else (a suite's output, properties after its testcases): skipped whole.
        const end = tag.selfClosing ? tag.end : closeOf(xml, tag.end, tag.name);
        if (end === -1) return null;
        i = end;
      }
    }
  }
  return stack.length === 0 ? { prolog, units } : null;
}

/** A start tag at `lt`: its name, where it ends (past `>`), whether it closes itself; quotes in attribute values respected. */
function startTag(xml: string, lt: number): { name: string; end: number; selfClosing: boolean } | null {
  let j = lt + 1;
  while (j < xml.length && !/[\s/>]/.test(xml[j]!)) j++;
  const name = xml.slice(lt + 1, j);
  if (name === "") return null;
  let quote: string | null = null;
  for (; j < xml.length; j++) {
    const c = xml[j]!;
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === ">") return { name, end: j + 1, selfClosing: xml[j - 1] === "/" };
  }
  return null;
}

/**
 * Where the element `name` begun before `from` ends (past its end tag), counting nested ones of
 * the same name and skipping comments, CDATA and quoted attribute values; -1 when it does not.
 */
function closeOf(xml: string, from: number, name: string): number {
  let depth = 1;
  let i = from;
  while (i < xml.length) {
    const lt = xml.indexOf("<", i);
    if (lt === -1) return -1;
    const opaque = opaqueEnd(xml, lt) ?? (xml.startsWith("<?", lt) ? afterClose(xml, lt, "?>") : null);
    if (opaque !== null) {
      if (opaque === -1) return -1;
      i = opaque;
    } else if (xml.startsWith("</", lt)) {
      const end = xml.indexOf(">", lt);
      if (end === -1) return -1;
      if (xml.slice(lt + 2, end).trim() === name && --depth === 0) return end + 1;
      i = end + 1;
    } else {
      const tag = startTag(xml, lt);
      if (!tag) return -1;
      if (tag.name === name && !tag.selfClosing) depth++;
      i = tag.end;
    }
  }
  return -1;
}

/** Past `close` after `lt`, or -1 when it never comes. */
function afterClose(xml: string, lt: number, close: string): number {
  const end = xml.indexOf(close, lt);
  return end === -1 ? -1 : end + close.length;
}

/** Where a comment or CDATA section at `lt` ends (past it; -1 unterminated), or null when there is none at `lt`. */
function opaqueEnd(xml: string, lt: number): number | null {
  if (xml.startsWith("<!--", lt)) return afterClose(xml, lt, "-->");
  if (xml.startsWith("<![CDATA[", lt)) return afterClose(xml, lt, "]]>");
  return null;
}
