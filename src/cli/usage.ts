import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { DEFAULT_DATABASE_URL } from "../defaults.js";

/**
 * Each command's own help: its usage line, what it does, and its options. The options a command
 * takes are the ones its help lists (a line starting with --name): the CLI refuses any other.
 * `service`: the command needs the service's database or settings, so runs where it runs.
 * `brief`: the command's line in the overview, when its summary runs over more than one line
 * (the overview shows one line a command, and a summary's first line may end mid-sentence).
 */
type CommandHelp = { usage: string; summary: string; brief?: string; options?: string[]; service?: true };

/** --url and --token, their descriptions starting at `column` (the column of the command's other options). */
function connectionOptions(column: number): string[] {
  return [`${"--url <url>".padEnd(column)}Greenline's address (GREENLINE_URL)`, `${"--token <token>".padEnd(column)}an API token (GREENLINE_API_TOKEN)`];
}

const CONNECTION_OPTIONS = [
  ...connectionOptions(21),
  "--org <slug>         the organization (GREENLINE_ORG)",
  "--repo owner/name    the repository (default: from the CI, else the git remote origin)",
  "--host <host>        the code host (default: from the CI or remote, else github.com)",
];
const WHERE_OPTIONS = [
  "--commit <sha>       the commit tested (default: from the CI, else git HEAD)",
  "--branch <name>      its branch (default: from the CI, else git's current branch)",
  "--pr <number>        its pull request (default: from the CI)",
  "--variant <name>     a variant of the same tests (e.g. an OS), kept apart",
  "--codeowners <path>  a CODEOWNERS file to send with the results",
  "--junit <glob>       JUnit XML reports (repeat, or separate with commas)",
  "--check <name>       the CI check (job) the results come from, exactly as the code host names it (GREENLINE_CHECK)",
  "--check-run-id <id>  that job's check run id (GREENLINE_CHECK_RUN_ID); in GitHub Actions the job context's check_run_id",
  "                     The merge queue reads a failed check's failures only from results naming it. Neither is",
  "                     guessed from the CI: a job's name: or matrix makes its check's name differ from GITHUB_JOB,",
  "                     and no variable holds the check run id (only the job context).",
];
const QUEUE_CONNECTION = CONNECTION_OPTIONS.filter((o) => !o.startsWith("--org"));
const TARGET_BRANCH = "--target-branch <b>  the queue's branch: the one the PR merges into (default: from a pull request build's CI)";
const QUEUE_OPTIONS = [...QUEUE_CONNECTION, TARGET_BRANCH];
const PR_OPTIONS = [...QUEUE_OPTIONS, "--pr <number>        the pull request (default: from the CI)"];
const JSON_OPTION = "--json               print Greenline's answer as JSON";
const WEBHOOK_CONNECTION = connectionOptions(23);
const DATABASE_NOTE = `The database is DATABASE_URL (default ${DEFAULT_DATABASE_URL}).`;

