import type { RunDiagnosis } from "../domain/diagnoses.js";
import type { Principal } from "../auth/tokens.js";
import { repositoryKey, type PullRequestInfo, type RepoRef } from "../ports/code-host.js";
import { resolvePriority, type Priority, type PriorityName } from "../domain/priority.js";
import { computeReadiness, isReady, nextReadinessRecheck, staysOnBaseChange, type Readiness } from "../domain/readiness.js";
import { isTerminal, type PrState, type TransitionReason } from "../domain/states.js";
import { statesOf } from "../domain/status-checks.js";
import type { Tx } from "../store/database.js";
import { entryOf, saveSubmission, setEntryBaseBranch, setEntryEmergency, setEntryStackBelow, titlesOf, updateEntryFacts, type QueueEntry } from "../store/entries.js";
import { impactedTargetsOf, impactedTargetsShaOf, upsertImpactedTargets } from "../store/impacted-targets.js";
import { lockQueueRow, queueIdsOfRepository, type Queue } from "../store/queues.js";
import { scheduleReadinessRecheck } from "../store/readiness-rechecks.js";
import { findRun, runsStartedSince, type TestRun } from "../store/runs.js";
import { applyEvent, applyQueueEventOf } from "./queue-events.js";
import { PRIORITY_NAMES } from "../domain/priority.js";
import { timelineEventOf } from "../domain/timeline.js";
import { causeOf, recordOperatorEvent } from "./causes.js";
import { recordAudit } from "../app/audit.js";
import { submitterOf, timelineOf } from "../store/timeline.js";
import type { CancelReason } from "../domain/engine/types.js";
import { AppError, failedPrecondition, invalidArgument, notFound } from "../app/errors.js";
import { findQueue, findQueueVersion, lineOf, lockQueue, withEstimates, type QueueAddress } from "./queues.js";
import { requiredStatusesOf, toMergeItemRecord, toTimelineRecord, type RequiredStatuses, type SubmittedPullRequestRecord, type TimelineRecord } from "./records.js";
import type { PlaceRecord } from "./estimates.js";
import type { Services } from "../app/services.js";
import { publishQueueEvents } from "../store/webhook-outbox.js";
import { pullRequestEvent } from "../domain/webhook-events.js";
import { hostRequiredChecks } from "./status-checks.js";

export type PullRequestAddress = QueueAddress & { prNumber: number };

function prNotSubmitted(address: PullRequestAddress) {
  return notFound(`pull request #${address.prNumber} was never submitted to the queue for "${address.targetBranch}"`);
}

async function fetchPullRequest(services: Services, address: PullRequestAddress, directMerge: boolean): Promise<PullRequestInfo> {
  const pr = await services.codeHost.getPullRequest(address.repo, address.prNumber, { targetBranch: address.targetBranch, directMerge });
  if (!pr) throw notFound(`pull request #${address.prNumber} not found in ${address.repo.owner}/${address.repo.name}`);
  return pr;
}

export async function readinessOf(tx: Tx, queue: Queue, entry: Pick<QueueEntry, "prNumber" | "prBaseBranch" | "prSha" | "mergeability" | "stackBelowPr">): Promise<Readiness> {
  return computeReadiness({
    queueMode: queue.mode,
    queueBranch: queue.branch,
    prBaseBranch: entry.prBaseBranch,
    stacked: entry.stackBelowPr !== null,
    prSha: entry.prSha,
    mergeability: entry.mergeability,
    impactedTargetsSha: await impactedTargetsShaOf(tx, queue.id, entry.prNumber),
  });
}

/**
 * `read`: the PR as the caller just read it (a comment command reads it for its base branch), used
 * instead of asking again when it is usable: GitHub knew whether it can merge (not "still
 * computing") and the queue needs no up-to-date base (`directMergeMode` "always" asks for it).
 */
export type SubmitInput = PullRequestAddress & { priority?: PriorityName | "emergency" | number | null; noBatch?: boolean; read?: PullRequestInfo; emergencyReason?: string | null };

/** Who may declare an emergency merge: an admin token, or (by comment) a repository admin or maintainer, whose principal has that role. */
export const mayDeclareEmergency = (principal: Principal) => principal.role === "admin";

