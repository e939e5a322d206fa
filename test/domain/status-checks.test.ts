import { combineRequired } from "../../src/adapters/github/checks.js";
import { nextCiPollAt, verdictOf, withReport, withReports, type CheckReport, type ReportedCheck } from "../../src/domain/status-checks.js";

const run = (id: number, state: ReportedCheck["state"], rerun = false): CheckReport => ({ context: "build", kind: "check_run", id, state, rerun });
const status = (id: number, state: ReportedCheck["state"]): CheckReport => ({ context: "ci/test", kind: "status", id, state });

describe("withReport: checks keyed by id", () => {
  test("a late created after completed, for the same check run, changes nothing", () => {
    expect(withReport({ kind: "check_run", id: 5, state: "success" }, run(5, "pending"))).toEqual({ kind: "check_run", id: 5, state: "success" });
  });
  test("a rerequested check run goes back to pending; a new check run (higher id) replaces the old", () => {
    expect(withReport({ kind: "check_run", id: 5, state: "failure" }, run(5, "pending", true)).state).toBe("pending");
    expect(withReport({ kind: "check_run", id: 5, state: "failure" }, run(9, "pending")).state).toBe("pending");
  });
  test("an older report delivered late (lower id) changes nothing: statuses are ordered by GitHub's ids, not by delivery", () => {
    expect(withReports({}, [status(12, "success"), status(11, "pending")])["ci/test"]).toEqual({ kind: "status", id: 12, state: "success" });
    expect(withReports({}, [status(11, "pending"), status(12, "failure")])["ci/test"]?.state).toBe("failure");
  });
  test("reports without ids are taken in the order they arrive", () => {
    expect(withReport({ kind: "status", id: null, state: "success" }, { context: "x", kind: "status", id: null, state: "pending" }).state).toBe("pending");
  });
});

describe("verdictOf", () => {
  const green: Record<string, ReportedCheck> = { lint: { kind: "status", id: 1, state: "success" } };
  test("required contexts: passes once all succeeded, fails on the first failure", () => {
    expect(verdictOf({ contexts: ["lint", "build"], source: "rulesets" }, green, null)).toBeNull();
    expect(verdictOf({ contexts: ["lint"], source: "rulesets" }, green, null)).toBe("passed");
    expect(verdictOf({ contexts: ["lint"], source: "queue" }, { lint: { kind: "status", id: 2, state: "error" } }, null)).toBe("failed");
  });
  test("nothing required: passes only once the code host says CI finished", () => {
    expect(verdictOf({ contexts: [], source: "none" }, green, null)).toBeNull();
    expect(verdictOf({ contexts: [], source: "none" }, green, false)).toBeNull();
    expect(verdictOf({ contexts: [], source: "none" }, green, true)).toBe("passed");
    expect(verdictOf({ contexts: [], source: "none" }, {}, true)).toBeNull();
  });
  test("unknown requirements never decide", () => {
    expect(verdictOf({ contexts: [], source: "unknown" }, green, true)).toBeNull();
  });
});

describe("combineRequired", () => {
  test("both sources read: their union, named by where it came from", () => {
    expect(combineRequired(["a"], ["b", "a"])).toEqual({ contexts: ["a", "b"], source: "rulesets_and_branch_protection" });
    expect(combineRequired([], [])).toEqual({ contexts: [], source: "none" });
  });
  test("an unreadable source is never read as 'none'", () => {
    expect(combineRequired([], "unreadable")).toEqual({ contexts: [], source: "unknown" });
    expect(combineRequired("unreadable", ["b"])).toEqual({ contexts: ["b"], source: "branch_protection" });
  });
});

describe("nextCiPollAt", () => {
  test("first after firstMs, then doubling, capped at maxMs", () => {
    const poll = { firstMs: 30_000, maxMs: 300_000 };
    const times: number[] = [];
    let at: number | null = null;
    for (let i = 0; i < 7; i++) times.push((at = nextCiPollAt(0, at, poll)));
    expect(times).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, 780_000, 1_080_000]);
  });
});
