import type { QueueEntry as EntryRow } from "../generated/sqlite/client.js";
import { LIVE_PR_STATES, MERGEABILITY, PR_STATES, type Mergeability, type PrState } from "../domain/states.js";
import type { TimelineEvent } from "../domain/timeline.js";
import { oneOf, prismaShaped } from "./columns.js";
import { sqlOf, type Tx } from "./database.js";
import { toImpactedTargets, type ImpactedTargets } from "./impacted-targets.js";
import { transitionDurations } from "../domain/durations.js";
import { appendTimelineEvent, insertTransitions, pruneTimeline, transitionRows } from "./timeline.js";

/** A pull request's place in a queue: what the code host said of it, and where the queue has it. */
export type QueueEntry = {
  id: string;
  queueId: string;
  prNumber: number;
  prTitle: string;
  prSha: string;
  prBaseBranch: string;
  prAuthor: string;
  state: PrState;
  stateChangedAt: Date;
  /** Why the PR is in its state (the last transition's reason). */
  stateReason: string;
  priorityValue: number;
  priorityName: string;
  usedDefaultPriorityName: string | null;
  noBatch: boolean;
  forceEnqueued: boolean;
  isCurrentlySubmitted: boolean;
  mergeability: Mergeability;
  ready: boolean;
  bisectionGroupLimit: number | null;
  /** While in flight: its place in the line (see EngineEntry.position). */
  linePosition: number | null;
  directMergeBase: string | null;
  /** The code host's own words when it refused the PR for good; null otherwise. */
  failureMessage: string | null;
  /** Submitted as a hotfix (merges while the queue is frozen): its reason; null otherwise. */
  emergencyReason: string | null;
  /** Stacked on this PR of the queue (its base is that PR's head branch: docs/stacks.md); null: based on the queue's branch. */
  stackBelowPr: number | null;
  submittedAt: Date;
  /** Time not ready since the submission, in ms (left out of its time in queue: domain/durations.ts). */
  notReadyMs: number;
  /** How many transitions its timeline holds. */
  timelineCount: number;
};

export function toQueueEntry(row: EntryRow): QueueEntry {
  return {
    id: row.id,
    queueId: row.queueId,
    prNumber: row.prNumber,
    prTitle: row.prTitle,
    prSha: row.prSha,
    prBaseBranch: row.prBaseBranch,
    prAuthor: row.prAuthor,
    state: oneOf(PR_STATES, row.state, "QueueEntry.state"),
    stateChangedAt: row.stateChangedAt,
    stateReason: row.stateReason,
    priorityValue: row.priorityValue,
    priorityName: row.priorityName,
    usedDefaultPriorityName: row.usedDefaultPriorityName,
    noBatch: row.noBatch,
    forceEnqueued: row.forceEnqueued,
    isCurrentlySubmitted: row.isCurrentlySubmitted,
    mergeability: oneOf(MERGEABILITY, row.mergeability, "QueueEntry.mergeability"),
    ready: row.ready,
    bisectionGroupLimit: row.bisectionGroupLimit,
    linePosition: row.linePosition === null ? null : Number(row.linePosition),
    directMergeBase: row.directMergeBase,
    failureMessage: row.failureMessage,
    emergencyReason: row.emergencyReason ?? null,
    stackBelowPr: row.stackBelowPr ?? null,
    submittedAt: row.submittedAt,
    // Counted for this submission only: a release that does not know the column resubmits without resetting it.
    notReadyMs: row.notReadySubmittedAt !== null && row.notReadySubmittedAt.getTime() === row.submittedAt.getTime() ? Number(row.notReadyMs) : 0,
    timelineCount: row.timelineCount,
  };
}

/** A QueueEntry row read through plain SQL (sqlOf), as a QueueEntry. */
export function queueEntryOfSql(row: Record<string, unknown>): QueueEntry {
  return toQueueEntry(prismaShaped<EntryRow>(row, ["noBatch", "forceEnqueued", "isCurrentlySubmitted", "ready"], ["stateChangedAt", "submittedAt", "readinessRecheckAt", "notReadySubmittedAt"]));
}

