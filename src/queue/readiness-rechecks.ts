import { accountKeyOf, outageOf } from "../store/installation-outages.js";
import { rateReserveUntil, repositoryKey, type PullRequestInfo, type RepoRef } from "../ports/code-host.js";
import { inFlightRecheckDelayMs, isReady, nextReadinessRecheck, readinessRecheckDelayMs, staysOnBaseChange } from "../domain/readiness.js";
import { isInFlight } from "../domain/engine/order.js";
import type { PrState } from "../domain/states.js";
import { entryOf, setEntryBaseBranch } from "../store/entries.js";
import { findQueueInRepository, lockQueueRow, queueIdsOfRepository } from "../store/queues.js";
import { dueReadinessRechecks, requestReadinessRechecks, scheduleReadinessRecheck, updateEntryMergeability, type DueRecheck, type RecheckMatch } from "../store/readiness-rechecks.js";
import { applyEvent } from "./queue-events.js";
import { cancelOnPullRequestEvent, readinessOf } from "./pull-requests.js";
import type { Services } from "../app/services.js";

/** How many re-reads one worker round makes at most. */
const ROUND_LIMIT = 50;

/**
 * Something happened on the code host that may change whether waiting PRs are ready (a
 * review, a check suite or status on their head, a new draft state, a push to the target):
 * the matching PRs of the repository's queues (of `branch` only, when given) are re-read by
 * the worker, now. Answers how many.
 */
export async function askReadinessRecheck(services: Services, repo: RepoRef, match: RecheckMatch, branch?: string): Promise<number> {
  const queueIds = await services.db.read((tx) => queueIdsOfRepository(tx, repositoryKey(repo), branch));
  if (queueIds.length === 0) return 0;
  return services.db.transaction((tx) => requestReadinessRechecks(tx, queueIds, match, services.now()));
}

/**
 * The worker's step: re-reads the PRs whose re-read is due (waiting ones, and those in flight,
 * whose lost deliveries it stands in for). Answers how many changed readiness or left.
 */
export async function recheckDueReadiness(services: Services): Promise<number> {
  let work = 0;
  for (const item of await dueRechecks(services)) if (await recheckReadiness(services, item)) work++;
  return work;
}

/** The re-reads due now (at most a round's worth), for a worker that makes each one apart (recheckReadiness). */
export function dueRechecks(services: Services): Promise<DueRecheck[]> {
  return services.db.read((tx) => dueReadinessRechecks(tx, services.now(), ROUND_LIMIT, inFlightRecheckDelayMs(1)));
}