/**
 * The priority a submission asks for. An emergency (`priority: emergency`, or an
 * `emergencyReason`) needs a reason and an admin: it goes ahead of everything, urgent PRs too,
 * and merges while the queue is frozen (docs/freezes.md).
 */
function submissionPriority(principal: Principal, input: SubmitInput): { priority: Priority; emergencyReason: string | null } {
  const emergencyReason = input.emergencyReason ?? null;
  const emergency = input.priority === "emergency" || emergencyReason !== null;
  if (!emergency) return { priority: resolvePriority(input.priority as PriorityName | number | null | undefined), emergencyReason: null };
  if (emergencyReason === null) throw invalidArgument("emergencyReason", "is required with priority emergency: say why the pull request must jump the line");
  if (input.priority != null && input.priority !== "emergency") throw invalidArgument("priority", "must be emergency (or left out) with emergencyReason");
  if (!mayDeclareEmergency(principal)) {
    throw new AppError("permission_denied", 'an emergency merge needs an API token with role "admin" (or, by comment, a repository admin or maintainer): ask one to submit it');
  }
  return { priority: { value: PRIORITY_NAMES.urgent, name: "emergency", usedDefaultName: null }, emergencyReason };
}

/** How many PRs a stack may hold under the one submitted (docs/stacks.md). */
export const MAX_STACK_DEPTH = 20;

/**
 * The PRs a PR is stacked on (docs/stacks.md), bottom first: following its base branch to the
 * PR whose head it is, and so on down to a PR based on the queue's branch. The lowest may be
 * merged already (the PR above it not yet moved to the queue's branch); the others are open.
 * Null when the PR is no stack on this queue's branch (its base is another branch).
 */
async function stackUnder(
  services: Services,
  address: PullRequestAddress,
  top: PullRequestInfo,
  branch: string,
  hint: { targetBranch: string; directMerge: boolean },
  queued: (prNumber: number) => Promise<boolean>,
): Promise<PullRequestInfo[] | null> {
  const under: PullRequestInfo[] = [];
  const seen = new Set([top.number]);
  for (let base = top.baseBranch; base !== branch; ) {
    const below = await services.codeHost.pullRequestWithHead(address.repo, base, hint);
    if (!below || seen.has(below.number) || below.state === "closed" || (below.state === "merged" && below.baseBranch !== branch)) return null;
    // Someone else's open PR enters with this one only if it is in the queue already: submitting
    // a PR never queues another author's work (a release PR under a feature branch, say).
    if (below.state === "open" && below.author.toLowerCase() !== top.author.toLowerCase() && !(await queued(below.number))) return null;
    if (under.length === MAX_STACK_DEPTH) {
      throw failedPrecondition(`pull request #${top.number} is stacked on more than ${MAX_STACK_DEPTH} pull requests: submit a lower part of the stack first`);
    }
    seen.add(below.number);
    under.unshift(below);
    base = below.baseBranch;
  }
  return under;
}

/**
 * Enters a PR in the queue (again). `stack`: the PRs under it in its stack (docs/stacks.md) that
 * are in the queue with it now, bottom first (empty for a PR on the queue's branch).
 */
