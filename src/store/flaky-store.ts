/**
 * The flaky store: every statement of the flaky-test half, named for what it does and answering
 * the domain's types (src/flaky holds no SQL). By concern: what an upload writes, what detection
 * reads and writes, what the API reads.
 */
export * from "./flaky/queries.js";
export * from "./flaky/tests.js";
export * from "./flaky/uploads.js";
export * from "./flaky/runs.js";
export * from "./flaky/backtest.js";
export * from "./flaky/upload-parts.js";