/** Re-reads one PR whose re-read is due; answers whether it changed readiness or left. */
export async function recheckReadiness(services: Services, item: DueRecheck): Promise<boolean> {
  const found = await services.db.read(async (tx) => {
    const queue = await findQueueInRepository(tx, item.queueId);
    const entry = queue && (await entryOf(tx, item.queueId, item.prNumber));
    return queue && entry ? { queue, entry, outage: await outageOf(tx, accountKeyOf(queue.repository)) } : null;
  });
  if (!found) return false;
  const { queue, entry: read, outage } = found;
  // An account whose installation is suspended or gone is not asked: its probe says when GitHub answers again.
  if (outage) {
    await services.db.transaction((tx) => scheduleReadinessRecheck(tx, item.queueId, item.prNumber, outage.nextProbeAt, item.rechecks));
    return false;
  }
  // A re-read waits while the installation has less than its reserve of the rate limit left.
  const until = rateReserveUntil(services.codeHost, queue.repository, services.now().getTime());
  if (until !== null) {
    await services.db.transaction((tx) => scheduleReadinessRecheck(tx, item.queueId, item.prNumber, new Date(until), item.rechecks));
    return false;
  }
  const waiting = isWaiting(read.state);
  if (!waiting) {
    // In flight: marked first, so that whatever the answer (none, a failure, a cancel the engine
    // ignores because the PR is being merged) it is read again only after the next interval.
    const rechecks = item.rechecks + 1;
    await services.db.transaction((tx) => scheduleReadinessRecheck(tx, item.queueId, item.prNumber, new Date(services.now().getTime() + inFlightRecheckDelayMs(rechecks)), rechecks));
  }
  let pr: PullRequestInfo | null;
  try {
    // Only a waiting PR's readiness is read (a PR in flight is asked what its deliveries say).
    pr = await services.codeHost.getPullRequest(queue.repository, item.prNumber, { targetBranch: queue.branch, directMerge: waiting && queue.directMergeMode === "always" });
  } catch (error) {
    services.log?.warn({ queue: item.queueId, pr: item.prNumber, err: error }, "re-reading a pull request's readiness failed; it will be asked again");
    if (!waiting) return false;
    // The code host failed: ask again later, backing off as for "still computing".
    const rechecks = item.rechecks + 1;
    await services.db.transaction((tx) => scheduleReadinessRecheck(tx, item.queueId, item.prNumber, new Date(services.now().getTime() + readinessRecheckDelayMs(rechecks)), rechecks));
    return false;
  }
  // No answer (the App is not installed there now, or the PR is gone): nothing to conclude.
  if (!pr) return waiting && clear(services, item);
  // What the webhooks would have said, had their delivery arrived: the PR is closed, was moved
  // to another base branch, or has new commits.
  const mergedInto = pr.state === "merged" ? pr.baseBranch : undefined;
  const leaves = async (reason: "pr_closed" | "base_branch_changed") =>
    (await cancelOnPullRequestEvent(services, queue.repository, item.prNumber, reason, undefined, undefined, mergedInto)) > 0 || (waiting && (await clear(services, item)));
  if (pr.state !== "open") return leaves("pr_closed");
  // A stacked PR moved to the queue's branch stays, its new base noted (docs/stacks.md).
  const movedOntoQueueBranch = staysOnBaseChange(read, pr.baseBranch, queue.branch);
  if (pr.baseBranch !== read.prBaseBranch && !movedOntoQueueBranch) return leaves("base_branch_changed");
  const facts = pr;
  return services.db.transaction(async (tx) => {
    const locked = await lockQueueRow(tx, item.queueId);
    const entry = locked && (await entryOf(tx, item.queueId, item.prNumber));
    if (!locked || !entry || (!isWaiting(entry.state) && !isInFlight(entry.state))) return false;
    if (movedOntoQueueBranch && entry.prBaseBranch !== pr.baseBranch) await setEntryBaseBranch(tx, entry.id, pr.baseBranch);
    if (entry.prSha !== facts.headSha) {
      if (isWaiting(entry.state)) await scheduleReadinessRecheck(tx, item.queueId, item.prNumber, null, 0);
      await applyEvent(services, tx, locked, { kind: "cancelled", prNumber: item.prNumber, reason: "pr_updated" });
      return true;
    }
    // In flight and unchanged: read again later, more and more rarely (scheduled above).
    if (!isWaiting(entry.state)) return false;
    await updateEntryMergeability(tx, item.queueId, item.prNumber, { mergeability: facts.mergeability, directMergeBase: facts.greenBaseSha });
    const next = nextReadinessRecheck(facts.mergeability, item.rechecks, services.now().getTime());
    await scheduleReadinessRecheck(tx, item.queueId, item.prNumber, next.atMs === null ? null : new Date(next.atMs), next.rechecks);
    const ready = isReady(await readinessOf(tx, locked, { ...entry, mergeability: facts.mergeability }));
    if (ready === entry.ready) return false;
    await applyEvent(services, tx, locked, { kind: "readiness_changed", prNumber: item.prNumber, ready });
    return true;
  });
}

const isWaiting = (state: PrState) => state === "not_ready" || state === "pending";

async function clear(services: Services, item: DueRecheck): Promise<false> {
  await services.db.transaction((tx) => scheduleReadinessRecheck(tx, item.queueId, item.prNumber, null, 0));
  return false;
}
