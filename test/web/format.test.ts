import type { Cause } from "../../src/domain/timeline.js";
import { cancelledHow, reasonAfterState } from "../../src/web/pages/format.js";

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

describe("how a PR was cancelled on request, from its timeline's cause", () => {
  test.each<[Cause | undefined, string]>([
    [{ actor: { kind: "token", name: "release-bot" }, command: "cancelPullRequest" }, "through the API (token release-bot)"],
    [{ actor: { kind: "token", name: "ops" }, command: "dashboard (cancelPullRequest)" }, "on the dashboard (token ops)"],
    [{ actor: { kind: "user", name: "octocat" }, command: "dashboard (cancelPullRequest)" }, "by octocat on the dashboard"],
    [{ actor: { kind: "user", name: "octocat" }, command: "/greenline cancel" }, "by octocat with /greenline cancel"],
    [{ actor: { kind: "engine", name: "greenline" } }, "on request"],
    [undefined, "on request"],
  ])("%j → %j", (cause, words) => {
    expect(cancelledHow(cause)).toBe(words);
  });
});
