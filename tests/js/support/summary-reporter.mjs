// Prints one plain closing line, "jest: N passed, N failed[, N skipped]", so
// that logs read by machines see the Jest totals (Jest's own summary goes to
// stderr). Suites that failed to run count as failures.
export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(`jest: ${results.numPassedTests} passed, ${failed} failed` +
      `${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
}
