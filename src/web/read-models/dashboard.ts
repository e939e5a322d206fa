import { freezeStatusAt, untilText } from "../../domain/freezes.js";
import { listQueueFreezes, toFreezeStatusRecord, type FreezeRecord, type FreezeStatusRecord } from "../../queue/freezes.js";
import { DAY_MS, HOUR_MS } from "../../domain/time.js";
import { createHash } from "node:crypto";
import type { Principal } from "../../auth/tokens.js";
import type { QueueState } from "../../domain/states.js";
import { type CheckState, type ReportedCheck, statesOf } from "../../domain/status-checks.js";
import { loadOverviewData } from "../../store/metrics.js";
import { lineGroupsOf, type LineGroups } from "../../domain/engine/line.js";
import { loadQueueState } from "../../store/queue-state.js";
import { accountKeyOf, outagesOf } from "../../store/installation-outages.js";
import { getQueue, versionsOf, versionsOfOrganizations } from "../../store/queues.js";
import { flakesAbsorbedSince, runCountsSince, runningRunsOf, runOf } from "../../store/runs.js";
import { countConcludedSince } from "../../store/entries.js";
import { latestCausesOf } from "../../store/timeline.js";
import type { Cause } from "../../domain/timeline.js";
import { listPullRequests } from "../../queue/pull-request-list.js";
import { findQueueVersion, getQueueJson, type QueueAddress, type QueueWithEntries } from "../../queue/queues.js";
import { AppError } from "../../app/errors.js";
import type { PlaceRecord } from "../../queue/estimates.js";
import { getMergeQueueTestingDetails, getSubmittedPullRequestJson, type PullRequestAddress, type TestingDetails } from "../../queue/pull-requests.js";
import type { MergeItemRecord, SubmittedPullRequestRecord, TimelineRecord } from "../../queue/records.js";
import type { Services } from "../../app/services.js";

/**
 * What the web dashboard reads, composed from the same store queries and application services
 * the API answers with (getQueue, listPullRequests, the metrics' durations): no second data path.
 */

export type QueueSummary = {
  repo: { host: string; owner: string; name: string };
  branch: string;
  state: QueueState;
  /** PRs in line (not counting those waiting for readiness). */
  depth: number;
  /** PRs waiting for readiness (not_ready). */
  waiting: number;
  /** PRs testing now. */
  testing: number;
  merged24h: number;
  failed24h: number;
  /** Time in queue of the PRs that concluded in the last 24 h, seconds; null when none did. */
  timeInQueueP50: number | null;
  timeInQueueP95: number | null;
  /** Runs started in the last 24 h per PR merged then; null when none merged. */
  runsPerMerged: number | null;
  /** Runs that passed after their test results excused or retried a flaky failure, last 24 h (docs/flaky-queue.md). */
  flakyEjectionsAvoided: number;
  /** Why nothing moves, when the queue says so itself. */
  blockedReason: string | null;
  /** PRs merged in each of the last 24 hours, oldest first, and each hour's start (ms since the epoch). */
  trend: { hours: number[]; merged: number[]; failed: number[] };
};

const BLOCKED_REASONS: Partial<Record<QueueState, string>> = {
  paused: "Paused: nothing starts testing and nothing merges until it is resumed",
  draining: "Draining: runs in flight finish, nothing new starts testing",
  switching_modes: "Switching modes: waits for the runs in flight to finish",
};

/** What the dashboard says of a frozen queue (getQueue's `freeze`); null when it is not. */
function frozenSentence(freeze: FreezeStatusRecord): string | null {
  if (!freeze.frozen) return null;
  const until = freeze.until === null ? null : Date.parse(freeze.until);
  return `Frozen until ${untilText(until)} (${freeze.reasons.join("; ")}): only hotfixes merge${freeze.testing ? "; pull requests are tested and merge once it ends" : "; nothing starts testing"}`;
}

/** What the dashboard says of a queue whose installation is suspended or gone (its blockedReason says more). */
function outageSentence(state: "suspended" | "uninstalled"): string {
  return state === "suspended"
    ? "Installation suspended: the GitHub App's installation on this account is suspended; nothing starts testing and nothing merges until it is unsuspended (pull requests keep their places)"
    : "App uninstalled: the GitHub App is not installed on this account; nothing starts testing and nothing merges until it is installed again (pull requests keep their places)";
}

