import fc from "fast-check";
import { parseJsonBody } from "../../src/api/json.js";

// Request bodies carrying large strings (JUnit reports) are parsed without turning the whole
// body into a string: large strings are unescaped in place. JSON.parse is the oracle.

/** Text with everything JSON escapes: quotes, backslashes, control characters, non-ASCII, astral characters. */
const awkward = fc.string({ unit: fc.constantFrom("a", "<", ">", '"', "\\", "/", "\n", "\t", "\r", "\b", "\f", "\u0001", "\u001f", "é", "€", "😀", " ", "&"), minLength: 1, maxLength: 40 });
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
