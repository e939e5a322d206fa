import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync, type Stats, statSync } from "node:fs";
import { constants } from "node:os";
import { glob } from "tinyglobby";
import { addTestCase, FAILED, RESULT } from "../domain/flaky/attempts.js";
import { testCaseId } from "../domain/flaky/identity.js";
import { JUnitError, parseJUnit } from "../formats/junit.js";
import type { CiContext } from "./ci-context.js";
import { CliUsageError, GreenlineRefusal, greenlineToken, greenlineUrl, inferFromEnvironment, postToGreenline, splitRepo } from "./greenline-client.js";
import { ServiceUnreachableError } from "./unreachable.js";
import { splitJUnitReport } from "../formats/junit-split.js";

/**
 * `greenline test …`: the CI side of flaky tests. It talks to a Greenline server over HTTP
 * (GREENLINE_URL, GREENLINE_API_TOKEN); it never needs the database.
 */

export type TestOptions = {
  url?: string | undefined;
  token?: string | undefined;
  org?: string | undefined;
  repo?: string | undefined;
  host?: string | undefined;
  commit?: string | undefined;
  branch?: string | undefined;
  pr?: string | undefined;
  variant?: string | undefined;
  codeowners?: string | undefined;
  check?: string | undefined;
  "check-run-id"?: string | undefined;
  junit?: string[] | undefined;
  "no-quarantine"?: boolean | undefined;
  /** test quarantine: why the setting is changed. */
  reason?: string | undefined;
};

/** The exit code when results could not be uploaded (Trunk's uploader uses the same). */
export const UPLOAD_FAILED = 70;

type Out = (line: string) => void;

/** Where the results belong: each flag, else the CI's environment (see ci-context.ts), else git. */
function context(options: TestOptions) {
  const env = process.env;
  const need = (value: string | undefined, what: string) => {
    if (!value) throw new CliUsageError(`${what} is required`);
    return value;
  };
  const url = greenlineUrl(options.url, env.GREENLINE_URL);
  const token = greenlineToken(options.token, env.GREENLINE_API_TOKEN);
  const org = need(options.org ?? env.GREENLINE_ORG, "--org (or GREENLINE_ORG)");
  const flagsSayAll = options.repo && options.commit && options.branch && options.host;
  // The environment and git are read only when not every field came from a flag.
  const inferred: CiContext = flagsSayAll ? { ci: "git" } : inferFromEnvironment();
  const full = need(options.repo ?? inferred.repo, "--repo owner/name (or a CI environment, or a git remote named origin)");
  const { owner, name } = splitRepo(full);
  const host = options.host ?? inferred.host ?? "github.com";
  const commit = need(options.commit ?? inferred.commit, "--commit (or a CI environment, or a git checkout)");
  const branch = need(options.branch ?? inferred.branch, "--branch (or a CI environment, or a git checkout on a branch)");
  const prText = options.pr ?? inferred.pr;
  const pr = prText === undefined ? undefined : Number(prText);
  if (pr !== undefined && !(Number.isSafeInteger(pr) && pr > 0)) throw new CliUsageError("--pr must be a pull request number");
  const jobUrl = env.GITHUB_RUN_ID && env.GITHUB_SERVER_URL && env.GITHUB_REPOSITORY ? `${env.GITHUB_SERVER_URL}/${env.GITHUB_REPOSITORY}/actions/runs/${env.GITHUB_RUN_ID}` : undefined;
  return { url, token, scope: { repo: { host, owner, name }, org_url_slug: org }, commit, branch, pr, jobUrl, variant: options.variant ?? "" };
}

/** The upload's fields naming the check its results come from. */
type CheckAttribution = { check_name?: string; check_run_id?: number };

/**
 * The CI check the results come from: --check / --check-run-id, else GREENLINE_CHECK /
 * GREENLINE_CHECK_RUN_ID. Never inferred from the CI: GITHUB_JOB is the job's id, while its
 * check is named by the job's `name:` and matrix values, and a wrong name must never attribute. An empty variable is unset (`${{ job.check_run_id }}` is
 * empty where the runner has no such field, e.g. GitHub Enterprise Server).
 */
