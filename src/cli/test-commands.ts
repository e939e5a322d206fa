import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { constants } from "node:os";
import { glob } from "tinyglobby";
import { addTestCase, FAILED, RESULT } from "../domain/flaky/attempts.js";
import { parseJUnit } from "../formats/junit.js";
import { type CiContext, type GitFacts, inferCiContext } from "./ci-context.js";
import { describeUnreachable } from "./unreachable.js";

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
  junit?: string[] | undefined;
};

export class CliUsageError extends Error {}

/** The exit code when results could not be uploaded (Trunk's uploader uses the same). */
export const UPLOAD_FAILED = 70;

type Out = (line: string) => void;

function git(args: string[]): string | undefined {
  try {
    return execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The git facts of the working directory, read only when not every field came from a flag. */
function readGitFacts(): GitFacts {
  return { remoteUrl: git(["remote", "get-url", "origin"]), head: git(["rev-parse", "HEAD"]), branch: git(["rev-parse", "--abbrev-ref", "HEAD"]) };
}

function readGitHubEvent(path: string | undefined): unknown {
  if (!path) return undefined;
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
}

/** Where the results belong: each flag, else the CI's environment (see ci-context.ts), else git. */
function context(options: TestOptions) {
  const env = process.env;
  const need = (value: string | undefined, what: string) => {
    if (!value) throw new CliUsageError(`${what} is required`);
    return value;
  };
  const url = need(options.url ?? env.GREENLINE_URL, "--url (or GREENLINE_URL)").replace(/\/+$/, "");
  const token = need(options.token ?? env.GREENLINE_API_TOKEN, "--token (or GREENLINE_API_TOKEN)");
  const org = need(options.org ?? env.GREENLINE_ORG, "--org (or GREENLINE_ORG)");
  const flagsSayAll = options.repo && options.commit && options.branch && options.host;
  const inferred: CiContext = flagsSayAll ? { ci: "git" } : inferCiContext({ env, git: readGitFacts(), githubEvent: readGitHubEvent(env.GITHUB_EVENT_PATH) });
  const full = need(options.repo ?? inferred.repo, "--repo owner/name (or a CI environment, or a git remote named origin)");
  const [owner, name, ...extra] = full.split("/");
  if (!owner || !name || extra.length > 0) throw new CliUsageError(`--repo must be owner/name (got ${full})`);
  const host = options.host ?? inferred.host ?? "github.com";
  const commit = need(options.commit ?? inferred.commit, "--commit (or a CI environment, or a git checkout)");
  const branch = need(options.branch ?? inferred.branch, "--branch (or a CI environment, or a git checkout on a branch)");
  const prText = options.pr ?? inferred.pr;
  const pr = prText === undefined ? undefined : Number(prText);
  if (pr !== undefined && !(Number.isSafeInteger(pr) && pr > 0)) throw new CliUsageError("--pr must be a pull request number");
  const jobUrl = env.GITHUB_RUN_ID && env.GITHUB_SERVER_URL && env.GITHUB_REPOSITORY ? `${env.GITHUB_SERVER_URL}/${env.GITHUB_REPOSITORY}/actions/runs/${env.GITHUB_RUN_ID}` : undefined;
  return { url, token, scope: { repo: { host, owner, name }, org_url_slug: org }, commit, branch, pr, jobUrl, variant: options.variant ?? "" };
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
async function post<Answer>(ctx: ReturnType<typeof context>, operation: string, body: object): Promise<Answer> {
  const url = `${ctx.url}/v1/flaky-tests/${operation}`;
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-token": ctx.token },
      body: JSON.stringify({ ...ctx.scope, ...body }),
      signal: AbortSignal.timeout(60_000),
    });
    text = await response.text();
  } catch (error) {
    throw describeUnreachable(url, error);
  }
  if (!response.ok) throw new Error(`${operation} answered ${response.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as Answer;
}

/** Uploads reports already read (their texts, in the order of `files`). */
async function upload(ctx: ReturnType<typeof context>, reports: string[], codeowners: string | undefined, out: Out) {
  const answer = await post<{ test_cases: number; failures: number; upload_id: string; unnamed_test_cases: number }>(ctx, "upload", {
    commit_sha: ctx.commit,
    branch: ctx.branch,
    ...(ctx.pr ? { pr_number: ctx.pr } : {}),
    ...(ctx.jobUrl ? { job_url: ctx.jobUrl } : {}),
    ...(ctx.variant ? { variant: ctx.variant } : {}),
    ...(codeowners ? { codeowners: readFileSync(codeowners, "utf8") } : {}),
    junit_xml: reports,
  });
  out(`greenline: uploaded ${answer.test_cases} tests (${answer.failures} failed) from ${reports.length} report(s) as ${answer.upload_id}`);
  if (answer.unnamed_test_cases > 0) out(`greenline: ${answer.unnamed_test_cases} testcase(s) with neither name nor classname were not stored`);
}

/** `greenline test upload --junit <glob>`: uploads the reports; 70 when that fails. */
export async function testUpload(options: TestOptions, out: Out): Promise<number> {
  const ctx = context(options);
  const files = await reportFiles(options.junit);
  if (files.length === 0) {
    out(`greenline: no JUnit reports match ${options.junit!.join(", ")}`);
    return UPLOAD_FAILED;
  }
  try {
    await upload(
      ctx,
      files.map((f) => readFileSync(f, "utf8")),
      options.codeowners,
      out,
    );
    return 0;
  } catch (error) {
    out(`greenline: upload failed: ${(error as Error).message}`);
    return UPLOAD_FAILED;
  }
}

/**
 * `greenline test run -- <command>`: runs the command, uploads its reports, and exits 0 when
 * the command failed only through quarantined tests; otherwise with the command's own code.
 * If Greenline cannot be reached, or the reports show no failing test, the command's code stands.
 */
export async function testRun(options: TestOptions, command: string[], out: Out): Promise<number> {
  if (command.length === 0) throw new CliUsageError("test run needs a command after --");
  const ctx = context(options);
  const code = await new Promise<number>((resolve) => {
    const child = spawn(command[0]!, command.slice(1), { stdio: "inherit" });
    child.on("error", (error) => {
      out(`greenline: could not run ${command[0]}: ${error.message}`);
      resolve(127);
    });
    child.on("exit", (exitCode, signal) => resolve(exitCode ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0)));
  });
  const files = await reportFiles(options.junit);
  if (files.length === 0) {
    out(`greenline: no JUnit reports match ${options.junit!.join(", ")}; exit code ${code} stands`);
    return code;
  }
  // Each test's testcases merged as the upload merges them: a test failed the run unless a
  // retry passed it or every variant passed.
  const runs = new Map<string, { test: { name: string; classname: string; file: string; parent: string; id?: string }; flags: number }>();
  const reports = files.map((f) => readFileSync(f, "utf8"));
  for (const report of reports) {
    parseJUnit(report, (c) => {
      const key = JSON.stringify([c.file, c.classname, c.parent, c.name, c.explicitId]);
      const run = runs.get(key);
      if (run) run.flags = addTestCase(run.flags, c);
      else runs.set(key, { test: { name: c.name, classname: c.classname, file: c.file, parent: c.parent, ...(c.explicitId ? { id: c.explicitId } : {}) }, flags: addTestCase(0, c) });
    });
  }
  const tests = [...runs.values()].filter((r) => (r.flags & RESULT) === FAILED).map((r) => r.test);
  try {
    await upload(ctx, reports, options.codeowners, out);
    if (code === 0 || tests.length === 0) return code;
    const check = await post<{ quarantined_test_ids: string[] }>(ctx, "check-quarantine", { variant: ctx.variant, tests });
    const quarantined = new Set<string>(check.quarantined_test_ids);
    out(`greenline: ${tests.length} failing test(s), ${quarantined.size} quarantined`);
    if (quarantined.size > 0 && quarantined.size >= tests.length) {
      out(`greenline: every failure is a quarantined test; exiting 0 instead of ${code}`);
      return 0;
    }
    return code;
  } catch (error) {
    out(`greenline: ${(error as Error).message}; exit code ${code} stands`);
    return code;
  }
}

/** `greenline test quarantine <test-id> --always|--never|--auto`. */
export async function testQuarantine(options: TestOptions, testId: string | undefined, setting: "always" | "never" | "auto", out: Out): Promise<number> {
  if (!testId) throw new CliUsageError("test quarantine needs a test id");
  const ctx = context({ commit: "-", branch: "-", ...options });
  const answer = await post<{ test: { id: string; name: string; quarantined: boolean } }>(ctx, "set-quarantine-setting", { test_id: testId, setting });
  out(`greenline: ${answer.test.name} (${answer.test.id}): ${setting}; quarantined ${answer.test.quarantined ? "yes" : "no"}`);
  return 0;
}
