import { randomBytes } from "node:crypto";

/** Strings at least this long (in bytes) are decoded out of the body in place rather than by JSON.parse; smaller bodies go to JSON.parse whole. */
const LARGE_STRING = 64 * 1024;

export class JsonError extends Error {}

/**
 * JSON.parse for a request body that may carry very large strings (JUnit reports of tens of
 * megabytes): the body is never turned into one string. Each large string is unescaped in place
 * in the body's own bytes and decoded once; the rest of the document (its keys, numbers and
 * small strings) is parsed by JSON.parse, with a placeholder for each large string. So a 20 MB
 * report costs the body's bytes and the report's string, not also a string of the whole body.
 * The bytes of large strings are overwritten.
 */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length < LARGE_STRING) return JSON.parse(body.toString("utf8"));
  const skeleton: Buffer[] = [];
  const large: string[] = [];
  const marker = `\u0000${randomBytes(8).toString("hex")}:`;
  let copied = 0;
  for (let open = body.indexOf(0x22); open !== -1; open = body.indexOf(0x22, copied)) {
    const { end, written } = unescapeInPlace(body, open + 1);
    if (written - open - 1 >= LARGE_STRING) {
      skeleton.push(body.subarray(copied, open), Buffer.from(JSON.stringify(`${marker}${large.length}`)));
      large.push(body.toString("utf8", open + 1, written));
    } else if (written !== end - 1) {
      // A small string with escapes, now unescaped: written back as JSON.
      skeleton.push(body.subarray(copied, open), Buffer.from(JSON.stringify(body.toString("utf8", open + 1, written))));
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

const ESCAPES: Record<number, number> = { 0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 0x08, 0x66: 0x0c, 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09 };

/**
 * Unescapes the JSON string whose content starts at `start` into the same bytes (an escape is
 * never shorter than what it stands for): answers where the token ends (past its closing quote)
 * and where the unescaped content ends.
 */
function unescapeInPlace(buffer: Buffer, start: number): { end: number; written: number } {
  // A plain Uint8Array view: element access on it is what V8 optimizes best.
  const body = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.length);
  const length = body.length;
  let w = start;
  let r = start;
  for (;;) {
    if (r >= length) throw new JsonError("Unterminated string in JSON");
    const b = body[r]!;
    if (b === 0x22) return { end: r + 1, written: w };
    if (b >= 0x20 && b !== 0x5c) {
      if (w !== r) body[w] = b;
      w++;
      r++;
      continue;
    }
    if (b < 0x20) throw new JsonError(`Bad control character in string literal in JSON at position ${r}`);
    const e = body[r + 1]!;
    const simple = ESCAPES[e];
    if (simple !== undefined) {
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
    w += buffer.write(String.fromCodePoint(code), w, "utf8");
  }
}

function hex4(body: Buffer, at: number): number {
  const text = body.toString("latin1", at, at + 4);
  if (!/^[0-9a-fA-F]{4}$/.test(text)) throw new JsonError(`Bad Unicode escape in JSON at position ${at - 2}`);
  return parseInt(text, 16);
}
