import { csvCell, csvOf } from "../../src/web/csv.js";

describe("CSV cells", () => {
  test.each([
    ["plain text", "tests_failed", "tests_failed"],
    ["a comma", "a, b", '"a, b"'],
    ["quotes, doubled", 'say "hi"', '"say ""hi"""'],
    ["a line break", "one\ntwo", '"one\ntwo"'],
    ["a formula", "=1+1", "'=1+1"],
    ["a plus", "+cmd", "'+cmd"],
    ["a minus", "-2+3", "'-2+3"],
    ["an at", "@SUM(A1)", "'@SUM(A1)"],
    ["a tab first", "\tx", "'\tx"],
    ["a formula with a comma", '=HYPERLINK("x","y")', `"'=HYPERLINK(""x"",""y"")"`],
    ["leading spaces", " x", '" x"'],
  ])("%s", (_what, value, written) => {
    expect(csvCell(value)).toBe(written);
  });

  test("numbers are numbers (a negative one is not a formula), nothing is an empty cell", () => {
    expect([csvCell(-3), csvCell(1.5), csvCell(null), csvCell(Number.NaN)]).toEqual(["-3", "1.5", "", ""]);
  });

  test("a document ends each row with CRLF", () => {
    expect(csvOf(["a", "b"], [[1, "x,y"]])).toBe('a,b\r\n1,"x,y"\r\n');
  });
});
