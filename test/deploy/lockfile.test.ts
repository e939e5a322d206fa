import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, copyFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * `npm ci` (the README's deploy step, run as written by .ci/run) accepts only a lock file that
 * matches package.json and provides every optional dependency of every locked package,
 * including other platforms' native binaries, which npm leaves out when the registry it reads
 * lacks them. Both are checked here offline; scripts/complete-lock.mjs adds what is missing.
 */

const root = join(import.meta.dirname, "../..");
const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Record<string, any>;

describe("package-lock.json", () => {
  test("locks exactly package.json's dependencies", () => {
    const pkg = readJson(join(root, "package.json"));
    const lock = readJson(join(root, "package-lock.json"));
    expect(lock.lockfileVersion).toBe(3);
    expect(lock.packages[""].dependencies).toEqual(pkg.dependencies);
    expect(lock.packages[""].devDependencies).toEqual(pkg.devDependencies);
  });

  test("provides every optional dependency of every locked package (npm ci's check)", () => {
    const check = spawnSync(process.execPath, ["scripts/complete-lock.mjs", "--check"], { cwd: root, encoding: "utf8" });
    expect(check.stdout).toBe("");
    expect(check.status).toBe(0);
  });

  test("complete-lock adds a missing platform binary with its version and platform, and nothing else", () => {
    const dir = mkdtempSync(join(tmpdir(), "greenline-lock-"));
    try {
      mkdirSync(join(dir, "scripts"));
      copyFileSync(join(root, "scripts/complete-lock.mjs"), join(dir, "scripts/complete-lock.mjs"));
      const lock = readJson(join(root, "package-lock.json"));
      const swc = lock.packages["node_modules/@swc/core"];
      const complete = JSON.stringify(lock, null, 2);
      delete lock.packages["node_modules/@swc/core-darwin-arm64"];
      delete lock.packages["node_modules/@swc/core-linux-x64-musl"];
      writeFileSync(join(dir, "package-lock.json"), `${JSON.stringify(lock, null, 2)}\n`);

      const check = spawnSync(process.execPath, ["scripts/complete-lock.mjs", "--check"], { cwd: dir, encoding: "utf8" });
      expect(check.status).toBe(1);
      expect(check.stdout).toContain(`@swc/core-darwin-arm64@${swc.optionalDependencies["@swc/core-darwin-arm64"]}`);

      execFileSync(process.execPath, ["scripts/complete-lock.mjs"], { cwd: dir });
      const fixed = readJson(join(dir, "package-lock.json"));
      expect(fixed.packages["node_modules/@swc/core-darwin-arm64"]).toEqual({
        version: swc.optionalDependencies["@swc/core-darwin-arm64"],
        cpu: ["arm64"],
        dev: true,
        license: swc.license,
        optional: true,
        os: ["darwin"],
      });
      expect(fixed.packages["node_modules/@swc/core-linux-x64-musl"]).toMatchObject({ os: ["linux"], cpu: ["x64"], libc: ["musl"] });
      expect(Object.keys(fixed.packages)).toHaveLength(Object.keys(JSON.parse(complete).packages).length);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
