import { request, type Server } from "node:http";
import express from "express";
import fc from "fast-check";
import { jsonBody } from "../../src/api/body.js";
import { parseJsonBody } from "../../src/formats/json.js";

// Request bodies carrying large strings (JUnit reports) are parsed without turning the whole
// body into a string: large strings are unescaped in place. JSON.parse is the oracle.

/**
 * Text with everything JSON escapes: quotes, backslashes, control characters (NUL too),
 * non-ASCII, astral characters, and lone surrogates (which JSON.parse keeps as they are).
 */
const awkward = fc.string({
  unit: fc.constantFrom("a", "<", ">", '"', "\\", "/", "\n", "\t", "\r", "\b", "\f", "\u0000", "\u0001", "\u001f", "\u007f", "é", "€", "😀", "\ud800", "\udbff", "\udc00", "\udfff", " ", "&"),
  minLength: 1,
  maxLength: 40,
});
/** Large enough to be decoded in place (64 KiB and more once escaped). */
const large = awkward.map((piece) => piece.repeat(Math.ceil(70_000 / piece.length)));

const document = fc.record({
  repo: fc.record({ owner: awkward, name: fc.string() }),
  junit_xml: fc.array(fc.oneof(large, awkward), { minLength: 1, maxLength: 3 }),
  number: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })),
  flags: fc.array(fc.oneof(fc.boolean(), fc.constant(null))),
});

test("bodies with large strings parse exactly as JSON.parse parses them", () => {
  fc.assert(
    fc.property(document, large, (value, key) => {
      const withLargeKey = { ...value, [key]: value.repo.owner };
      const text = JSON.stringify(withLargeKey);
      expect(parseJsonBody(Buffer.from(text))).toEqual(JSON.parse(text));
    }),
    { numRuns: 60, seed: 20261122 },
  );
});

test("a body broken anywhere is refused exactly when JSON.parse refuses it, and read the same otherwise", () => {
  fc.assert(
    fc.property(document, fc.nat(), fc.constantFrom("", '"', "\\", "\n", "}", ",", "u", "\\u12"), (value, at, insert) => {
      const text = JSON.stringify(value);
      const i = at % text.length;
      // As bytes: a cut through a character's UTF-16 pair is a replacement character, as for any body read as UTF-8.
      const broken = Buffer.from(text.slice(0, i) + insert + text.slice(i + (insert === "" ? 1 : 0)));
      let expected: unknown;
      let refused = false;
      try {
        expected = JSON.parse(broken.toString("utf8"));
      } catch {
        refused = true;
      }
      if (refused) expect(() => parseJsonBody(Buffer.from(broken))).toThrow();
      else expect(parseJsonBody(Buffer.from(broken))).toEqual(expected);
      return true;
    }),
    { numRuns: 300, seed: 20261123 },
  );
});

test("escapes of every kind in a large string, surrogate pairs included", () => {
  const text = `{"s": "${"x".repeat(70_000)}\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20ac\\ud83d\\ude00\\u0041"}`;
  expect(parseJsonBody(Buffer.from(text))).toEqual(JSON.parse(text));
  expect(() => parseJsonBody(Buffer.from(`{"s": "${"x".repeat(70_000)}\\x"}`))).toThrow(/Bad escaped character/);
  expect(() => parseJsonBody(Buffer.from(`{"s": "${"x".repeat(70_000)}\u0001"}`))).toThrow(/Bad control character/);
  expect(() => parseJsonBody(Buffer.from(`{"s": "${"x".repeat(70_000)}`))).toThrow(/Unterminated string/);
});