/** Rows by a key, in their order. */
function groupBy<T>(rows: readonly T[], key: (row: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const row of rows) {
    const list = out.get(key(row));
    if (list) list.push(row);
    else out.set(key(row), [row]);
  }
  return out;
}

/** Every queue of the principal's organization with its figures of the last 24 hours, by repository and branch. */
export async function queueOverview(services: Services, principal: Principal): Promise<QueueSummary[]> {
  const now = services.now().getTime();
  const windowStart = new Date(now - DAY_MS);
  const firstHour = Math.floor(now / HOUR_MS) * HOUR_MS - 23 * HOUR_MS;
  const data = await services.db.sqlRead((sql) => loadOverviewData(sql, principal.organizationId, windowStart, firstHour));
  const { runCounts, absorbed, outages } = await services.db.read(async (tx) => {
    const ids = data.queues.map((q) => q.id);
    const outages = await outagesOf(
      tx,
      data.queues.map((q) => accountKeyOf(q.repository)),
    );
    return { runCounts: await runCountsSince(tx, ids, windowStart), absorbed: await flakesAbsorbedSince(tx, ids, windowStart), outages };
  });
  const hours = Array.from({ length: 24 }, (_, i) => firstHour + i * HOUR_MS);
  const countsOf = groupBy(data.counts, (row) => row.queueId);
  const conclusionsOf = groupBy(data.conclusions, (row) => row.queueId);
  const timesOf = new Map(data.timesInQueue.map((row) => [row.queueId, row]));
  return data.queues
    .map((queue): QueueSummary => {
      const counts = countsOf.get(queue.id) ?? [];
      const count = (test: (state: string) => boolean) => counts.filter((c) => test(c.state)).reduce((sum, c) => sum + c.count, 0);
      const merged = new Array<number>(24).fill(0);
      const failed = new Array<number>(24).fill(0);
      // The totals count the whole 24 hours; the chart's first hour starts on the hour, after the window's start.
      const totals = { merged: 0, failed: 0 };
      for (const row of conclusionsOf.get(queue.id) ?? []) {
        totals[row.state] += row.count;
        if (row.hour < 0 || row.hour > 23) continue;
        (row.state === "merged" ? merged : failed)[row.hour]! += row.count;
      }
      const times = timesOf.get(queue.id);
      const merged24h = totals.merged;
      const state = queue.state as QueueState;
      const outage = outages.get(accountKeyOf(queue.repository));
      return {
        repo: queue.repository,
        branch: queue.branch,
        state,
        depth: count((s) => s !== "not_ready"),
        waiting: count((s) => s === "not_ready"),
        testing: count((s) => s === "testing"),
        merged24h,
        failed24h: totals.failed,
        timeInQueueP50: times?.p50 ?? null,
        timeInQueueP95: times?.p95 ?? null,
        runsPerMerged: merged24h > 0 ? (runCounts.get(queue.id) ?? 0) / merged24h : null,
        flakyEjectionsAvoided: absorbed.get(queue.id) ?? 0,
        blockedReason: outage ? outageSentence(outage.state) : (BLOCKED_REASONS[state] ?? frozenSentence(toFreezeStatusRecord({ frozen: null }, freezeStatusAt(queue.freezes, now)))),
        trend: { hours, merged, failed },
      };
    })
    .sort((a, b) => `${a.repo.host}/${a.repo.owner}/${a.repo.name}/${a.branch}`.localeCompare(`${b.repo.host}/${b.repo.owner}/${b.repo.name}/${b.branch}`));
}

export type RunView = {
  runId: string;
  kind: "main" | "bisection";
  /** PRs the run tests on top of (in line ahead, not yet merged). */
  stackedOn: number[];
  /** PRs whose result the run decides. */
  tested: number[];
  startedAt: string;
  testBranch: string | null;
  /**
   * Its checks as getMergeQueueTestingDetails shows them (the code host's view: the sandbox's one
   * simulated CI context is pending until it reports), with the queue's required checks that
   * have not reported yet as pending: what its progress bar counts.
   */
  checks: { context: string; state: CheckState }[];
};

