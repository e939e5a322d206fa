import { join } from "node:path";

/**
 * The GitHub Action's inputs (action.yml) and the `greenline` command they choose. Pure: the
 * entry (main.ts) reads the environment, runs the plan and reports. Which job runs is chosen by
 * which inputs are set: `junit-paths` uploads results (with `run`, runs the tests first, uploads
 * the reports they wrote and, with `quarantine`, lets quarantined failures pass), `impacted-targets` sets the pull request's impacted
 * targets, `submit: true` submits the pull request to the merge queue. One job per step.
 */

export const INPUT_NAMES = ["token", "url", "org", "junit-paths", "run", "quarantine", "variant", "check", "check-run-id", "impacted-targets", "submit", "target-branch", "priority", "pr-number"] as const;

export type InputName = (typeof INPUT_NAMES)[number];
export type Inputs = Record<InputName, string>;

/** A mistake in the step's inputs: the message names the input and the rule. */
export class InputError extends Error {}

/** An input as @actions/core's getInput reads it: INPUT_ + the name upper-cased, spaces as underscores (dashes kept), trimmed; "" when unset. */
export function readInputs(env: Record<string, string | undefined>): Inputs {
  return Object.fromEntries(INPUT_NAMES.map((name) => [name, (env[`INPUT_${name.replace(/ /g, "_").toUpperCase()}`] ?? "").trim()])) as Inputs;
}

/** A boolean input as @actions/core's getBooleanInput reads it (YAML 1.2 core schema); `fallback` when unset. */
function booleanInput(inputs: Inputs, name: InputName, fallback: boolean): boolean {
  const value = inputs[name];
  if (value === "") return fallback;
  if (["true", "True", "TRUE"].includes(value)) return true;
  if (["false", "False", "FALSE"].includes(value)) return false;
  throw new InputError(`${name} must be true or false (got ${JSON.stringify(value)})`);
}

export type Job = "upload" | "run" | "targets" | "submit";

export type Plan = {
  job: Job;
  /** The `greenline` arguments (run in the same process by the entry). */
  argv: string[];
  /** The file the entry writes "ALL" into before setting the targets, when `impacted-targets` is ALL. */
  allTargetsFile?: string;
};

/** The command a `run` input stands for: bash as GitHub's own `shell: bash` runs a step (on every GitHub-hosted runner, Windows included). */
export function shellCommand(run: string): string[] {
  return ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", run];
}

/** The `greenline` command the inputs ask for; InputError when they are missing or contradict each other. */
export function plan(inputs: Inputs, env: Record<string, string | undefined>): Plan {
  for (const name of ["token", "url"] as const) if (!inputs[name]) throw new InputError(`Input required and not supplied: ${name}`);
  const submit = booleanInput(inputs, "submit", false);
  const quarantine = booleanInput(inputs, "quarantine", true);
  const jobs = [
    ...(inputs["junit-paths"] ? ["junit-paths (upload test results)"] : []),
    ...(inputs["impacted-targets"] ? ["impacted-targets (set impacted targets)"] : []),
    ...(submit ? ["submit: true (submit the pull request)"] : []),
  ];
  if (jobs.length === 0) {
    throw new InputError(
      inputs.run ? "run needs junit-paths: the JUnit reports the command writes" : "nothing to do: set junit-paths (upload test results; with run, run the tests first), impacted-targets (a file, or ALL) or submit: true",
    );
  }
  if (jobs.length > 1) throw new InputError(`one job per step: ${jobs.join(" and ")} cannot be combined; use a step for each`);
  const job: Job = inputs["junit-paths"] ? (inputs.run ? "run" : "upload") : inputs["impacted-targets"] ? "targets" : "submit";
  const belongs: [InputName, Job[], string][] = [
    ["run", ["run"], "junit-paths (it runs the tests that write them)"],
    ["variant", ["upload", "run"], "junit-paths (test results)"],
    ["check", ["upload", "run"], "junit-paths (test results)"],
    ["target-branch", ["targets", "submit"], "impacted-targets and submit"],
    ["priority", ["submit"], "submit"],
  ];
  for (const [name, jobsOf, where] of belongs) if (inputs[name] && !jobsOf.includes(job)) throw new InputError(`${name} applies only with ${where}`);
  // check-run-id defaults to the job's own (action.yml), so the other jobs ignore it rather than refuse it.
  if (inputs["check-run-id"] && (job === "upload" || job === "run") && !/^[1-9]\d{0,15}$/.test(inputs["check-run-id"])) {
    throw new InputError(`check-run-id must be a check run id, a positive integer (got ${JSON.stringify(inputs["check-run-id"])})`);
  }
  if (inputs["pr-number"] && !/^[1-9]\d{0,9}$/.test(inputs["pr-number"])) throw new InputError(`pr-number must be a pull request number (got ${JSON.stringify(inputs["pr-number"])})`);
  // The organization is the flaky-test commands' only: a queue's is the token's.
  const connection = ["--url", inputs.url, "--token", inputs.token];
  const pr = inputs["pr-number"] ? ["--pr", inputs["pr-number"]] : [];
  const targetBranch = inputs["target-branch"] ? ["--target-branch", inputs["target-branch"]] : [];

  if (job === "upload" || job === "run") {
    if (!inputs.org && !env.GREENLINE_ORG?.trim()) throw new InputError("org is required to upload test results (or GREENLINE_ORG in the environment)");
    const junit = inputs["junit-paths"]
      .split(/[\n,]/)
      .map((p) => p.trim())
      .filter(Boolean)
      .flatMap((p) => ["--junit", p]);
    const test = [...connection, ...(inputs.org ? ["--org", inputs.org] : []), ...pr, ...(inputs.variant ? ["--variant", inputs.variant] : []), ...checkArgs(inputs), ...junit];
    if (job === "upload") return { job, argv: ["test", "upload", ...test] };
    // Without quarantine, test run still uploads only the reports the command wrote (none when it cannot start), and its code stands.
    return { job, argv: ["test", "run", ...test, ...(quarantine ? [] : ["--no-quarantine"]), "--", ...shellCommand(inputs.run)] };
  }
  if (job === "targets") {
    const file = inputs["impacted-targets"];
    const allTargetsFile = file === "ALL" ? join(env.RUNNER_TEMP || ".", "greenline-impacted-targets-all") : undefined;
    return { job, argv: ["targets", "set", allTargetsFile ?? file, ...connection, ...pr, ...targetBranch], ...(allTargetsFile ? { allTargetsFile } : {}) };
  }
  return { job, argv: ["pr", "submit", ...connection, ...pr, ...targetBranch, ...(inputs.priority ? ["--priority", inputs.priority] : [])] };
}

/** The check the results come from: the `check` input, and `check-run-id` (by default the job's own). */
function checkArgs(inputs: Inputs): string[] {
  return [...(inputs.check ? ["--check", inputs.check] : []), ...(inputs["check-run-id"] ? ["--check-run-id", inputs["check-run-id"]] : [])];
}

/** argv as it may be shown: the token's value hidden. */
export function shown(argv: string[]): string {
  return argv.map((a, i) => (argv[i - 1] === "--token" ? "***" : /[\s"'$`\\]/.test(a) ? JSON.stringify(a) : a)).join(" ");
}
