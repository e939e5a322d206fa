import { runAsProcess, runClient } from "./client-commands.js";

/**
 * The packaged client's `greenline` (packages/cli, bundled by scripts/build-cli.mjs): the
 * commands that need only Greenline's HTTP API; the service's own commands answer where to run them.
 */
runAsProcess(runClient);
