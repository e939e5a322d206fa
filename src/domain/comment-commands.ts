import { MAX_PRIORITY_VALUE, PRIORITY_NAMES, type PriorityName } from "./priority.js";

/** What a `/greenline …` comment on a pull request asks for. */
export type CommentCommand = { kind: "merge"; priority: PriorityName | number | null; noBatch: boolean; targetBranch: string | null } | { kind: "cancel"; targetBranch: string | null } | { kind: "help" };

export const COMMENT_USAGE = [
  "`/greenline merge` — add this pull request to the merge queue of its base branch",
  "  `--priority urgent|high|medium|low|0-255` (urgent tests ahead of everything), `--no-batch` (tested alone), `--branch <target>` (another queue)",
  "`/greenline cancel` — take it out of the queue (`--branch <target>` likewise)",
  "`/greenline help` — this list",
].join("\n");

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
  const [, verb = "help", ...args] = line.split(/\s+/);
  const options = new Map<string, string | true>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith("--")) return new Error(`unexpected \`${arg}\``);
    const [name, inline] = arg.slice(2).split("=", 2) as [string, string | undefined];
    if (name === "no-batch") options.set(name, true);
    else if (name === "priority" || name === "branch") {
      const value = inline ?? args[++i];
      if (value === undefined || value.startsWith("--")) return new Error(`\`--${name}\` needs a value`);
      options.set(name, value);
    } else {
      return new Error(`unknown option \`--${name}\``);
    }
  }
  const targetBranch = (options.get("branch") as string | undefined) ?? null;
  switch (verb.toLowerCase()) {
    case "merge": {
      const priority = parsePriority(options.get("priority") as string | undefined);
      if (priority instanceof Error) return priority;
      return { kind: "merge", priority, noBatch: options.has("no-batch"), targetBranch };
    }
    case "cancel":
      if (options.has("priority") || options.has("no-batch")) return new Error("`cancel` takes only `--branch`");
      return { kind: "cancel", targetBranch };
    case "help":
      return { kind: "help" };
    default:
      return new Error(`unknown command \`${verb}\``);
  }
}

function parsePriority(text: string | undefined): PriorityName | number | null | Error {
  if (text === undefined) return null;
  const name = text.toLowerCase();
  if (name in PRIORITY_NAMES) return name as PriorityName;
  if (/^\d+$/.test(text) && Number(text) <= MAX_PRIORITY_VALUE) return Number(text);
  return new Error(`\`--priority\` must be urgent, high, medium, low or a number from 0 to ${MAX_PRIORITY_VALUE}, not \`${text}\``);
}
