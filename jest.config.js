/** Jest runs the TypeScript sources as ES modules, compiled by SWC (no type checking: `npm run typecheck` does that). */
export default {
  testEnvironment: "node",
  extensionsToTreatAsEsm: [".ts"],
  transform: {
    "^.+\\.ts$": ["@swc/jest", { jsc: { parser: { syntax: "typescript" }, target: "es2022" }, module: { type: "es6" } }],
  },
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  testMatch: ["<rootDir>/test/**/*.test.ts"],
  globalSetup: "<rootDir>/test/support/global-setup.mjs",
  testTimeout: 60_000,
  maxWorkers: 2,
  reporters: ["default", "<rootDir>/test/support/summary-reporter.mjs"],
};
