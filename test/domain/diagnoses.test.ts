import { closeNames, diagnoseRun, editDistance } from "../../src/domain/diagnoses.js";

const at = new Date("2026-11-22T09:10:00Z");
const base = { targetBranch: "main", minutes: 10, at };

describe("run diagnoses", () => {
  test("every required check reported (pending counts): no diagnosis", () => {
    expect(diagnoseRun({ ...base, required: ["build"], seen: ["build"], seenBefore: new Set() })).toBeNull();
  });

  test("nothing reported, never seen before: CI does not trigger on the testing branches", () => {
    expect(diagnoseRun({ ...base, required: ["build", "test"], seen: [], seenBefore: new Set() })).toMatchObject({
      code: "no_checks_started",
      missingChecks: ["build", "test"],
      seenChecks: [],
      message: expect.stringContaining("greenline/**"),
    });
  });

  test("other names reported: a mismatch, with the close names", () => {
    const d = diagnoseRun({ ...base, required: ["CI / Build", "e2e"], seen: ["build", "lint"], seenBefore: new Set() });
    expect(d).toMatchObject({ code: "check_names_mismatch", missingChecks: ["CI / Build", "e2e"], suggestions: { "CI / Build": ["build"] } });
    expect(d!.message).toContain(`seen "build", "lint"; required "CI / Build", "e2e"`);
  });

  test("missing checks all seen on earlier testing branches: a path filter, even when nothing else reported", () => {
    expect(diagnoseRun({ ...base, required: ["docs"], seen: [], seenBefore: new Set(["docs", "build"]) })).toMatchObject({ code: "path_filter_likely", missingChecks: ["docs"] });
  });

  test("close names: case and punctuation, containment, a few edits; not unrelated names", () => {
    expect(closeNames("Build", ["build", "lint"])).toEqual(["build"]);
    expect(closeNames("unit-tests", ["unit_tests", "unit-test", "docs"])).toEqual(["unit_tests", "unit-test"]);
    expect(closeNames("integration", ["integraton", "lint"])).toEqual(["integraton"]);
    expect(closeNames("build", ["lint", "docs"])).toEqual([]);
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("a", "abcdefgh", 3)).toBe(4);
  });
});
