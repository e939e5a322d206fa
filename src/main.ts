import { readFileSync } from "node:fs";
import { ConfigError, loadConfig } from "./config.js";
import { createLogger } from "./log.js";
import { startGreenline } from "./server.js";

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env, (path) => readFileSync(path, "utf8"));
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  const log = createLogger(config.logLevel);
  const greenline = await startGreenline(config, { log });
  log.info({ url: greenline.url, database: config.databaseUrl.startsWith("file:") ? config.databaseUrl : "postgresql" }, "Greenline is ready");
  let stopping = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, "stopping");
      greenline.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}

main().catch((error: unknown) => {
  console.error("Greenline failed to start:", error instanceof Error ? error.message : error);
  process.exit(1);
});
