import { readFileSync } from "node:fs";
import { estimatesOf } from "../../src/domain/engine/estimates.js";
import type { EngineEntry, EngineQueue } from "../../src/domain/engine/types.js";
import { engineEntry } from "./engine-driver.js";
import { estimateText, ordinal, placeOf, REASONS, sentenceOf, STATUS_DESCRIPTION_MAX, statusDescriptionOf } from "../../src/domain/reasons.js";
import { EVIDENCE_LIST_MAX, timelineEventOf } from "../../src/domain/timeline.js";

describe("reason sentences", () => {
  test("every reason's sentence fits a GitHub status description whole, and docs/reasons.md documents every code", () => {
    const doc = readFileSync(new URL("../../docs/reasons.md", import.meta.url), "utf8");
    for (const [code, sentence] of Object.entries(REASONS)) {
      expect([code, sentence.length <= STATUS_DESCRIPTION_MAX]).toEqual([code, true]);
      expect([code, doc.includes(`\`${code}\``)]).toEqual([code, true]);
      expect([code, doc.includes(sentence)]).toEqual([code, true]);
    }
  });

  test("a status description is the sentence, with the place in line, cut to 140 characters", () => {
    expect(statusDescriptionOf("readiness_met", null, "3rd in line, ~12 min")).toBe("Ready: waiting in line to be tested (3rd in line, ~12 min).");
    expect(statusDescriptionOf("merge_refused", "x".repeat(300))).toHaveLength(STATUS_DESCRIPTION_MAX);
    expect(statusDescriptionOf("merge_refused", "x".repeat(300)).endsWith("…")).toBe(true);
    expect(sentenceOf("merge_refused", "Reviews required.")).toBe(`${REASONS.merge_refused} Reviews required.`);
    expect(sentenceOf("some_old_code")).toBe("some old code.");
    expect([1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111].map(ordinal)).toEqual(["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]);
    expect(placeOf({ index: 3 }, 720)).toBe("3rd in line, ~10 min");
    expect(placeOf(null, null)).toBe("");
  });

  test("estimates are shown in coarse buckets, so a drift of a minute or two does not rewrite a status", () => {
    const shown = (minutes: number) => estimateText(minutes * 60);
    expect([0, 1, 2, 4, 7, 8, 11, 13, 24, 26, 50, 80, 89].map(shown)).toEqual(["~1 min", "~1 min", "~2 min", "~5 min", "~5 min", "~10 min", "~10 min", "~15 min", "~20 min", "~30 min", "~45 min", "~75 min", "~90 min"]);
    expect([90, 150, 200].map(shown)).toEqual(["~2 h", "~3 h", "~3 h"]);
    expect(shown(11)).toBe(shown(12));
  });
});

describe("timeline evidence", () => {
  test("lists are cut with their total; failing checks only on a failure", () => {
    const stack = Array.from({ length: 120 }, (_, i) => i + 1);
    const run = { id: "run-9", kind: "main" as const, testBranch: "b", testBranchSha: "s", tested: [120], stack, statusChecks: { ci: { state: "failure" as const, kind: "check_run" as const, id: 5 } } };
    const context = { at: new Date(0), cause: { actor: { kind: "engine" as const, name: "greenline" } }, prHead: "h", run, requiredChecks: ["ci", "lint"], checkUrl: () => "u" };
    const failed = timelineEventOf({ prNumber: 120, from: "testing", to: "pending_failure", reason: "tests_failed", evidence: { runId: "run-9" } }, context);
    expect(failed.evidence.run!.stack).toHaveLength(EVIDENCE_LIST_MAX);
    expect(failed.evidence.run!.stackTotal).toBe(120);
    expect(failed.evidence.failingChecks).toEqual([{ name: "ci", state: "failure", url: "u" }]);
    expect(failed.evidence.missingChecks).toEqual(["lint"]);
    const testing = timelineEventOf({ prNumber: 120, from: "pending", to: "testing", reason: "testing", evidence: { runId: "run-9" } }, context);
    expect(testing.evidence).not.toHaveProperty("failingChecks");
  });
});

describe("position and estimated time to merge", () => {
  const entry = (prNumber: number, state: EngineEntry["state"], position: number | null = null): EngineEntry => engineEntry(prNumber, state, { position });
  const queue = (entries: EngineEntry[], concurrency: number): EngineQueue => ({
    state: "running",
    mode: "single",
    pendingMode: null,
    settings: {
      mode: "single",
      concurrency,
      bisectionConcurrency: 1,
      testingTimeoutMinutes: 300,
      pendingFailureDepth: 0,
      canOptimisticallyMerge: false,
      batch: false,
      batchingMaxWaitTimeMinutes: 5,
      batchingMinSize: 4,
      optimizationMode: "off",
      directMergeMode: "off",
      ciBudget: 0,
      tuning: "fixed",
    },
    baseSha: "b",
    merged: [],
    entries,
    runs: [{ id: "run-1", kind: "main", baseSha: "b", stack: [1], tested: [1], status: "running", startedAt: 0, finishedAt: null, failure: null }],
    nextRunNumber: 2,
  });

  test("the line played forward on the queue's slots, stretched by the failure rate; null without history", () => {
    const q = queue([entry(1, "testing", 1_000_000), entry(2, "pending"), entry(3, "pending"), entry(4, "not_ready")], 2);
    const stats = { runs: 4, meanSeconds: 600, failureRate: 0.25 };
    const estimates = estimatesOf(q, stats, 120_000);
    // #1 has run 2 of its 10 minutes; #2 takes the free slot now; #3 the slot #1 frees in 8 minutes.
    expect(estimates.get(1)).toEqual({ position: { index: 1, ahead: 0 }, estimatedSecondsToMerge: Math.round((600 - 120) / 0.75) });
    expect(estimates.get(2)).toEqual({ position: { index: 2, ahead: 1 }, estimatedSecondsToMerge: 800 });
    expect(estimates.get(3)).toEqual({ position: { index: 3, ahead: 2 }, estimatedSecondsToMerge: Math.round((600 - 120 + 600) / 0.75) });
    expect(estimates.has(4)).toBe(false);
    expect(estimatesOf(q, null, 0).get(3)).toEqual({ position: { index: 3, ahead: 2 }, estimatedSecondsToMerge: null });
  });

  test("with batching, the PRs waiting go in batches of up to twice batchingMinSize; a short batch after the batching wait", () => {
    const base = queue(
      [1, 2, 3, 4, 5, 6].map((n) => entry(n, "pending")),
      1,
    );
    const q: EngineQueue = { ...base, runs: [], settings: { ...base.settings, batch: true, batchingMinSize: 2, batchingMaxWaitTimeMinutes: 5 } };
    const estimates = estimatesOf(q, { runs: 4, meanSeconds: 600, failureRate: 0 }, 0);
    // One slot: #1–#4 as one batch now (10 minutes), #5–#6 as the next (20).
    expect([1, 2, 3, 4, 5, 6].map((n) => estimates.get(n)!.estimatedSecondsToMerge)).toEqual([600, 600, 600, 600, 1200, 1200]);
    // A lone PR waits for the batching wait (5 minutes from when it began to wait) before its run.
    const alone: EngineQueue = { ...q, entries: [{ ...entry(7, "pending"), stateChangedAt: 60_000 }] };
    expect(estimatesOf(alone, { runs: 4, meanSeconds: 600, failureRate: 0 }, 0).get(7)!.estimatedSecondsToMerge).toBe(60 + 300 + 600);
    // An urgent PR goes alone and at once; the batch behind it after.
    const urgent: EngineQueue = { ...q, entries: [{ ...entry(9, "pending"), priority: 0 }, entry(1, "pending"), entry(2, "pending")] };
    const withUrgent = estimatesOf(urgent, { runs: 4, meanSeconds: 600, failureRate: 0 }, 0);
    expect([9, 1, 2].map((n) => withUrgent.get(n)!.estimatedSecondsToMerge)).toEqual([600, 1200, 1200]);
    // A wait past any date a timer can be set for: no time can be told.
    const forever: EngineQueue = { ...alone, settings: { ...alone.settings, batchingMaxWaitTimeMinutes: 4294967295 } };
    expect(estimatesOf(forever, { runs: 4, meanSeconds: 600, failureRate: 0 }, 0).get(7)).toEqual({ position: { index: 1, ahead: 0 }, estimatedSecondsToMerge: null });
  });

  test("PRs being bisected hold up nobody behind them, and take none of the main line's slots", () => {
    const bisecting = (prNumber: number, state: EngineEntry["state"]): EngineEntry => ({ ...entry(prNumber, state), bisectionGroupLimit: 1 });
    const base = queue([bisecting(1, "testing"), bisecting(2, "pending"), entry(3, "testing"), entry(4, "pending")], 2);
    const q: EngineQueue = {
      ...base,
      runs: [
        { id: "run-1", kind: "bisection", baseSha: "b", stack: [1], tested: [1], status: "running", startedAt: 0, finishedAt: null, failure: null },
        { id: "run-2", kind: "main", baseSha: "b", stack: [3], tested: [3], status: "running", startedAt: 0, finishedAt: null, failure: null },
      ],
    };
    const estimates = estimatesOf(q, { runs: 4, meanSeconds: 600, failureRate: 0 }, 120_000);
    const seconds = (n: number) => estimates.get(n)!.estimatedSecondsToMerge;
    // #3's main run ends in 8 minutes, whatever the bisection ahead of it finds; #4 takes the
    // second main slot now (the bisected PRs run in the bisection pool).
    expect([seconds(3), seconds(4)]).toEqual([480, 600]);
    // A bisected PR found innocent goes back to the line for one more run.
    expect([seconds(1), seconds(2)]).toEqual([480 + 600, 600 + 600]);
  });
});
