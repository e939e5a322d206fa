import { writeSync } from "node:fs";
import { relative } from "node:path";

/** How many of the slowest suites the closing summary names. */
const SLOWEST = 15;

/**
 * Prints, after Jest's own summary, the slowest suites with their wall times (to see where CI's
 * time goes) and one plain closing line ("tests: N passed, N failed, N skipped").
 */
export default class SummaryReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
  }

  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const failedSuites = results.numFailedTestSuites + results.numRuntimeErrorTestSuites;
    const failed = results.numFailedTests + (results.numFailedTests === 0 ? failedSuites : 0);
    const suites = results.testResults
      .map((suite) => ({ path: relative(this.rootDir, suite.testFilePath), seconds: (suite.perfStats.end - suite.perfStats.start) / 1000 }))
      .filter((suite) => Number.isFinite(suite.seconds) && suite.seconds > 0)
      .sort((a, b) => b.seconds - a.seconds);
    const total = suites.reduce((sum, suite) => sum + suite.seconds, 0);
    const times = suites.length
      ? `slowest suites (of ${suites.length}; ${total.toFixed(0)} s of suite time in all, run side by side):\n${suites
          .slice(0, SLOWEST)
          .map((suite) => `  ${suite.seconds.toFixed(1).padStart(7)} s  ${suite.path}`)
          .join("\n")}\n`
      : "";
    // Written at exit, so it comes after Jest's own summary.
    const line = `tests: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped\n`;
    process.once("exit", () => writeSync(2, times + line));
  }
}
