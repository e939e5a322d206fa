import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { COMMANDS } from "../../src/cli/usage.js";

/**
 * What the README tells people to run outside this checkout, and on which Node.js.
 *
 * `npx greenline` outside Greenline's checkout resolves the name `greenline` on the public npm
 * registry, which nobody in the project owns (whoever publishes it would run in CI jobs holding
 * GREENLINE_API_TOKEN). It may appear only for the commands that run where the service runs —
 * in its checkout, where npx runs the checkout's own bin — or in prose warning against it.
 */

const root = join(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(join(root, path), "utf8");
const readJson = (path: string) => JSON.parse(read(path)) as Record<string, any>;
/** npm's own range semantics (the `semver` package every npm and jest install carries; not a declared dependency, hence no types). */
const semver = createRequire(import.meta.url)("semver") as { satisfies(version: string, range: string): boolean; minVersion(range: string): { major: number } | null };

/** The lines of a Markdown file's fenced code blocks. */
function codeLines(markdown: string): string[] {
  const lines: string[] = [];
  let inside = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) inside = !inside;
    else if (inside) lines.push(line);
  }
  return lines;
}

/** What the registry would be asked for: `npx <name>`, `npm install [-g] <name>` of this project's names. */
const REGISTRY_NAMES = /\b(?:npx(?:\s+--yes|\s+-y)?\s+(greenline|@greenline\/cli)\b(?!-)|npm\s+(?:install|i)\s+(?:-g\s+)?(greenline|@greenline\/cli)(?=\s|$|@))/;

describe("the README's commands", () => {
  const serviceCommands = Object.entries(COMMANDS)
    .filter(([, help]) => help.service)
    .map(([key]) => key.split(" ")[0]!);

  test.each(["README.md", "packages/cli/README.md"])("%s: CI examples never fetch `greenline` from the public registry", (file) => {
    const offending = codeLines(read(file)).filter((line) => {
      const found = REGISTRY_NAMES.exec(line);
      // Not in a shell comment (the README's own warnings quote it).
      if (!found || line.slice(0, found.index).includes("#")) return false;
      // `npx greenline <service command>`: run in the service's checkout (the local bin).
      const command =
        line
          .slice(found.index + found[0].length)
          .trim()
          .split(/\s+/)[0] ?? "";
      return !(found[1] === "greenline" && serviceCommands.includes(command));
    });
    expect(serviceCommands).toEqual(expect.arrayContaining(["token", "setup", "db"]));
    expect(offending).toEqual([]);
  });

  test("the README says why, where it shows how to install the CLI", () => {
    const install = read("README.md")
      .split(/^### /m)
      .find((s) => s.startsWith("Installing the CLI"));
    expect(install).toMatch(/Do not run `npx greenline`/);
    expect(install).toMatch(/GitHub Action/);
  });
});

describe("Node.js versions", () => {
  const pkg = readJson("package.json");
  const minimum = semver.minVersion(pkg.engines.node)!;

  test("engines asks for a maintained LTS (22 or later): Node 20's support ended in April 2026", () => {
    expect(minimum.major).toBeGreaterThanOrEqual(22);
    expect(readJson("packages/cli/package.json").engines).toEqual(pkg.engines);
  });

  test("the image runs a Node.js that engines accepts, and the README states the same minimum", () => {
    const bases = [...read("Dockerfile").matchAll(/^FROM\s+node:(\d+)[-\w.]*/gm)].map((m) => Number(m[1]));
    expect(bases.length).toBeGreaterThan(0);
    for (const major of bases) expect(semver.satisfies(`${major}.99.0`, pkg.engines.node)).toBe(true);
    expect(read("README.md")).toContain(`Requires Node.js ${minimum.major}`);
  });

  test.each([`${22}.12.0`, "24.0.0"])("no locked package declares an engine that Node.js %s does not meet", (version) => {
    const lock = readJson("package-lock.json");
    const unmet = Object.entries(lock.packages as Record<string, { version?: string; engines?: { node?: string }; optional?: boolean }>)
      .filter(([, p]) => typeof p.engines?.node === "string" && !semver.satisfies(version, p.engines.node))
      .map(([path, p]) => `${path.replace(/^.*node_modules\//, "")}@${p.version}: ${p.engines!.node}`);
    expect(unmet).toEqual([]);
  });

  // The one native module. 11.x declared no engines (so the test above passed) yet published no
  // Node 24 binaries; 12.x declares the majors it builds and publishes for; 13.x dropped Node 20,
  // which CI still runs. One copy: the Prisma adapter's own range (^11) is overridden to the root's.
  test("one better-sqlite3 is locked, and its engines accept 22, 24, the image's Node.js and the Node.js running this test", () => {
    const lock = readJson("package-lock.json");
    const copies = Object.entries(lock.packages as Record<string, { version: string; engines?: { node?: string } }>).filter(([path]) => path.endsWith("node_modules/better-sqlite3"));
    expect(copies.map(([path]) => path)).toEqual(["node_modules/better-sqlite3"]);
    expect(pkg.overrides).toMatchObject({ "better-sqlite3": "$better-sqlite3" });
    const [, sqlite] = copies[0]!;
    expect(sqlite.engines?.node).toEqual(expect.any(String));
    const images = [...read("Dockerfile").matchAll(/^FROM\s+node:(\d+)[-\w.]*/gm)].map((m) => `${m[1]}.0.0`);
    const refused = ["22.12.0", "24.0.0", ...images, process.versions.node].filter((version) => !semver.satisfies(version, sqlite.engines!.node!));
    expect(refused).toEqual([]);
  });
});