export const COMMANDS: Record<string, CommandHelp> = {
  "token create": {
    usage: "greenline token create --org <slug> [--name <label>] [--role write|admin|read]",
    summary: "Create an API token; prints it as the last line.",
    service: true,
    options: [
      "--org <slug>         the organization it belongs to",
      "--name <label>       a label shown by token list (default: cli)",
      "--role write|admin|read  write: every operation (default); admin: also emergency merges; read: reads only (dashboard viewers)",
      DATABASE_NOTE,
    ],
  },
  "token list": { usage: "greenline token list --org <slug>", summary: "List an organization's tokens (never the secrets).", options: ["--org <slug>         the organization", DATABASE_NOTE], service: true },
  "token revoke": {
    usage: "greenline token revoke <id>",
    summary: "Revoke a token (its id is in token list). Exit 1 when there is no such token.",
    options: [DATABASE_NOTE],
    service: true,
  },
  "setup github": {
    usage: "greenline setup github --webhook-url <url> [--org <login>] [options]",
    brief: "Register Greenline's GitHub App (in a browser) and write its credentials to an env file.",
    summary:
      "Register Greenline's GitHub App from app.yml and write its credentials to an env file (mode 600):\n" +
      "APP_ID, PRIVATE_KEY, WEBHOOK_SECRET, GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET. GitHub's App manifest flow:\n" +
      "it prints a local address to open in a browser; there GitHub asks you to name the App and create it,\n" +
      "then sends you back, and the command prints the App's page and its install link. Run it where the\n" +
      "service runs: the service reads .env from its working directory at start. Exit 1 when GitHub refuses.",
    options: [
      "--webhook-url <url>  required: the public address GitHub delivers webhooks to,",
      "                     https://<your host>/api/github/webhooks (a smee.io channel to forward while developing)",
      "--org <login>        register the App under this organization (you must own it; default: your account)",
      "--name <name>        the App's name (default: app.yml's; names are unique on GitHub, and GitHub's page lets you change it)",
      "--dotenv <path>      where the credentials are written (default: .env); other variables in it are kept",
      "--force              replace credentials already in the env file (default: refuse, register nothing)",
      "--port <port>        the local port of the setup page and GitHub's callback (default: 3456, on 127.0.0.1)",
      "--github-url <url>   GitHub's web address (default: https://github.com; GitHub Enterprise Server: https://<host>)",
      "--api-url <url>      GitHub's API (default: GITHUB_API_URL, else https://api.github.com, or <github-url>/api/v3 for",
      "                     an Enterprise Server); written as GITHUB_API_URL when not api.github.com",
      "The browser must run on the machine the command runs on (the callback is http://127.0.0.1:<port>/callback);",
      "on a remote server, forward the port (ssh -L 3456:127.0.0.1:3456 <server>). It gives up after 15 minutes.",
    ],
    service: true,
  },
  "db migrate": { usage: "greenline db migrate", summary: "Apply the database migrations.", options: [DATABASE_NOTE], service: true },
  "db backup": {
    usage: "greenline db backup --to <file>",
    summary: "Copy the SQLite database to a new file while the service runs (SQLite's online backup). PostgreSQL: pg_dump (docs/operations.md).",
    options: ["--to <file>          the backup's path; an existing file is never overwritten", DATABASE_NOTE],
    service: true,
  },
  "test upload": {
    usage: "greenline test upload --junit <glob> [options]",
    summary: "Upload JUnit reports to Greenline. Exit 70 when the upload fails or no report matches.",
    options: [...CONNECTION_OPTIONS, ...WHERE_OPTIONS],
  },
  "test run": {
    usage: "greenline test run --junit <glob> [options] -- <command> [args...]",
    brief: "Run the command and upload its reports; exit 0 when every failure is a quarantined test.",
    summary: "Run the command, upload the reports it wrote, and exit 0 when every failure is a quarantined test;\notherwise with the command's own exit code (also when Greenline cannot answer or a report is malformed).",
    options: [...CONNECTION_OPTIONS, ...WHERE_OPTIONS, "--no-quarantine      only upload the reports the command wrote: its exit code always stands"],
  },
  "test quarantine": {
    usage: "greenline test quarantine <test-id> --always|--never|--auto [--reason <text>] [options]",
    summary: "Override a test's quarantine: always quarantined, never, or as its history decides.\nOne of --always, --never and --auto is required.",
    brief: "Override a test's quarantine: always quarantined, never, or as its history decides.",
    options: [
      "--always             quarantined whatever its history",
      "--never              never quarantined",
      "--auto               back to automatic: quarantined while its history finds it flaky (where every test starts)",
      "--reason <text>      why, shown with the test (up to 1000 characters; without it, a reason given before is cleared)",
      ...CONNECTION_OPTIONS,
    ],
  },
  "test policy": {
    usage: "greenline test policy backtest [--since 30d] [--threshold R] [setting options] [options]",
    brief: "Replay the repository's stored results under other detection settings: what would have changed.",
    summary:
      "Replay the repository's stored test results of a period under its detection and quarantine settings and\n" +
      "under them changed by the options given, and print what would have changed: tests quarantined and released,\n" +
      "queue runs whose failures quarantine would have excused (ejections avoided or added), regressions it would\n" +
      "have hidden. Reads only: nothing is changed (change settings with the API's flaky-tests/update-settings).",
    options: [
      "--since <N>d         the period: the last N days (default 30d, at most 90d)",
      "--threshold <R>      the failure rate at or above which a test is flaky (0–1; the setting flakyRate)",
      "--broken-rate <R>    the failure rate at or above which a test is broken (brokenRate)",
      "--min-samples <N>    runs in the window before the rate rules judge a test (minSamples)",
      "--window-days <N>    the rate rules' window in days (windowDays)",
      "--recovery-days <N>  days without pass-on-retry evidence before a flaky test recovers (recoveryDays)",
      "--auto-quarantine <on|off>  quarantine tests found flaky (autoQuarantine)",
      "--json               print the API's answer as JSON",
      ...CONNECTION_OPTIONS,
    ],
  },
  "pr submit": {
    usage: 'greenline pr submit [--pr N] [--target-branch B] [--priority P] [--no-batch] [--emergency "why"] [options]',
    summary: "Submit the pull request to the merge queue of its target branch (again: change its priority and batching).",
    options: [
      ...PR_OPTIONS,
      "--priority <p>       urgent, high, medium (the default), low, or 0 (first) to 255 (last)",
      "--no-batch           test it on its own, never in a batch",
      '--emergency "why"    an emergency merge (a hotfix): ahead of everything, merged even while the queue is frozen;',
      "                     needs an admin token (--hotfix is the same)",
      '--hotfix "why"       the same as --emergency',
    ],
  },
  "pr cancel": { usage: "greenline pr cancel [--pr N] [--target-branch B] [options]", summary: "Take the pull request out of the queue.", options: PR_OPTIONS },
  "pr status": {
    usage: "greenline pr status [--pr N] [--target-branch B] [--json] [options]",
    brief: "Show the pull request's state, position, failure reason and current test run; exit 1 when not in the queue.",
    summary: "Show the pull request's state, position, failure reason and current test run.\nExit 1 when it is not in the queue (never submitted, cancelled, failed or merged).",
    options: [...PR_OPTIONS, JSON_OPTION],
  },
  "pr restart": { usage: "greenline pr restart [--pr N] [--target-branch B] [options]", summary: "Run the queued pull request's tests again.", options: PR_OPTIONS },
  "queue show": {
    usage: "greenline queue show [--target-branch B] [--json] [options]",
    summary: "Show the queue's state and settings and its pull requests in order.",
    options: [...QUEUE_OPTIONS, JSON_OPTION],
  },
  doctor: {
    usage: "greenline doctor [--repo owner/name] [--branch B] [--mode push|draft_pr] [--json] [options]",
    brief: "Preflight: will each check the queue requires report on its testing commits? Exit 1 when not.",
    summary:
      "Preflight: reads the branch's required checks, the repository's workflow files and who reported checks on\nrecent pull requests, and says of each required check whether it will report on the queue's testing commits,\nwhy not and the fix. Exit 0 when every required check reports, 1 otherwise.",
    options: [
      ...QUEUE_CONNECTION,
      "--branch <name>      the queue's target branch (or --target-branch; default: from the CI)",
      "--mode <mode>        push (pushed greenline/** branches) or draft_pr (also a draft pull request); default: the queue's",
      JSON_OPTION,
    ],
  },
  "queue pause": { usage: "greenline queue pause [--target-branch B] [options]", summary: "Pause the queue: no test run starts and nothing merges until it is resumed.", options: QUEUE_OPTIONS },
  "queue resume": { usage: "greenline queue resume [--target-branch B] [options]", summary: "Set the queue running again (after pause, or draining).", options: QUEUE_OPTIONS },
  "queue freeze": {
    usage: 'greenline queue freeze --reason "why" [--until T | --from T --until T | --days D --from HH:MM --until HH:MM --time-zone Z] [--no-testing] [options]',
    brief: "Freeze merges: now (until a time, or until unfrozen), in a one-off window, or every week; only hotfixes merge.",
    summary:
      "Freeze the queue's merges: nothing merges but hotfixes (`pr submit --hotfix`) while the freeze holds.\n" +
      "Now (until --until, or until `queue unfreeze`), in a one-off window (--from and --until, ISO times), or every\n" +
      "week (--days with --from and --until as HH:MM local times in --time-zone). Pull requests are still submitted and\n" +
      "tested (they merge once it ends) unless --no-testing.",
    options: [
      ...QUEUE_OPTIONS,
      '--reason "text"      why (shown on the pull requests\' statuses and the dashboard; required)',
      "--until <time>       when it ends: an ISO time with its offset (2026-12-24T18:00Z), or HH:MM with --days",
      "--from <time>        a one-off window's start (ISO time), or HH:MM with --days",
      "--days <days>        every week on these days: mon,tue,…,sun or ranges (mon-fri); an --until not after --from ends the next day",
      "--time-zone <zone>   the IANA time zone of --days (Europe/Berlin, America/New_York; default UTC)",
      "--no-testing         hold testing too: nothing starts but hotfixes",
      JSON_OPTION,
    ],
  },
  "queue unfreeze": {
    usage: "greenline queue unfreeze [--freeze-id ID] [options]",
    summary: "End the freezes holding now (a weekly one for its current window only), or remove one freeze by its id.",
    options: [...QUEUE_OPTIONS, "--freeze-id <id>     the freeze to remove (`queue freezes` lists them)", JSON_OPTION],
  },
  audit: {
    usage: "greenline audit [--repo owner/name] [--action A] [--limit N] [--page-token T] [--json] [options]",
    summary: "The organization's audit log, newest first: who did what, when, why and how (API token, comment, dashboard, CLI).",
    options: [
      ...connectionOptions(21),
      "--repo owner/name    only entries about this repository (--host: its code host, default github.com)",
      "--host <host>        the repository's code host",
      "--action <action>    only this action (queue.paused, pull_request.emergency, … as docs/audit.md lists)",
      "--limit <n>          entries a page, 1–100 (default 50)",
      "--page-token <t>     the next page (as the previous page's last line says)",
      JSON_OPTION,
    ],
  },
  "queue freezes": { usage: "greenline queue freezes [--json] [options]", summary: "Show whether the queue is frozen, until when, and its current and scheduled freezes.", options: [...QUEUE_OPTIONS, JSON_OPTION] },
  "targets set": {
    usage: "greenline targets set <file|-> [--pr N] [--commit SHA] [--target-branch B] [options]",
    brief: "Set the targets the pull request impacts (parallel mode), from a file or stdin (-).",
    summary:
      "Set the targets the pull request impacts (parallel mode), from a file or stdin (-).\nOne target a line, blank lines and surrounding spaces ignored; a file of only ALL impacts every target;\nan empty file impacts none.",
    options: [...PR_OPTIONS, "--commit <sha>       the head commit they were computed for (default: the PR's head from the CI, else git HEAD)"],
  },
  "webhooks create": {
    usage: "greenline webhooks create --endpoint-url <url> --events <types> [options]",
    summary: "Create an outbound webhook endpoint; prints its signing secret as the last line.",
    options: [
      ...WEBHOOK_CONNECTION,
      "--endpoint-url <url>   where events are POSTed (https://)",
      '--events <types>       event types separated by commas, or "*" (see docs/webhooks.md)',
      "--description <text>   a label",
      "--secret <whsec_…>     a signing secret of your own (default: generated)",
    ],
  },
  "webhooks list": { usage: "greenline webhooks list", summary: "List the organization's webhook endpoints: id, URL, events, state.", options: WEBHOOK_CONNECTION },
  "webhooks update": {
    usage: "greenline webhooks update <id> [options]",
    summary: "Change an endpoint; --rotate-secret prints the new secret (the previous one signs too for 24 h).",
    options: [
      ...WEBHOOK_CONNECTION,
      "--endpoint-url <url>   a new URL",
      "--events <types>       a new event filter",
      "--description <text>   a new label",
      "--enable | --disable   enable it again (pending deliveries resume) or disable it",
      "--rotate-secret        a new signing secret",
    ],
  },
  "webhooks delete": { usage: "greenline webhooks delete <id>", summary: "Delete an endpoint and its deliveries.", options: WEBHOOK_CONNECTION },
  "webhooks deliveries": {
    usage: "greenline webhooks deliveries <id> [--limit <n>] [--page-token <t>]",
    summary: "List an endpoint's deliveries, newest first: status, attempts, last answer.",
    options: [...WEBHOOK_CONNECTION, "--limit <n>            at most n (1 to 500, default 50)", "--page-token <t>       the next page (printed after a full page)"],
  },
  "webhooks redeliver": { usage: "greenline webhooks redeliver <id> <delivery-id>", summary: "Send a delivery again, with the same webhook-id.", options: WEBHOOK_CONNECTION },
};

