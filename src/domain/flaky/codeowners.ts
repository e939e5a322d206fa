import ignore, { type Ignore } from "ignore";

type Rule = { matcher: Ignore; owners: string[] };

/**
 * A CODEOWNERS file (GitHub's format; GitLab's `[Section]` headers are read as plain rules).
 * Patterns follow gitignore rules, which the maintained `ignore` package implements; as on
 * GitHub, the last matching pattern decides, and a pattern without owners un-owns its files.
 */
export class CodeOwners {
  readonly #rules: Rule[] = [];
  readonly #cache = new Map<string, string[]>();

  constructor(readonly text: string) {
    for (const raw of text.split(/\r?\n/)) {
      const line = raw.replace(/(^|\s)#.*$/, "").trim();
      if (!line || /^\^?\[.*\](\[\d+\])?(\s|$)/.test(line)) continue;
      const [pattern, ...owners] = line.split(/\s+/);
      if (!pattern || pattern.startsWith("!")) continue;
      this.#rules.push({ matcher: ignore().add(pattern.replace(/\\#/g, "#")), owners });
    }
  }

  /** The owners of a file path (relative to the repository root), [] when none. */
  ownersOf(path: string): string[] {
    const file = path.replace(/\\/g, "/").replace(/^(\.\/|\/)+/, "");
    if (!file) return [];
    let owners = this.#cache.get(file);
    if (owners === undefined) {
      owners = [];
      for (let i = this.#rules.length - 1; i >= 0; i--) {
        const rule = this.#rules[i]!;
        if (safeIgnores(rule.matcher, file)) {
          owners = rule.owners;
          break;
        }
      }
      this.#cache.set(file, owners);
    }
    return owners;
  }
}

function safeIgnores(matcher: Ignore, path: string): boolean {
  try {
    return matcher.ignores(path);
  } catch {
    // `ignore` refuses paths it cannot judge (e.g. "../x"); such a path has no owner.
    return false;
  }
}