export async function submitPullRequest(services: Services, principal: Principal, input: SubmitInput): Promise<{ stack: number[] }> {
  // Ask the code host before opening the transaction: no transaction waits on the network.
  const known = await services.db.read((tx) => findQueue(tx, principal, input));
  const directMerge = known.directMergeMode === "always";
  const reused = input.read && input.read.number === input.prNumber && input.read.mergeability !== "in_progress" && !directMerge ? input.read : null;
  const pr = reused ?? (await fetchPullRequest(services, input, directMerge));
  if (pr.state !== "open") throw failedPrecondition(`pull request #${pr.number} is ${pr.state}`);
  const { priority, emergencyReason } = submissionPriority(principal, input);
  const cause = causeOf(principal);
  // Based on another PR's branch: the PRs under it enter with it, in order (docs/stacks.md).
  const queued = async (prNumber: number) => {
    const entry = await services.db.read((tx) => entryOf(tx, known.id, prNumber));
    return entry !== null && !isTerminal(entry.state);
  };
  const under = pr.baseBranch === known.branch ? [] : ((await stackUnder(services, input, pr, known.branch, { targetBranch: known.branch, directMerge: false }, queued)) ?? []);
  // GitHub's rebase merge of a stacked PR moved to the target replays the commits of the PRs
  // under it, which the target already holds rebased: not what was tested.
  if (under.length > 0 && known.mergeMethod === "rebase") {
    throw failedPrecondition(
      `pull request #${pr.number} is stacked on #${under.at(-1)!.number}, and the queue for "${known.branch}" merges by rebase, which GitHub cannot do for a stack as tested: merge the stack with squash or merge commits, or submit its PRs one by one, each once the one under it merged`,
    );
  }
  const stack = under.filter((below) => below.state === "open").map((below) => below.number);
  await services.db.transaction(async (tx) => {
    let queue = await lockQueue(services, tx, principal, input);
    if (queue.state === "draining" || queue.state === "switching_modes") {
      throw failedPrecondition(`the queue for "${queue.branch}" is ${queue.state.replace("_", " ")} and accepts no new pull requests`);
    }
    for (const [i, below] of under.entries()) {
      if (below.state !== "open") continue;
      await enterStackedBelow(services, tx, queue, below, { stackBelowPr: i > 0 ? under[i - 1]!.number : null, priority, noBatch: input.noBatch, emergencyReason, cause, principal, top: pr.number, repo: input.repo });
    }
    let existing = await entryOf(tx, queue.id, pr.number);
    // The code host said "open" before the lock; the queue may have merged the PR since (its
    // merge decided, or landed). A merged PR stays merged: restarting it would merge it twice.
    if (existing?.state === "merged") throw failedPrecondition(`pull request #${pr.number} is already merged by this queue`);
    if (existing && queue.mergedPrs.includes(pr.number)) throw failedPrecondition(`pull request #${pr.number} is being merged by this queue`);
    if (existing && !isTerminal(existing.state) && existing.prSha !== pr.headSha && existing.state !== "not_ready" && existing.state !== "pending") {
      // New commits on a PR under test: the head the queue tests (and merges, pinned) is the
      // old one. The PR leaves the queue as on a push, and enters again at its new head.
      await applyEvent(services, tx, queue, { kind: "cancelled", prNumber: pr.number, reason: "pr_updated" }, cause);
      existing = await entryOf(tx, queue.id, pr.number);
      // The decision moved the queue on (runs started, their numbers): read it again.
      queue = (await lockQueueRow(tx, queue.id)) ?? queue;
    }
    const facts = factsOf(pr, {
      priority,
      noBatch: input.noBatch,
      emergencyReason,
      directMergeBase: pr.greenBaseSha,
      // Submitted again after its author moved it to the queue's branch: still stacked while the PR under it is queued.
      stackBelowPr: under.at(-1)?.number ?? (await stackKept(tx, queue.id, existing)),
    });
    const ready = isReady(await readinessOf(tx, queue, { prNumber: pr.number, ...facts }));
    const scheduleRecheck = () => scheduleFirstRecheck(services, tx, queue.id, pr);
    // An urgent submission jumps the line (and restarts what it displaces): an operator action.
    const target = { queueId: queue.id, repo: input.repo, branch: queue.branch };
    const inPlay = existing && !isTerminal(existing.state) ? existing : null;
    // Submitting an emergency again without its reason ends it: an admin's to do, and recorded.
    if (inPlay?.emergencyReason && emergencyReason === null) {
      if (!mayDeclareEmergency(principal)) {
        throw new AppError(
          "permission_denied",
          `pull request #${pr.number} is an emergency merge (${inPlay.emergencyReason}): only an API token with role "admin" (or, by comment, a repository admin or maintainer) may end that by submitting it again`,
        );
      }
      await recordOperatorEvent(services, tx, principal, target, "emergency_ended", { prNumber: pr.number, was: inPlay.emergencyReason });
    }
    // A queued PR's priority changed by resubmission (the dashboard's "Set priority", say): recorded.
    if (inPlay && inPlay.priorityName !== priority.name && emergencyReason === null && priority.value !== PRIORITY_NAMES.urgent) {
      await recordAudit(services, tx, principal, {
        action: "pull_request.priority_changed",
        repository: repositoryKey(input.repo),
        branch: queue.branch,
        details: { prNumber: pr.number, from: inPlay.priorityName, to: priority.name },
      });
    }
    if (emergencyReason !== null && (existing?.emergencyReason ?? null) !== emergencyReason) {
      await recordOperatorEvent(services, tx, principal, target, "emergency_submission", { prNumber: pr.number, reason: emergencyReason }, emergencyReason);
    } else if (emergencyReason === null && priority.value === PRIORITY_NAMES.urgent && existing?.priorityValue !== PRIORITY_NAMES.urgent) {
      await recordOperatorEvent(services, tx, principal, target, "urgent_submission", { prNumber: pr.number });
    }
    if (existing && !isTerminal(existing.state)) {
      // Resubmitting a queued PR updates its priority and batching, as in Trunk's v1 API.
      await updateEntryFacts(tx, existing.id, { ...facts, ready });
      await scheduleRecheck();
      await applyEvent(services, tx, queue, { kind: "submitted", prNumber: pr.number }, cause);
      return;
    }
    await enterQueue(services, tx, queue, pr, { existing, facts, ready, cause });
    await applyEvent(services, tx, queue, { kind: "submitted", prNumber: pr.number }, cause);
  });
  return { stack };
}