/** The queue's PRs in play, and those of `prNumbers` whatever their state (plain SQL: every decision loads them). */
export async function entriesInPlayOr(tx: Tx, queueId: string, prNumbers: readonly number[]): Promise<QueueEntry[]> {
  const [text, params] = entriesInPlayQuery(tx, queueId, prNumbers);
  return (await sqlOf(tx).all<Record<string, unknown>>(text, params)).map(queueEntryOfSql);
}

/**
 * entriesInPlayOr with each PR's impacted targets (a parallel queue's decision needs both): one
 * statement, the targets joined through their (queueId, prNumber) key.
 */
export async function entriesInPlayWithTargets(tx: Tx, queueId: string, prNumbers: readonly number[]): Promise<{ entries: QueueEntry[]; targets: Map<number, ImpactedTargets> }> {
  const [text, params] = entriesInPlayQuery(tx, queueId, prNumbers);
  const rows = await sqlOf(tx).all<Record<string, unknown>>(
    `SELECT e.*, t."sha" AS "targetsSha", t."kind" AS "targetsKind", t."targets" AS "targetsList" FROM (${text}) e LEFT JOIN "ImpactedTargets" t ON t."queueId" = e."queueId" AND t."prNumber" = e."prNumber"`,
    params,
  );
  const entries = rows.map(queueEntryOfSql);
  const targets = new Map<number, ImpactedTargets>();
  rows.forEach((row, i) => {
    if (row.targetsSha === null || row.targetsSha === undefined) return;
    const prNumber = entries[i]!.prNumber;
    targets.set(prNumber, toImpactedTargets({ prNumber, sha: String(row.targetsSha), kind: String(row.targetsKind), targets: String(row.targetsList) }));
  });
  return { entries, targets };
}

/**
 * The queue's entries of `prNumbers` (whatever their state), with their impacted targets when
 * `withTargets`: the rows a decision reads again when it holds a copy of the rest
 * (queue-snapshots.ts).
 */
export async function entriesOfPrs(tx: Tx, queueId: string, prNumbers: readonly number[], withTargets: boolean): Promise<{ entries: QueueEntry[]; targets: Map<number, ImpactedTargets> }> {
  const targets = new Map<number, ImpactedTargets>();
  if (prNumbers.length === 0) return { entries: [], targets };
  const sql = sqlOf(tx);
  const [inPrs, prs] = sql.anyOf(`e."prNumber"`, prNumbers);
  const rows = await sql.all<Record<string, unknown>>(
    withTargets
      ? `SELECT e.*, t."sha" AS "targetsSha", t."kind" AS "targetsKind", t."targets" AS "targetsList" FROM "QueueEntry" e LEFT JOIN "ImpactedTargets" t ON t."queueId" = e."queueId" AND t."prNumber" = e."prNumber" WHERE e."queueId" = ? AND ${inPrs}`
      : `SELECT e.* FROM "QueueEntry" e WHERE e."queueId" = ? AND ${inPrs}`,
    [queueId, prs],
  );
  const entries = rows.map(queueEntryOfSql);
  if (withTargets) {
    rows.forEach((row, i) => {
      if (row.targetsSha === null || row.targetsSha === undefined) return;
      const prNumber = entries[i]!.prNumber;
      targets.set(prNumber, toImpactedTargets({ prNumber, sha: String(row.targetsSha), kind: String(row.targetsKind), targets: String(row.targetsList) }));
    });
  }
  return { entries, targets };
}

function entriesInPlayQuery(tx: Tx, queueId: string, prNumbers: readonly number[]): [string, unknown[]] {
  const sql = sqlOf(tx);
  const [inStates, states] = sql.anyOf(`"state"`, LIVE_PR_STATES);
  if (prNumbers.length === 0) return [`SELECT * FROM "QueueEntry" WHERE "queueId" = ? AND ${inStates}`, [queueId, states]];
  const [inPrs, prs] = sql.anyOf(`"prNumber"`, prNumbers);
  // Two index lookups (queueId, state) and (queueId, prNumber), not a scan of the queue's history.
  return [`SELECT * FROM "QueueEntry" WHERE "queueId" = ? AND ${inStates} UNION SELECT * FROM "QueueEntry" WHERE "queueId" = ? AND ${inPrs}`, [queueId, states, queueId, prs]];
}

