#!/usr/bin/env node
// Bundles the client CLI and the GitHub Action with esbuild, each into ONE file with no runtime
// dependency (docs/decisions.md, "Packaging, deployment and the CLI"):
//   client  src/cli/client.ts  → packages/cli/dist/greenline.mjs  (npm run build:cli; packages/cli's prepack)
//   action  src/action/main.ts → action/dist/index.mjs             (committed: actions run without npm install)
// Usage: node scripts/build-cli.mjs [client|action]... [--outdir <dir>]   (default: both, in place)
// Only the packages in BUNDLED may enter a bundle: anything else (Prisma, zod, the store) means
// a client file imports the service, and the build fails naming it.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";

const root = join(import.meta.dirname, "..");

/** The packages a bundle may contain (tinyglobby and its two dependencies, all MIT). */
const BUNDLED = ["tinyglobby", "fdir", "picomatch"];

const TARGETS = {
  // The package (packages/cli) also gets the project's LICENSE, which npm pack includes.
  client: { entry: "src/cli/client.ts", outfile: "packages/cli/dist/greenline.mjs", shebang: true, license: "packages/cli/LICENSE" },
  action: { entry: "src/action/main.ts", outfile: "action/dist/index.mjs", shebang: false },
};

const { values, positionals } = parseArgs({ options: { outdir: { type: "string" } }, allowPositionals: true });
const chosen = positionals.length > 0 ? positionals : Object.keys(TARGETS);
for (const name of chosen) {
  if (!TARGETS[name]) {
    console.error(`build-cli: no target ${name} (client, action)`);
    process.exit(2);
  }
}

for (const name of chosen) {
  const target = TARGETS[name];
  const outfile = values.outdir ? join(values.outdir, target.outfile) : join(root, target.outfile);
  const result = await build({
    absWorkingDir: root,
    entryPoints: [target.entry],
    outfile,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    // No createRequire banner: the one CommonJS package (picomatch) requires only its own files,
    // which esbuild inlines. A package that require()s a Node module would fail at run time with
    // "Dynamic require of … is not supported": test/deploy/cli-package.test.ts runs the bundle.
    ...(target.shebang ? { banner: { js: "#!/usr/bin/env node" } } : {}),
    legalComments: "eof",
    metafile: true,
    logLevel: "warning",
  });
  const packages = new Set(
    Object.keys(result.metafile.inputs)
      .map((input) => /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input)?.[1])
      .filter((name) => name !== undefined),
  );
  const stray = [...packages].filter((name) => !BUNDLED.includes(name));
  if (stray.length > 0) {
    console.error(`build-cli: ${target.entry} pulls in ${stray.join(", ")}; the client may bundle only ${BUNDLED.join(", ")} (does it import the service?)`);
    process.exit(1);
  }
  // Their licenses travel with the bundle (MIT asks for the notice in copies).
  const notices = [...packages].sort().map((name) => {
    const dir = join(root, "node_modules", name);
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    const license = ["LICENSE", "LICENSE.md", "license"]
      .map((file) => join(dir, file))
      .find((file) => {
        try {
          readFileSync(file);
          return true;
        } catch {
          return false;
        }
      });
    return `${pkg.name}@${pkg.version} (${pkg.license})\n\n${license ? readFileSync(license, "utf8").trim() : pkg.license}\n`;
  });
  mkdirSync(dirname(outfile), { recursive: true });
  writeFileSync(join(dirname(outfile), "THIRD-PARTY-LICENSES.txt"), `Packages bundled into ${relative(dirname(outfile), outfile)}:\n\n${notices.join("\n---\n\n")}`);
  if (target.license) copyFileSync(join(root, "LICENSE"), values.outdir ? join(values.outdir, target.license) : join(root, target.license));
  console.log(`build-cli: ${relative(process.cwd(), outfile) || outfile} (${[...packages].sort().join(", ") || "no packages"})`);
}