function checkAttribution(options: TestOptions): CheckAttribution {
  const env = process.env;
  const name = (options.check ?? env.GREENLINE_CHECK)?.trim();
  if (options.check !== undefined && !name) throw new CliUsageError("--check must name a check (got an empty name)");
  const idText = options["check-run-id"] ?? (env.GREENLINE_CHECK_RUN_ID?.trim() || undefined);
  let id: number | undefined;
  if (idText !== undefined) {
    id = /^\s*[1-9]\d*\s*$/.test(idText) ? Number(idText) : Number.NaN;
    const from = options["check-run-id"] !== undefined ? "--check-run-id" : "GREENLINE_CHECK_RUN_ID (--check-run-id)";
    if (!Number.isSafeInteger(id)) throw new CliUsageError(`${from} must be a check run id, a positive integer (got ${JSON.stringify(idText)})`);
  }
  return { ...(name ? { check_name: name } : {}), ...(id !== undefined ? { check_run_id: id } : {}) };
}

async function reportFiles(patterns: string[] | undefined): Promise<string[]> {
  if (!patterns || patterns.length === 0) throw new CliUsageError("--junit <glob> is required (e.g. --junit 'reports/**/*.xml')");
  return (
    await glob(
      patterns
        .flatMap((p) => p.split(","))
        .map((p) => p.trim())
        .filter(Boolean),
      { absolute: true, onlyFiles: true },
    )
  ).sort();
}

/** POSTs to a flaky-tests operation; `Answer` is the fields of its answer the caller reads. */
function post<Answer>(ctx: ReturnType<typeof context>, operation: string, body: object): Promise<Answer> {
  return postToGreenline<Answer>(ctx.url, ctx.token, `flaky-tests/${operation}`, { ...ctx.scope, ...body });
}

/** The CODEOWNERS file's text, read before anything runs: a file that cannot be read is a mistake in the command line. */
function readCodeowners(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    throw new CliUsageError(`--codeowners: cannot read ${path}: ${e.code === "ENOENT" ? "no such file (ENOENT)" : (e.code ?? e.message)}`);
  }
}

/** Uploads reports already read (their texts, in the order of `files`), with the CODEOWNERS text if any. */
type UploadAnswer = {
  test_cases: number;
  failures: number;
  upload_id: string;
  unnamed_test_cases: number;
  infrastructure_failure?: boolean;
  infrastructure_failure_reason?: string;
  run?: { number: number; queue: string };
  part?: { index: number; count: number; received: number; complete: boolean };
  parts_missing?: number;
};

/** The most a request's reports may weigh as JSON: the server takes bodies of 20 MiB, and the rest of the body is small. */
export const PART_JSON_BYTES = 16 * 1024 * 1024;
/** Reports per request: the server's limit. */
const REPORTS_PER_REQUEST = 1000;

/**
 * The requests an upload's reports go in: one when they fit (no `part` then: as always), else
 * parts of at most PART_JSON_BYTES of reports each, a report larger than that cut at testcase
 * boundaries into well-formed reports (formats/junit-split.ts).
 */
export function partsOf(reports: string[], partBytes = PART_JSON_BYTES): string[][] {
  const jsonBytes = (text: string) => Buffer.byteLength(JSON.stringify(text));
  const pieces: { text: string; bytes: number }[] = [];
  for (const report of reports) {
    const bytes = jsonBytes(report);
    if (bytes <= partBytes) {
      pieces.push({ text: report, bytes });
      continue;
    }
    // Pieces sized so that, escaped for JSON as this report escapes, each nearly fills a part.
    const growth = bytes / Buffer.byteLength(report);
    for (const piece of splitJUnitReport(report, Math.floor((partBytes * 0.95) / growth))) {
      // Escaped for JSON a piece can outgrow the part (quotes, newlines): cut it smaller.
      let cut = [piece];
      for (let size = Math.floor(partBytes / 4); cut.some((c) => jsonBytes(c) > partBytes) && size >= 1024; size = Math.floor(size / 2)) cut = splitJUnitReport(piece, size);
      for (const c of cut) pieces.push({ text: c, bytes: jsonBytes(c) });
    }
  }
  const parts: string[][] = [];
  let current: string[] = [];
  let size = 0;
  for (const piece of pieces) {
    if (current.length > 0 && (size + piece.bytes > partBytes || current.length >= REPORTS_PER_REQUEST)) {
      parts.push(current);
      current = [];
      size = 0;
    }
    current.push(piece.text);
    size += piece.bytes;
  }
  if (current.length > 0) parts.push(current);
  return parts;
}

/** Sends one request of an upload; a part is sent again (it is received once) when Greenline could not answer, up to 3 times. */
async function sendPart(ctx: ReturnType<typeof context>, body: object, retries: number): Promise<UploadAnswer> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await post<UploadAnswer>(ctx, "upload", body);
    } catch (error) {
      const transient = error instanceof ServiceUnreachableError || (error instanceof GreenlineRefusal && (error.status === 429 || error.status >= 500));
      if (!transient || attempt >= retries) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000 * 2 ** attempt));
    }
  }
}