export type QueueLine = {
  /** The queue's id and its version when this was read (read first: what follows is never older). */
  queueId: string;
  version: number;
  /** getQueue's answer. */
  queue: QueueWithEntries;
  blockedReason: string | null;
  runs: RunView[];
  /** PRs that concluded in the last 24 h, latest submitted first (at most CONCLUDED_SHOWN). */
  concluded: MergeItemRecord[];
  /** How many PRs concluded in the last 24 h (more than `concluded` holds when there are more than CONCLUDED_SHOWN). */
  concludedTotal: number;
  /** Who cancelled each cancelled PR of `concluded`, and how, by its id. */
  cancelledBy: Record<string, Cause>;
  /** The lanes (parallel mode) and the PRs being bisected, as the engine sees the line. */
  groups: LineGroups;
  /** The queue's merge freezes, current and scheduled (docs/freezes.md). */
  freezes: FreezeRecord[];
};

/** The concluded PRs the queue page lists (the latest submitted); its heading says how many there were in all. */
export const CONCLUDED_SHOWN = 10;

/** The queue page: getQueue's record and line, the runs in flight, and what concluded lately. */
export async function queueLine(services: Services, principal: Principal, address: QueueAddress): Promise<QueueLine> {
  const { id, version } = await findQueueVersion(services, principal, address);
  const queue = JSON.parse(await getQueueJson(services, principal, address)) as QueueWithEntries;
  const { runs, groups } = await services.db.read(async (tx) => {
    const runs = await runningRunsOf(tx, id);
    // Lanes and bisection groups need the engine's view of the line: read only when there are some.
    const grouped = queue.mode === "parallel" || runs.some((run) => run.kind === "bisection");
    const groups = grouped ? lineGroupsOf((await loadQueueState(tx, await getQueue(tx, id))).engine) : { lanes: null, bisecting: [] };
    return { runs, groups };
  });
  const since = new Date(services.now().getTime() - DAY_MS);
  const { pullRequests, nextCursor } = await listPullRequests(services, principal, { ...address, since, take: CONCLUDED_SHOWN });
  const cancelled = pullRequests.filter((pr) => pr.state === "cancelled").map((pr) => pr.id);
  const { concludedTotal, cancelledBy } = await services.db.read(async (tx) => ({
    concludedTotal: nextCursor === undefined ? pullRequests.length : await countConcludedSince(tx, id, since),
    cancelledBy: Object.fromEntries(await latestCausesOf(tx, cancelled, "cancelled")),
  }));
  return {
    queueId: id,
    version,
    queue,
    blockedReason:
      queue.blockedReason?.code === "installation_suspended"
        ? outageSentence("suspended")
        : queue.blockedReason?.code === "installation_removed"
          ? outageSentence("uninstalled")
          : (BLOCKED_REASONS[queue.state] ?? frozenSentence(queue.freeze)),
    runs: runs.map((run) => ({
      runId: run.runId,
      kind: run.kind,
      stackedOn: run.stack.filter((n) => !run.tested.includes(n)),
      tested: run.tested,
      startedAt: run.startedAt.toISOString(),
      testBranch: run.testBranch,
      checks: checksOf(services, run.statusChecks, queue.requiredStatuses),
    })),
    concluded: pullRequests,
    concludedTotal,
    cancelledBy,
    groups,
    freezes: (await listQueueFreezes(services, principal, address)).freezes,
  };
}

/** A running run's checks: what reported, as the code host shows it, and each required check not reported yet, pending. */
function checksOf(services: Services, reported: Readonly<Record<string, ReportedCheck>>, required: readonly string[]): RunView["checks"] {
  const shown = services.codeHost.statusChecksOf({ state: "pending", reported: statesOf(reported) });
  const missing = required.filter((context) => !shown.some((check) => check.context === context));
  return [...shown.map(({ context, state }) => ({ context, state })), ...missing.map((context) => ({ context, state: "pending" as const }))];
}

/** What the live stream watches: one queue (its page, its PRs' pages), or all queues of an organization (the overview). */
export type LiveTopic = { kind: "queue"; queueId: string } | { kind: "organization"; organizationId: string };

export const topicKey = (topic: LiveTopic) => (topic.kind === "queue" ? `queue:${topic.queueId}` : `organization:${topic.organizationId}`);

