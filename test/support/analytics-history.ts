import type { Tx } from "../../src/store/database.js";

/** A PR's history to seed: its submissions and moves (each a transition), oldest first. */
export type SeededPr = { number: number; moves: { to: string; reason: string; at: string }[]; estimatedMergeAt?: string };

/** A run to seed: when it started, how it ended, and its flake verdict (domain/flaky/verdict.ts FlakeRecord). */
export type SeededRun = { startedAt: string; status: "passed" | "failed"; flakeVerdict?: { retries: number; infrastructureRetried: boolean; excused: Record<string, number | null> } };

const SUBMISSIONS = new Set(["submitted", "resubmitted"]);

/**
 * Writes PRs and their transitions into queue `queueId` as the engine would have stored them: the
 * entry's state and submittedAt are its last move's and last submission's.
 */
export async function seedPullRequests(tx: Tx, queueId: string, prs: SeededPr[]): Promise<void> {
  for (const pr of prs) {
    const id = `${queueId}-e${pr.number}`;
    const last = pr.moves.at(-1)!;
    const submittedAt = new Date([...pr.moves].reverse().find((m) => SUBMISSIONS.has(m.reason))!.at);
    await tx.queueEntry.create({
      data: {
        id,
        queueId,
        prNumber: pr.number,
        prTitle: `PR ${pr.number}`,
        prSha: "a".repeat(40),
        prBaseBranch: "main",
        prAuthor: "dev",
        state: last.to,
        stateChangedAt: new Date(last.at),
        stateReason: last.reason,
        priorityValue: 100,
        priorityName: "medium",
        noBatch: false,
        isCurrentlySubmitted: !["merged", "failed", "cancelled"].includes(last.to),
        mergeability: "mergeable",
        submittedAt,
        estimatedMergeAt: pr.estimatedMergeAt ? new Date(pr.estimatedMergeAt) : null,
      },
    });
    let from: string | null = null;
    for (const [i, move] of pr.moves.entries()) {
      await tx.transition.create({ data: { id: `${id}-t${i}`, entryId: id, queueId, fromState: from, toState: move.to, reason: move.reason, at: new Date(move.at) } });
      from = move.to;
    }
  }
}

export async function seedRuns(tx: Tx, queueId: string, runs: SeededRun[]): Promise<void> {
  for (const [i, run] of runs.entries()) {
    const startedAt = new Date(run.startedAt);
    await tx.testRun.create({
      data: {
        id: `${queueId}-r${i}`,
        queueId,
        runId: `run-${i + 1}`,
        kind: "main",
        baseSha: "b".repeat(40),
        stack: "[]",
        tested: "[]",
        status: run.status,
        startedAt,
        finishedAt: new Date(startedAt.getTime() + 600_000),
        flakeVerdict: run.flakeVerdict ? JSON.stringify({ ...run.flakeVerdict, judged: {}, last: null }) : null,
      },
    });
  }
}

/** A PR submitted at `submitted` that ends `to` (merged, failed) with `reason` at `ended`, by way of testing. */
export const concluded = (number: number, submitted: string, to: string, ended: string, reason = to): SeededPr => ({
  number,
  moves: [
    { to: "pending", reason: "submitted", at: submitted },
    { to: to === "merged" ? "tests_passed" : "testing", reason: "testing", at: submitted },
    { to, reason, at: ended },
  ],
});

/**
 * The history the analytics tests count by hand (now: 2030-01-10 15:30 UTC). Queue "main" of
 * acme/web: merges with known times in queue, failures with known reasons (one reason a
 * spreadsheet would run as a formula), submissions at known hours, runs with known flake
 * verdicts; "release" of acme/web: one merge and two runs; another organization's queue: merges,
 * a failure and runs that must never be counted.
 */
export const NOW = "2030-01-10T15:30:00.000Z";
export const FORMULA_REASON = '=HYPERLINK("http://evil.example","a, b")';

