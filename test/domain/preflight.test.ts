import { parse } from "yaml";
import { checkQueueSetup, type CheckReporter } from "../../src/domain/preflight/checks.js";
import { evaluateCondition, UNKNOWN } from "../../src/domain/preflight/expressions.js";
import { matchesPatterns } from "../../src/domain/preflight/filters.js";
import { predictWorkflow, type TestingMode } from "../../src/domain/preflight/workflows.js";

const verdicts = (yaml: string, mode: TestingMode = "push", targetBranch = "main") =>
  Object.fromEntries(predictWorkflow({ path: "ci.yml", document: parse(yaml) }, { targetBranch, mode }).jobs.map((j) => [j.job, j.verdict]));

const plain = (path: string[]) => (path.join(".") === "github.event_name" ? "push" : path.join(".") === "github.ref" ? "refs/heads/greenline/main/r-1" : UNKNOWN);
const evaluate = (source: string) => evaluateCondition(source, { lookup: plain, status: { success: true, failure: false, cancelled: false } });

describe("filter patterns", () => {
  test.each([
    ["greenline/**", "greenline/main/r-1", true],
    ["greenline/*", "greenline/main/r-1", false],
    ["*", "greenline/main/r-1", false],
    ["**", "greenline/main/r-1", true],
    ["main", "greenline/main/r-1", false],
    ["releases/v[0-9]+", "releases/v10", true],
    ["feature?", "feature", true],
  ])("%s against %s: %s", (pattern, name, expected) => {
    expect(matchesPatterns(name, [pattern])).toBe(expected);
  });

  test("a later `!pattern` excludes what an earlier one included", () => {
    expect(matchesPatterns("greenline/main/r-1", ["**", "!greenline/**"])).toBe(false);
    expect(matchesPatterns("greenline/main/r-1", ["!greenline/**", "**"])).toBe(true);
  });
});

describe("expressions (GitHub's rules)", () => {
  test.each([
    ["github.event_name == 'push'", true],
    ["github.event_name == 'PUSH'", true],
    ["github.event_name != 'pull_request'", true],
    ["github.event_name == 'pull_request' && secrets.TOKEN != ''", false],
    ["github.event_name == 'push' && secrets.TOKEN != ''", UNKNOWN],
    ["github.event_name == 'push' || secrets.TOKEN != ''", true],
    ["startsWith(github.ref, 'refs/heads/greenline/')", true],
    ["github.ref == 'refs/heads/main'", false],
    ['contains(fromJSON(\'["push","schedule"]\'), github.event_name)', true],
    ["!contains(github.event.head_commit.message, '[skip ci]')", UNKNOWN],
    ["null == false", true],
    ["'' == 0", true],
    ["always()", true],
    [`${"$"}{{ github.event_name == 'push' }}`, true],
  ])("%s", (source, expected) => {
    expect(evaluate(source)).toBe(expected);
  });

  test("without a status function, a condition is ANDed with success()", () => {
    const failedNeed = { lookup: plain, status: { success: false as const, failure: false as const, cancelled: false } };
    expect(evaluateCondition("github.event_name == 'push'", failedNeed)).toBe(false);
    expect(evaluateCondition("always() && github.event_name == 'push'", failedNeed)).toBe(true);
    expect(evaluateCondition("!cancelled()", failedNeed)).toBe(true);
  });
});

