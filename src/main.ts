import { existsSync, readFileSync } from "node:fs";
import v8 from "node:v8";
import { ConfigError, loadConfig } from "./config.js";
import { createLogger } from "./log.js";
import { startGreenline } from "./server.js";

/**
 * Greenline's heap is mostly data of a request in flight (a 20 MB JUnit upload is read,
 * written and dropped), and V8 lets the heap grow to up to four times the data it keeps before
 * collecting it all, which after such bursts means hundreds of megabytes of garbage. Growing
 * the heap by a quarter instead keeps its peak near what is live, for some more collections
 * (docs/benchmarks.md). GREENLINE_HEAP_GROWTH_PERCENT sets it; 0 leaves V8 its own heuristic.
 */
function limitHeapGrowth(env: NodeJS.ProcessEnv): void {
  const percent = Number(env.GREENLINE_HEAP_GROWTH_PERCENT ?? 25);
  if (!Number.isInteger(percent) || percent < 0 || percent > 1000) {
    console.error(`GREENLINE_HEAP_GROWTH_PERCENT must be an integer from 0 to 1000, not ${env.GREENLINE_HEAP_GROWTH_PERCENT}`);
    process.exit(78); // EX_CONFIG
  }
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}

/**
 * Reads the env file `greenline setup github` writes, as Probot reads .env: GREENLINE_ENV_FILE
 * names it (empty: none), by default .env in the working directory when there is one. Variables
 * already set in the environment win over the file's.
 */
function loadEnvFile(env: NodeJS.ProcessEnv): void {
  const file = env.GREENLINE_ENV_FILE ?? ".env";
  if (file.trim() === "" || (env.GREENLINE_ENV_FILE === undefined && !existsSync(file))) return;
  try {
    process.loadEnvFile(file);
  } catch (error) {
    console.error(`GREENLINE_ENV_FILE cannot be read (${file}): ${(error as Error).message}`);
    process.exit(78); // EX_CONFIG
  }
}

async function main(): Promise<void> {
  loadEnvFile(process.env);
  limitHeapGrowth(process.env);
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
  const greenline = await startGreenline(config, { log }).catch((error: unknown) => {
    // What only the database shows wrong in the configuration (GREENLINE_API_TOKEN another organization's).
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  });
  log.info({ url: greenline.url, database: config.databaseUrl.startsWith("file:") ? config.databaseUrl : "postgresql" }, "Greenline is ready");
  let stopping = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (stopping) {
        log.warn({ signal }, "second signal: exiting now");
        process.exit(1);
      }
      stopping = true;
      log.info({ signal, timeoutMs: config.shutdownTimeoutMs }, "stopping");
      // close() keeps to the timeout; this is the backstop should anything in it not.
      setTimeout(() => {
        log.error("shutdown did not finish: exiting");
        process.exit(1);
      }, config.shutdownTimeoutMs + 5_000).unref();
      greenline.close().then(
        () => process.exit(0),
        (error: unknown) => {
          log.error({ err: error }, "shutdown timed out: exiting");
          process.exit(1);
        },
      );
    });
  }
}

main().catch((error: unknown) => {
  console.error("Greenline failed to start:", error instanceof Error ? error.message : error);
  process.exit(1);
});
