/**
 * GitHub Actions filter patterns (`branches`, `branches-ignore`, `tags`, `paths`): `*` matches
 * any characters but `/`, `**` any characters, `?` zero or one of the preceding character, `+`
 * one or more of it, `[…]` a class, `\` escapes; a pattern starting with `!` (in `branches` and
 * `paths`) excludes what earlier patterns included, later patterns win. Source:
 * docs.github.com "Workflow syntax for GitHub Actions", "Filter pattern cheat sheet".
 *
 * Matched by simulating the pattern as an automaton, in time linear in the name for a given
 * pattern: patterns come from any repository's workflow files, and a regular expression built
 * from `**a**a**a…` backtracks for seconds.
 */

type Atom = { match: (c: string) => boolean; optional: boolean; repeat: boolean };

/** The longest pattern read; a longer one matches nothing (GitHub's own names are far shorter). */
const MAX_PATTERN = 1024;

function atomsOf(pattern: string, star: (c: string) => boolean): Atom[] {
  const atoms: Atom[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\" && i + 1 < pattern.length) {
      const literal = pattern[++i]!;
      atoms.push({ match: (x) => x === literal, optional: false, repeat: false });
    } else if (c === "*") {
      const any = pattern[i + 1] === "*";
      if (any) i++;
      atoms.push({ match: any ? () => true : star, optional: true, repeat: true });
    } else if ((c === "?" || c === "+") && atoms.length > 0) {
      const last = atoms.at(-1)!;
      if (c === "?") last.optional = true;
      else last.repeat = true;
    } else if (c === "[") {
      const end = pattern.indexOf("]", i + 1);
      if (end === -1) {
        atoms.push({ match: (x) => x === "[", optional: false, repeat: false });
        continue;
      }
      const body = pattern.slice(i + 1, end);
      const ranges: [string, string][] = [];
      for (let j = 0; j < body.length; j++) {
        if (body[j + 1] === "-" && j + 2 < body.length) {
          ranges.push([body[j]!, body[j + 2]!]);
          j += 2;
        } else ranges.push([body[j]!, body[j]!]);
      }
      atoms.push({ match: (x) => ranges.some(([from, to]) => x >= from && x <= to), optional: false, repeat: false });
      i = end;
    } else {
      atoms.push({ match: (x) => x === c, optional: false, repeat: false });
    }
  }
  return atoms;
}

/** Whether `name` matches the whole pattern: a set of positions in the pattern, advanced a character at a time. */
export function globMatches(pattern: string, name: string, options: { starCrossesSlash?: boolean } = {}): boolean {
  if (pattern.length > MAX_PATTERN) return false;
  const atoms = atomsOf(pattern, options.starCrossesSlash ? () => true : (c) => c !== "/");
  const closure = (states: Set<number>) => {
    for (const i of [...states]) {
      let j = i;
      while (j < atoms.length && atoms[j]!.optional) states.add(++j);
    }
    return states;
  };
  let states = closure(new Set([0]));
  for (const c of name) {
    const next = new Set<number>();
    for (const i of states) {
      const atom = atoms[i];
      if (!atom?.match(c)) continue;
      next.add(i + 1);
      if (atom.repeat) next.add(i);
    }
    if (next.size === 0) return false;
    states = closure(next);
  }
  return states.has(atoms.length);
}

/**
 * Whether `name` passes a list of patterns: included by a pattern and not excluded by a later
 * `!pattern`.
 */
export function matchesPatterns(name: string, patterns: readonly string[]): boolean {
  let included = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith("!");
    if (globMatches(negated ? pattern.slice(1) : pattern, name)) included = !negated;
  }
  return included;
}

/** A value a filter key holds: a list of strings, or a single string (GitHub takes both). */
export function patternList(value: unknown): string[] | null {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string" || typeof v === "number").map(String);
  return null;
}
