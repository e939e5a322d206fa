import { parseCommentCommand } from "../../src/domain/comment-commands.js";

describe("comment commands", () => {
  test.each([
    ["/greenline merge", { kind: "merge", priority: null, noBatch: false, targetBranch: null, emergencyReason: null }],
    ["  /Greenline MERGE --priority=urgent", { kind: "merge", priority: "urgent", noBatch: false, targetBranch: null, emergencyReason: null }],
    ["LGTM\r\n/greenline merge --priority 42 --no-batch --branch release/2.x\nthanks", { kind: "merge", priority: 42, noBatch: true, targetBranch: "release/2.x", emergencyReason: null }],
    ["/greenline cancel --branch main", { kind: "cancel", targetBranch: "main" }],
    ["/greenline", { kind: "help" }],
    ["/greenline help", { kind: "help" }],
    ['/greenline merge --hotfix "fix the login outage"', { kind: "merge", priority: null, noBatch: false, targetBranch: null, emergencyReason: "fix the login outage" }],
    ["/greenline merge --hotfix=\u201cpayments down\u201d --branch main", { kind: "merge", priority: null, noBatch: false, targetBranch: "main", emergencyReason: "payments down" }],
    ['/greenline merge --emergency "payments down"', { kind: "merge", priority: null, noBatch: false, targetBranch: null, emergencyReason: "payments down" }],
    ["/greenline merge --hotfix='it is 2am'", { kind: "merge", priority: null, noBatch: false, targetBranch: null, emergencyReason: "it is 2am" }],
    ['/greenline freeze "release 4.2" --until 2026-12-01T09:00Z', { kind: "freeze", reason: "release 4.2", until: "2026-12-01T09:00Z", testing: true, targetBranch: null }],
    ["/greenline freeze code freeze for the holidays --no-testing", { kind: "freeze", reason: "code freeze for the holidays", until: null, testing: false, targetBranch: null }],
    ["/greenline UNFREEZE --branch release", { kind: "unfreeze", targetBranch: "release" }],
  ])("%j", (body, expected) => {
    expect(parseCommentCommand(body)).toEqual(expected);
  });

  test.each([
    ["/greenline merge --priority 256", "`--priority` must be urgent, high, medium, low or a number from 0 to 255, not `256`"],
    ["/greenline merge --priority", "`--priority` needs a value"],
    ["/greenline merge --branch --no-batch", "`--branch` needs a value"],
    ["/greenline merge --fast", "unknown option `--fast`"],
    ["/greenline merge now", "unexpected `now`"],
    ["/greenline cancel --no-batch", "`cancel` takes only `--branch`"],
    ["/greenline merge --hotfix", "`--hotfix` needs a value"],
    ['/greenline merge --hotfix "  "', "`--hotfix` needs a reason"],
    ['/greenline merge --hotfix "x" --priority low', "an emergency goes ahead of everything: leave out `--priority`"],
    ['/greenline merge --emergency "x" --hotfix "y"', "`--hotfix` is `--emergency`: give one of them"],
    ['/greenline merge --emergency ""', "`--emergency` needs a reason"],
    ['/greenline merge --hotfix "unclosed', 'unclosed quote `"`'],
    ["/greenline freeze", '`freeze` needs a reason: `/greenline freeze "release 4.2"`'],
    ["/greenline freeze x --until tomorrow", "`--until` must be a time with its offset, such as 2026-12-01T09:00Z, not `tomorrow`"],
    ["/greenline freeze x --until 2026-13-45T00:00Z", "`--until` must be a time with its offset, such as 2026-12-01T09:00Z, not `2026-13-45T00:00Z`"],
    ["/greenline freeze x --until 2026-02-30T00:00Z", "`--until` must be a time with its offset, such as 2026-12-01T09:00Z, not `2026-02-30T00:00Z`"],
    ["/greenline unfreeze now", "unexpected `now`"],
    ["/greenline unfreeze --no-testing", "`unfreeze` takes only `--branch`"],
    ["/greenline deploy", "unknown command `deploy`"],
  ])("%j is refused: %s", (body, message) => {
    const parsed = parseCommentCommand(body);
    expect(parsed).toBeInstanceOf(Error);
    expect((parsed as Error).message).toBe(message);
  });

  test.each([["Please /greenline merge this"], ["/greenlinemerge"], [""], ["> /greenline merge (quoted)"]])("%j is not a command", (body) => {
    expect(parseCommentCommand(body)).toBeNull();
  });
});
