import { parseArgs } from "node:util";
import { DEFAULT_DATABASE_URL } from "../config.js";
import type { Database } from "../store/database.js";
import { CliUsageError, testQuarantine, testRun, testUpload, type TestOptions } from "./test-commands.js";
import { SERVICE_UNAVAILABLE, ServiceUnreachableError } from "./unreachable.js";
import { commandHelp, overview, shortUsage, version } from "./usage.js";

class UsageError extends CliUsageError {}

/** The database and token code load only for the commands that use them: help, --version and `test` never pull in Prisma. */
async function withDatabase<T>(fn: (db: Database, tokens: typeof import("../auth/tokens.js")) => Promise<T>): Promise<T> {
  const [{ Database }, tokens] = await Promise.all([import("../store/database.js"), import("../auth/tokens.js")]);
  const db = await Database.open(process.env.DATABASE_URL?.trim() || DEFAULT_DATABASE_URL);
  try {
    return await fn(db, tokens);
  } finally {
    await db.close();
  }
}

function option(values: Record<string, string | boolean | string[] | undefined>, name: string): string {
  const value = values[name];
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} is required`);
  return value.trim();
}

export async function run(argv: string[], out: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      org: { type: "string" },
      name: { type: "string" },
      help: { type: "boolean", short: "h" },
      version: { type: "boolean", short: "V" },
      url: { type: "string" },
      token: { type: "string" },
      repo: { type: "string" },
      host: { type: "string" },
      commit: { type: "string" },
      branch: { type: "string" },
      pr: { type: "string" },
      variant: { type: "string" },
      codeowners: { type: "string" },
      junit: { type: "string", multiple: true },
      always: { type: "boolean" },
      never: { type: "boolean" },
      auto: { type: "boolean" },
      "webhook-url": { type: "string" },
      port: { type: "string" },
      "github-url": { type: "string" },
      "api-url": { type: "string" },
      dotenv: { type: "string" },
      force: { type: "boolean" },
      "endpoint-url": { type: "string" },
      events: { type: "string" },
      description: { type: "string" },
      secret: { type: "string" },
      enable: { type: "boolean" },
      disable: { type: "boolean" },
      "rotate-secret": { type: "boolean" },
      limit: { type: "string" },
      "page-token": { type: "string" },
    },
    allowPositionals: true,
  });
  const [group, command, ...rest] = positionals;
  if (values.version) {
    out(version());
    return 0;
  }
  if (group === "help" || values.help) {
    const words = group === "help" ? positionals.slice(1, 3) : positionals.slice(0, 2);
    if (words.length === 0) {
      out(overview());
      return 0;
    }
    const help = commandHelp(words);
    if (!help) throw new UsageError(`no command ${words.join(" ")}`);
    out(help);
    return 0;
  }
  if (!group) throw new UsageError("a command is needed");
  const slugPattern = /^[a-z0-9][a-z0-9-]{0,62}$/i;
  switch (`${group} ${command ?? ""}`) {
    case "token create": {
      const org = option(values, "org");
      if (!slugPattern.test(org)) throw new UsageError("--org must be letters, digits and dashes");
      const { id, token } = await withDatabase((db, { createToken }) => createToken(db, org, values.name ?? "cli"));
      out(`Created token ${id} for organization ${org.toLowerCase()}. Store it now; it is not shown again:`);
      out(token);
      return 0;
    }
    case "token list": {
      const tokens = await withDatabase((db, { listTokens }) => listTokens(db, option(values, "org")));
      for (const t of tokens) out(`${t.id}\t${t.name}\tcreated ${t.createdAt.toISOString()}\t${t.revokedAt ? `revoked ${t.revokedAt.toISOString()}` : "active"}`);
      if (tokens.length === 0) out("no tokens");
      return 0;
    }
    case "token revoke": {
      const id = rest[0];
      if (!id) throw new UsageError("token revoke needs the token's id (see token list)");
      const found = await withDatabase((db, { revokeToken }) => revokeToken(db, id, new Date()));
      if (!found) {
        out(`no token with id ${id}`);
        return 1;
      }
      out(`revoked ${id}`);
      return 0;
    }
    case "test upload":
      return testUpload(values as TestOptions, out);
    case "test run":
      return testRun(values as TestOptions, rest, out);
    case "test quarantine": {
      const chosen = (["always", "never", "auto"] as const).filter((s) => values[s]);
      if (chosen.length !== 1) throw new UsageError("test quarantine needs exactly one of --always, --never, --auto");
      return testQuarantine(values as TestOptions, rest[0], chosen[0]!, out);
    }
    case "setup github": {
      const { setupGitHub } = await import("./setup-github.js");
      return setupGitHub(values, out);
    }
    case "webhooks create":
    case "webhooks list":
    case "webhooks update":
    case "webhooks delete":
    case "webhooks deliveries":
    case "webhooks redeliver": {
      const { webhookCommand } = await import("./webhook-commands.js");
      return webhookCommand(command, rest, values, out);
    }
    case "db migrate": {
      await withDatabase(async () => undefined);
      out("database is up to date");
      return 0;
    }
    default:
      throw new UsageError(`unknown command: ${positionals.join(" ")}`);
  }
}

/** The command words of argv (for the usage line of a mistake), even when parsing failed. */
function commandWords(argv: string[]): string[] {
  const end = argv.indexOf("--");
  return (end === -1 ? argv : argv.slice(0, end)).filter((a) => !a.startsWith("-")).slice(0, 2);
}

const argv = process.argv.slice(2);
run(argv, (line) => console.log(line)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof CliUsageError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      console.error(`greenline: ${(error as Error).message}\n${shortUsage(commandWords(argv))}`);
      process.exit(2);
    }
    if (error instanceof ServiceUnreachableError) {
      console.error(`greenline: ${error.message}`);
      process.exit(SERVICE_UNAVAILABLE);
    }
    console.error(`greenline: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