/** The queue's entry for PR `prNumber`, or null when it was never submitted there. */
export async function entryOf(tx: Tx, queueId: string, prNumber: number): Promise<QueueEntry | null> {
  // Plain SQL (sqlOf): every write to a PR reads its entry.
  const [row] = await sqlOf(tx).all<Record<string, unknown>>(`SELECT * FROM "QueueEntry" WHERE "queueId" = ? AND "prNumber" = ?`, [queueId, prNumber]);
  return row ? queueEntryOfSql(row) : null;
}

/** The PRs still in play, in the order getQueue lists them: priority, then submission, then number. */
export async function liveEntriesInOrder(tx: Tx, queueId: string): Promise<QueueEntry[]> {
  const rows = await tx.queueEntry.findMany({
    where: { queueId, state: { in: LIVE_PR_STATES } },
    orderBy: [{ priorityValue: "asc" }, { submittedAt: "asc" }, { prNumber: "asc" }],
  });
  return rows.map(toQueueEntry);
}

/** Up to `limit` PRs still in play, with their states (enough to say why a queue is not empty). */
export async function someLiveEntries(tx: Tx, queueId: string, limit: number): Promise<{ prNumber: number; state: PrState }[]> {
  const rows = await tx.queueEntry.findMany({ where: { queueId, state: { in: LIVE_PR_STATES } }, select: { prNumber: true, state: true }, take: limit });
  return rows.map((row) => ({ prNumber: row.prNumber, state: oneOf(PR_STATES, row.state, "QueueEntry.state") }));
}

/** How many of the queue's PRs are in one of `states`. */
export async function countEntriesIn(tx: Tx, queueId: string, states: readonly PrState[]): Promise<number> {
  // Plain SQL: the blocked-reason sweep asks for every queue with PRs waiting (issue 23, goal 3).
  const sql = sqlOf(tx);
  const [inStates, param] = sql.anyOf(`"state"`, states);
  const [row] = await sql.all<{ n: number | string }>(`SELECT COUNT(*) AS "n" FROM "QueueEntry" WHERE "queueId" = ? AND ${inStates}`, [queueId, param]);
  return Number(row?.n ?? 0);
}

/** The titles of the queue's PRs `prNumbers`, by number (a PR never submitted has none). */
export async function titlesOf(tx: Tx, queueId: string, prNumbers: number[]): Promise<Map<number, string>> {
  const rows = await tx.queueEntry.findMany({ where: { queueId, prNumber: { in: prNumbers } }, select: { prNumber: true, prTitle: true } });
  return new Map(rows.map((row) => [row.prNumber, row.prTitle]));
}

/** The head commits the queue pinned for PRs `prNumbers` (the heads it tests and merges), by number. */
export async function pinnedHeadsOf(tx: Tx, queueId: string, prNumbers: readonly number[]): Promise<Record<number, string>> {
  const sql = sqlOf(tx);
  const [inPrs, prs] = sql.anyOf(`"prNumber"`, prNumbers);
  const rows = await sql.all<{ prNumber: number; prSha: string }>(`SELECT "prNumber", "prSha" FROM "QueueEntry" WHERE "queueId" = ? AND ${inPrs}`, [queueId, prs]);
  return Object.fromEntries(rows.map((row) => [row.prNumber, row.prSha]));
}

/**
 * For a merge of `prNumbers` into `branch`: the head pinned for each (the commit tested), the
 * stacked PRs among them with the base each is expected to have (the branch of the PR under it:
 * docs/stacks.md), and the PRs in play stacked right on them that do not merge with them, with
 * their base (moved to `branch` once these land). One statement: the merged PRs by their key, the
 * others through the (queueId, state) index (never the queue's history).
 */
