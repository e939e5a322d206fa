import { FAILED, PASSED } from "../../src/domain/flaky/attempts.js";
import { infrastructureFailure, NO_FAILURE_MESSAGE } from "../../src/domain/flaky/infrastructure.js";
import { flakesAgainst, treeKeyOf } from "../../src/domain/flaky/queue-evidence.js";

const failures = (n: number, summary: (i: number) => string, file: (i: number) => string) => Array.from({ length: n }, (_, i) => ({ summary: summary(i), file: file(i) }));

describe("infrastructure failures", () => {
  test("most tests failing: at least half of at least 10 tests", () => {
    expect(
      infrastructureFailure(
        10,
        failures(
          5,
          (i) => `case ${i}`,
          () => "a.ts",
        ),
      ),
    ).toBe("5 of 10 tests failed (50%; an infrastructure failure at ≥ 50% of at least 10 tests)");
    expect(
      infrastructureFailure(
        10,
        failures(
          4,
          (i) => `case ${i}`,
          () => "a.ts",
        ),
      ),
    ).toBeNull();
    // Too few tests to say: a small suite failing is its tests' business.
    expect(
      infrastructureFailure(
        9,
        failures(
          9,
          (i) => `case ${i}`,
          () => "a.ts",
        ),
      ),
    ).toBeNull();
  });

  test("one failure across unrelated tests: at least 5 tests in at least 3 files", () => {
    const refused = () => "connect ECONNREFUSED <n>.<n>.<n>.<n>:<n>";
    expect(
      infrastructureFailure(
        100,
        failures(5, refused, (i) => `f${i % 3}.ts`),
      ),
    ).toMatch(/^5 tests in 3 files failed with one failure: "connect ECONNREFUSED/);
    expect(
      infrastructureFailure(
        100,
        failures(4, refused, (i) => `f${i % 3}.ts`),
      ),
    ).toBeNull();
    // Related tests (one or two files) failing alike is one real failure.
    expect(
      infrastructureFailure(
        100,
        failures(8, refused, (i) => `f${i % 2}.ts`),
      ),
    ).toBeNull();
    // …unless what they share is a known infrastructure failure (failures.ts reads it from the message).
    expect(
      infrastructureFailure(
        100,
        failures(8, refused, (i) => `f${i % 2}.ts`).map((f) => ({ ...f, infrastructure: "connection refused" })),
      ),
    ).toMatch(/^8 of 8 failed tests failed with a known infrastructure failure \(connection refused\)/);
    // Failures without a message share no signature.
    expect(
      infrastructureFailure(
        100,
        failures(
          8,
          () => NO_FAILURE_MESSAGE,
          (i) => `f${i}.ts`,
        ),
      ),
    ).toBeNull();
    // Different failures do not add up.
    expect(
      infrastructureFailure(
        100,
        failures(
          8,
          (i) => `case ${i % 4}`,
          (i) => `f${i}.ts`,
        ),
      ),
    ).toBeNull();
  });
});

describe("evidence across runs of the same code", () => {
  test("a failure here and a pass elsewhere, or a pass here and a failure elsewhere, is flaky", () => {
    const flags = new Map([
      [1, FAILED],
      [2, PASSED],
      [3, FAILED | PASSED],
      [4, FAILED],
    ]);
    const resultOf = (key: number) => flags.get(key) ?? 0;
    expect([...flakesAgainst(resultOf, [1, 4], [1, 2, 9], [2, 3, 4, 8])].sort()).toEqual([1, 2]);
  });

  test("a run's tree key is its base and its PRs' heads, in order", () => {
    const key = treeKeyOf("base", [1, 2], { 1: "h1", 2: "h2" });
    expect(treeKeyOf("base", [1, 2], { 2: "h2", 1: "h1" })).toBe(key);
    expect(treeKeyOf("base", [2, 1], { 1: "h1", 2: "h2" })).not.toBe(key);
    expect(treeKeyOf("base", [1, 2], { 1: "h1", 2: "h3" })).not.toBe(key);
    expect(treeKeyOf("other", [1, 2], { 1: "h1", 2: "h2" })).not.toBe(key);
  });
});
