import { MAX_PRIORITY_VALUE, PRIORITY_NAMES, type PriorityName } from "./priority.js";
import { isRealInstant } from "./freezes.js";

/** What a `/greenline …` comment on a pull request asks for. */
export type CommentCommand =
  | { kind: "merge"; priority: PriorityName | number | null; noBatch: boolean; targetBranch: string | null; emergencyReason: string | null }
  | { kind: "cancel"; targetBranch: string | null }
  | { kind: "freeze"; reason: string; until: string | null; testing: boolean; targetBranch: string | null }
  | { kind: "unfreeze"; targetBranch: string | null }
  | { kind: "help" };

export const COMMENT_USAGE = [
  "`/greenline merge` — add this pull request to the merge queue of its base branch",
  "  `--priority urgent|high|medium|low|0-255` (urgent tests ahead of everything), `--no-batch` (tested alone), `--branch <target>` (another queue)",
  '  `--emergency "reason"` (or `--hotfix`) — ahead of everything, and merged even while the queue is frozen (admins and maintainers)',
  '`/greenline freeze "reason"` — freeze the queue: nothing merges but hotfixes; `--until <ISO time>`, `--no-testing` (hold testing too)',
  "`/greenline unfreeze` — end the freezes holding now",
  "`/greenline cancel` — take it out of the queue (`--branch <target>` likewise)",
  "`/greenline help` — this list",
].join("\n");

/** The most characters a reason given in a comment keeps. */
export const COMMENT_REASON_MAX = 255;

/**
 * A command line's words: runs of non-space characters, or text in double or single quotes
 * (straight or typographic, as editors type them), quotes removed. An unclosed quote is an Error.
 */
function wordsOf(line: string): string[] | Error {
  const words: string[] = [];
  const quote = /^["'\u201c\u2018]/;
  const closing: Record<string, string> = { '"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019" };
  let rest = line.trim();
  while (rest.length > 0) {
    let word = "";
    // A word may start plain and go on quoted (`--hotfix="fix login"`).
    while (rest.length > 0 && !/^\s/.test(rest)) {
      if (quote.test(rest)) {
        const close = closing[rest[0]!]!;
        const end = rest.indexOf(close, 1);
        if (end < 0) return new Error(`unclosed quote \`${rest[0]}\``);
        word += rest.slice(1, end);
        rest = rest.slice(end + 1);
      } else {
        const plain = /^[^\s"'\u201c\u2018]+/.exec(rest)![0];
        word += plain;
        rest = rest.slice(plain.length);
      }
    }
    words.push(word);
    rest = rest.trimStart();
  }
  return words;
}

const VALUED = new Set(["priority", "branch", "emergency", "hotfix", "until"]);
const FLAGS = new Set(["no-batch", "no-testing"]);
const ALLOWED: Record<string, ReadonlySet<string>> = {
  merge: new Set(["priority", "branch", "no-batch", "emergency", "hotfix"]),
  cancel: new Set(["branch"]),
  freeze: new Set(["branch", "until", "no-testing"]),
  unfreeze: new Set(["branch"]),
  help: new Set(),
};

/**
 * Reads the command of a comment: its first line that starts with `/greenline`, or null when
 * there is none (a comment that merely mentions Greenline). A malformed command is an Error
 * whose message says what is wrong, for the reply.
 */
export function parseCommentCommand(body: string): CommentCommand | Error | null {
  const line = body
    .split(/\r?\n/)
    .map((l) => l.trim())
    .find((l) => /^\/greenline(\s|$)/i.test(l));
  if (line === undefined) return null;
  const words = wordsOf(line);
  if (words instanceof Error) return words;
  const [, verbWord = "help", ...args] = words;
  const verb = verbWord.toLowerCase();
  const allowed = ALLOWED[verb];
  if (!allowed) return new Error(`unknown command \`${verbWord}\``);
  const options = new Map<string, string | true>();
  const free: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith("--")) {
      free.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const inline = eq < 0 ? undefined : arg.slice(eq + 1);
    if (FLAGS.has(name)) options.set(name, true);
    else if (VALUED.has(name)) {
      const value = inline ?? args[++i];
      if (value === undefined || value.startsWith("--")) return new Error(`\`--${name}\` needs a value`);
      options.set(name, value);
    } else {
      return new Error(`unknown option \`--${name}\``);
    }
    if (!allowed.has(name)) {
      const takes = [...allowed].map((o) => `\`--${o}\``);
      return new Error(takes.length === 0 ? `\`${verb}\` takes no option` : `\`${verb}\` takes only ${takes.join(", ")}`);
    }
  }
  // Only a freeze's reason is free text.
  if (free.length > 0 && verb !== "freeze") return new Error(`unexpected \`${free[0]}\``);
  const targetBranch = (options.get("branch") as string | undefined) ?? null;
  switch (verb) {
    case "merge": {
      const priority = parsePriority(options.get("priority") as string | undefined);
      if (priority instanceof Error) return priority;
      // `--hotfix` is `--emergency` under the name people use for it.
      if (options.has("emergency") && options.has("hotfix")) return new Error("`--hotfix` is `--emergency`: give one of them");
      const flag = options.has("hotfix") ? "hotfix" : "emergency";
      const emergency = options.get(flag) as string | undefined;
      if (emergency !== undefined && emergency.trim() === "") return new Error(`\`--${flag}\` needs a reason`);
      if (emergency !== undefined && priority !== null) return new Error(`an emergency goes ahead of everything: leave out \`--priority\``);
      return { kind: "merge", priority, noBatch: options.has("no-batch"), targetBranch, emergencyReason: emergency === undefined ? null : emergency.trim().slice(0, COMMENT_REASON_MAX) };
    }
    case "cancel":
      return { kind: "cancel", targetBranch };
    case "freeze": {
      const reason = free.join(" ").trim();
      if (reason === "") return new Error('`freeze` needs a reason: `/greenline freeze "release 4.2"`');
      const until = (options.get("until") as string | undefined) ?? null;
      if (until !== null && !isRealInstant(until)) return new Error(`\`--until\` must be a time with its offset, such as 2026-12-01T09:00Z, not \`${until}\``);
      return { kind: "freeze", reason: reason.slice(0, COMMENT_REASON_MAX), until, testing: !options.has("no-testing"), targetBranch };
    }
    case "unfreeze":
      return { kind: "unfreeze", targetBranch };
    default:
      return { kind: "help" };
  }
}

function parsePriority(text: string | undefined): PriorityName | number | null | Error {
  if (text === undefined) return null;
  const name = text.toLowerCase();
  if (name in PRIORITY_NAMES) return name as PriorityName;
  if (/^\d+$/.test(text) && Number(text) <= MAX_PRIORITY_VALUE) return Number(text);
  return new Error(`\`--priority\` must be urgent, high, medium, low or a number from 0 to ${MAX_PRIORITY_VALUE}, not \`${text}\``);
}