export async function mergeFactsOf(
  tx: Tx,
  queueId: string,
  branch: string,
  prNumbers: readonly number[],
): Promise<{ heads: Record<number, string>; stackBases: Record<number, string>; retargetAfter: Record<number, string> }> {
  const sql = sqlOf(tx);
  const [inPrs, prs] = sql.anyOf(`"prNumber"`, prNumbers);
  const [inStates, states] = sql.anyOf(`"state"`, LIVE_PR_STATES);
  const [onPrs, below] = sql.anyOf(`"stackBelowPr"`, prNumbers);
  const columns = `"prNumber", "prSha", "prBaseBranch", "stackBelowPr"`;
  const rows = await sql.all<{ prNumber: number | string; prSha: string; prBaseBranch: string; stackBelowPr: number | string | null }>(
    `SELECT ${columns} FROM "QueueEntry" WHERE "queueId" = ? AND ${inPrs} UNION ALL SELECT ${columns} FROM "QueueEntry" WHERE "queueId" = ? AND ${inStates} AND ${onPrs}`,
    [queueId, prs, queueId, states, below],
  );
  const merging = new Set(prNumbers);
  const heads: Record<number, string> = {};
  const stackBases: Record<number, string> = {};
  const retargetAfter: Record<number, string> = {};
  for (const row of rows) {
    const pr = Number(row.prNumber);
    if (merging.has(pr)) heads[pr] = row.prSha;
    if (row.stackBelowPr === null || row.prBaseBranch === branch) continue;
    if (merging.has(pr)) stackBases[pr] = row.prBaseBranch;
    else retargetAfter[pr] = row.prBaseBranch;
  }
  return { heads, stackBases, retargetAfter };
}

/** What a submission learns of a PR from the code host and the request. */
export type PullRequestFacts = {
  prTitle: string;
  prSha: string;
  prBaseBranch: string;
  prAuthor: string;
  mergeability: Mergeability;
  directMergeBase: string | null;
  priorityValue: number;
  priorityName: string;
  usedDefaultPriorityName: string | null;
  noBatch?: boolean;
  /** A hotfix's reason (null: not a hotfix). */
  emergencyReason: string | null;
  /** The PR it is stacked on (null: based on the queue's branch). */
  stackBelowPr: number | null;
};

/** A PR submitted again while it is in play: new facts and readiness, the same place in the queue. */
export async function updateEntryFacts(tx: Tx, id: string, facts: PullRequestFacts & { ready: boolean }): Promise<void> {
  const { columns, values } = factColumns({ ...facts });
  // A resubmission that is no hotfix ends the PR's hotfix (null is written, not skipped).
  if (!columns.includes("emergencyReason")) {
    columns.push("emergencyReason");
    values.push(null);
  }
  await sqlOf(tx).run(`UPDATE "QueueEntry" SET ${setClause(columns)} WHERE "id" = ?`, [...values, id]);
}

/** A queued PR found stacked on another queued PR (docs/stacks.md). */
export async function setEntryStackBelow(tx: Tx, id: string, stackBelowPr: number): Promise<void> {
  await sqlOf(tx).run(`UPDATE "QueueEntry" SET "stackBelowPr" = ? WHERE "id" = ?`, [stackBelowPr, id]);
}

/** A queued PR under an emergency in its stack, made an emergency too (docs/stacks.md). */
export async function setEntryEmergency(tx: Tx, id: string, emergency: { priorityValue: number; priorityName: string; emergencyReason: string }): Promise<void> {
  await sqlOf(tx).run(`UPDATE "QueueEntry" SET "priorityValue" = ?, "priorityName" = ?, "emergencyReason" = ? WHERE "id" = ?`, [emergency.priorityValue, emergency.priorityName, emergency.emergencyReason, id]);
}