/** What a submission stores of a PR: the code host's words, and how it is queued. */
function factsOf(pr: PullRequestInfo, how: { priority: Priority; noBatch: boolean | undefined; emergencyReason: string | null; directMergeBase: string | null; stackBelowPr: number | null }) {
  return {
    prTitle: pr.title,
    prSha: pr.headSha,
    prBaseBranch: pr.baseBranch,
    prAuthor: pr.author,
    mergeability: pr.mergeability,
    directMergeBase: how.directMergeBase,
    priorityValue: how.priority.value,
    priorityName: how.priority.name,
    usedDefaultPriorityName: how.priority.usedDefaultName,
    ...(how.noBatch !== undefined ? { noBatch: how.noBatch } : {}),
    emergencyReason: how.emergencyReason,
    stackBelowPr: how.stackBelowPr,
  };
}

/** GitHub computes mergeability lazily: a PR still being computed is read again, with backoff. */
async function scheduleFirstRecheck(services: Services, tx: Tx, queueId: string, pr: PullRequestInfo): Promise<void> {
  const recheck = nextReadinessRecheck(pr.mergeability, 0, services.now().getTime());
  await scheduleReadinessRecheck(tx, queueId, pr.number, recheck.atMs === null ? null : new Date(recheck.atMs), recheck.rechecks);
}

/**
 * Enters a PR not in play in the queue (first or again), with its submission's timeline event and
 * the `pull_request.submitted` outbound webhook, and its first readiness re-read; the caller then
 * lets the engine decide.
 */
async function enterQueue(
  services: Services,
  tx: Tx,
  queue: Queue,
  pr: PullRequestInfo,
  entering: { existing: QueueEntry | null; facts: ReturnType<typeof factsOf>; ready: boolean; cause: ReturnType<typeof causeOf> },
): Promise<void> {
  const { existing, facts, ready, cause } = entering;
  const state: PrState = ready ? "pending" : "not_ready";
  const reason: TransitionReason = existing ? "resubmitted" : "submitted";
  const at = services.now();
  const event = timelineEventOf({ prNumber: pr.number, from: existing?.state ?? null, to: state, reason }, { at, cause, prHead: pr.headSha, requiredChecks: null, checkUrl: () => null });
  await saveSubmission(tx, { queueId: queue.id, prNumber: pr.number, existing, facts, ready, state, reason, at, event }, services.newId);
  // Outbound webhooks: pull_request.submitted, with the timeline event saveSubmission wrote.
  await publishQueueEvents(tx, queue, (place) => [pullRequestEvent(place, event, { sha: pr.headSha, title: pr.title })].filter((e) => e !== null), { now: services.now(), newId: services.newId });
  await scheduleFirstRecheck(services, tx, queue.id, pr);
}

/**
 * A PR under the one submitted, in its stack, entering the queue with it (same priority, batching
 * and emergency): unless it is in the queue already, or merged or being merged by it.
 */
