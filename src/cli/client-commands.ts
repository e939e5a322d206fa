import { parseArgs } from "node:util";
import { doctor, prCancel, prRestart, prStatus, prSubmit, type QueueOptions, queueSetState, queueShow, targetsSet } from "./queue-commands.js";
import { type FreezeOptions, queueFreeze, queueFreezes, queueUnfreeze } from "./freeze-commands.js";
import { type AuditOptions, audit } from "./audit-commands.js";
import { webhookCommand } from "./webhook-commands.js";
import { CliUsageError } from "./greenline-client.js";
import { type PolicyOptions, testPolicyBacktest, testQuarantine, testRun, testUpload, type TestOptions } from "./test-commands.js";
import { SERVICE_UNAVAILABLE, ServiceUnreachableError } from "./unreachable.js";
import { COMMANDS, commandHelp, optionsOf, overview, shortUsage, version } from "./usage.js";

/**
 * The commands that talk to Greenline over HTTP only, and the front both entries share (options,
 * --version, help, exit codes). The packaged client (src/cli/client.ts → packages/cli) is this
 * alone; the service's `greenline` (src/cli/main.ts) adds the commands that need its database.
 * Nothing here may import the store, Prisma or the configuration: esbuild bundles it into a
 * package without dependencies (scripts/build-cli.mjs refuses any other package).
 */

export type Out = (line: string) => void;

export const OPTIONS = {
  org: { type: "string" },
  name: { type: "string" },
  role: { type: "string" },
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
  check: { type: "string" },
  "check-run-id": { type: "string" },
  junit: { type: "string", multiple: true },
  "no-quarantine": { type: "boolean" },
  always: { type: "boolean" },
  never: { type: "boolean" },
  auto: { type: "boolean" },
  reason: { type: "string" },
  // test policy backtest
  since: { type: "string" },
  threshold: { type: "string" },
  "broken-rate": { type: "string" },
  "min-samples": { type: "string" },
  "window-days": { type: "string" },
  "recovery-days": { type: "string" },
  "auto-quarantine": { type: "string" },
  "target-branch": { type: "string" },
  mode: { type: "string" },
  priority: { type: "string" },
  "no-batch": { type: "boolean" },
  emergency: { type: "string" },
  hotfix: { type: "string" },
  // queue freeze / unfreeze
  from: { type: "string" },
  until: { type: "string" },
  days: { type: "string" },
  "time-zone": { type: "string" },
  "no-testing": { type: "boolean" },
  "freeze-id": { type: "string" },
  action: { type: "string" },
  json: { type: "boolean" },
  // db backup (the service's CLI)
  to: { type: "string" },
  // webhooks (webhook-commands.ts)
  "endpoint-url": { type: "string" },
  events: { type: "string" },
  description: { type: "string" },
  secret: { type: "string" },
  enable: { type: "boolean" },
  disable: { type: "boolean" },
  "rotate-secret": { type: "boolean" },
  limit: { type: "string" },
  "page-token": { type: "string" },
  // setup github (the service's command: main.ts); one option table, so the packaged client can say where it runs.
  "webhook-url": { type: "string" },
  port: { type: "string" },
  "github-url": { type: "string" },
  "api-url": { type: "string" },
  dotenv: { type: "string" },
  force: { type: "boolean" },
} as const;

export type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

/** A command of another entry: answers its exit code, or undefined when `key` ("group command") is not one of its commands. */
export type MoreCommands = (key: string, values: Values, rest: string[], out: Out) => Promise<number | undefined>;