export const EXIT_CODES = "Exit codes: 0 success, 1 failure, 2 usage error, 69 Greenline unreachable (or not Greenline at --url), 70 upload failed.";

/** The options that apply to every command. */
const GLOBAL_OPTIONS = ["help", "version"];

/** The options `key` takes (without the dashes), from its help; undefined when there is no such command. */
export function optionsOf(key: string): Set<string> | undefined {
  const command = COMMANDS[key];
  if (!command) return undefined;
  return new Set([...GLOBAL_OPTIONS, ...(command.options ?? []).flatMap((line) => [...(line.split(/\s{2,}/)[0] ?? "").matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1]!))]);
}

/**
 * The manual: every command on one line each. The packaged client (`client`) lists the
 * service's commands apart, under where they run.
 */
export function overview(client = false): string {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.length));
  const line = (c: CommandHelp) => `  ${c.usage.padEnd(width)}  ${c.brief ?? c.summary}`;
  const all = Object.values(COMMANDS);
  const commands = client ? [...all.filter((c) => !c.service).map(line), "", "Run where the service runs (its checkout or container), not in this client:", ...all.filter((c) => c.service).map(line)] : all.map(line);
  return [
    "Usage: greenline <command> [options]",
    "",
    ...commands,
    "",
    "Run 'greenline help <command>' (or 'greenline <command> --help') for a command's options.",
    "greenline --version prints the version.",
    EXIT_CODES,
  ].join("\n");
}