describe("a workflow's jobs on the queue's testing commits", () => {
  test("pull_request and merge_group only: never on pushed testing branches; the draft PR runs it", () => {
    const yaml = "on:\n  pull_request:\n  merge_group:\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps: [{run: make}]\n";
    expect(verdicts(yaml, "push")).toEqual({ build: "never" });
    expect(verdicts(yaml, "draft_pr")).toEqual({ build: "runs" });
    const [job] = predictWorkflow({ path: "ci.yml", document: parse(yaml) }, { targetBranch: "main", mode: "push" }).jobs;
    expect(job!.why).toBe("ci.yml runs on `pull_request`, `merge_group` only; testing branches are pushes");
    expect(job!.fix).toContain("push: { branches: ['greenline/**'] }");
    expect(job!.fix).toContain("createPrsForTestingBranches");
  });

  test("branch filters: main only is never, greenline/** runs, ignore and tags-only never", () => {
    expect(verdicts("on:\n  push:\n    branches: [main]\njobs:\n  a: {runs-on: x}\n")).toEqual({ a: "never" });
    expect(verdicts("on:\n  push:\n    branches: [main, 'greenline/**']\njobs:\n  a: {runs-on: x}\n")).toEqual({ a: "runs" });
    expect(verdicts("on:\n  push:\n    branches-ignore: ['greenline/**']\njobs:\n  a: {runs-on: x}\n")).toEqual({ a: "never" });
    expect(verdicts("on:\n  push:\n    tags: ['v*']\njobs:\n  a: {runs-on: x}\n")).toEqual({ a: "never" });
    expect(verdicts("on: [push]\njobs:\n  a: {runs-on: x}\n")).toEqual({ a: "runs" });
    expect(verdicts("on: push\njobs:\n  a: {runs-on: x}\n")).toEqual({ a: "runs" });
  });

  test("paths filters and pull_request_target are maybe; workflow_run never", () => {
    expect(verdicts("on:\n  push:\n    paths: ['src/**']\njobs:\n  a: {runs-on: x}\n")).toEqual({ a: "maybe" });
    expect(verdicts("on:\n  pull_request_target:\njobs:\n  a: {runs-on: x}\n", "draft_pr")).toEqual({ a: "maybe" });
    expect(verdicts("on:\n  workflow_run:\n    workflows: [CI]\n    types: [completed]\njobs:\n  a: {runs-on: x}\n", "draft_pr")).toEqual({ a: "never" });
  });

  test("a job skipped by its if: is reported skipped (it would pass without running), and so are the jobs needing it", () => {
    const yaml = [
      "on: [push, pull_request]",
      "jobs:",
      "  test: {runs-on: x, if: \"github.event_name == 'pull_request'\"}",
      "  after: {runs-on: x, needs: test}",
      "  always: {runs-on: x, needs: test, if: always()}",
      "  main-only: {runs-on: x, if: \"github.ref == 'refs/heads/main'\"}",
      "  not-draft: {runs-on: x, if: github.event.pull_request.draft == false}",
    ].join("\n");
    expect(verdicts(yaml, "push")).toEqual({ test: "skipped", after: "skipped", always: "runs", "main-only": "skipped", "not-draft": "runs" });
    expect(verdicts(yaml, "draft_pr")).toEqual({ test: "runs", after: "runs", always: "runs", "main-only": "skipped", "not-draft": "runs" });
  });

  test("needs.<job>.result is the dependency's outcome (jobs taken to succeed); a push's fields are null on a pull request", () => {
    const yaml = [
      "on: [push, pull_request]",
      "jobs:",
      "  test: {runs-on: x, if: \"github.event_name == 'pull_request'\"}",
      "  summary: {runs-on: x, needs: test, if: \"always() && needs.test.result == 'success'\"}",
      "  skip-ci: {runs-on: x, if: \"!contains(toJSON(github.event.commits.*.message), '[skip ci]')\"}",
    ].join("\n");
    expect(verdicts(yaml, "push")).toEqual({ test: "skipped", summary: "skipped", "skip-ci": "maybe" });
    expect(verdicts(yaml, "draft_pr")).toEqual({ test: "runs", summary: "runs", "skip-ci": "runs" });
  });

  test("pull_request types without opened, and base branch filters", () => {
    expect(verdicts("on:\n  pull_request:\n    types: [labeled]\njobs:\n  a: {runs-on: x}\n", "draft_pr")).toEqual({ a: "never" });
    expect(verdicts("on:\n  pull_request:\n    branches: [develop]\njobs:\n  a: {runs-on: x}\n", "draft_pr")).toEqual({ a: "never" });
    expect(verdicts("on:\n  pull_request:\n    branches: [main]\njobs:\n  a: {runs-on: x}\n", "draft_pr")).toEqual({ a: "runs" });
  });

  test("a workflow only called by others is marked called", () => {
    const prediction = predictWorkflow({ path: "build.yml", document: parse("on:\n  workflow_call:\njobs:\n  a: {runs-on: x}\n") }, { targetBranch: "main", mode: "push" });
    expect(prediction.called).toBe(true);
  });
});