async function upload(ctx: ReturnType<typeof context>, check: CheckAttribution, reports: string[], codeowners: string | undefined, out: Out) {
  const fields = {
    commit_sha: ctx.commit,
    branch: ctx.branch,
    ...(ctx.pr ? { pr_number: ctx.pr } : {}),
    ...(ctx.jobUrl ? { job_url: ctx.jobUrl } : {}),
    ...(ctx.variant ? { variant: ctx.variant } : {}),
    ...check,
    ...(codeowners !== undefined ? { codeowners } : {}),
  };
  const parts = partsOf(reports);
  let answer: UploadAnswer;
  if (parts.length === 1) answer = await sendPart(ctx, { ...fields, junit_xml: parts[0] }, 0);
  else {
    // Too large for one request: sent in parts, stored as one upload when the last is in.
    const id = randomUUID();
    out(`greenline: the reports are larger than one request: sending them in ${parts.length} parts`);
    answer = undefined as unknown as UploadAnswer;
    for (const [index, junit_xml] of parts.entries()) answer = await sendPart(ctx, { ...fields, junit_xml, part: { id, index, count: parts.length } }, 3);
    if (!answer.part?.complete) throw new Error(`the upload's parts were sent, but Greenline holds ${answer.part?.received ?? "?"} of ${parts.length}: it stores them as they are within 30 minutes`);
  }
  out(`greenline: uploaded ${answer.test_cases} tests (${answer.failures} failed) from ${reports.length} report(s) as ${answer.upload_id}`);
  if (check.check_name !== undefined || check.check_run_id !== undefined) {
    out(`greenline: from check ${[check.check_name && JSON.stringify(check.check_name), check.check_run_id && `run ${check.check_run_id}`].filter(Boolean).join(", ")}`);
  }
  if (answer.unnamed_test_cases > 0) out(`greenline: ${answer.unnamed_test_cases} testcase(s) with neither name nor classname were not stored`);
  if (answer.run) out(`greenline: the results of merge-queue run ${answer.run.number} of ${answer.run.queue}`);
  if (answer.infrastructure_failure) out(`greenline: read as an infrastructure failure (${answer.infrastructure_failure_reason}): no test is marked flaky or broken by it`);
}

/** `greenline test upload --junit <glob>`: uploads the reports; 70 when that fails. */
export async function testUpload(options: TestOptions, out: Out): Promise<number> {
  const ctx = context(options);
  const check = checkAttribution(options);
  const codeowners = readCodeowners(options.codeowners);
  const files = await reportFiles(options.junit);
  if (files.length === 0) {
    out(`greenline: no JUnit reports match ${options.junit!.join(", ")}`);
    return UPLOAD_FAILED;
  }
  try {
    await upload(
      ctx,
      check,
      files.map((f) => readFileSync(f, "utf8")),
      codeowners,
      out,
    );
    return 0;
  } catch (error) {
    out(`greenline: upload failed: ${(error as Error).message}`);
    return UPLOAD_FAILED;
  }
}

/** A file's identity and last write: a report that still has the one it had before the command ran was not written by it. */
const signature = (stat: Stats) => `${stat.ino}:${stat.size}:${stat.mtimeMs}`;

function statOrUndefined(file: string): Stats | undefined {
  try {
    return statSync(file);
  } catch {
    return undefined;
  }
}

/** The command's exit code, or why it could not start (then the code a shell gives: 127 not found, 126 found but not runnable). */
function runCommand(command: string[]): Promise<{ code: number; cannotStart?: string }> {
  return new Promise((resolve) => {
    const child = spawn(command[0]!, command.slice(1), { stdio: "inherit" });
    child.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") resolve({ code: 127, cannotStart: "no such command or file (ENOENT)" });
      else if (error.code === "EACCES") resolve({ code: 126, cannotStart: "permission denied: not an executable file (EACCES)" });
      else resolve({ code: 126, cannotStart: error.message });
    });
    child.on("exit", (exitCode, signal) => resolve({ code: exitCode ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0) }));
  });
}

type FailingTest = { name: string; classname: string; file: string; parent: string; id?: string; failure?: { type?: string; message?: string; text?: string } };

/** How a person finds a test in their suite: its class (else its suite, else its file) and its name. */
const label = (test: FailingTest) => `${test.classname || test.parent || test.file || "(no class)"} ${test.name}`;