/** One command's help; undefined when there is no such command. A group ("test") lists its commands. */
export function commandHelp(words: string[]): string | undefined {
  const key = words.join(" ");
  const command = COMMANDS[key];
  if (command) return [`Usage: ${command.usage}`, "", command.summary, ...(command.options ? ["", "Options:", ...command.options.map((o) => `  ${o}`)] : []), "", EXIT_CODES].join("\n");
  const group = Object.entries(COMMANDS).filter(([name]) => name.split(" ")[0] === key);
  if (words.length === 1 && group.length > 0) return ["Usage:", ...group.map(([, c]) => `  ${c.usage}`), "", `Run 'greenline help ${key} <command>' for a command's options.`].join("\n");
  return undefined;
}

/** The short answer to a mistake: the command's usage line (or the general one) and where to read more. */
export function shortUsage(words: string[]): string {
  const key = words.slice(0, 2).join(" ");
  const command = COMMANDS[key];
  if (command) return `Usage: ${command.usage}\nRun 'greenline help ${key}' for its options.`;
  return "Usage: greenline <command> [options]\nRun 'greenline help' for the commands, 'greenline help <command>' for one.";
}

/** The version in the package.json that ships this file (found upward: the sources, dist/ and the bundles sit at different depths). */
export function version(): string {
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
      if (pkg.version && (pkg.name?.startsWith("greenline") || pkg.name?.startsWith("@greenline/"))) return pkg.version;
    }
    if (dirname(dir) === dir) return "unknown";
  }
}