// Estimates told at submission: PR 1 merged 5 min after its, PR 2 20 min before, PR 3 10 min
// after, PR 4 was told none, PR 5 on time, PR 11 30 min after.
export const MAIN_PRS: SeededPr[] = [
  { ...concluded(1, "2030-01-09T08:00:00Z", "merged", "2030-01-09T08:10:00Z"), estimatedMergeAt: "2030-01-09T08:05:00Z" },
  { ...concluded(2, "2030-01-09T08:30:00Z", "merged", "2030-01-09T08:50:00Z"), estimatedMergeAt: "2030-01-09T09:10:00Z" },
  { ...concluded(3, "2030-01-09T09:00:00Z", "merged", "2030-01-09T09:30:00Z"), estimatedMergeAt: "2030-01-09T09:20:00Z" },
  concluded(4, "2030-01-09T13:00:00Z", "merged", "2030-01-09T13:40:00Z"),
  { ...concluded(5, "2030-01-10T14:00:00Z", "merged", "2030-01-10T14:05:00Z"), estimatedMergeAt: "2030-01-10T14:05:00Z" },
  // Before the 7-day window (which starts 2030-01-04 00:00), inside the 30-day one.
  concluded(6, "2030-01-03T20:00:00Z", "merged", "2030-01-03T23:00:00Z"),
  concluded(7, "2030-01-08T08:15:00Z", "failed", "2030-01-08T09:00:00Z", "tests_failed"),
  concluded(8, "2030-01-08T22:00:00Z", "failed", "2030-01-09T01:00:00Z", "tests_failed"),
  concluded(9, "2030-01-09T08:45:00Z", "failed", "2030-01-09T10:00:00Z", "timeout"),
  concluded(10, "2030-01-09T23:00:00Z", "failed", "2030-01-10T00:30:00Z", FORMULA_REASON),
  // Failed, submitted again, merged: its time in queue counts from the second submission (60 min).
  {
    number: 11,
    moves: [
      { to: "pending", reason: "submitted", at: "2030-01-05T10:00:00Z" },
      { to: "failed", reason: "tests_failed", at: "2030-01-05T11:00:00Z" },
      { to: "pending", reason: "resubmitted", at: "2030-01-06T08:00:00Z" },
      { to: "merged", reason: "merged", at: "2030-01-06T09:00:00Z" },
    ],
    estimatedMergeAt: "2030-01-06T08:30:00Z",
  },
];

const verdict = (retries: number, infrastructureRetried: boolean, excused: Record<string, number | null> = {}) => ({ retries, infrastructureRetried, excused });

export const MAIN_RUNS: SeededRun[] = [
  { startedAt: "2030-01-09T08:01:00Z", status: "passed", flakeVerdict: verdict(1, false) },
  { startedAt: "2030-01-09T08:31:00Z", status: "passed", flakeVerdict: verdict(0, false, { "ci/test": 3 }) },
  { startedAt: "2030-01-09T09:01:00Z", status: "passed", flakeVerdict: verdict(0, true) },
  { startedAt: "2030-01-09T09:20:00Z", status: "passed", flakeVerdict: verdict(0, false) },
  { startedAt: "2030-01-09T09:40:00Z", status: "failed", flakeVerdict: verdict(1, false) },
  { startedAt: "2030-01-09T13:01:00Z", status: "passed" },
  { startedAt: "2030-01-10T14:01:00Z", status: "passed" },
  { startedAt: "2030-01-02T10:00:00Z", status: "passed", flakeVerdict: verdict(1, false) },
];

export const RELEASE_PRS: SeededPr[] = [concluded(1, "2030-01-09T07:00:00Z", "merged", "2030-01-09T08:00:00Z")];
export const RELEASE_RUNS: SeededRun[] = [
  { startedAt: "2030-01-09T07:01:00Z", status: "passed", flakeVerdict: verdict(2, false) },
  { startedAt: "2030-01-09T07:30:00Z", status: "passed" },
];

export const OTHER_PRS: SeededPr[] = [
  { ...concluded(1, "2030-01-09T08:00:00Z", "merged", "2030-01-09T08:01:00Z"), estimatedMergeAt: "2030-01-09T12:00:00Z" },
  concluded(2, "2030-01-09T09:00:00Z", "failed", "2030-01-09T09:30:00Z", "tests_failed"),
];
export const OTHER_RUNS: SeededRun[] = [
  { startedAt: "2030-01-09T08:00:30Z", status: "passed", flakeVerdict: verdict(1, false) },
  { startedAt: "2030-01-09T09:00:30Z", status: "failed" },
];