/**
 * Each topic's stamp now: a queue's version, or an organization's queues and their versions
 * (a queue created or deleted changes it too). Two reads for all topics, however many. A topic
 * absent from the answer no longer exists (its queue was deleted).
 */
export async function liveStamps(services: Services, topics: LiveTopic[]): Promise<Map<string, string>> {
  const queueIds = topics.flatMap((t) => (t.kind === "queue" ? [t.queueId] : []));
  const organizationIds = topics.flatMap((t) => (t.kind === "organization" ? [t.organizationId] : []));
  const { versions, organizations } = await services.db.read(async (tx) => ({
    versions: queueIds.length > 0 ? await versionsOf(tx, queueIds) : new Map<string, number>(),
    organizations: organizationIds.length > 0 ? await versionsOfOrganizations(tx, organizationIds) : new Map<string, { id: string; version: number }[]>(),
  }));
  const stamps = new Map<string, string>();
  for (const [id, version] of versions) stamps.set(topicKey({ kind: "queue", queueId: id }), String(version));
  // An organization without queues is a topic too, and its first queue changes its stamp. Hashed:
  // the stamp travels back as the stream's Last-Event-ID header, however many queues there are.
  for (const id of organizationIds) {
    const queues = (organizations.get(id) ?? []).map((q) => `${q.id}.${q.version}`).join(" ");
    stamps.set(topicKey({ kind: "organization", organizationId: id }), createHash("sha256").update(queues).digest("base64url").slice(0, 22));
  }
  return stamps;
}

/** A run of the PR's page: getMergeQueueTestingDetails' answer, and the testing branch's page on the code host when it has one. */
export type PullRequestRun = TestingDetails & { runId: string; testBranchUrl: string | null };

export type PullRequestView = {
  /** getSubmittedPullRequest's answer with its timeline (oldest first), position and estimate. */
  pr: SubmittedPullRequestRecord & PlaceRecord & { timeline: TimelineRecord[] };
  /** The runs its timeline names, latest first (at most PR_PAGE_RUNS; runs no longer kept are left out). */
  runs: PullRequestRun[];
  /** Why its queue merges nothing now (paused, draining, its installation suspended…), as the queue page says it; null: it goes on. */
  queueBlocked: string | null;
};

/** The PR page shows this many of the PR's runs. */
export const PR_PAGE_RUNS = 10;

/**
 * The pull request's page: getSubmittedPullRequest with its timeline, and getMergeQueueTestingDetails
 * for each run its timeline names. Another organization's queue is not found, like a missing one.
 */
export async function pullRequestView(services: Services, principal: Principal, address: PullRequestAddress): Promise<PullRequestView> {
  const pr = JSON.parse(await getSubmittedPullRequestJson(services, principal, { ...address, includeTimeline: true })) as PullRequestView["pr"];
  const runIds = [...new Set(pr.timeline.flatMap((e) => (e.evidence.run ? [e.evidence.run.id] : [])).reverse())].slice(0, PR_PAGE_RUNS);
  // The timeline names runs by the queue's run id ("run-2"); getMergeQueueTestingDetails by the run's own id.
  const { id: queueId } = await findQueueVersion(services, principal, address);
  const rows = await services.db.read(async (tx) => Promise.all(runIds.map((runId) => runOf(tx, queueId, runId))));
  const runs: PullRequestRun[] = [];
  for (const testRunId of rows.flatMap((row) => (row ? [row.id] : []))) {
    try {
      const details = await getMergeQueueTestingDetails(services, principal, { repo: address.repo, targetBranch: address.targetBranch, testRunId });
      const branchUrl = details.testBranch && services.codeHost.branchUrl ? services.codeHost.branchUrl(address.repo, details.testBranch) : null;
      runs.push({ ...details, runId: runIds[rows.findIndex((row) => row?.id === testRunId)]!, testBranchUrl: branchUrl });
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== "not_found") throw error;
    }
  }
  const queueBlocked = await services.db.read(async (tx) => {
    const queue = await getQueue(tx, queueId);
    const outage = (await outagesOf(tx, [accountKeyOf(address.repo)])).get(accountKeyOf(address.repo));
    return outage ? outageSentence(outage.state) : (BLOCKED_REASONS[queue.state] ?? null);
  });
  return { pr, runs, queueBlocked };
}
