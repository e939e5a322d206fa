import { resolvePriority, skipsTheLine } from "../../src/domain/priority.js";

describe("resolvePriority", () => {
  test.each([
    [undefined, { value: 100, name: "medium", usedDefaultName: "medium" }],
    [null, { value: 100, name: "medium", usedDefaultName: "medium" }],
    ["urgent", { value: 0, name: "urgent", usedDefaultName: null }],
    ["high", { value: 10, name: "high", usedDefaultName: null }],
    ["low", { value: 200, name: "low", usedDefaultName: null }],
    [10, { value: 10, name: "high", usedDefaultName: null }],
    [42, { value: 42, name: "42", usedDefaultName: null }],
    [255, { value: 255, name: "255", usedDefaultName: null }],
  ] as const)("%p resolves to %p", (requested, expected) => {
    expect(resolvePriority(requested as never)).toEqual(expected);
  });

  test("only urgent skips the line", () => {
    expect(skipsTheLine(0)).toBe(true);
    expect(skipsTheLine(1)).toBe(false);
    expect(skipsTheLine(10)).toBe(false);
  });
});
