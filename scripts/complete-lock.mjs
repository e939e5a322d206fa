#!/usr/bin/env node
// Completes package-lock.json with the other platforms' optional native packages (such as
// @swc/core-darwin-arm64) that npm leaves out when the registry it reads lacks them: without
// them `npm ci` refuses the lock file ("Missing: … from lock file"). Run it after any
// `npm install` that changed package-lock.json. `--check` only lists what is missing (exit 1).
// Each added entry names the version its parent pins, and the platform its name tells, so npm
// skips it on any other platform and fetches it on its own.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const OSES = ["darwin", "win32", "linux", "android", "freebsd", "openbsd", "netbsd", "sunos", "aix", "openharmony"];
const CPUS = ["arm64", "x64", "ia32", "ppc64", "s390x", "loong64", "riscv64", "mips64el", "arm"];

/** The platform a native package's name tells (…-darwin-arm64, …-linux-x64-musl, …-win32-x64-msvc). */
export function platformOf(name) {
  const suffix = name.split("/").pop();
  const os = OSES.find((o) => suffix.includes(`-${o}-`));
  const cpu = CPUS.find((c) => new RegExp(`-${c}(-|$)`).test(suffix));
  if (!os || !cpu) return null;
  const libc = /-(musl|musleabihf)$/.test(suffix) ? "musl" : /-(gnu|gnueabihf)$/.test(suffix) ? "glibc" : undefined;
  return { os, cpu, libc };
}

/** Where node would find `name` from the package at `path`: its own node_modules, then its parents'. */
function resolve(packages, path, name) {
  let dir = path;
  for (;;) {
    const candidate = `${dir ? `${dir}/` : ""}node_modules/${name}`;
    if (packages[candidate]) return candidate;
    if (!dir) return null;
    const at = dir.lastIndexOf("/node_modules/");
    dir = at === -1 ? "" : dir.slice(0, at);
  }
}

/** The optional dependencies no lock entry provides, as { at, name, version, parent }. */
export function missingOptionals(lock) {
  const missing = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
      if (resolve(lock.packages, path, name)) continue;
      const top = `node_modules/${name}`;
      const at = missing.some((m) => m.at === top && m.version !== version) ? `${path}/node_modules/${name}` : top;
      if (!missing.some((m) => m.at === at)) missing.push({ at, name, version, parent: entry });
    }
  }
  return missing;
}

export function completeLock(lock) {
  const missing = missingOptionals(lock);
  for (const { at, name, version, parent } of missing) {
    const platform = platformOf(name);
    if (!platform) throw new Error(`cannot tell the platform of ${name}: add its lock entry by hand`);
    if (!/^\d+\.\d+\.\d+/.test(version)) throw new Error(`${name}: the parent asks for ${version}, not one version`);
    const entry = { version, cpu: [platform.cpu] };
    if (parent.dev) entry.dev = true;
    if (platform.libc) entry.libc = [platform.libc];
    if (parent.license) entry.license = parent.license;
    entry.optional = true;
    entry.os = [platform.os];
    lock.packages[at] = entry;
  }
  lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b, "en"))));
  return missing.map((m) => `${m.name}@${m.version}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = join(dirname(fileURLToPath(import.meta.url)), "..", "package-lock.json");
  const lock = JSON.parse(readFileSync(file, "utf8"));
  if (process.argv.includes("--check")) {
    const missing = missingOptionals(lock);
    for (const m of missing) console.log(`missing from package-lock.json: ${m.name}@${m.version}`);
    process.exit(missing.length ? 1 : 0);
  }
  const added = completeLock(lock);
  writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(added.length ? `added ${added.length} entries: ${added.join(", ")}` : "package-lock.json is complete");
}