async function enterStackedBelow(
  services: Services,
  tx: Tx,
  queue: Queue,
  pr: PullRequestInfo,
  how: { stackBelowPr: number | null; priority: Priority; noBatch: boolean | undefined; emergencyReason: string | null; cause: ReturnType<typeof causeOf>; principal: Principal; top: number; repo: RepoRef },
): Promise<void> {
  const existing = await entryOf(tx, queue.id, pr.number);
  const target = { queueId: queue.id, repo: how.repo, branch: queue.branch };
  // An emergency cannot merge without the PRs under it: they become emergencies too, each recorded.
  const emergency = async () => {
    if (how.emergencyReason !== null) await recordOperatorEvent(services, tx, how.principal, target, "emergency_submission", { prNumber: pr.number, reason: how.emergencyReason, under: how.top }, how.emergencyReason);
  };
  if (existing && !isTerminal(existing.state) && !queue.mergedPrs.includes(pr.number)) {
    // In the queue already: it keeps its place, and learns what it is stacked on.
    if (how.stackBelowPr !== null && existing.stackBelowPr !== how.stackBelowPr) await setEntryStackBelow(tx, existing.id, how.stackBelowPr);
    if (how.emergencyReason !== null && existing.emergencyReason === null) {
      await setEntryEmergency(tx, existing.id, { priorityValue: how.priority.value, priorityName: how.priority.name, emergencyReason: how.emergencyReason });
      await emergency();
    }
    return;
  }
  if (existing && (existing.state === "merged" || queue.mergedPrs.includes(pr.number))) return;
  await emergency();
  const facts = factsOf(pr, { priority: how.priority, noBatch: how.noBatch, emergencyReason: how.emergencyReason, directMergeBase: null, stackBelowPr: how.stackBelowPr });
  const ready = isReady(await readinessOf(tx, queue, { prNumber: pr.number, ...facts }));
  await enterQueue(services, tx, queue, pr, { existing, facts, ready, cause: how.cause });
}

async function lockEntry(services: Services, tx: Tx, principal: Principal, address: PullRequestAddress): Promise<{ queue: Queue; entry: QueueEntry }> {
  const queue = await lockQueue(services, tx, principal, address);
  const entry = await entryOf(tx, queue.id, address.prNumber);
  if (!entry) throw prNotSubmitted(address);
  return { queue, entry };
}

export async function cancelPullRequest(services: Services, principal: Principal, address: PullRequestAddress): Promise<void> {
  await services.db.transaction(async (tx) => {
    const { queue, entry } = await lockEntry(services, tx, principal, address);
    if (entry.state === "cancelled") return;
    if (isTerminal(entry.state)) throw failedPrecondition(`pull request #${entry.prNumber} is not in the queue: it is ${entry.state}`);
    // Past cancelling: the code host is merging it (its answer decides what becomes of it).
    if (queue.mergedPrs.includes(entry.prNumber)) throw failedPrecondition(`pull request #${entry.prNumber} is being merged`);
    const cause = causeOf(principal);
    // Someone else's PR taken out of the queue: an operator action, recorded as such.
    const submitter = await submitterOf(tx, entry.id);
    if (submitter && (submitter.kind !== cause.actor.kind || submitter.name !== cause.actor.name)) {
      await recordOperatorEvent(services, tx, principal, { queueId: queue.id, repo: address.repo, branch: queue.branch }, "cancelled_by_other", { prNumber: entry.prNumber, submittedBy: submitter });
    }
    await applyEvent(services, tx, queue, { kind: "cancelled", prNumber: entry.prNumber, reason: "cancelled_by_user" }, cause);
  });
}

/** A restart either restarted the PR's tests, or did nothing, with why in its users' words. */
export type RestartOutcome = { restarted: true } | { restarted: false; why: string };

export async function restartTestsOnPullRequest(services: Services, principal: Principal, address: PullRequestAddress): Promise<RestartOutcome> {
  return services.db.transaction(async (tx): Promise<RestartOutcome> => {
    const { queue, entry } = await lockEntry(services, tx, principal, address);
    const state = entry.state;
    if (isTerminal(state)) throw failedPrecondition(`pull request #${entry.prNumber} is not in the queue: it is ${state}`);
    // A PR that has not started testing has nothing to restart (not an error: the API answers as for a restart).
    if (state === "not_ready") return { restarted: false, why: `#${entry.prNumber} has not started testing yet: it waits until it is ready (approvals, checks), so there was nothing to restart.` };
    if (state === "pending") return { restarted: false, why: `#${entry.prNumber} has not started testing yet: it waits for its turn in line, so there was nothing to restart.` };
    await applyEvent(services, tx, queue, { kind: "restart_requested", prNumber: entry.prNumber }, causeOf(principal));
    await recordAudit(services, tx, principal, { action: "pull_request.restarted", repository: repositoryKey(address.repo), branch: queue.branch, details: { prNumber: entry.prNumber, was: state } });
    return { restarted: true };
  });
}

