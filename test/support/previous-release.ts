import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dirname, "../..");

/** The previous release's commit, as release/previous names it (its one line that is not a comment). */
export function previousReleaseCommit(projectRoot = root): string {
  const lines = readFileSync(join(projectRoot, "release/previous"), "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  if (lines.length !== 1 || !/^[0-9a-f]{40}$/.test(lines[0]!)) throw new Error(`release/previous must name one commit by its full hash, not ${JSON.stringify(lines)}`);
  const commit = lines[0]!;
  try {
    execFileSync("git", ["-C", projectRoot, "cat-file", "-e", `${commit}^{commit}`], { stdio: "ignore" });
    execFileSync("git", ["-C", projectRoot, "merge-base", "--is-ancestor", commit, "HEAD"], { stdio: "ignore" });
  } catch {
    throw new Error(`release/previous names ${commit}, which this clone's history lacks or which is not an ancestor of HEAD (a shallow clone? git fetch --unshallow)`);
  }
  return commit;
}

/** A file of the previous release, read from git history (null when it had none). */
export function previousReleaseFile(path: string, commit = previousReleaseCommit()): string | null {
  try {
    return execFileSync("git", ["-C", root, "show", `${commit}:${path}`], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], maxBuffer: 64 * 1024 * 1024 });
  } catch {
    return null;
  }
}

/** The files of the previous release under a folder, by path. */
export function previousReleaseFiles(folder: string, commit = previousReleaseCommit()): string[] {
  return execFileSync("git", ["-C", root, "ls-tree", "-r", "--name-only", commit, "--", folder], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line !== "");
}

type Lock = { packages: Record<string, { version?: string; integrity?: string }> };

/**
 * Whether the previous release's dependencies are installed in this checkout's node_modules:
 * every package its lock file names is locked here at the same version and content. A package
 * this checkout added since is no matter (the release never imports it).
 */
export function previousDependenciesInstalledHere(previousLock: string, currentLock: string): boolean {
  const previous = (JSON.parse(previousLock) as Lock).packages;
  const current = (JSON.parse(currentLock) as Lock).packages;
  return Object.entries(previous).every(([path, entry]) => path === "" || (current[path]?.version === entry.version && current[path]?.integrity === entry.integrity));
}

export type PreviousRelease = { commit: string; root: string; migrations: string[] };

/**
 * The previous release, built as the README's deploy steps build it, from this clone's git
 * history: its tree at that commit, its dependencies, its Prisma clients, `npm run build`. Kept
 * in the temporary folder by commit, so a second run reuses it (~25 s of CPU to build). Its
 * node_modules is this checkout's when the lock files agree on every package it uses, else its
 * own `npm ci`.
 */
export function buildPreviousRelease(commit = previousReleaseCommit()): PreviousRelease {
  const dir = join(tmpdir(), `greenline-release-${commit}`);
  const migrations = () =>
    readdirSync(join(dir, "prisma/migrations/postgres"))
      .filter((name) => /^\d{4}_/.test(name))
      .sort();
  if (existsSync(join(dir, ".built"))) return { commit, root: dir, migrations: migrations() };
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  const archive = `${building}.tar`;
  const run = (command: string, args: string[]) => execFileSync(command, args, { cwd: building, stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
  try {
    execFileSync("git", ["-C", root, "archive", "--format=tar", "-o", archive, commit]);
    run("tar", ["-xf", archive]);
    const lock = readFileSync(join(building, "package-lock.json"), "utf8");
    if (previousDependenciesInstalledHere(lock, readFileSync(join(root, "package-lock.json"), "utf8"))) {
      symlinkSync(realpathSync(join(root, "node_modules")), join(building, "node_modules"));
      run("node", ["scripts/prisma.mjs"]);
    } else {
      // Its postinstall generates the Prisma clients.
      console.warn(`the previous release ${commit.slice(0, 12)} locks other dependencies than this checkout: installing its own (npm ci)`);
      run("npm", ["ci", "--no-audit", "--no-fund"]);
    }
    run("npm", ["run", "build"]);
    writeFileSync(join(building, ".built"), `${commit}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(building, dir);
  } catch (error) {
    const output = (error as { stderr?: Buffer; stdout?: Buffer }).stderr?.toString() ?? "";
    rmSync(building, { recursive: true, force: true });
    throw new Error(`could not build the previous release ${commit}: ${(error as Error).message}\n${output.slice(-4000)}`);
  } finally {
    rmSync(archive, { force: true });
  }
  return { commit, root: dir, migrations: migrations() };
}
