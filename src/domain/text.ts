/**
 * Characters a string from a client may hold that no store can: NUL, which PostgreSQL's text
 * refuses, and a lone UTF-16 surrogate (half of a pair), which is not Unicode and has no UTF-8
 * form. JSON carries both (`"\u0000"`, `"\ud800"`, and JSON.parse keeps them); XML carries
 * neither, so in a JUnit report they mean a malformed report.
 */
export type Unstorable = { kind: "nul" | "lone_surrogate"; index: number };

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

// String.prototype.isWellFormed (Node 20+) answers at once for one-byte strings, where no
// surrogate can be, and scans natively otherwise; lib es2023 does not declare it yet.
const isWellFormed = (text: string): boolean => (text as unknown as { isWellFormed(): boolean }).isWellFormed();

/** The first character of `text` no store can hold, or null. */
export function unstorableCharacter(text: string): Unstorable | null {
  const nul = text.indexOf("\u0000");
  const lone = isWellFormed(text) ? -1 : text.search(LONE_SURROGATE);
  if (nul === -1 && lone === -1) return null;
  return nul !== -1 && (lone === -1 || nul < lone) ? { kind: "nul", index: nul } : { kind: "lone_surrogate", index: lone };
}
