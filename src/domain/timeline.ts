import type { RunDiagnosis } from "./diagnoses.js";
import type { TransitionEvidence } from "./engine/types.js";
import type { FlakeVerdict } from "./flaky/verdict.js";
import { clip, sentenceOf } from "./reasons.js";
import type { PrState } from "./states.js";
import type { ReportedCheck } from "./status-checks.js";

/**
 * A PR's timeline: every transition of the PR in a queue, with who caused it and the evidence.
 * `timelineEventOf` builds one from the engine's transition and what the application knows (the
 * run's branch and checks, the cause); the store keeps it with the transition, the API answers
 * it, the PR's status and comment say its `message`.
 */

/**
 * Who caused a transition or a queue event: an API token (its name), a code host user (a
 * comment command: their login), the engine (its own decision), the code host (CI results,
 * pushes, closed PRs, refusals: the host's name), or a fork PR's workflow run (its id).
 */
export const ACTOR_KINDS = ["token", "user", "engine", "code_host", "fork_run", "operator"] as const;
export type ActorKind = (typeof ACTOR_KINDS)[number];
export type Actor = { kind: ActorKind; name: string };
export const ENGINE_ACTOR: Actor = { kind: "engine", name: "greenline" };

/** What caused an event: who, and the command or setting they used (e.g. "cancelPullRequest", "/greenline cancel"). */
export type Cause = { actor: Actor; command?: string };

/** Lists in evidence keep at most this many items; `…Total` then says how many there were. */
export const EVIDENCE_LIST_MAX = 50;
/** Text in evidence (the code host's words) keeps at most this many characters. */
export const EVIDENCE_TEXT_MAX = 1000;

export type CheckEvidence = { name: string; state: "pending" | "success" | "failure" | "error"; url: string | null };

export type Evidence = {
  run?: {
    id: string;
    kind: "main" | "bisection";
    testBranch: string | null;
    /** The commit CI tested: the testing branch's head. */
    testedHead: string | null;
    /** The PRs the run decides for, and those stacked under them, in merge order. */
    tested: number[];
    testedTotal?: number;
    stack: number[];
    stackTotal?: number;
  };
  /** Checks that failed, and required checks that never reported, on the run that failed. */
  failingChecks?: CheckEvidence[];
  failingChecksTotal?: number;
  missingChecks?: string[];
  missingChecksTotal?: number;
  /** A diagnosis entry's checks that did appear on the testing branch, and the names a missing one may have been meant as. */
  seenChecks?: string[];
  seenChecksTotal?: number;
  suggestions?: Record<string, string[]>;
  blamedPr?: number;
  bisection?: { batch: number[]; batchTotal?: number; groupSize?: number; culprit?: number };
  /** The effect the code host refused, with its own words. */
  effect?: { kind: "start_run" | "merge"; message: string };
  /** The command or setting that caused the transition. */
  command?: string;
  /** The PR's head commit when it moved. */
  prHead?: string;
  /** What the run's test results decided of its failed checks: the rule, and the tests with how each was judged (docs/flaky-queue.md). */
  flaky?: FlakeVerdict;
};

export type TimelineEvent = {
  prNumber: number;
  at: Date;
  previousState: PrState | null;
  state: PrState;
  reason: string;
  /** The sentence users read: the same on the API, the PR's status and its comment. */
  message: string;
  /** The code host's own words when it refused something. */
  hostMessage: string | null;
  actor: Actor;
  evidence: Evidence;
};

function bounded<T>(list: readonly T[]): { items: T[]; total?: number } {
  return list.length <= EVIDENCE_LIST_MAX ? { items: [...list] } : { items: list.slice(0, EVIDENCE_LIST_MAX), total: list.length };
}

/** A list field and its `…Total` when cut. */
function listField<K extends string, T>(key: K, list: readonly T[]): Record<string, T[] | number> {
  const { items, total } = bounded(list);
  return total === undefined ? { [key]: items } : { [key]: items, [`${key}Total`]: total };
}

export type RunFacts = {
  id: string;
  kind: "main" | "bisection";
  testBranch: string | null;
  testBranchSha: string | null;
  tested: readonly number[];
  stack: readonly number[];
  statusChecks: Readonly<Record<string, ReportedCheck>>;
  /** The latest verdict of its test results on its failed checks, when there was one. */
  flakeVerdict?: FlakeVerdict | null;
};

/** Timeline entries of a verdict on a run's test results that moves no PR (the run goes on). */
export const FLAKE_VERDICT_REASONS: ReadonlySet<string> = new Set(["flaky_failures_excused", "flaky_retry", "infrastructure_retry", "flaky_retry_new_run"]);

/** What the application knows besides the engine's transition. */
export type TimelineContext = {
  at: Date;
  cause: Cause;
  prHead: string;
  /** The run the engine names in the transition, when it is known. */
  run?: RunFacts;
  /** The checks a run must pass, when the queue names them; null: the code host's rules. */
  requiredChecks: readonly string[] | null;
  /** A check run's page, from its id. */
  checkUrl: (check: ReportedCheck) => string | null;
  /** The code host's words recorded for the PR (a refused testing branch), when the transition reports them. */
  recordedRefusal?: string | null;
};

const FAILED_STATES = new Set(["failure", "error"]);

