import { randomUUID } from "node:crypto";
import { appendFileSync, writeFileSync } from "node:fs";
import { EOL } from "node:os";
import { exitCodeOf, runClient } from "../cli/client-commands.js";
import { InputError, type Plan, plan, readInputs, shown } from "./inputs.js";

/**
 * The GitHub Action's entry (action.yml → action/dist/index.mjs, bundled by scripts/build-cli.mjs):
 * reads the inputs, masks the token, runs the `greenline` command they choose in this process
 * (the packaged CLI's own code), writes the outputs and annotates a failure. The workflow-command
 * protocol is @actions/core's, written out (no dependency): `::add-mask::`, `::error::`, and
 * heredoc entries appended to the file at GITHUB_OUTPUT.
 */

/** A workflow command's data escaped as @actions/core escapes it (a newline would end the command). */
function escapeData(text: string): string {
  return text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

function command(name: string, data: string): void {
  process.stdout.write(`::${name}::${escapeData(data)}${EOL}`);
}

function setOutput(name: string, value: string): void {
  const file = process.env.GITHUB_OUTPUT;
  if (!file) return;
  const delimiter = `ghadelimiter_${randomUUID()}`;
  appendFileSync(file, `${name}<<${delimiter}${EOL}${value}${EOL}${delimiter}${EOL}`, "utf8");
}

async function greenline(argv: string[]): Promise<number> {
  const errors: string[] = [];
  const code = await runClient(argv, (line) => console.log(line)).catch((error: unknown) => exitCodeOf(error, argv, (line) => errors.push(line)));
  for (const line of errors) command("error", line);
  return code;
}

async function main(): Promise<number> {
  const inputs = readInputs(process.env);
  if (inputs.token) command("add-mask", inputs.token);
  // The tests the step runs inherit this environment: they need not see the token.
  delete process.env.INPUT_TOKEN;
  let chosen: Plan;
  try {
    chosen = plan(inputs, process.env);
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    command("error", `greenline action: ${error.message}`);
    return 2;
  }
  setOutput("job", chosen.job);
  if (chosen.allTargetsFile) writeFileSync(chosen.allTargetsFile, "ALL\n");
  console.log(`greenline action: greenline ${shown(chosen.argv)}`);
  const code = await greenline(chosen.argv);
  setOutput("exit-code", String(code));
  if (code !== 0) command("error", `greenline action: the ${chosen.job} job failed (exit code ${code})`);
  return code;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    command("error", `greenline action: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
