import { spawn } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = join(import.meta.dirname, "../..");
/** tsx by its path: the CLI may run in a directory outside the checkout (no git there, so nothing is read from this checkout). */
const TSX = pathToFileURL(join(root, "node_modules/tsx/dist/loader.mjs")).href;
const CI_VARIABLE = /^(GITHUB_|GITLAB_|CI_|CI$|BUILDKITE|CIRCLE|JENKINS_|GIT_|CHANGE_|GREENLINE_)/;

export type CliResult = { code: number; stdout: string; stderr: string };

/** Runs the real `greenline` CLI in its own process in `cwd`, with none of this machine's CI variables but `env`, and `stdin` as its input. */
export function runGreenlineCli(args: string[], env: Record<string, string>, cwd: string = root, stdin = ""): Promise<CliResult> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CI_VARIABLE.test(name)));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", TSX, join(root, "src/cli/main.ts"), ...args], { cwd, env: { ...clean, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(stdin);
  });
}