/** Runs a command that needs only Greenline's HTTP API; undefined when `key` is none of them. */
export async function runClientCommand(key: string, values: Values, rest: string[], out: Out): Promise<number | undefined> {
  switch (key) {
    case "test upload":
      return testUpload(values as TestOptions, out);
    case "test run":
      return testRun(values as TestOptions, rest, out);
    case "test quarantine": {
      const chosen = (["always", "never", "auto"] as const).filter((s) => values[s]);
      if (chosen.length !== 1) throw new CliUsageError("test quarantine needs exactly one of --always, --never, --auto");
      return testQuarantine(values as TestOptions, rest[0], chosen[0]!, out);
    }
    case "test policy":
      if (rest[0] !== "backtest") throw new CliUsageError(`test policy needs a command: backtest${rest[0] ? ` (got ${JSON.stringify(rest[0])})` : ""}`);
      return testPolicyBacktest(values as PolicyOptions, out);
    case "pr submit":
      return prSubmit(values as QueueOptions, out);
    case "pr cancel":
      return prCancel(values as QueueOptions, out);
    case "pr status":
      return prStatus(values as QueueOptions, out);
    case "pr restart":
      return prRestart(values as QueueOptions, out);
    case "queue show":
      return queueShow(values as QueueOptions, out);
    case "doctor":
      return doctor(values as QueueOptions, out);
    case "queue pause":
      return queueSetState(values as QueueOptions, "paused", out);
    case "queue resume":
      return queueSetState(values as QueueOptions, "running", out);
    case "queue freeze":
      return queueFreeze(values as FreezeOptions, out);
    case "queue unfreeze":
      return queueUnfreeze(values as FreezeOptions, out);
    case "queue freezes":
      return queueFreezes(values as FreezeOptions, out);
    case "audit":
      return audit(values as AuditOptions, out);
    case "targets set":
      return targetsSet(values as QueueOptions, rest[0], out);
    case "webhooks create":
    case "webhooks list":
    case "webhooks update":
    case "webhooks delete":
    case "webhooks deliveries":
    case "webhooks redeliver":
      return webhookCommand(key.slice("webhooks ".length), rest, values, out);
    default:
      return undefined;
  }
}

/** Refuses an option the command does not take (one option table serves every command; each command's help says which it takes). */
function checkOptions(key: string, values: Values): void {
  const allowed = optionsOf(key);
  if (!allowed) return;
  const foreign = Object.keys(values).filter((name) => values[name as keyof Values] !== undefined && !allowed.has(name));
  if (foreign.length > 0) throw new CliUsageError(`${key} does not take ${foreign.map((name) => `--${name}`).join(", ")}`);
}

/**
 * The CLI: --version, help, the client commands, then `more` (the service's commands, or the
 * client's refusal of them). `client`: the packaged client, whose overview lists the service's
 * commands apart.
 */
export async function runCli(argv: string[], out: Out, more: MoreCommands, client = false): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  const [group, command, ...rest] = positionals;
  if (values.version) {
    out(version());
    return 0;
  }
  if (group === "help" || values.help) {
    const words = group === "help" ? positionals.slice(1, 3) : positionals.slice(0, 2);
    if (words.length === 0) {
      out(overview(client));
      return 0;
    }
    const help = commandHelp(words);
    if (!help) throw new CliUsageError(`no command ${words.join(" ")}`);
    out(help);
    return 0;
  }
  if (!group) throw new CliUsageError("a command is needed");
  const key = command === undefined ? group : `${group} ${command}`;
  checkOptions(key, values);
  const code = (await runClientCommand(key, values, rest, out)) ?? (await more(key, values, rest, out));
  if (code === undefined) throw new CliUsageError(`unknown command: ${positionals.join(" ")}`);
  return code;
}

/** The packaged client: the service's commands (token, db, setup) are refused with where to run them. */
export function runClient(argv: string[], out: Out): Promise<number> {
  return runCli(
    argv,
    out,
    async (key) => {
      if (!COMMANDS[key]) return undefined;
      throw new CliUsageError(
        `${key} works on the service's own database and settings, so it runs where the Greenline service runs, not in the packaged client: ` +
          `there, run \`npx greenline ${key} …\` in its checkout (with its DATABASE_URL) or \`docker compose exec greenline node bin/greenline.js ${key} …\` in its container`,
      );
    },
    true,
  );
}

/** The command words of argv (for the usage line of a mistake), even when parsing failed. */
function commandWords(argv: string[]): string[] {
  const end = argv.indexOf("--");
  return (end === -1 ? argv : argv.slice(0, end)).filter((a) => !a.startsWith("-")).slice(0, 2);
}

/** The exit code of a command that threw, after printing why with `err`: 2 usage, 69 unreachable, 1 otherwise. */
export function exitCodeOf(error: unknown, argv: string[], err: Out): number {
  if (error instanceof CliUsageError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
    err(`greenline: ${(error as Error).message}\n${shortUsage(commandWords(argv))}`);
    return 2;
  }
  if (error instanceof ServiceUnreachableError) {
    err(`greenline: ${error.message}`);
    return SERVICE_UNAVAILABLE;
  }
  err(`greenline: ${error instanceof Error ? error.message : String(error)}`);
  return 1;
}

/** Runs `run` on the process's arguments and exits with its code. */
export function runAsProcess(run: (argv: string[], out: Out) => Promise<number>): void {
  const argv = process.argv.slice(2);
  run(argv, (line) => console.log(line)).then(
    (code) => process.exit(code),
    (error: unknown) => process.exit(exitCodeOf(error, argv, (line) => console.error(line))),
  );
}
