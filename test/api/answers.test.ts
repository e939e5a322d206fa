import { DEFAULT_QUEUE_SETTINGS } from "../../src/domain/queue-settings.js";
import { checkAnswer } from "../support/answers.js";

// Every ApiClient answer in the suite goes through checkAnswer; here, that it can fail.

const queueRecord = { ...DEFAULT_QUEUE_SETTINGS, state: "running", branch: "main", requiredStatuses: [], requiredStatusesSource: "repo_provider_branch_protection" };
const check =
  (status: number, body: unknown, path = "createQueue") =>
  () =>
    checkAnswer(path, "POST", status, "application/json; charset=utf-8", body);

test("a 200 is checked against its operation's response schema, strictly", () => {
  expect(check(200, queueRecord)).not.toThrow();
  expect(check(200, { ...queueRecord, requiredStatuses: null })).toThrow("requiredStatuses: Invalid input: expected array, received null");
  expect(check(200, { ...queueRecord, undocumented: 1 })).toThrow('Unrecognized key: "undocumented"');
  const { requiredStatusesSource: _left, ...missing } = queueRecord;
  expect(check(200, missing)).toThrow("requiredStatusesSource");
  expect(check(200, { upload_id: "u", test_cases: 1, failures: 0, unnamed_test_cases: 0, infrastructure_failure: false }, "flaky-tests/upload")).not.toThrow();
});

test("any other answer is checked against the Error schema; the metrics text against its content type", () => {
  expect(check(404, { error: { code: "not_found", message: "no queue", details: [] } })).not.toThrow();
  expect(check(404, { error: { code: "missing", message: "no queue", details: [] } })).toThrow("error.code");
  expect(check(500, "Internal Server Error")).toThrow("Error schema");
  expect(() => checkAnswer("getMergeQueueMetrics", "GET", 200, "application/json", "{}")).toThrow("documented as text/plain");
});