/** A stacked PR moved to the queue's branch (docs/stacks.md): its new base noted, nothing else. */
export async function setEntryBaseBranch(tx: Tx, id: string, baseBranch: string): Promise<void> {
  await sqlOf(tx).run(`UPDATE "QueueEntry" SET "prBaseBranch" = ? WHERE "id" = ?`, [baseBranch, id]);
}

/** `"a" = ?, "b" = ?` for an UPDATE of these (fixed, known) columns. */
const setClause = (columns: readonly string[]) => columns.map((c) => `"${c}" = ?`).join(", ");

/** The columns of a PR's facts an update writes (those given), in a fixed order. */
const FACT_COLUMNS = [
  "prTitle",
  "prSha",
  "prBaseBranch",
  "prAuthor",
  "mergeability",
  "directMergeBase",
  "priorityValue",
  "priorityName",
  "usedDefaultPriorityName",
  "noBatch",
  "emergencyReason",
  "stackBelowPr",
  "ready",
] as const;

function factColumns(facts: Partial<Record<(typeof FACT_COLUMNS)[number], unknown>>): { columns: string[]; values: unknown[] } {
  const columns = FACT_COLUMNS.filter((c) => facts[c] !== undefined);
  return { columns, values: columns.map((c) => facts[c]) };
}

export type Submission = {
  queueId: string;
  prNumber: number;
  /** The entry of an earlier submission (left the queue since), updated in place; null for a first one. */
  existing: QueueEntry | null;
  facts: PullRequestFacts;
  ready: boolean;
  state: PrState;
  reason: string;
  at: Date;
  /** The submission's timeline event (who submitted it, with what). */
  event: TimelineEvent;
};

/** Enters a PR in the queue (again), with the transition that says so. */
export async function saveSubmission(tx: Tx, submission: Submission, newId: () => string): Promise<void> {
  const { queueId, prNumber, existing, facts, ready, state, reason, at, event } = submission;
  const data = {
    ...facts,
    noBatch: facts.noBatch ?? false,
    isCurrentlySubmitted: true,
    forceEnqueued: false,
    submittedAt: at,
    ready,
    bisectionGroupLimit: null,
    state,
    stateReason: reason,
    stateChangedAt: at,
    failureMessage: null,
    notReadyMs: 0,
    notReadySubmittedAt: at,
    // Told by the submission's decision (recordEstimateAtSubmission), once the PR has its place.
    estimatedMergeAt: null,
    timelineCount: (existing?.timelineCount ?? 0) + 1,
  };
  // Plain SQL (sqlOf): every submission writes here.
  const sql = sqlOf(tx);
  const id = existing?.id ?? newId();
  const row: Record<string, unknown> = { ...data, directMergeBase: data.directMergeBase ?? null, usedDefaultPriorityName: data.usedDefaultPriorityName ?? null };
  if (existing) {
    const columns = Object.keys(row);
    await sql.run(`UPDATE "QueueEntry" SET ${setClause(columns)} WHERE "id" = ?`, [...columns.map((c) => row[c]), id]);
  } else {
    const full: Record<string, unknown> = { ...row, id, queueId, prNumber };
    const columns = Object.keys(full);
    await sql.insert("QueueEntry", columns, [columns.map((c) => full[c])]);
  }
  // The submission starts its time in queue; what it records is the time since the PR's last state change (0 for a first one).
  const { durations } = transitionDurations([event], { stateStartedAt: (existing?.stateChangedAt ?? at).getTime(), submittedAt: at.getTime(), notReadyMs: 0 });
  await insertTransitions(
    tx,
    transitionRows([event], { queueId, entryIdOf: () => id, newId }, (i) => durations[i]!),
  );
  await pruneTimeline(tx, id, data.timelineCount);
}

/**
 * Keeps the merge time estimated for a PR as its submission placed it in line: what the
 * analytics compare its merge with (estimate accuracy). Plain SQL: every submission writes it.
 */
