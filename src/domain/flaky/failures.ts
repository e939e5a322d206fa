import { createHash } from "node:crypto";

const MAX_SUMMARY = 200;

/**
 * A failure message reduced to its kind, so that the same failure in different runs reads the
 * same: colour codes go, and timestamps, UUIDs, long hex ids, file paths (with their line and
 * column), quoted durations and other numbers become placeholders. The first non-empty line is
 * kept, at most 200 characters.
 */
export function normalizeFailure(message: string): string {
  const line =
    message
      // biome-ignore lint/suspicious/noControlCharactersInRegex: ESC (\x1b) starts the colour codes removed here
      .replace(/\x1b\[[0-9;]*[A-Za-z]/g, "")
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l !== "") ?? "";
  return line
    .replace(/\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?/g, "<time>")
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "<uuid>")
    .replace(/\b0x[0-9a-f]+\b/gi, "<hex>")
    .replace(/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b/gi, "<hex>")
    .replace(/(?:[A-Za-z]:)?(?:[\w.@-]*[/\\])+[\w.@-]+(?::\d+)*/g, "<path>")
    .replace(/\d+(\.\d+)?/g, "<n>")
    .replace(/\s+/g, " ")
    .slice(0, MAX_SUMMARY);
}

/** A short stable key for a normalized failure. */
export function failureSignature(summary: string): string {
  return createHash("sha256").update(summary).digest("base64url").slice(0, 22);
}