/** Builds a timeline event: the one place a transition gets its sentence, actor and evidence. */
export function timelineEventOf(t: { prNumber: number; from: PrState | null; to: PrState; reason: string; message?: string; evidence?: TransitionEvidence }, context: TimelineContext): TimelineEvent {
  const hostMessage = t.message ?? (t.reason === "start_refused" ? (context.recordedRefusal ?? null) : null);
  const evidence: Evidence = { prHead: context.prHead };
  const run = context.run;
  if (run) {
    evidence.run = runEvidence(run);
    const failedRun = t.to === "pending_failure" || t.to === "failed" || t.reason === "retrying_failed_run" || t.reason === "bisecting_failed_batch";
    if (failedRun) {
      const failing = Object.entries(run.statusChecks)
        .filter(([, check]) => FAILED_STATES.has(check.state))
        .map(([name, check]): CheckEvidence => ({ name, state: check.state, url: context.checkUrl(check) }));
      if (failing.length > 0) Object.assign(evidence, listField("failingChecks", failing));
      const missing = (context.requiredChecks ?? []).filter((name) => run.statusChecks[name] === undefined || run.statusChecks[name]!.state === "pending");
      if (missing.length > 0) Object.assign(evidence, listField("missingChecks", missing));
    }
    if (run.flakeVerdict && (failedRun || FLAKE_VERDICT_REASONS.has(t.reason))) evidence.flaky = run.flakeVerdict;
  }
  const engine = t.evidence;
  if (engine?.blamedPr !== undefined) evidence.blamedPr = engine.blamedPr;
  if (engine?.bisection) {
    const { items, total } = bounded(engine.bisection.batch);
    evidence.bisection = {
      batch: items,
      ...(total !== undefined ? { batchTotal: total } : {}),
      ...(engine.bisection.groupSize !== undefined ? { groupSize: engine.bisection.groupSize } : {}),
      ...(engine.bisection.culprit !== undefined ? { culprit: engine.bisection.culprit } : {}),
    };
  }
  if (hostMessage && (t.reason === "merge_refused" || t.reason === "start_refused")) {
    evidence.effect = { kind: t.reason === "merge_refused" ? "merge" : "start_run", message: clip(hostMessage, EVIDENCE_TEXT_MAX) };
  }
  if (context.cause.command) evidence.command = context.cause.command;
  return {
    prNumber: t.prNumber,
    at: context.at,
    previousState: t.from,
    state: t.to,
    reason: t.reason,
    message: sentenceOf(t.reason, hostMessage),
    hostMessage: hostMessage === null ? null : clip(hostMessage, EVIDENCE_TEXT_MAX),
    actor: context.cause.actor,
    evidence,
  };
}

function runEvidence(run: RunFacts): NonNullable<Evidence["run"]> {
  return {
    id: run.id,
    kind: run.kind,
    testBranch: run.testBranch,
    testedHead: run.testBranchSha,
    ...(listField("tested", run.tested) as { tested: number[] }),
    ...(listField("stack", run.stack) as { stack: number[] }),
  };
}

/**
 * A diagnosis of the run testing a PR (docs/diagnoses.md) as an entry of the PR's timeline: the
 * state unchanged (testing → testing), the diagnosis's code as the reason, the engine as actor,
 * and as evidence the run, the missing and the seen checks and the close names suggested.
 */
export function diagnosisTimelineEvent(prNumber: number, diagnosis: RunDiagnosis, context: { at: Date; prHead: string; run: RunFacts }): TimelineEvent {
  const evidence: Evidence = { run: runEvidence(context.run), ...listField("missingChecks", diagnosis.missingChecks), ...listField("seenChecks", diagnosis.seenChecks), prHead: context.prHead };
  if (Object.keys(diagnosis.suggestions).length > 0) evidence.suggestions = diagnosis.suggestions;
  return {
    prNumber,
    at: context.at,
    previousState: "testing",
    state: "testing",
    reason: diagnosis.code,
    message: sentenceOf(diagnosis.code),
    hostMessage: null,
    actor: ENGINE_ACTOR,
    evidence,
  };
}

/**
 * A timeline event as the API answers it (getSubmittedPullRequest's timeline), and as the
 * pull_request.* webhook events carry it: one mapping, so the two cannot differ.
 */
export type TimelineRecord = { at: string; state: PrState; previousState: PrState | null; reason: string; message: string; actor: Actor; evidence: Evidence };

export function toTimelineRecord(e: TimelineEvent): TimelineRecord {
  return { at: e.at.toISOString(), state: e.state, previousState: e.previousState, reason: e.reason, message: e.message, actor: e.actor, evidence: e.evidence };
}

/**
 * Operator actions a queue records with who did them (getQueueEvents): pause, resume, drain,
 * settings changes (field: old → new), urgent submissions, and cancels by someone other than
 * the PR's submitter; merge freezes added and removed (freezeQueue, unfreezeQueue), and started
 * and ended (by whoever caused it, the engine for a schedule); hotfix submissions with their reason.
 */
export const OPERATOR_EVENT_KINDS = [
  "paused",
  "resumed",
  "draining",
  "settings_changed",
  "urgent_submission",
  "cancelled_by_other",
  "freeze_added",
  "freeze_removed",
  "freeze_started",
  "freeze_ended",
  "emergency_submission",
  "emergency_ended",
] as const;
export type OperatorEventKind = (typeof OPERATOR_EVENT_KINDS)[number];

/** At most this many transitions are kept per PR; the first (its submission) is always kept. */
export const TIMELINE_MAX = 200;
