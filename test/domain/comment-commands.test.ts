import { parseCommentCommand } from "../../src/domain/comment-commands.js";

describe("comment commands", () => {
  test.each([
    ["/greenline merge", { kind: "merge", priority: null, noBatch: false, targetBranch: null }],
    ["  /Greenline MERGE --priority=urgent", { kind: "merge", priority: "urgent", noBatch: false, targetBranch: null }],
    ["LGTM\r\n/greenline merge --priority 42 --no-batch --branch release/2.x\nthanks", { kind: "merge", priority: 42, noBatch: true, targetBranch: "release/2.x" }],
    ["/greenline cancel --branch main", { kind: "cancel", targetBranch: "main" }],
    ["/greenline", { kind: "help" }],
    ["/greenline help", { kind: "help" }],
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