export async function recordEstimateAtSubmission(tx: Tx, queueId: string, prNumber: number, estimatedMergeAt: Date): Promise<void> {
  await sqlOf(tx).run(`UPDATE "QueueEntry" SET "estimatedMergeAt" = ? WHERE "queueId" = ? AND "prNumber" = ?`, [estimatedMergeAt, queueId, prNumber]);
}

/** Records the code host's reason for refusing these PRs for good (shown with their failure). */
export async function recordFailureMessage(tx: Tx, queueId: string, prNumbers: number[], message: string): Promise<void> {
  await tx.queueEntry.updateMany({ where: { queueId, prNumber: { in: prNumbers } }, data: { failureMessage: message.slice(0, 2000) } });
}

/** Which entries a list reads: by current state, and/or concluded (merged, failed, cancelled) within a window. */
export type EntryListFilter = { state?: PrState; concludedSince?: Date; concludedUntil?: Date };

/**
 * A page of the queue's entries, most recently submitted first (then by id, so a page boundary
 * never splits ties). `after`: the id of the previous page's last entry. Answers null when
 * `after` is no entry of this queue.
 */
export async function entriesPage(tx: Tx, queueId: string, filter: EntryListFilter, after: string | undefined, take: number): Promise<{ entries: QueueEntry[]; more: boolean } | null> {
  let afterWhere = {};
  if (after !== undefined) {
    const cursor = await tx.queueEntry.findFirst({ where: { id: after, queueId }, select: { id: true, submittedAt: true } });
    if (!cursor) return null;
    afterWhere = { OR: [{ submittedAt: { lt: cursor.submittedAt } }, { submittedAt: cursor.submittedAt, id: { lt: cursor.id } }] };
  }
  const concluded = filter.concludedSince !== undefined || filter.concludedUntil !== undefined;
  const rows = await tx.queueEntry.findMany({
    where: {
      queueId,
      ...afterWhere,
      AND: [filter.state !== undefined ? { state: filter.state } : {}, concluded ? { state: { in: ["merged", "failed", "cancelled"] }, stateChangedAt: { gte: filter.concludedSince, lte: filter.concludedUntil } } : {}],
    },
    orderBy: [{ submittedAt: "desc" }, { id: "desc" }],
    take: take + 1,
  });
  return { entries: rows.slice(0, take).map(toQueueEntry), more: rows.length > take };
}

/** How many of the queue's PRs concluded (merged, failed or cancelled) since `since`: what entriesPage's concludedSince lists. */
export async function countConcludedSince(tx: Tx, queueId: string, since: Date): Promise<number> {
  return tx.queueEntry.count({ where: { queueId, state: { in: ["merged", "failed", "cancelled"] }, stateChangedAt: { gte: since } } });
}

/**
 * Adds an entry to the timeline of each of `prNumbers` still in the queue (a run's PRs): `entryFor`
 * builds it from the PR's entry, or answers null to skip that PR. For what is no engine
 * transition (a diagnosis, a verdict on a run's test results).
 */
export async function appendToTimelinesOf(tx: Tx, queueId: string, prNumbers: readonly number[], entryFor: (entry: QueueEntry) => TimelineEvent | null, newId: () => string): Promise<void> {
  for (const prNumber of prNumbers) {
    const entry = await entryOf(tx, queueId, prNumber);
    const event = entry && entryFor(entry);
    if (entry && event) await appendTimelineEvent(tx, queueId, entry.id, event, newId);
  }
}

/** Which of these PRs of the queue were submitted as emergencies (they merge through a freeze). */
export async function emergenciesAmong(tx: Tx, queueId: string, prNumbers: readonly number[]): Promise<Set<number>> {
  if (prNumbers.length === 0) return new Set();
  const sql = sqlOf(tx);
  const [inPrs, param] = sql.anyOf(`"prNumber"`, prNumbers);
  const rows = await sql.all<{ prNumber: number | string }>(`SELECT "prNumber" FROM "QueueEntry" WHERE "queueId" = ? AND ${inPrs} AND "emergencyReason" IS NOT NULL`, [queueId, param]);
  return new Set(rows.map((r) => Number(r.prNumber)));
}