/**
 * Which of `tests` are quarantined. check-quarantine answers with ids, derived from the test's
 * identity as the server derives them (identity.ts); should one answer id not be among the ids
 * derived here (the repository's name in another casing than it was registered with), each
 * test is asked for on its own.
 */
async function quarantinedTests(ctx: ReturnType<typeof context>, tests: FailingTest[]): Promise<{ quarantined: Set<FailingTest>; newWays: Set<FailingTest> }> {
  type Answer = { quarantined_test_ids: string[]; new_failure_test_ids?: string[] };
  const ask = (some: FailingTest[]) => post<Answer>(ctx, "check-quarantine", { variant: ctx.variant, tests: some });
  const answer = await ask(tests);
  const named = (a: Answer) => [...a.quarantined_test_ids, ...(a.new_failure_test_ids ?? [])];
  if (named(answer).length === 0) return { quarantined: new Set(), newWays: new Set() };
  const { host, owner, name } = ctx.scope.repo;
  const org = ctx.scope.org_url_slug.trim().toLowerCase();
  const byId = new Map(tests.map((t) => [testCaseId(org, `${host.trim()}/${owner.trim()}/${name.trim()}`, t, ctx.variant.trim(), t.id ?? ""), t]));
  if (named(answer).every((id) => byId.has(id))) return { quarantined: new Set(answer.quarantined_test_ids.map((id) => byId.get(id)!)), newWays: new Set((answer.new_failure_test_ids ?? []).map((id) => byId.get(id)!)) };
  const quarantined = new Set<FailingTest>();
  const newWays = new Set<FailingTest>();
  for (let i = 0; i < tests.length; i += 8) {
    const slice = tests.slice(i, i + 8);
    const answers = await Promise.all(slice.map((t) => ask([t])));
    answers.forEach((a, j) => {
      if (a.quarantined_test_ids.length > 0) quarantined.add(slice[j]!);
      else if ((a.new_failure_test_ids ?? []).length > 0) newWays.add(slice[j]!);
    });
  }
  return { quarantined, newWays };
}

/**
 * `greenline test run -- <command>`: runs the command, uploads the reports it wrote, and exits 0
 * when the command failed only through quarantined tests; otherwise with the command's own code.
 * A report the command did not write (there before it started, unchanged) is ignored: a stale
 * report never passes a build. A command that cannot start exits 127/126 with nothing uploaded.
 * If Greenline cannot be reached, or the reports show no failing test, or a report cannot be
 * read (nothing is uploaded then), the command's code stands. With --no-quarantine the reports
 * are only uploaded: the command's code always stands.
 */