/**
 * getSubmittedPullRequest's answer, serialized; served from the ReadCache while the queue is
 * unchanged (every transition bumps the queue's version, so a cached timeline is current).
 * With `includeTimeline`, the PR's timeline, oldest first.
 */
export async function getSubmittedPullRequestJson(services: Services, principal: Principal, address: PullRequestAddress & { includeTimeline?: boolean }): Promise<string> {
  const { id, version } = await findQueueVersion(services, principal, address);
  const key = `pr:${id}:${address.prNumber}${address.includeTimeline ? ":timeline" : ""}`;
  return withEstimates(services, key, version, async (now) => {
    // The line (and every PR's place in it) is read once per version, for all its PRs' readers.
    const { queue, entries, placesAt } = await lineOf(services, id, version);
    const placeOf = placesAt(now);
    return services.db.read(async (tx) => {
      // A PR that left the line is not in it: read on its own.
      const entry = entries.get(address.prNumber) ?? (await entryOf(tx, id, address.prNumber));
      if (!entry) throw prNotSubmitted(address);
      const place = isTerminal(entry.state) ? { position: null, estimatedMergeAt: null } : placeOf(entry.prNumber);
      const record: SubmittedPullRequestRecord & PlaceRecord & { timeline?: TimelineRecord[] } = {
        ...toMergeItemRecord(entry),
        forceEnqueued: entry.forceEnqueued,
        isCurrentlySubmittedToQueue: entry.isCurrentlySubmitted,
        readiness: await readinessOf(tx, queue, entry),
        ...place,
        ...(address.includeTimeline ? { timeline: (await timelineOf(tx, entry.id, entry.prNumber)).map(toTimelineRecord) } : {}),
      };
      return { version: queue.version, value: JSON.stringify(record) };
    });
  });
}

export type ImpactedTargetsInput = PullRequestAddress & { sha?: string; impactedTargets: string[] | "ALL" };

export async function setImpactedTargets(services: Services, principal: Principal, input: ImpactedTargetsInput): Promise<void> {
  let sha = input.sha;
  if (!sha) {
    const known = await services.db.read(async (tx) => {
      const queue = await findQueue(tx, principal, input);
      return entryOf(tx, queue.id, input.prNumber);
    });
    sha = known?.prSha ?? (await fetchPullRequest(services, input, false)).headSha;
  }
  await services.db.transaction(async (tx) => {
    const queue = await lockQueue(services, tx, principal, input);
    await upsertImpactedTargets(tx, queue.id, input.prNumber, sha!, input.impactedTargets);
    const entry = await entryOf(tx, queue.id, input.prNumber);
    if (entry && !isTerminal(entry.state)) {
      const ready = isReady(await readinessOf(tx, queue, entry));
      // New targets may change the PR's lane even when its readiness stays the same.
      const event = ready !== entry.ready ? ({ kind: "readiness_changed", prNumber: entry.prNumber, ready } as const) : ({ kind: "targets_changed", prNumber: entry.prNumber } as const);
      await applyEvent(services, tx, queue, event, causeOf(principal));
    }
  });
}

/** A commit status's state in Trunk's v1 enum (GitHub's values, UPPERCASE: docs/decisions.md). */
type CheckStateName = "PENDING" | "SUCCESS" | "FAILURE" | "ERROR";

/**
 * getMergeQueueTestingDetails' answer in Trunk's documented shape: a field Trunk documents as a
 * string is left out, never null, when Greenline has no value for it (docs/decisions.md).
 */
