import { reasonAfterState } from "../../src/web/pages/format.js";

describe("a reason after its state's badge", () => {
  test.each([
    ["merged", "Merged.", ""],
    ["merged", "merged", ""],
    ["paused", "Paused: nothing starts testing", "Nothing starts testing"],
    ["testing", "Testing on top of the pull requests ahead of it.", "on top of the pull requests ahead of it."],
    ["merged", "Merged, but a commit from outside the queue landed", "But a commit from outside the queue landed"],
    ["failed", "Tests failed.", "Tests failed."],
    ["pending_failure", "pending failure", ""],
    // A longer word that starts like the state is not a repetition.
    ["merge", "Merged.", "Merged."],
  ])("%s + %j → %j", (state, reason, shown) => {
    expect(reasonAfterState(state, reason)).toBe(shown);
  });
});