export async function testRun(options: TestOptions, command: string[], out: Out): Promise<number> {
  if (command.length === 0) throw new CliUsageError("test run needs a command after --");
  const ctx = context(options);
  const check = checkAttribution(options);
  const codeowners = readCodeowners(options.codeowners);
  const quarantine = !options["no-quarantine"];
  // What the patterns match before the command runs, and when it starts (by the clock and by each file's last write).
  const before = new Map((await reportFiles(options.junit)).map((f) => [f, statOrUndefined(f)] as const));
  const started = Date.now();
  const { code, cannotStart } = await runCommand(command);
  if (cannotStart) {
    out(`greenline: cannot start ${command[0]}: ${cannotStart}; exiting ${code}, nothing uploaded`);
    return code;
  }
  const matched = await reportFiles(options.junit);
  // Written by the command: modified since it started, or new or changed since (a coarse file clock may date a new file a little earlier).
  const files: string[] = [];
  const stale: string[] = [];
  for (const file of matched) {
    const stat = statOrUndefined(file);
    if (!stat) continue;
    const earlier = before.get(file);
    if (stat.mtimeMs >= started || !earlier || signature(earlier) !== signature(stat)) files.push(file);
    else stale.push(file);
  }
  if (stale.length > 0) {
    const shown = stale.slice(0, 5).join(", ") + (stale.length > 5 ? `, and ${stale.length - 5} more` : "");
    out(`greenline: ignored ${stale.length} report(s) older than the command (not written by this run; a stale report never decides the build): ${shown}`);
  }
  if (files.length === 0) {
    const why = stale.length > 0 ? "the command wrote no JUnit report" : `no JUnit reports match ${options.junit!.join(", ")}`;
    out(`greenline: ${why}; exit code ${code} stands`);
    return code;
  }
  // Each test's testcases merged as the upload merges them: a test failed the run unless a
  // retry passed it or every variant passed.
  const runs = new Map<string, { test: FailingTest; flags: number }>();
  const reports: string[] = [];
  for (const file of files) {
    // A report that cannot be read or parsed: nothing is uploaded (an upload is whole or nothing), and the command's code stands.
    try {
      const report = readFileSync(file, "utf8");
      parseJUnit(report, (c) => {
        const key = JSON.stringify([c.file, c.classname, c.parent, c.name, c.explicitId]);
        const run = runs.get(key);
        if (run) run.flags = addTestCase(run.flags, c);
        else runs.set(key, { test: { name: c.name, classname: c.classname, file: c.file, parent: c.parent, ...(c.explicitId ? { id: c.explicitId } : {}) }, flags: addTestCase(0, c) });
        // How it failed (its first failure): a test quarantined by detection is quarantined for the ways it failed then.
        const test = runs.get(key)!.test;
        // A failure that says nothing is sent too ({}): the server reads it as the queue does.
        if (!test.failure && c.failed)
          test.failure = {
            ...(c.failureType ? { type: c.failureType } : {}),
            // The parser bounds both as check-quarantine does (2,000 and 4,000 characters).
            ...(c.message ? { message: c.message } : {}),
            ...(c.failureText ? { text: c.failureText } : {}),
          };
      });
      reports.push(report);
    } catch (error) {
      const why = error instanceof JUnitError ? `not a JUnit report: line ${error.line}, column ${error.column}: ${error.message}` : `cannot read it: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
      out(`greenline: ${file}: ${why}; exit code ${code} stands, nothing uploaded`);
      return code;
    }
  }
  const tests = [...runs.values()].filter((r) => (r.flags & RESULT) === FAILED).map((r) => r.test);
  try {
    await upload(ctx, check, reports, codeowners, out);
    if (code === 0 || !quarantine) return code;
    if (tests.length === 0) {
      out(`greenline: the reports show no failing test; exit code ${code} stands`);
      return code;
    }
    const { quarantined, newWays } = await quarantinedTests(ctx, tests);
    out(`greenline: ${tests.length} failing test(s), ${quarantined.size} quarantined`);
    for (const test of tests) if (!quarantined.has(test) && !newWays.has(test)) out(`greenline: failed: ${label(test)}`);
    for (const test of tests) if (newWays.has(test)) out(`greenline: failed, quarantined as flaky but failing in a way first seen after its quarantine (it counts): ${label(test)}`);
    for (const test of tests) if (quarantined.has(test)) out(`greenline: failed, quarantined: ${label(test)}`);
    if (quarantined.size === tests.length) {
      out(`greenline: every failure is a quarantined test; exiting 0 instead of ${code}`);
      return 0;
    }
    return code;
  } catch (error) {
    out(`greenline: ${(error as Error).message}; exit code ${code} stands`);
    if (code !== 0 && quarantine) for (const test of tests) out(`greenline: failed (quarantine unknown): ${label(test)}`);
    return code;
  }
}

/** `greenline test quarantine <test-id> --always|--never|--auto [--reason <text>]`. */
export async function testQuarantine(options: TestOptions, testId: string | undefined, setting: "always" | "never" | "auto", out: Out): Promise<number> {
  if (!testId) throw new CliUsageError("test quarantine needs a test id");
  const ctx = context({ commit: "-", branch: "-", ...options });
  const reason = options.reason?.trim();
  const answer = await post<{ test: { id: string; name: string; quarantined: boolean; quarantine_reason: string | null } }>(ctx, "set-quarantine-setting", {
    test_id: testId,
    setting,
    ...(reason ? { reason } : {}),
  });
  const why = answer.test.quarantine_reason ? ` (reason: ${answer.test.quarantine_reason})` : "";
  out(`greenline: ${answer.test.name} (${answer.test.id}): ${setting}${why}; quarantined ${answer.test.quarantined ? "yes" : "no"}`);
  return 0;
}

export type PolicyOptions = TestOptions & {
  since?: string | undefined;
  threshold?: string | undefined;
  "broken-rate"?: string | undefined;
  "min-samples"?: string | undefined;
  "window-days"?: string | undefined;
  "recovery-days"?: string | undefined;
  "auto-quarantine"?: string | undefined;
  json?: boolean | undefined;
};

type Outcome = {
  tests_flaky: number;
  tests_broken: number;
  tests_quarantined: number;
  tests_ever_quarantined: number;
  quarantines_started: number;
  releases: number;
  failures_excused: number;
  queue_runs_failed: number;
  queue_runs_excused: number;
  regressions_excused: number;
  regression_tests: number;
};
type NamedTests = { total: number; tests: { id: string; name: string; variant: string }[] };
type BacktestAnswer = {
  period: { from: string; to: string };
  current: { settings: Record<string, unknown>; outcome: Outcome };
  proposed: { settings: Record<string, unknown>; outcome: Outcome };
  changes: { newly_quarantined: NamedTests; no_longer_quarantined: NamedTests; ejections_avoided: number; ejections_added: number; regressions_hidden: NamedTests };
};

/** The settings the options try: numbers as numbers (the server checks their ranges and names the field), on/off as a boolean. */
function policySettings(options: PolicyOptions): Record<string, number | boolean> {
  const settings: Record<string, number | boolean> = {};
  const number = (flag: keyof PolicyOptions, field: string) => {
    const text = options[flag];
    if (typeof text !== "string") return;
    const value = Number(text.trim());
    if (text.trim() === "" || !Number.isFinite(value)) throw new CliUsageError(`--${flag} must be a number (got ${JSON.stringify(text)})`);
    settings[field] = value;
  };
  number("threshold", "flakyRate");
  number("broken-rate", "brokenRate");
  number("min-samples", "minSamples");
  number("window-days", "windowDays");
  number("recovery-days", "recoveryDays");
  const auto = options["auto-quarantine"]?.trim().toLowerCase();
  if (auto !== undefined) {
    if (auto !== "on" && auto !== "off") throw new CliUsageError(`--auto-quarantine must be on or off (got ${JSON.stringify(options["auto-quarantine"])})`);
    settings.autoQuarantine = auto === "on";
  }
  return settings;
}

/** `greenline test policy backtest [--since 30d] [--threshold R] …`: what other settings would have changed. */
export async function testPolicyBacktest(options: PolicyOptions, out: Out): Promise<number> {
  const since = (options.since ?? "30d").trim();
  const days = /^([1-9]\d*)d?$/.exec(since);
  if (!days) throw new CliUsageError(`--since must be a number of days, like 30d (got ${JSON.stringify(options.since)})`);
  const settings = policySettings(options);
  const ctx = context({ commit: "-", branch: "-", ...options });
  const answer = await post<BacktestAnswer>(ctx, "backtest-policy", { since_days: Number(days[1]), settings });
  if (options.json) {
    out(JSON.stringify(answer, null, 2));
    return 0;
  }
  const { current, proposed, changes } = answer;
  const changed = Object.keys(settings).map((k) => `${k} ${current.settings[k]} → ${proposed.settings[k]}`);
  out(
    `greenline: ${ctx.scope.repo.owner}/${ctx.scope.repo.name}, ${answer.period.from.slice(0, 10)} to ${answer.period.to.slice(0, 10)}, replayed under ${changed.length > 0 ? changed.join(", ") : "its own settings (no option changes one)"}`,
  );
  const rows: [string, keyof Outcome][] = [
    ["tests flaky at some time", "tests_flaky"],
    ["tests quarantined at some time", "tests_ever_quarantined"],
    ["quarantines started", "quarantines_started"],
    ["quarantines released", "releases"],
    ["tests quarantined at the end", "tests_quarantined"],
    ["tests broken at the end", "tests_broken"],
    ["failures excused by quarantine", "failures_excused"],
    ["queue runs with failures", "queue_runs_failed"],
    ["  of which excused (ejection avoided)", "queue_runs_excused"],
    ["regression failures excused", "regressions_excused"],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  out(`${"".padEnd(width)}  ${"current".padStart(8)}  ${"proposed".padStart(8)}`);
  for (const [label, field] of rows) out(`${label.padEnd(width)}  ${String(current.outcome[field]).padStart(8)}  ${String(proposed.outcome[field]).padStart(8)}`);
  const list = (title: string, named: NamedTests) => {
    out(`${title}: ${named.total}`);
    for (const t of named.tests) out(`  ${t.name}${t.variant ? ` [${t.variant}]` : ""} (${t.id})`);
    if (named.total > named.tests.length) out(`  … and ${named.total - named.tests.length} more`);
  };
  list("newly quarantined", changes.newly_quarantined);
  list("no longer quarantined", changes.no_longer_quarantined);
  out(`queue ejections avoided: ${changes.ejections_avoided}, added: ${changes.ejections_added}`);
  list("tests whose regressions would be hidden", changes.regressions_hidden);
  return 0;
}
