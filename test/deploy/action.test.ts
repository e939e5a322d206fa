import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { INPUT_NAMES, type Inputs, plan, readInputs } from "../../src/action/inputs.js";
import { COMMANDS } from "../../src/cli/usage.js";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

/**
 * The GitHub Action (action.yml): its committed bundle is what a fresh build makes, its inputs
 * are the ones the entry reads, each input set maps to one `greenline` command, and the bundled
 * entry run as GitHub Actions runs it (its environment, INPUT_* variables, GITHUB_OUTPUT)
 * uploads to a real Greenline, masks the token, writes its outputs and exits with the verdict.
 */

const exec = promisify(execFile);
const root = join(import.meta.dirname, "../..");
const CI_VARIABLE = /^(GITHUB_|GITLAB_|CI_|CI$|BUILDKITE|CIRCLE|JENKINS_|GIT_|CHANGE_|GREENLINE_|INPUT_|RUNNER_)/;
const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CI_VARIABLE.test(name)));

describe("action.yml and its committed bundle", () => {
  test("action/dist is what scripts/build-cli.mjs builds from the sources today (run `npm run build:cli` and commit it)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "greenline-action-build-"));
    try {
      await exec(process.execPath, ["scripts/build-cli.mjs", "action", "--outdir", dir], { cwd: root });
      for (const file of ["action/dist/index.mjs", "action/dist/THIRD-PARTY-LICENSES.txt"]) {
        expect({ file, same: readFileSync(join(root, file), "utf8") === readFileSync(join(dir, file), "utf8") }).toEqual({ file, same: true });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("declares exactly the inputs the entry reads, runs the bundle on node24", () => {
    const yml = readFileSync(join(root, "action.yml"), "utf8");
    const section = (name: string) => yml.split(new RegExp(`^${name}:\\n`, "m"))[1]!.split(/^\S/m)[0]!;
    expect([...section("inputs").matchAll(/^ {2}([a-z-]+):$/gm)].map((m) => m[1])).toEqual([...INPUT_NAMES]);
    expect([...section("outputs").matchAll(/^ {2}([a-z-]+):$/gm)].map((m) => m[1])).toEqual(["job", "exit-code"]);
    expect(section("runs")).toMatch(/^ {2}using: node24$/m);
    const main = /^ {2}main: (\S+)$/m.exec(section("runs"))![1]!;
    expect(main).toBe("action/dist/index.mjs");
    expect(existsSync(join(root, main))).toBe(true);
    // Defaults as the runner passes them: quarantine on, submit off.
    expect(section("inputs")).toMatch(/ {2}quarantine:\n(?: {4}.*\n)*? {4}default: "true"/);
    expect(section("inputs")).toMatch(/ {2}submit:\n(?: {4}.*\n)*? {4}default: "false"/);
    // The job's own check run (input defaults may read the job context: actions/runner action_yaml.json, input-default-context).
    expect(section("inputs")).toMatch(/ {2}check-run-id:\n(?: {4}.*\n)*? {4}default: \$\{\{ job\.check_run_id \}\}\n/);
  });
});

describe("the action's inputs → the greenline command", () => {
  const inputs = (set: Partial<Inputs>): Inputs => ({ ...readInputs({}), token: "glt_secret", url: "https://gl.example", quarantine: "true", submit: "false", ...set });
  const connection = ["--url", "https://gl.example", "--token", "glt_secret"];

  test("inputs are read as @actions/core reads them: INPUT_ and the name upper-cased, dashes kept, trimmed", () => {
    const read = readInputs({ "INPUT_JUNIT-PATHS": "  reports/*.xml \n", "INPUT_PR-NUMBER": "7", INPUT_JUNIT_PATHS: "wrong", INPUT_TOKEN: "t" });
    expect(read).toMatchObject({ "junit-paths": "reports/*.xml", "pr-number": "7", token: "t", run: "" });
  });

  test("junit-paths: test upload (globs split on commas and newlines); with run: test run under bash; quarantine: false adds --no-quarantine", () => {
    expect(plan(inputs({ "junit-paths": "a/*.xml, b/*.xml\nc.xml", org: "acme", variant: "linux", "pr-number": "7" }), {})).toEqual({
      job: "upload",
      argv: ["test", "upload", ...connection, "--org", "acme", "--pr", "7", "--variant", "linux", "--junit", "a/*.xml", "--junit", "b/*.xml", "--junit", "c.xml"],
    });
    const bash = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", "npm test"];
    expect(plan(inputs({ "junit-paths": "r.xml", run: "npm test" }), { GREENLINE_ORG: "acme" })).toEqual({ job: "run", argv: ["test", "run", ...connection, "--junit", "r.xml", "--", ...bash] });
    expect(plan(inputs({ "junit-paths": "r.xml", run: "npm test", quarantine: "False", org: "acme" }), {})).toEqual({
      job: "run",
      argv: ["test", "run", ...connection, "--org", "acme", "--junit", "r.xml", "--no-quarantine", "--", ...bash],
    });
  });

  test("check and check-run-id name the check the results come from; the other jobs ignore the check-run-id the runner defaults", () => {
    expect(plan(inputs({ "junit-paths": "r.xml", org: "acme", check: "tests (ubuntu)", "check-run-id": "51725241954" }), {})).toEqual({
      job: "upload",
      argv: ["test", "upload", ...connection, "--org", "acme", "--check", "tests (ubuntu)", "--check-run-id", "51725241954", "--junit", "r.xml"],
    });
    expect(plan(inputs({ "junit-paths": "r.xml", run: "npm test", org: "acme", "check-run-id": "9" }), {}).argv).toEqual(expect.arrayContaining(["--check-run-id", "9"]));
    expect(plan(inputs({ submit: "true", "check-run-id": "9" }), {})).toEqual({ job: "submit", argv: ["pr", "submit", ...connection] });
  });

  test("impacted-targets: targets set <file>; ALL is a file holding ALL in RUNNER_TEMP", () => {
    expect(plan(inputs({ "impacted-targets": "out/targets.txt", "target-branch": "release", "pr-number": "12" }), {})).toEqual({
      job: "targets",
      argv: ["targets", "set", "out/targets.txt", ...connection, "--pr", "12", "--target-branch", "release"],
    });
    const all = join("/runner/tmp", "greenline-impacted-targets-all");
    expect(plan(inputs({ "impacted-targets": "ALL", org: "acme" }), { RUNNER_TEMP: "/runner/tmp" })).toEqual({
      job: "targets",
      // org is the flaky-test commands' only: targets set does not take it.
      argv: ["targets", "set", all, ...connection],
      allTargetsFile: all,
    });
  });

  test("submit: true: pr submit with the target branch, priority and pull request given", () => {
    expect(plan(inputs({ submit: "true" }), {})).toEqual({ job: "submit", argv: ["pr", "submit", ...connection] });
    expect(plan(inputs({ submit: "TRUE", "target-branch": "main", priority: "urgent", "pr-number": "3" }), {})).toEqual({
      job: "submit",
      argv: ["pr", "submit", ...connection, "--pr", "3", "--target-branch", "main", "--priority", "urgent"],
    });
  });

  test.each<[string, Partial<Inputs>, string]>([
    ["no token", { token: "", "junit-paths": "r.xml", org: "a" }, "Input required and not supplied: token"],
    ["no url", { url: "", submit: "true" }, "Input required and not supplied: url"],
    ["nothing to do", {}, "nothing to do: set junit-paths"],
    ["run without reports", { run: "npm test" }, "run needs junit-paths"],
    ["two jobs", { "junit-paths": "r.xml", submit: "true", org: "a" }, "one job per step: junit-paths (upload test results) and submit: true (submit the pull request) cannot be combined"],
    ["three jobs", { "junit-paths": "r.xml", "impacted-targets": "ALL", submit: "true" }, "one job per step"],
    ["priority without submit", { "impacted-targets": "t.txt", priority: "high" }, "priority applies only with submit"],
    ["target-branch with results", { "junit-paths": "r.xml", org: "a", "target-branch": "main" }, "target-branch applies only with impacted-targets and submit"],
    ["variant without results", { submit: "true", variant: "linux" }, "variant applies only with junit-paths"],
    ["check without results", { submit: "true", check: "tests" }, "check applies only with junit-paths"],
    ["a check run id that is no number", { "junit-paths": "r.xml", org: "a", "check-run-id": "tests" }, 'check-run-id must be a check run id, a positive integer (got "tests")'],
    ["a boolean that is not one", { submit: "yes" }, 'submit must be true or false (got "yes")'],
    ["quarantine not a boolean", { "junit-paths": "r.xml", org: "a", quarantine: "maybe" }, "quarantine must be true or false"],
    ["a pull request that is no number", { submit: "true", "pr-number": "#7" }, 'pr-number must be a pull request number (got "#7")'],
    ["results without an organization", { "junit-paths": "r.xml" }, "org is required to upload test results (or GREENLINE_ORG in the environment)"],
  ])("refused: %s", (_what, set, message) => {
    expect(() => plan(inputs(set), {})).toThrow(message);
  });
});

describe("the bundled action run as GitHub Actions runs it, against a real Greenline", () => {
  let server: TestServer;
  let dir: string;
  const sha = (n: number) => n.toString(16).padStart(40, "a");
  const report = (cases: [string, "pass" | "fail"][]) => {
    const body = cases.map(([name, outcome]) => `<testcase classname="web.Tests" name="${name}">${outcome === "fail" ? `<failure message="${name} failed"/>` : ""}</testcase>`).join("");
    return `<testsuites><testsuite name="web">${body}</testsuite></testsuites>`;
  };

  /** `node action/dist/index.mjs` in a workspace, with the environment a pull_request run gives a JavaScript action. */
  async function action(inputs: Record<string, string>, commit: string, files: Record<string, string> = {}, pr = 7, repo = "acme/action-web") {
    const workspace = mkdtempSync(join(dir, "workspace-"));
    mkdirSync(join(workspace, "reports"));
    for (const [path, text] of Object.entries(files)) writeFileSync(join(workspace, path), text);
    const runnerTemp = mkdtempSync(join(dir, "runner-temp-"));
    const eventPath = join(runnerTemp, "event.json");
    writeFileSync(eventPath, JSON.stringify({ action: "synchronize", number: pr, pull_request: { number: pr, head: { ref: "feature/login", sha: commit }, base: { ref: "main" } } }));
    const outputPath = join(runnerTemp, "output");
    writeFileSync(outputPath, "");
    const env: Record<string, string> = {
      ...clean,
      GITHUB_ACTIONS: "true",
      CI: "true",
      GITHUB_REPOSITORY: repo,
      GITHUB_SHA: commit,
      GITHUB_REF: `refs/pull/${pr}/merge`,
      GITHUB_REF_NAME: `${pr}/merge`,
      GITHUB_EVENT_NAME: "pull_request",
      GITHUB_EVENT_PATH: eventPath,
      GITHUB_HEAD_REF: "feature/login",
      GITHUB_BASE_REF: "main",
      GITHUB_RUN_ID: "4242",
      GITHUB_SERVER_URL: "https://github.com",
      GITHUB_WORKSPACE: workspace,
      GITHUB_OUTPUT: outputPath,
      RUNNER_TEMP: runnerTemp,
      // The runner passes each input given, and each default.
      INPUT_QUARANTINE: "true",
      INPUT_SUBMIT: "false",
      ...Object.fromEntries(Object.entries(inputs).map(([name, value]) => [`INPUT_${name.toUpperCase()}`, value])),
    };
    let result: { code: number; stdout: string; stderr: string };
    try {
      const { stdout, stderr } = await exec(process.execPath, [join(root, "action/dist/index.mjs")], { cwd: workspace, env });
      result = { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      result = { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
    const outputs: Record<string, string> = {};
    for (const m of readFileSync(outputPath, "utf8").matchAll(/^([\w-]+)<<(ghadelimiter_[\w-]+)\n([\s\S]*?)\n\2$/gm)) outputs[m[1]!] = m[3]!;
    return { ...result, outputs, workspace };
  }
  const failing = async () =>
    (
      await server.api.ok("flaky-tests/list-failing-tests", {
        repo: { host: "github.com", owner: "acme", name: "action-web" },
        org_url_slug: "acme",
        start_time: new Date(Date.now() - 3_600_000).toISOString(),
        end_time: new Date(Date.now() + 3_600_000).toISOString(),
        page_query: { page_size: 50 },
      })
    ).tests;

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!);
    dir = mkdtempSync(join(tmpdir(), "greenline-action-"));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });

  /** The token is masked before the action prints anything, and never printed again. */
  function expectMasked(run: { stdout: string; stderr: string }) {
    const token = server.api.token;
    expect(run.stdout.split("\n")[0]).toBe(`::add-mask::${token}`);
    expect(run.stdout.split(token).length - 1).toBe(1);
    expect(run.stderr).not.toContain(token);
  }

  test("junit-paths uploads the workspace's reports for the pull request of the event; outputs job and exit-code", async () => {
    const reports = {
      "reports/junit.xml": report([
        ["test_login", "fail"],
        ["test_logout", "pass"],
      ]),
    };
    const run = await action({ token: server.api.token, url: server.url, org: "acme", "junit-paths": "reports/*.xml", variant: "ubuntu" }, sha(2), reports);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expectMasked(run);
    expect(run.stdout).toMatch(/uploaded 2 tests \(1 failed\) from 1 report\(s\)/);
    expect(run.stdout).toContain("greenline action: greenline test upload --url");
    expect(run.outputs).toEqual({ job: "upload", "exit-code": "0" });
    const [login, ...others] = await failing();
    expect(others).toEqual([]);
    // The pull request came from the event file, the repository from GITHUB_REPOSITORY.
    expect(login).toMatchObject({ name: "test_login", variant: "ubuntu", pull_requests_impacted_last_7d: 1 });
  });

  test("check and check-run-id (the job's own, as the runner defaults it) are stored with the upload", async () => {
    const reports = { "reports/junit.xml": report([["test_checked", "fail"]]) };
    const run = await action({ token: server.api.token, url: server.url, org: "acme", "junit-paths": "reports/*.xml", check: "tests (ubuntu, 22)", "check-run-id": "51725241954" }, sha(30), reports);
    expect(run).toMatchObject({ code: 0, outputs: { job: "upload", "exit-code": "0" } });
    expect(run.stdout).toContain('greenline: from check "tests (ubuntu, 22)", run 51725241954');
    const id = / as (\S+)$/m.exec(run.stdout)?.[1];
    const [row] = await server.greenline.services.db.sqlRead((sql) => sql.all<{ checkName: string | null; checkRunId: unknown }>(`SELECT "checkName", "checkRunId" FROM "TestUpload" WHERE "id" = ?`, [id]));
    expect({ name: row!.checkName, runId: Number(row!.checkRunId) }).toEqual({ name: "tests (ubuntu, 22)", runId: 51725241954 });
  });

  test("run with quarantine: a command failing only through a quarantined test passes the step; without quarantine its code stands", async () => {
    const base = { token: server.api.token, url: server.url, org: "acme", "junit-paths": "reports/*.xml" };
    const fixture = (name: string, cases: [string, "pass" | "fail"][]) => {
      writeFileSync(join(dir, name), report(cases));
      return join(dir, name);
    };
    // test_flaky fails then passes on one commit: Greenline finds it flaky and quarantines it.
    const failed = fixture("flaky-failed.xml", [["test_flaky", "fail"]]);
    const passed = fixture("flaky-passed.xml", [["test_flaky", "pass"]]);
    expect((await action({ ...base, run: `cp '${failed}' reports/junit.xml` }, sha(3))).code).toBe(0);
    expect((await action({ ...base, run: `cp '${passed}' reports/junit.xml` }, sha(3))).code).toBe(0);

    // The tests run without the token in their environment (printenv would print it).
    const masked = await action({ ...base, run: `printenv INPUT_TOKEN || true; cp '${failed}' reports/junit.xml && exit 3` }, sha(4));
    expectMasked(masked);
    expect(masked.stdout).toContain("every failure is a quarantined test; exiting 0 instead of 3");
    expect(masked).toMatchObject({ code: 0, outputs: { job: "run", "exit-code": "0" } });

    const kept = await action({ ...base, run: `cp '${failed}' reports/junit.xml && exit 3`, quarantine: "false" }, sha(5));
    expectMasked(kept);
    expect(kept).toMatchObject({ code: 3, outputs: { job: "run", "exit-code": "3" } });
    expect(kept.stdout).toMatch(/uploaded 1 tests \(1 failed\)/);
    expect(kept.stdout).toContain("::error::greenline action: the run job failed (exit code 3)");

    const broken = fixture("broken.xml", [
      ["test_flaky", "fail"],
      ["test_broken", "fail"],
    ]);
    const real = await action({ ...base, run: `cp '${broken}' reports/junit.xml && exit 4` }, sha(6));
    expect(real).toMatchObject({ code: 4, outputs: { job: "run", "exit-code": "4" } });
    expect(real.stdout).toContain("2 failing test(s), 1 quarantined");
  });

  test("quarantine: false uploads only the reports the command wrote: a stale report is not uploaded, also when the command cannot start", async () => {
    const base = { token: server.api.token, url: server.url, org: "acme", "junit-paths": "reports/*.xml", quarantine: "false" };
    const stale = { "reports/junit.xml": report([["test_stale", "fail"]]) };
    const before = (await failing()).length;
    const wroteNothing = await action({ ...base, run: "exit 3" }, sha(10), stale);
    expect(wroteNothing).toMatchObject({ code: 3, outputs: { job: "run", "exit-code": "3" } });
    expect(wroteNothing.stdout).toContain("the command wrote no JUnit report; exit code 3 stands");
    expect(wroteNothing.stdout).not.toContain("uploaded");
    const cannotStart = await action({ ...base, run: "no-such-command-here" }, sha(11), stale);
    expect(cannotStart).toMatchObject({ code: 127, outputs: { job: "run", "exit-code": "127" } });
    expect(cannotStart.stdout).not.toContain("uploaded");
    expect((await failing()).map((t: { name: string }) => t.name)).not.toContain("test_stale");
    expect((await failing()).length).toBe(before);
    // And a command passing with a failing report it wrote: uploaded, its 0 stands.
    const written = report([["test_fresh", "fail"]]).replace(/'/g, "'\\''");
    const passing = await action({ ...base, run: `echo '${written}' > reports/junit.xml` }, sha(12));
    expect(passing).toMatchObject({ code: 0, outputs: { job: "run", "exit-code": "0" } });
    expect(passing.stdout).toMatch(/uploaded 1 tests \(1 failed\)/);
  });

  test("the targets and submit jobs work with org set (the queue commands do not take --org)", async () => {
    await server.api.ok("createQueue", queueOf("action-org"));
    const submitted = await action({ token: server.api.token, url: server.url, org: "acme", submit: "true" }, sha(13), {}, 9, "acme/action-org");
    expect(submitted).toMatchObject({ code: 0, outputs: { job: "submit", "exit-code": "0" } });
  });

  test("contradictory or missing inputs: an ::error:: annotation naming them, exit 2, nothing sent", async () => {
    const before = (await failing()).length;
    const both = await action({ token: server.api.token, url: server.url, org: "acme", "junit-paths": "reports/*.xml", submit: "true" }, sha(7));
    expect(both.code).toBe(2);
    expectMasked(both);
    expect(both.stdout).toContain("::error::greenline action: one job per step: junit-paths (upload test results) and submit: true (submit the pull request) cannot be combined");
    expect(both.outputs).toEqual({});
    const none = await action({ url: server.url, "junit-paths": "reports/*.xml" }, sha(7));
    expect(none.code).toBe(2);
    expect(none.stdout).toContain("::error::greenline action: Input required and not supplied: token");
    expect((await failing()).length).toBe(before);
  });

  test("a refusal by the CLI (no report matched) is its exit code, annotated", async () => {
    const none = await action({ token: server.api.token, url: server.url, org: "acme", "junit-paths": "nowhere/*.xml" }, sha(8));
    expectMasked(none);
    expect(none).toMatchObject({ code: 70, outputs: { job: "upload", "exit-code": "70" } });
    expect(none.stdout).toContain("no JUnit reports match nowhere/*.xml");
    expect(none.stdout).toContain("::error::greenline action: the upload job failed (exit code 70)");
  });

  // The queue's commands (pr submit, targets set) come with the queue CLI; until the client has them only the mapping above is tested.
  const queueCommands = COMMANDS["pr submit"] !== undefined && COMMANDS["targets set"] !== undefined;
  (queueCommands ? test : test.skip)("submit: true submits the event's pull request to its base branch's queue; impacted-targets sets its targets (a file, or ALL)", async () => {
    const repo = "acme/action-queue";
    await server.api.ok("createQueue", { ...queueOf("action-queue"), mode: "parallel", concurrency: 5 });
    const base = { token: server.api.token, url: server.url };

    const submitted = await action({ ...base, submit: "true", priority: "high" }, sha(20), {}, 7, repo);
    expectMasked(submitted);
    expect(submitted).toMatchObject({ code: 0, outputs: { job: "submit", "exit-code": "0" } });
    const record = await server.api.ok("getSubmittedPullRequest", prOf(7, "action-queue"));
    expect(record).toMatchObject({ isCurrentlySubmittedToQueue: true, priorityName: "high" });

    const targets = await action({ ...base, "impacted-targets": "targets.txt" }, record.prSha, { "targets.txt": "//api:lib\n//web:app\n" }, 7, repo);
    expectMasked(targets);
    expect(targets).toMatchObject({ code: 0, outputs: { job: "targets", "exit-code": "0" } });
    await server.greenline.worker.drain();
    expect((await server.api.ok("getMergeQueueTestingDetails", prOf(7, "action-queue"))).impactedTargets).toEqual(["//api:lib", "//web:app"]);

    await server.api.ok("submitPullRequest", prOf(8, "action-queue"));
    const head = (await server.api.ok("getSubmittedPullRequest", prOf(8, "action-queue"))).prSha;
    const all = await action({ ...base, "impacted-targets": "ALL" }, head, {}, 8, repo);
    expect(all).toMatchObject({ code: 0, outputs: { job: "targets", "exit-code": "0" } });
    await server.greenline.worker.drain();
    expect((await server.api.ok("getMergeQueueTestingDetails", prOf(8, "action-queue"))).impactedTargets).toBe("ALL");
  });
});