export type TestingDetails = RequiredStatuses & {
  testRunId: string;
  /** Absent until the testing branch is built. */
  testBranch?: string;
  testBranchSha?: string;
  status: "in_progress" | "failed" | "cancelled" | "succeeded";
  failureReason: string | null;
  isBisection: boolean;
  /** `url` is absent: Greenline keeps no link for a commit status. */
  statusChecks: { context: string; url?: string; state: CheckStateName }[];
  checkSuites: { checkRuns: CheckRunDetails[] }[];
  testedPullRequests: { prNumber: number; prUrl: string; title: string }[];
  impactedTargets: readonly string[] | "ALL";
  dependentPrs: number[];
  createdAt: string;
  finishedAt: string | null;
  /** Why required checks had not appeared on the testing branch in time (docs/diagnoses.md); null: none. */
  diagnosis: RunDiagnosis | null;
};

/** A check run in Trunk's v1 enums (UPPERCASE); `conclusion` only once it completed. */
type CheckRunDetails = { name: string; url: string; status: "QUEUED" | "IN_PROGRESS" | "COMPLETED"; conclusion?: "SUCCESS" | "FAILURE" };

/** Which run to read: the one named by its testRunId (Trunk's clients), or the PR's latest. */
export type TestRunAddress = QueueAddress & ({ testRunId: string; prNumber?: undefined } | { prNumber: number; testRunId?: undefined });

const RUN_STATUS = { running: "in_progress", passed: "succeeded", failed: "failed", cancelled: "cancelled" } as const;

/** A pull request's page, as the host shows it (GitHub and GitHub Enterprise use this form). */
function pullRequestUrl(repo: RepoRef, prNumber: number): string {
  return `https://${repo.host}/${repo.owner}/${repo.name}/pull/${prNumber}`;
}

/** The commit statuses CI reported on the testing branch (check runs go to checkSuites, as on Trunk). */
function commitStatusesOf(run: TestRun): TestRun["statusChecks"] {
  return Object.fromEntries(Object.entries(run.statusChecks).filter(([, check]) => check.kind === "status"));
}

/** The check runs CI reported on the testing branch, as GitHub's one check suite of them. */
function checkSuitesOf(run: TestRun, repo: RepoRef): { checkRuns: CheckRunDetails[] }[] {
  const repoUrl = `https://${repo.host}/${repo.owner}/${repo.name}`;
  const checkRuns = Object.entries(run.statusChecks)
    .filter(([, check]) => check.kind === "check_run")
    .map(
      ([name, check]): CheckRunDetails => ({
        name,
        // Trunk documents url as always there: a run whose id is not known links the testing commit's checks.
        url: check.id === null ? `${repoUrl}/commit/${run.testBranchSha ?? "HEAD"}/checks` : `${repoUrl}/runs/${check.id}`,
        ...(check.state === "pending" ? { status: "IN_PROGRESS" as const } : { status: "COMPLETED" as const, conclusion: check.state === "success" ? ("SUCCESS" as const) : ("FAILURE" as const) }),
      }),
    );
  return checkRuns.length === 0 ? [] : [{ checkRuns }];
}

/** The run named by testRunId in the queue, or the PR's current (latest) test run. */
async function runToDetail(tx: Tx, queueId: string, address: TestRunAddress): Promise<TestRun> {
  if (address.testRunId !== undefined) {
    const run = await findRun(tx, address.testRunId);
    // Another queue's run (another organization's included) is not this queue's: not found.
    if (!run || run.queueId !== queueId) throw notFound(`test run "${address.testRunId}" not found in the queue for "${address.targetBranch}"`);
    return run;
  }
  const { prNumber } = address;
  const entry = await entryOf(tx, queueId, prNumber);
  if (!entry) throw prNotSubmitted({ ...address, prNumber });
  const recent = await runsStartedSince(tx, queueId, entry.submittedAt, 500);
  const run = recent.filter((r) => r.tested.includes(prNumber)).sort((a, b) => Number(b.runId.split("-")[1]) - Number(a.runId.split("-")[1]))[0];
  if (!run) throw notFound(`pull request #${prNumber} has no test run (it is ${entry.state})`);
  return run;
}

