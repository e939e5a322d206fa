import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { projectRoot } from "../src/paths.js";

/**
 * The import boundaries live in biome.jsonc (`npm run lint`). The real code passing them proves
 * only that nothing crosses them today; these probes prove that each rule refuses a crossing,
 * and that no folder of src/ is left without a rule.
 */
type Probe = {
  /** A folder ("src/app/"): the probe is a new file in it; or a file ("src/log.ts"): the probe is that file. */
  at: string;
  source: string;
  allowed: boolean;
};

const allowed = (at: string, source: string): Probe => ({ at, source, allowed: true });
const refused = (at: string, source: string): Probe => ({ at, source, allowed: false });

const PROBES: Probe[] = [
  allowed("src/domain/", `import "./states.js";`),
  allowed("src/domain/", `import { z } from "zod"; export { z };`),
  allowed("src/domain/", `export { createHash } from "node:crypto";`),
  allowed("src/domain/engine/", `import "../priority.js";`),
  allowed("src/domain/engine/", `import "../flaky/identity.js";`),
  refused("src/domain/", `import "../store/database.js";`),
  refused("src/domain/", `import type { Services } from "../app/services.js"; export type { Services };`),
  refused("src/domain/", `import "@prisma/client";`),
  refused("src/domain/", `import "node:fs";`),
  refused("src/domain/", `export { randomUUID } from "node:crypto";`),
  refused("src/domain/engine/", `import "../../store/database.js";`),
  refused("src/domain/flaky/", `import "probot";`),

  allowed("src/store/", `import "../domain/states.js";`),
  refused("src/store/", `import "../app/services.js";`),
  refused("src/store/", `import "../ports/code-host.js";`),
  refused("src/store/", `import "../adapters/github/code-host.js";`),
  refused("src/store/", `import "../webhooks/github.js";`),
  refused("src/store/", `import "express";`),
  refused("src/store/", `import "../queue/queue-events.js";`),
  refused("src/store/", `import "../outbound/dispatch.js";`),

  allowed("src/auth/", `import "../store/database.js";`),
  refused("src/auth/", `import "../app/services.js";`),

  allowed("src/ports/", `import type { Tx } from "../store/database.js"; export type { Tx };`),
  refused("src/ports/", `import "../app/services.js";`),
  refused("src/ports/", `import "../adapters/sandbox/code-host.js";`),
  allowed("src/adapters/github/", `import "../../ports/code-host.js";`),
  allowed("src/adapters/sandbox/", `import "../../store/sandbox-store.js";`),
  refused("src/adapters/github/", `import "../../app/services.js";`),
  refused("src/adapters/github/", `import "../../queue/queue-events.js";`),
  refused("src/adapters/sandbox/", `import "../../worker/worker.js";`),
  refused("src/adapters/github/", `import "../../webhooks/github.js";`),

  allowed("src/app/", `import "../store/database.js";`),
  allowed("src/app/", `import "../ports/code-host.js";`),
  refused("src/app/", `import "../adapters/sandbox/code-host.js";`),
  allowed("src/app/nested/", `import "../../domain/engine/engine.js";`),
  refused("src/app/", `import "../api/app.js";`),
  refused("src/app/", `import "../webhooks/github.js";`),
  refused("src/app/", `import "../worker/worker.js";`),
  refused("src/app/nested/", `import "../../cli/main.js";`),
  refused("src/app/", `import "express";`),
  refused("src/app/", `import "../queue/queue-events.js";`),
  refused("src/app/", `import "../outbound/dispatch.js";`),
  refused("src/app/", `import "../flaky/ingest.js";`),

  allowed("src/queue/", `import "../store/queues.js";`),
  allowed("src/queue/", `import "../app/services.js";`),
  allowed("src/queue/", `import "../ports/code-host.js";`),
  refused("src/queue/", `import "../adapters/github/code-host.js";`),
  refused("src/queue/", `import "../api/app.js";`),
  refused("src/queue/", `import "../web/app.js";`),
  refused("src/queue/", `import "express";`),

  allowed("src/outbound/", `import "../store/webhook-outbox.js";`),
  allowed("src/outbound/", `import "../app/services.js";`),
  refused("src/outbound/", `import "../queue/queue-events.js";`),
  refused("src/outbound/", `import "../worker/worker.js";`),
  refused("src/outbound/", `import "../adapters/sandbox/code-host.js";`),

  refused("src/store/", `import "../flaky/ingest.js";`),
  refused("src/store/flaky/", `import "../../flaky/status.js";`),
  allowed("src/store/flaky/", `import "../../domain/flaky/detection.js";`),

  allowed("src/flaky/", `import "../store/flaky-store.js";`),
  allowed("src/flaky/", `import "../app/services.js";`),
  allowed("src/flaky/", `import "../formats/junit.js";`),
  refused("src/flaky/", `import "../api/app.js";`),
  refused("src/flaky/", `import "../worker/worker.js";`),
  refused("src/flaky/", `import "../generated/sqlite/client.js";`),

  allowed("src/formats/", `import "../domain/text.js";`),
  allowed("src/formats/", `export { isUtf8 } from "node:buffer";`),
  refused("src/formats/", `import "../store/database.js";`),
  refused("src/formats/", `import "../app/errors.js";`),

  allowed("src/api/", `import "../app/services.js";`),
  allowed("src/api/", `import "../flaky/queries.js";`),
  refused("src/api/", `import "../store/database.js";`),
  refused("src/api/", `import "../generated/sqlite/client.js";`),
  refused("src/api/", `import "../webhooks/github.js";`),
  refused("src/api/", `import "../adapters/github/code-host.js";`),
  allowed("src/api/queues/", `import "../../queue/queues.js";`),
  allowed("src/api/flaky/", `import "../../flaky/queries.js";`),
  allowed("src/api/outbound/", `import "../../outbound/endpoints.js";`),
  refused("src/api/flaky/", `import "../../store/flaky-store.js";`),
  refused("src/api/queues/", `import "../../worker/worker.js";`),
  refused("src/api/outbound/", `import "../../webhooks/github.js";`),

  allowed("src/web/", `import "./read-models/dashboard.js";`),
  allowed("src/web/", `import "../queue/records.js";`),
  allowed("src/web/read-models/", `import "../../store/queues.js";`),
  allowed("src/web/read-models/", `import "../../queue/queues.js";`),
  refused("src/web/read-models/", `import "../../worker/worker.js";`),
  refused("src/web/read-models/", `import "../../adapters/github/code-host.js";`),
  allowed("src/web/", `import "../api/operations.js";`),
  allowed("src/web/", `import "../api/queues/queue-schemas.js";`),
  refused("src/web/", `import "../store/queues.js";`),
  refused("src/web/", `import "../worker/worker.js";`),
  refused("src/web/", `import "../server.js";`),
  allowed("src/web/routes/", `import "../../api/operations.js";`),
  refused("src/web/routes/", `import "../../store/queues.js";`),
  refused("src/web/routes/", `import "../../webhooks/github.js";`),

  allowed("src/webhooks/", `import "../queue/queue-events.js";`),
  allowed("src/webhooks/", `import "./services/inbox.js";`),
  allowed("src/webhooks/services/", `import "../../store/webhook-inbox.js";`),
  refused("src/webhooks/services/", `import "../../adapters/github/code-host.js";`),
  refused("src/webhooks/services/", `import "../../api/app.js";`),
  allowed("src/webhooks/", `import "../net.js";`),
  refused("src/webhooks/", `import "../api/app.js";`),
  refused("src/webhooks/", `import "../worker/worker.js";`),
  refused("src/webhooks/", `import "../store/repositories.js";`),
  refused("src/webhooks/", `import "../adapters/github/code-host.js";`),

  allowed("src/worker/", `import "../queue/queue-events.js";`),
  allowed("src/worker/", `import "../webhooks/services/inbox.js";`),
  allowed("src/worker/", `import "../outbound/dispatch.js";`),
  refused("src/worker/", `import "../webhooks/github.js";`),
  refused("src/worker/", `import "../api/app.js";`),
  refused("src/worker/", `import "probot";`),

  allowed("src/cli/", `import "../store/database.js";`),
  refused("src/cli/", `import "../server.js";`),

  allowed("src/action/", `import "../cli/client-commands.js";`),
  refused("src/action/", `import "../cli/main.js";`),
  refused("src/action/", `import "../store/database.js";`),
  refused("src/action/", `import "../config.js";`),

  allowed("src/log.ts", `import "./domain/states.js";`),
  refused("src/paths.ts", `import "./app/services.js";`),
  refused("src/config.ts", `import "./server.js";`),

  // Nothing imports the wiring: a folder of src/ without a rule lets this through.
  ...srcFolders().map((folder) => refused(`src/${folder}/`, `import "../main.js";`)),
  ...srcFolders("domain").map((folder) => refused(`src/domain/${folder}/`, `import "../../main.js";`)),
];

