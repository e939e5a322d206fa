/**
 * GitHub Actions filter patterns (`branches`, `branches-ignore`, `tags`, `paths`): `*` matches
 * any characters but `/`, `**` any characters, `?` zero or one of the preceding character, `+`
 * one or more of it, `[…]` a class, `\` escapes; a pattern starting with `!` (in `branches` and
 * `paths`) excludes what earlier patterns included, later patterns win. Source:
 * docs.github.com "Workflow syntax for GitHub Actions", "Filter pattern cheat sheet".
 */

const compiled = new Map<string, RegExp | null>();

export function patternRegex(pattern: string): RegExp | null {
  let cached = compiled.get(pattern);
  if (cached !== undefined) return cached;
  let source = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\" && i + 1 < pattern.length) {
      source += escape(pattern[++i]!);
    } else if (c === "*") {
      if (pattern[i + 1] === "*") {
        source += ".*";
        i++;
      } else source += "[^/]*";
    } else if (c === "?" || c === "+") {
      source += c;
    } else if (c === "[") {
      const end = pattern.indexOf("]", i + 1);
      if (end === -1) source += "\\[";
      else {
        source += `[${pattern.slice(i + 1, end).replace(/\\/g, "\\\\")}]`;
        i = end;
      }
    } else source += escape(c);
  }
  try {
    cached = new RegExp(`^${source}$`);
  } catch {
    cached = null;
  }
  compiled.set(pattern, cached);
  return cached;
}

function escape(c: string): string {
  return /[.^$|(){}\]\\/]/.test(c) ? `\\${c}` : c;
}

/**
 * Whether `name` passes a list of patterns: included by a pattern and not excluded by a later
 * `!pattern`. An unreadable pattern matches nothing.
 */
export function matchesPatterns(name: string, patterns: readonly string[]): boolean {
  let included = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith("!");
    const regex = patternRegex(negated ? pattern.slice(1) : pattern);
    if (regex?.test(name)) included = !negated;
  }
  return included;
}

/** A value a filter key holds: a list of strings, or a single string (GitHub takes both). */
export function patternList(value: unknown): string[] | null {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string" || typeof v === "number").map(String);
  return null;
}
