import { checkProgress, etaOf, etaText, prShown, runSentence } from "../../src/web/pages/queue-rows.js";
import type { RunView } from "../../src/web/read-models/dashboard.js";
import type { MergeItemRecord } from "../../src/queue/records.js";

const at = (iso: string) => new Date(iso);
const run = (over: Partial<RunView> = {}): RunView => ({ runId: "run-3", kind: "main", stackedOn: [1, 2], tested: [3], startedAt: "2026-11-29T10:00:00.000Z", testBranch: null, checks: [], ...over });
const pr = (estimatedMergeAt: string | null): MergeItemRecord & { estimatedMergeAt: string | null } => ({
  id: "e1",
  state: "pending",
  stateChangedAt: "2026-11-29T10:00:00.000Z",
  stateReason: "submitted",
  priorityValue: 100,
  priorityName: "medium",
  skipTheLine: false,
  noBatch: false,
  prNumber: 3,
  prTitle: "Fix it",
  prSha: "a".repeat(40),
  prBaseBranch: "main",
  prAuthor: "dev",
  estimatedMergeAt,
});

/** The queue page's rows: what their ETA, checks and runs say, and what the live stream compares. */
describe("the queue page's rows", () => {
  test("an ETA is rounded the nearer the finer: to the minute within the hour, 5 minutes within 6 hours, 15 beyond", () => {
    const now = at("2026-11-29T10:00:00Z");
    expect(etaOf("2026-11-29T10:12:29Z", now)).toEqual({ at: Date.parse("2026-11-29T10:12:00Z"), seconds: 720 });
    expect(etaOf("2026-11-29T12:12:29Z", now)).toEqual({ at: Date.parse("2026-11-29T12:10:00Z"), seconds: 7800 });
    expect(etaOf("2026-11-29T18:08:00Z", now)).toEqual({ at: Date.parse("2026-11-29T18:15:00Z"), seconds: 29700 });
    expect([etaOf(null, now), etaOf(undefined, now)]).toEqual([null, null]);
    // Already due: nothing left, never a negative time.
    expect(etaOf("2026-11-29T09:58:00Z", now)?.seconds).toBe(0);
  });

  test("an ETA in words: ~12 min, ~2 h 10 min, < 1 min, due", () => {
    expect([720, 7800, 45, 0].map(etaText)).toEqual(["~12 min", "~2 h 10 min", "< 1 min", "due"]);
  });

  test("an estimate that moved by seconds (as each reading of the line moves it) leaves the row's fingerprint as it was; a minute changes it", () => {
    const fingerprint = (eta: string, now: string) => JSON.stringify(prShown(pr(eta), undefined, at(now)));
    expect(fingerprint("2026-11-29T10:12:10Z", "2026-11-29T10:00:00Z")).toBe(fingerprint("2026-11-29T10:12:21Z", "2026-11-29T10:00:07Z"));
    expect(fingerprint("2026-11-29T10:12:10Z", "2026-11-29T10:00:00Z")).not.toBe(fingerprint("2026-11-29T10:13:10Z", "2026-11-29T10:00:00Z"));
    // A check of the run testing it changes it too.
    const pending = run({ checks: [{ context: "ci/test", state: "pending" }] });
    const passed = run({ checks: [{ context: "ci/test", state: "success" }] });
    expect(JSON.stringify(prShown(pr(null), pending, at("2026-11-29T10:00:00Z")))).not.toBe(JSON.stringify(prShown(pr(null), passed, at("2026-11-29T10:00:00Z"))));
  });

  test("a run's checks: passed, failed (failure or error) and all it waits for", () => {
    const checks: RunView["checks"] = [
      { context: "a", state: "success" },
      { context: "b", state: "failure" },
      { context: "c", state: "error" },
      { context: "d", state: "pending" },
      { context: "e", state: "success" },
    ];
    expect(checkProgress(checks)).toEqual({ passed: 2, failed: 2, total: 5 });
    expect(checkProgress([])).toEqual({ passed: 0, failed: 0, total: 0 });
  });

  test("a run's stack in words: what it tests on top of what", () => {
    expect(runSentence(run())).toBe("run-3 tests #3 on top of #1, #2");
    expect(runSentence(run({ runId: "run-1", stackedOn: [], tested: [1] }))).toBe("run-1 tests #1 on the target branch");
    expect(runSentence(run({ runId: "run-4", kind: "bisection", stackedOn: [], tested: [4, 5] }))).toBe("run-4 tests #4, #5 on the target branch");
  });
});