function srcFolders(under = ""): string[] {
  return readdirSync(join(projectRoot, "src", under), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name !== "generated")
    .map((entry) => entry.name);
}

/** Lints each probe as a file of its own at its path, with the project's biome.jsonc; the probes whose import was refused. */
function refusedProbes(probes: Probe[]): Set<Probe> {
  const dir = mkdtempSync(join(tmpdir(), "greenline-boundaries-"));
  try {
    copyFileSync(join(projectRoot, "biome.jsonc"), join(dir, "biome.jsonc"));
    const byFile = new Map<string, Probe>();
    probes.forEach((probe, i) => {
      const file = probe.at.endsWith("/") ? `${probe.at}probe-${i}.ts` : probe.at;
      if (byFile.has(file)) throw new Error(`two probes in ${file}: use another file`);
      byFile.set(file, probe);
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), `${probe.source}\n`);
    });
    const biome = join(projectRoot, "node_modules/@biomejs/biome/bin/biome");
    const run = spawnSync(process.execPath, [biome, "lint", "--vcs-enabled=false", "--reporter=github", "--max-diagnostics=none", "."], { cwd: dir, encoding: "utf8" });
    if (run.error) throw run.error;
    const refused = new Set<Probe>();
    for (const [, rule, path] of run.stdout.matchAll(/^::error title=([^,]+),file=([^,]+),/gm)) {
      if (rule !== "lint/style/noRestrictedImports") throw new Error(`a probe broke another rule (${rule} in ${path}): keep probes to the import`);
      const probe = [...byFile].find(([file]) => path!.endsWith(`/${file}`));
      if (!probe) throw new Error(`biome reported a file that is no probe: ${path}`);
      refused.add(probe[1]);
    }
    if (run.status !== 0 && refused.size === 0) throw new Error(`biome failed: ${run.stderr}`);
    return refused;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("import boundaries (biome.jsonc)", () => {
  test("each rule refuses the imports that cross it and lets the others through", () => {
    const refused = refusedProbes(PROBES);
    const verdicts = PROBES.map((probe) => `${probe.at} ${probe.source} → ${refused.has(probe) ? "refused" : "allowed"}`);
    expect(verdicts).toEqual(PROBES.map((probe) => `${probe.at} ${probe.source} → ${probe.allowed ? "allowed" : "refused"}`));
  });
});
