import { writeSync } from "node:fs";

// Prints one plain closing line ("tests: N passed, N failed, N skipped") after Jest's summary.
export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const failedSuites = results.numFailedTestSuites + results.numRuntimeErrorTestSuites;
    const failed = results.numFailedTests + (results.numFailedTests === 0 ? failedSuites : 0);
    // Written at exit, so it comes after Jest's own summary.
    const line = `tests: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped\n`;
    process.once("exit", () => writeSync(2, line));
  }
}