const SHORT_ESCAPES: Record<string, string> = { '"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t" };
const unicodeEscapes = (character: string, upper: boolean) =>
  [...Array(character.length).keys()].map((i) => `\\u${character.charCodeAt(i).toString(16).padStart(4, "0")[upper ? "toUpperCase" : "toLowerCase"]()}`).join("");

/**
 * A JSON string literal (without its quotes) for `text`, each character written one of the
 * ways JSON allows, by `ways`: as JSON.stringify writes it, as \uXXXX in lower or upper case
 * (a pair as two escapes), or as its short escape (`\/` included) where it has one.
 */
function spell(text: string, ways: number[]): string {
  return [...text]
    .map((character, i) => {
      const way = ways[i % ways.length]! % 4;
      if (way === 1 || way === 2) return unicodeEscapes(character, way === 2);
      if (way === 3 && SHORT_ESCAPES[character]) return SHORT_ESCAPES[character];
      return JSON.stringify(character).slice(1, -1);
    })
    .join("");
}
const spelled = fc.tuple(awkward, fc.array(fc.nat(), { minLength: 1, maxLength: 16 })).map(([text, ways]) => spell(text, ways));
/** Spelled literals long enough to be unescaped in place. */
const spelledLarge = spelled.map((literal) => literal.repeat(Math.ceil(70_000 / literal.length)));

/** A body whose strings (keys too) are spelled with escapes of every kind; large and small strings side by side. */
const spelledBody = fc
  .tuple(fc.oneof(spelled, spelledLarge), fc.array(fc.oneof(spelledLarge, spelled), { minLength: 1, maxLength: 3 }), fc.oneof(spelled, spelledLarge), spelled)
  .map(([key, reports, value, small]) => `{"repo": {"owner": "${small}"}, "junit_xml": [${reports.map((r) => `"${r}"`).join(", ")}], "${key}": "${value}", "n": 1e3}`);

test("strings spelled with every escape (NUL and lone surrogates too) parse exactly as JSON.parse parses them", () => {
  fc.assert(
    fc.property(spelledBody, (text) => {
      expect(text.length).toBeGreaterThan(0);
      const body = Buffer.from(text);
      const expected = JSON.parse(body.toString("utf8"));
      expect(parseJsonBody(Buffer.from(body))).toEqual(expected);
    }),
    { numRuns: 60, seed: 20261124 },
  );
});

test("lone surrogates and NUL in large strings are kept exactly, as JSON.parse keeps them", () => {
  for (const escape of ["\\ud800", "\\udbff", "\\udc00", "\\udfff", "\\ud83d\\ud83d", "\\ude00\\ud83d", "\\u0000"]) {
    for (const text of [`{"s": "${"x".repeat(70_000)}${escape}"}`, `{"s": "${escape}${"é".repeat(40_000)}${escape}y"}`, `{"${escape}": "${"x".repeat(70_000)}", "t": "${escape}"}`]) {
      expect(parseJsonBody(Buffer.from(text))).toEqual(JSON.parse(text));
    }
  }
});

describe("bodies sent in chunks split anywhere, escapes and characters included", () => {
  // The project's body reader on a real HTTP server, answering what it read.
  let server: Server;
  let url: string;
  beforeAll(async () => {
    const app = express();
    app.post("/echo", jsonBody(20 * 1024 * 1024), (req, res) => void res.json({ body: req.body }));
    app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => void res.status(400).json({ error: error.message }));
    server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    const address = server.address() as { port: number };
    url = `http://127.0.0.1:${address.port}/echo`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  /** Sends `body` without a Content-Length, cut at `cuts` (byte offsets), and answers what the server read. */
  function sendChunked(body: Buffer, cuts: number[]): Promise<{ status: number; body: unknown }> {
    return new Promise((resolve, reject) => {
      const req = request(url, { method: "POST", headers: { "content-type": "application/json", "transfer-encoding": "chunked" } });
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) }));
      });
      req.on("error", reject);
      let from = 0;
      for (const cut of [...new Set(cuts.map((c) => c % body.length))].sort((a, b) => a - b)) {
        req.write(body.subarray(from, cut));
        from = cut;
      }
      req.end(body.subarray(from));
    });
  }

  test("over the in-place threshold, every cut reads as JSON.parse reads the whole body", async () => {
    await fc.assert(
      fc.asyncProperty(spelledBody, fc.array(fc.nat(), { minLength: 1, maxLength: 40 }), async (text, cuts) => {
        const body = Buffer.from(text);
        // Cuts near each escape and inside multi-byte characters, not only at random.
        const nearEscapes = [...text.matchAll(/\\u/g)].slice(0, 20).map((m) => Buffer.byteLength(text.slice(0, m.index)) + (m.index % 6));
        const answer = await sendChunked(body, [...cuts, ...nearEscapes]);
        expect(answer).toEqual({ status: 200, body: { body: JSON.parse(text) } });
      }),
      { numRuns: 25, seed: 20261125 },
    );
  });
});
