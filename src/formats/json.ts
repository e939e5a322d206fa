import { isUtf8 } from "node:buffer";
import { randomBytes } from "node:crypto";

/** Strings at least this long (in bytes) are decoded out of the body in place rather than by JSON.parse; smaller bodies go to JSON.parse whole. */
const LARGE_STRING = 64 * 1024;

export class JsonError extends Error {}

/** A body that is not UTF-8: JSON exchanged between systems must be (RFC 8259). */
export class NotUtf8Error extends JsonError {
  constructor() {
    super("request body is not valid UTF-8");
  }
}

/**
 * JSON.parse for a request body that may carry very large strings (JUnit reports of tens of
 * megabytes): the body is never turned into one string. Each large string is unescaped in place
 * in the body's own bytes and decoded once; the rest of the document (its keys, numbers and
 * small strings) is parsed by JSON.parse, with a placeholder for each large string. So a 20 MB
 * report costs the body's bytes and the report's string, not also a string of the whole body.
 * The bytes of large strings are overwritten. Bytes that are not UTF-8 are refused (NotUtf8Error).
 */
export function parseJsonBody(body: Buffer): unknown {
  // Decoding would silently turn invalid bytes into replacement characters: a name with one
  // would then be looked up as some other name.
  if (!isUtf8(body)) throw new NotUtf8Error();
  if (body.length < LARGE_STRING) return JSON.parse(body.toString("utf8"));
  const skeleton: Buffer[] = [];
  const large: string[] = [];
  const marker = `\u0000${randomBytes(8).toString("hex")}:`;
  let copied = 0;
  for (let open = body.indexOf(0x22); open !== -1; open = body.indexOf(0x22, copied)) {
    const { end, written, lone } = unescapeInPlace(body, open + 1);
    if (written - open - 1 >= LARGE_STRING) {
      skeleton.push(body.subarray(copied, open), Buffer.from(JSON.stringify(`${marker}${large.length}`)));
      large.push(decode(body, open + 1, written, lone));
    } else if (written !== end - 1) {
      // A small string with escapes, now unescaped: written back as JSON.
      skeleton.push(body.subarray(copied, open), Buffer.from(JSON.stringify(decode(body, open + 1, written, lone))));
    } else {
      skeleton.push(body.subarray(copied, end));
    }
    copied = end;
  }
  if (large.length === 0) return JSON.parse(Buffer.concat([...skeleton, body.subarray(copied)]).toString("utf8"));
  skeleton.push(body.subarray(copied));
  const parsed: unknown = JSON.parse(Buffer.concat(skeleton).toString("utf8"));
  const restore = (value: unknown): unknown => {
    if (typeof value === "string") return value.startsWith(marker) ? large[Number(value.slice(marker.length))] : value;
    if (Array.isArray(value)) return value.map(restore);
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [restore(k) as string, restore(v)]));
    }
    return value;
  };
  return restore(parsed);
}

/** What each simple escape (`\n`, `\"`, …) stands for, by the byte after the backslash; 0 for none. */
const ESCAPES = new Uint8Array(256);
for (const [escape, byte] of [
  ['"', 0x22],
  ["\\", 0x5c],
  ["/", 0x2f],
  ["b", 0x08],
  ["f", 0x0c],
  ["n", 0x0a],
  ["r", 0x0d],
  ["t", 0x09],
] as const) {
  ESCAPES[escape.charCodeAt(0)] = byte;
}
/** Bytes that stand for themselves inside a string: not a quote, a backslash or a control character. */
const PLAIN = new Uint8Array(256).map((_, byte) => (byte >= 0x20 && byte !== 0x22 && byte !== 0x5c ? 1 : 0));

/**
 * The unescaped content [start, end) as a string, with the lone surrogates `unescapeInPlace`
 * found put back where they were: JSON.parse keeps `"\ud800"` as that one code unit, which
 * UTF-8 cannot carry, so the bytes hold the text around them and `lone` holds them (pairs of
 * byte offset and code unit).
 */
function decode(body: Buffer, start: number, end: number, lone: number[] | null): string {
  if (lone === null) return body.toString("utf8", start, end);
  let text = "";
  let from = start;
  for (let i = 0; i < lone.length; i += 2) {
    text += body.toString("utf8", from, lone[i]) + String.fromCharCode(lone[i + 1]!);
    from = lone[i]!;
  }
  return text + body.toString("utf8", from, end);
}

/**
 * Unescapes the JSON string whose content starts at `start` into the same bytes (an escape is
 * never shorter than what it stands for): answers where the token ends (past its closing quote),
 * where the unescaped content ends, and the lone surrogates it skipped (see `decode`), if any.
 */
function unescapeInPlace(buffer: Buffer, start: number): { end: number; written: number; lone: number[] | null } {
  // A plain Uint8Array view: element access on it is what V8 optimizes best.
  const body = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.length);
  let w = start;
  let r = start;
  let lone: number[] | null = null;
  for (;;) {
    let b = body[r]!;
    while (PLAIN[b] === 1) {
      body[w++] = b;
      b = body[++r]!;
    }
    if (r >= body.length) throw new JsonError("Unterminated string in JSON");
    if (b === 0x22) return { end: r + 1, written: w, lone };
    if (b < 0x20) throw new JsonError(`Bad control character in string literal in JSON at position ${r}`);
    const e = body[r + 1]!;
    const simple = ESCAPES[e]!;
    if (simple !== 0) {
      body[w++] = simple;
      r += 2;
      continue;
    }
    if (e !== 0x75) throw new JsonError(`Bad escaped character in JSON at position ${r + 1}`);
    let code = hex4(buffer, r + 2);
    r += 6;
    if (code >= 0xd800 && code <= 0xdbff && body[r] === 0x5c && body[r + 1] === 0x75) {
      const low = hex4(buffer, r + 2);
      if (low >= 0xdc00 && low <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        r += 6;
      }
    }
    if (code >= 0xd800 && code <= 0xdfff) (lone ??= []).push(w, code);
    else w += buffer.write(String.fromCodePoint(code), w, "utf8");
  }
}

function hex4(body: Buffer, at: number): number {
  const text = body.toString("latin1", at, at + 4);
  if (!/^[0-9a-fA-F]{4}$/.test(text)) throw new JsonError(`Bad Unicode escape in JSON at position ${at - 2}`);
  return parseInt(text, 16);
}