describe("what the review found (each reported a check that would not report)", () => {
  const setup = (files: Record<string, string>, contexts: string[], mode: TestingMode = "push", reporters: CheckReporter[] = []) =>
    Object.fromEntries(
      checkQueueSetup({
        context: { targetBranch: "main", mode },
        required: { source: "branch_protection", contexts },
        workflows: Object.entries(files).map(([path, yaml]) => ({ path, document: parse(yaml) })),
        reporters,
      }).checks.map((c) => [c.context, c.verdict]),
    );

  test("a job named only by an expression is no evidence for every check; one named in part is at most maybe", () => {
    const expr = (inside: string) => `${"$"}{{ ${inside} }}`;
    const files = {
      "ci.yml": `on: push\njobs:\n  any:\n    name: ${expr("matrix.os")}\n    strategy: {matrix: {os: [a, b]}}\n    runs-on: x\n  part:\n    name: test-${expr("matrix.os")}\n    strategy: {matrix: {os: [a, b]}}\n    runs-on: x\n`,
      "pr.yml": "on: pull_request\njobs:\n  lint: {runs-on: x}\n",
    };
    expect(setup(files, ["lint", "cla/signed", "test-a"], "push", [{ context: "cla/signed", reporter: "cla-assistant", kind: "check_run" }])).toEqual({ lint: "never", "cla/signed": "never", "test-a": "maybe" });
  });

  test("a job is skipped under a skipped grandparent even when its own need ran with always()", () => {
    const files = {
      "ci.yml":
        'on: [push, pull_request]\njobs:\n  a: {runs-on: x, if: "github.event_name == \'pull_request\'"}\n  b: {runs-on: x, needs: a, if: always()}\n  c: {runs-on: x, needs: b}\n  d: {runs-on: x, needs: b, if: "!cancelled()"}\n',
    };
    expect(setup(files, ["a", "b", "c", "d"])).toEqual({ a: "passes_without_running", b: "reports", c: "passes_without_running", d: "reports" });
  });

  test("a reusable workflow's jobs are judged under the caller's event, each under its own check name", () => {
    const files = {
      "ci.yml": "on: push\njobs:\n  call:\n    uses: ./.github/workflows/reuse.yml\n",
      ".github/workflows/reuse.yml": "on: workflow_call\njobs:\n  test: {runs-on: x, if: \"github.event_name == 'pull_request'\"}\n  build: {runs-on: x}\n",
    };
    expect(setup(files, ["call / test", "call / build"])).toEqual({ "call / test": "passes_without_running", "call / build": "reports" });
  });

  test("needs.*.result is the dependencies' results: the usual all-green gate is settled", () => {
    const files = {
      "ci.yml": "on: push\njobs:\n  a: {runs-on: x}\n  b: {runs-on: x}\n  gate:\n    runs-on: x\n    needs: [a, b]\n    if: \"always() && !contains(needs.*.result, 'failure') && !contains(needs.*.result, 'skipped')\"\n",
    };
    expect(setup(files, ["gate"])).toEqual({ gate: "reports" });
  });

  test("hostile patterns and conditions: linear matching, no stack overflow (unknown instead)", () => {
    const pattern = `greenline/${"**a".repeat(40)}b`;
    expect(matchesPatterns(`greenline/${"a".repeat(200)}/r-1`, [pattern])).toBe(false);
    const deep = Array.from({ length: 5000 }, () => "true").join(" && ");
    expect(evaluate(deep)).toBe(UNKNOWN);
    const yaml = `on: push\njobs:\n  a:\n    runs-on: x\n    name: ${`${"$"}{{ x }}y`.repeat(40)}z\n`;
    expect(setup({ "ci.yml": yaml }, ["y".repeat(60)])).toEqual({ ["y".repeat(60)]: "never" });
  });
});

describe("checkQueueSetup: the required checks", () => {
  const ci = { path: ".github/workflows/ci.yml", document: parse("on:\n  pull_request:\njobs:\n  build:\n    runs-on: x\n  test:\n    name: Test\n    strategy: {matrix: {node: [20, 22]}}\n    runs-on: x\n") };
  const pushed = { path: ".github/workflows/push.yml", document: parse("on:\n  push:\n    branches: ['greenline/**']\njobs:\n  lint:\n    runs-on: x\n  call:\n    uses: ./.github/workflows/reusable.yml\n") };
  const reusable = { path: ".github/workflows/reusable.yml", document: parse("on: workflow_call\njobs:\n  inner:\n    name: Inner\n    runs-on: x\n") };
  const reporters: CheckReporter[] = [
    { context: "license/cla", reporter: "cla-assistant", kind: "check_run" },
    { context: "jenkins", reporter: "jenkins-bot", kind: "status" },
  ];

  test("names where each check comes from and whether it reports", () => {
    const report = checkQueueSetup({
      context: { targetBranch: "main", mode: "push" },
      required: { source: "branch_protection", contexts: ["build", "Test (20)", "lint", "call / Inner", "license/cla", "jenkins", "ghost"] },
      workflows: [ci, pushed, reusable],
      reporters,
    });
    const by = Object.fromEntries(report.checks.map((c) => [c.context, c.verdict]));
    expect(by).toEqual({ build: "never", "Test (20)": "never", lint: "reports", "call / Inner": "reports", "license/cla": "never", jenkins: "unknown", ghost: "never" });
    expect(report.ok).toBe(false);
    expect(report.checks.find((c) => c.context === "build")!.why).toBe("`build` comes from .github/workflows/ci.yml (job `build`): .github/workflows/ci.yml runs on `pull_request` only; testing branches are pushes");
  });

  test("ok when every required check reports; a warning when none is required", () => {
    expect(checkQueueSetup({ context: { targetBranch: "main", mode: "push" }, required: { source: "rulesets", contexts: ["lint"] }, workflows: [pushed, reusable], reporters: [] }).ok).toBe(true);
    const none = checkQueueSetup({ context: { targetBranch: "main", mode: "push" }, required: { source: "none", contexts: [] }, workflows: [ci], reporters: [] });
    expect(none.ok).toBe(false);
    expect(none.warnings[0]).toMatch(/no workflow job runs on testing commits/);
  });
});