export async function getMergeQueueTestingDetails(services: Services, principal: Principal, address: TestRunAddress): Promise<TestingDetails> {
  const host = await hostRequiredChecks(services, address);
  return services.db.read(async (tx) => {
    const queue = await findQueue(tx, principal, address);
    const run = await runToDetail(tx, queue.id, address);
    const titles = await titlesOf(tx, queue.id, run.tested);
    // The PR asked about; for a run asked by id, the last of the PRs it tests.
    const targetsOf = address.prNumber ?? run.tested[run.tested.length - 1];
    const targets = targetsOf === undefined ? undefined : (await impactedTargetsOf(tx, queue.id, targetsOf))?.targets;
    const merged = queue.mergedPrs;
    const status = RUN_STATUS[run.status];
    const checkState = status === "succeeded" ? "success" : status === "failed" ? "failure" : status === "cancelled" ? "error" : "pending";
    return {
      testRunId: run.id,
      ...(run.testBranch === null ? {} : { testBranch: run.testBranch }),
      ...(run.testBranchSha === null ? {} : { testBranchSha: run.testBranchSha }),
      status,
      failureReason: run.failure,
      isBisection: run.kind === "bisection",
      ...requiredStatusesOf(queue, host),
      statusChecks: services.codeHost.statusChecksOf({ state: checkState, reported: statesOf(commitStatusesOf(run)) }).map((check) => ({ context: check.context, state: check.state.toUpperCase() as CheckStateName })),
      checkSuites: checkSuitesOf(run, address.repo),
      testedPullRequests: run.tested.map((n) => ({ prNumber: n, prUrl: pullRequestUrl(address.repo, n), title: titles.get(n) ?? "" })),
      // All of them: an upload is bounded by the 20 MiB body (docs/decisions.md), nothing is cut.
      impactedTargets: targets ?? [],
      dependentPrs: run.stack.filter((n) => !run.tested.includes(n) && !merged.includes(n)),
      createdAt: run.startedAt.toISOString(),
      finishedAt: run.finishedAt?.toISOString() ?? null,
      diagnosis: run.diagnosis,
    };
  });
}

/**
 * The code host says a PR changed under the queue (new commits, closed, base branch changed):
 * it leaves every queue of the repository where it is in play. A redelivered event changes
 * nothing: a PR already terminal stays as it is, and new commits cancel only a PR queued at an
 * older head. Answers how many queues it left.
 */
export async function cancelOnPullRequestEvent(services: Services, repo: RepoRef, prNumber: number, reason: CancelReason, headSha?: string, newBase?: string, mergedInto?: string): Promise<number> {
  const key = repositoryKey(repo);
  const queueIds = await services.db.read((tx) => queueIdsOfRepository(tx, key));
  let cancelled = 0;
  for (const id of queueIds) {
    const applied = await applyQueueEventOf(services, id, async (tx, queue) => {
      const entry = await entryOf(tx, id, prNumber);
      if (!entry || isTerminal(entry.state)) return null;
      if (reason === "base_branch_changed" && newBase !== undefined && (await movedOntoQueueBranch(tx, queue, entry, newBase))) return null;
      if (reason === "pr_updated" && headSha !== undefined && entry.prSha === headSha) return null;
      // Merged into this queue's branch by someone else: the PRs stacked on it stay (docs/stacks.md).
      const why: CancelReason = reason === "pr_closed" && mergedInto !== undefined && mergedInto === queue.branch ? "merged_outside_queue" : reason;
      return { kind: "cancelled", prNumber, reason: why };
    });
    if (applied) cancelled++;
  }
  return cancelled;
}

/**
 * A stacked PR moved to the queue's branch (by Greenline as the PR under it merges, by GitHub
 * when that PR's branch is deleted, or by its author) stays in the queue: its base is noted, and
 * it still never merges before the PRs under it (docs/stacks.md). Answers whether it was that.
 */
async function movedOntoQueueBranch(tx: Tx, queue: Queue, entry: QueueEntry, newBase: string): Promise<boolean> {
  if (!staysOnBaseChange(entry, newBase, queue.branch)) return false;
  if (entry.prBaseBranch !== newBase) await setEntryBaseBranch(tx, entry.id, newBase);
  return true;
}

/** The PR a queued PR stays stacked on when submitted again without its stack (moved to the queue's branch): while that PR is still queued. */
async function stackKept(tx: Tx, queueId: string, existing: QueueEntry | null): Promise<number | null> {
  if (!existing || isTerminal(existing.state) || existing.stackBelowPr === null) return null;
  const below = await entryOf(tx, queueId, existing.stackBelowPr);
  return below && !isTerminal(below.state) ? existing.stackBelowPr : null;
}
