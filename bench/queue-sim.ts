import { createHash } from "node:crypto";
import { ReadCache } from "../src/app/read-cache.js";
import { MAX_ADAPTIVE_BATCH } from "../src/domain/engine/capacity.js";
import { createQueue } from "../src/queue/queues.js";
import { updateFlakySettings } from "../src/flaky/queries.js";
import { getSubmittedPullRequestJson, setImpactedTargets, submitPullRequest } from "../src/queue/pull-requests.js";
import { applyQueueEvent } from "../src/queue/queue-events.js";
import type { Services } from "../src/app/services.js";
import type { QueueSettingsUpdate } from "../src/domain/queue-settings.js";
import type { RequiredChecks } from "../src/domain/status-checks.js";
import type { Principal } from "../src/auth/tokens.js";
import { ensureOrganization } from "../src/auth/tokens.js";
import { ZQueueSettings } from "../src/api/queues/queue-schemas.js";
import type {
  CiRetries,
  CodeHost,
  FailedJobsRequest,
  FailedJobsRerun,
  MergeRequest,
  MergeResult,
  PolledCiResult,
  PolledEvents,
  PullRequestInfo,
  RepoRef,
  StatusCheck,
  TestRunRequest,
  TestRunStart,
} from "../src/ports/code-host.js";
import type { CheckState } from "../src/domain/status-checks.js";
import { Database } from "../src/store/database.js";
import { orderedId } from "../src/store/ids.js";
import { findQueueInRepository, getQueue } from "../src/store/queues.js";
import { lineWithPlaces } from "../src/queue/estimates.js";
import { runEffects } from "../src/worker/effects.js";
import { deliverPolledCiResults } from "../src/queue/status-checks.js";
import { shaOf, TestSuite, uploadRunResults, type TestFailure, type TestModel } from "./queue-tests.js";
import { rng } from "./random.js";
import { freshDatabase } from "./support.js";

/**
 * A discrete-event simulation of one merge queue on virtual time. PRs arrive (Poisson), the
 * real application code submits them, the real engine decides, the real store keeps state and
 * the outbox, the real effect runner executes effects — against a simulated code host whose CI
 * takes a given time and fails runs holding a broken PR, or flakes. A workload with `tests`
 * models flakes per test and uploads each run's JUnit results before its CI result
 * (bench/queue-tests.ts); its CI's failed jobs can be re-run (CiRetries).
 */

export type Workload = {
  name: string;
  /** PR arrivals per hour. */
  arrivalsPerHour: number;
  /** CI duration, minutes. */
  ciMinutes: number;
  /** Share of PRs whose changes really fail. */
  realFailureRate: number;
  /** Probability that a run fails although nothing in it is broken. */
  flakeRate: number;
  /** Monorepo: each PR impacts 1–2 of this many targets (null: no targets, one line). */
  targets: number | null;
  /** How long PRs arrive, hours. */
  hours: number;
  seed: number;
  /** Flakes per test (a stable set of flaky tests failing so that `flakeRate` of runs hold one), results uploaded; absent: a run flakes as a whole. */
  tests?: TestModel;
  /**
   * Urgent PRs (issue 24, goal 6): a good PR arriving while at least `behind` PRs wait in line is
   * submitted with priority "urgent", once every `every` such arrivals (the others as usual).
   */
  urgent?: { every: number; behind: number };
};

/**
 * The flake-aware queue settings of issue 16, typed here until the build has them: a build
 * whose queue settings lack them runs "off" as before and refuses the others (UnsupportedSettings).
 */
export type FlakeSettings = { flakeHandling?: "off" | "quarantined" | "retry_flaky"; flakyRetries?: number };

/** `autoQuarantine: false`: the repository does not quarantine flaky tests on its own (its flaky-test setting). */
export type Strategy = { name: string; settings: QueueSettingsUpdate & FlakeSettings; parallel?: boolean; description: string; autoQuarantine?: false };

/** Settings a strategy asks for that this build of the service does not have. */
export class UnsupportedSettings extends Error {}

/** Whether this build's queue settings (the API's) include flakeHandling. */
export const supportsFlakeHandling = "flakeHandling" in ZQueueSettings.shape;

export type SimResult = {
  strategy: string;
  workload: string;
  arrivals: number;
  arrivalsPerHour: number;
  merged: number;
  throughputPerHour: number;
  meanTimeInQueueMinutes: number;
  p95TimeInQueueMinutes: number;
  /** PRs still in the queue when the simulation stopped (their time is counted up to then). */
  unfinished: number;
  ciRuns: number;
  ciRunsPerMerge: number;
  /** CI spent over the steady-state window (runs in flight on average, cancelled ones until cancelled), and its most at once. */
  runsInFlightMean: number;
  runsInFlightMax: number;
  flakeEjections: number;
  badMerges: number;
  /** Broken PRs that ended failed: (when failed − end of the first CI run that tested them) / T, p95 and max; null: none. */
  brokenLatencyP95: number | null;
  brokenLatencyMax: number | null;
  /** Wall ms from each 1,000th arrival to the next (the store path's flatness with history). */
  chunkWallMs?: number[];
  /** This process's CPU ms over the same chunks (steadier than wall on a shared machine). */
  chunkCpuMs?: number[];
  /** CI re-runs of failed jobs (counted in ciRuns too). */
  ciRetries: number;
  /** CI results delivered failed by flaky tests alone. */
  flakyFailures: number;
  /** JUnit uploads, and those linked to their queue run. */
  uploads: number;
  linkedUploads: number;
  boundPerHour: number;
  ratioToBound: number;
  /**
   * Estimates (issue 24, goal 7): for each merged PR, the estimated merge time getSubmittedPullRequest
   * answered right after its submission against when it merged, as |actual − estimated| / actual
   * time from the estimate; p50 / p90 over merged PRs with an estimate, and the share without one.
   */
  estimateErrorP50: number | null;
  estimateErrorP90: number | null;
  estimatesMissing: number;
  /**
   * The same over every estimate a merged PR was shown — at entry and at each change of its place
   * in line (read after every event) — each as |actual − estimated| / (actual − when it was told):
   * an estimate told 10 minutes before the merge is judged against those 10 minutes. Null without
   * `estimates`.
   */
  placeEstimateErrorP50: number | null;
  placeEstimateErrorP90: number | null;
  placeEstimates: number;
  /** Urgent PRs (Workload.urgent): how many, their time from submission to merge (p95, max), the PRs in line ahead when each came, and the runs their submission cancelled. */
  urgent: { count: number; p95Minutes: number | null; maxMinutes: number | null; lineAheadMean: number | null; runsCancelled: number } | null;
  /** Engine + store cost of the whole simulation. */
  wallMs: number;
  cpuMs: number;
  events: number;
};

/** The same seed gives the same workload for every strategy. */
export { rng };

type SimPr = {
  number: number;
  broken: boolean;
  targets: string[];
  arrivedAt: number;
  doneAt: number | null;
  outcome: "merged" | "failed" | null;
  /** The merge time estimated right after submission (virtual ms), when one was given. */
  estimatedAt?: number | null;
  /** Every estimate it was given at entry and at each place change: when (virtual ms), its place, and the merge time told (null: none told). */
  placeEstimates?: { at: number; index: number; state?: string; estimatedAt: number | null }[];
  urgent?: boolean;
};
type SimRun = {
  runId: string;
  queueId: string;
  sha: string;
  stack: number[];
  /** The tree it tests (treeOf). */
  content: string;
  dueAt: number;
  /** When this attempt's CI started (virtual ms). */
  ciStartedAt: number;
  outcome: "passed" | "failed";
  /** Per-test workloads: this attempt's failed tests, and whether its results were uploaded. */
  failures: TestFailure[];
  uploaded: boolean;
};

const MINUTE = 60_000;

/**
 * The simulated code host: a target branch as a list of changes, CI as timed results that the
 * simulation delivers the way the worker does for a host without webhooks (it polls them).
 */
class SimCodeHost implements CodeHost, PolledEvents, CiRetries {
  readonly name = "simulation";
  readonly notifiesPullRequests = false;
  readonly polling: PolledEvents = this;
  readonly ciRetries: CiRetries = this;
  head = "h0";
  /**
   * What each commit of the target holds, as a digest of the PRs merged into it in order (the
   * tree's identity): a list per commit made memory and time grow with the square of the PRs
   * (20,000 PRs ran the simulation out of heap), which the store's flatness would have measured.
   */
  readonly contents = new Map<string, string>([["h0", ""]]);
  /** Runs whose CI is in flight, by testing branch. */
  readonly running = new Map<string, SimRun>();
  /** Every run built and not cancelled, by testing branch (a delivered result's failed jobs may run again). */
  readonly runs = new Map<string, SimRun>();
  /** When the first CI run that tested a PR ended. */
  readonly firstTestedAt = new Map<number, number>();
  readonly suite: TestSuite | null;
  retries = 0;
  /** CI results delivered failed with only flaky tests failing (per-test workloads): the flakes the queue had to judge. */
  flakyFailures = 0;
  readonly built = new Map<string, string>();
  commits = 0;
  ciRuns = 0;
  badMerges = 0;
  readonly mergedAt = new Map<number, number>();

  constructor(
    readonly prs: Map<number, SimPr>,
    readonly workload: Workload,
    readonly random: () => number,
    /** Virtual time: ms since `epoch`. */
    readonly now: () => number,
    readonly epoch: number,
  ) {
    this.suite = workload.tests ? new TestSuite(workload.tests, workload.flakeRate, workload.seed) : null;
  }

  async mayOwnRepository(): Promise<boolean> {
    return true;
  }

  statusChecksOf(run: { state: CheckState }): StatusCheck[] {
    return [{ context: "sim-ci", state: run.state }];
  }

  /** Runs whose CI is done at `now`, soonest first; a run's id is its testing branch. */
  async dueCiResults(now: Date): Promise<PolledCiResult[]> {
    // A Date holds whole milliseconds: a run is due from the millisecond it ends in.
    const at = now.getTime() - this.epoch;
    return [...this.running.entries()]
      .filter(([, run]) => Math.floor(run.dueAt) <= at)
      .sort(([, a], [, b]) => a.dueAt - b.dueAt)
      .map(([branch, run]) => ({ id: branch, queueId: run.queueId, runId: run.runId, outcome: run.outcome }));
  }

  async markDelivered(_tx: unknown, id: string): Promise<boolean> {
    const run = this.running.get(id);
    if (!run) return false;
    for (const n of run.stack) if (!this.firstTestedAt.has(n)) this.firstTestedAt.set(n, run.dueAt);
    if (run.failures.length > 0 && run.failures.every((f) => this.suite!.flakyModes.has(f.test))) this.flakyFailures++;
    this.ciSpans.push([run.ciStartedAt, run.dueAt]);
    return this.running.delete(id);
  }

  /** A run's CI, from its start: its outcome and, per test, its failures. CI time varies by ±10% around its mean. */
  #runCi(run: Pick<SimRun, "stack">): Pick<SimRun, "outcome" | "failures" | "dueAt" | "uploaded" | "ciStartedAt"> {
    // A broken PR breaks the runs that test it (one merged all the same is counted as a bad merge).
    const brokenPrs = run.stack.filter((n) => this.prs.get(n)?.broken);
    let failures: TestFailure[] = [];
    let outcome: SimRun["outcome"];
    if (this.suite) {
      failures = this.suite.run(brokenPrs, this.random);
      outcome = failures.length > 0 ? "failed" : "passed";
    } else outcome = brokenPrs.length > 0 || this.random() < this.workload.flakeRate ? "failed" : "passed";
    const dueAt = this.now() + this.workload.ciMinutes * MINUTE * (0.9 + 0.2 * this.random());
    this.ciRuns++;
    return { outcome, failures, dueAt, uploaded: false, ciStartedAt: this.now() };
  }

  /** The run's JUnit report (per-test workloads). */
  junitOf(run: SimRun): string {
    return this.suite!.junit(run.failures);
  }

  /**
   * The sim's CI is one job: re-running its failed jobs runs it all again, a full CI time, with
   * fresh outcomes (flaky tests roll again; a broken test fails again). Asked once the failed
   * result was delivered; a run in flight (already re-running) or passed has nothing to re-run.
   */
  /** Its CI results come polled, one check of one step: no job records to read. */
  async jobOf(): Promise<null> {
    return null;
  }

  async rerunFailedJobs(_repo: RepoRef, request: FailedJobsRequest): Promise<FailedJobsRerun> {
    const run = this.runs.get(request.testBranch);
    if (!run || run.sha !== request.sha || this.running.has(request.testBranch) || run.outcome !== "failed") return { rerun: 0 };
    Object.assign(run, this.#runCi(run));
    this.running.set(request.testBranch, run);
    this.retries++;
    return { rerun: 1 };
  }

  async pullRequestWithHead(): Promise<PullRequestInfo | null> {
    return null;
  }

  async getPullRequest(_repo: RepoRef, number: number): Promise<PullRequestInfo | null> {
    const pr = this.prs.get(number);
    if (!pr) return null;
    return { number, title: `PR ${number}`, author: "sim", headSha: `pr-${number}`, baseBranch: "main", state: pr.outcome === "merged" ? "merged" : "open", mergeability: "mergeable", greenBaseSha: null };
  }

  async getBranchHead(): Promise<string> {
    return this.head;
  }

  async startTestRun(_repo: RepoRef, request: TestRunRequest): Promise<TestRunStart> {
    const testBranch = `greenline/main/${request.runId}`;
    const sha = shaOf(testBranch);
    if (!this.built.has(testBranch)) {
      const content = treeOf(this.contents.get(request.baseSha) ?? "", request.stack);
      this.built.set(testBranch, content);
      const stack = [...request.stack];
      const run: SimRun = { runId: request.runId, queueId: request.queueId, sha, stack, content, ...this.#runCi({ stack }) };
      this.running.set(testBranch, run);
      this.runs.set(testBranch, run);
    }
    return { kind: "started", testBranch, sha };
  }

  async setPullRequestStatus(): Promise<void> {}

  async commentOnPullRequest(): Promise<void> {}

  async permissionOf(): Promise<"write"> {
    return "write";
  }

  async readFile(): Promise<string | null> {
    return null;
  }

  async requiredStatuses(): Promise<RequiredChecks> {
    return { contexts: ["sim-ci"], source: "branch_protection" };
  }

  /** Runs cancelled while their CI was in flight. */
  cancelled = 0;

  /** Every CI attempt's [start, end] (virtual ms): what CI was spent, cancelled runs up to their cancelling. */
  readonly ciSpans: [number, number][] = [];

  async cancelTestRun(_repo: RepoRef, testBranch: string): Promise<void> {
    const run = this.running.get(testBranch);
    if (run) {
      this.cancelled++;
      this.ciSpans.push([run.ciStartedAt, this.now()]);
    }
    this.running.delete(testBranch);
    this.runs.delete(testBranch);
  }

  async mergeTestedRun(_repo: RepoRef, request: MergeRequest): Promise<MergeResult> {
    if (request.prNumbers.every((n) => this.mergedAt.has(n))) return { kind: "merged", head: this.head };
    if (this.head !== request.expectedHead) return { kind: "target_moved", head: this.head };
    const after = treeOf(this.contents.get(this.head)!, request.prNumbers);
    for (const n of request.prNumbers) {
      if (this.prs.get(n)?.broken) this.badMerges++;
      this.mergedAt.set(n, this.now());
    }
    // In one line the target must end with the tree that was tested, exactly.
    if (request.tested && request.exactTree && this.built.get(request.tested.branch) !== after) this.badMerges++;
    this.head = `h${++this.commits}`;
    this.contents.set(this.head, after);
    return { kind: "merged", head: this.head };
  }
}

/** Where the simulation keeps its database: a fresh SQLite file or PostgreSQL database. */
export type StoreKind = { kind: "sqlite" } | { kind: "postgres"; adminUrl: string };

/**
 * The tree made by merging `prs`, in order, onto the tree `base`: a digest folded one PR at a
 * time, so merging [1, 2] at once or [1] then [2] makes the same tree, and equal trees equal digests.
 */
function treeOf(base: string, prs: readonly number[]): string {
  let tree = base;
  for (const pr of prs) tree = createHash("sha1").update(`${tree}|${pr}`).digest("hex");
  return tree;
}

/** Arrivals per chunk of the flatness measurement (SimResult.chunkWallMs). */
const FLATNESS_CHUNK = 1_000;

/** The workload's PRs, fixed by its seed: every strategy sees the same arrivals. */
export function generatePrs(workload: Workload, limit = Infinity): SimPr[] {
  const random = rng(workload.seed);
  const prs: SimPr[] = [];
  let t = 0;
  for (let n = 1; prs.length < limit; n++) {
    t += (-Math.log(1 - random()) / workload.arrivalsPerHour) * 60 * MINUTE;
    if (t > workload.hours * 60 * MINUTE && limit === Infinity) break;
    const broken = random() < workload.realFailureRate;
    const targets: string[] = [];
    if (workload.targets !== null) {
      const count = random() < 0.7 ? 1 : 2;
      while (targets.length < count) {
        const target = `//t${Math.floor(random() * workload.targets)}`;
        if (!targets.includes(target)) targets.push(target);
      }
    }
    prs.push({ number: n, broken, targets, arrivedAt: t, doneAt: null, outcome: null });
  }
  return prs;
}

/** First-order throughput bound of a strategy (research/peers.md §4), PRs per hour. */
export function theoreticalBound(strategy: Strategy, workload: Workload): number {
  const T = workload.ciMinutes / 60;
  const p = 1 - (1 - workload.realFailureRate) * (1 - workload.flakeRate);
  const s = strategy.settings;
  const N = Math.min(s.concurrency ?? 1, s.ciBudget ? s.ciBudget : Number.POSITIVE_INFINITY);
  let mu: number;
  if (s.tuning === "adaptive") {
    // Its largest batch at this failure rate (domain/engine/capacity.ts: ⌊1 / (2p)⌋, at most 16).
    const B = Math.max(1, Math.min(MAX_ADAPTIVE_BATCH, Math.floor(1 / (2 * p))));
    mu = (N * B * (1 - p) ** B) / T;
  } else if (s.batch) {
    const B = (s.batchingMinSize ?? 4) * 2;
    mu = (N * B * (1 - p) ** B) / T;
  } else mu = ((1 - p) * (1 - (1 - p) ** N)) / p / T;
  // Lanes: a failure holds back only its own lane, so each slot merges a PR per T when it passes.
  if (strategy.parallel && workload.targets !== null) mu = (N * (1 - p)) / T;
  return Math.min(workload.arrivalsPerHour * (1 - workload.realFailureRate), mu);
}

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

export async function simulate(strategy: Strategy, workload: Workload, store: StoreKind, options: { prs?: number; warmupHours?: number; drainHours?: number; estimates?: boolean } = {}): Promise<SimResult> {
  const settings = settingsOfThisBuild(strategy);
  const list = generatePrs(workload, options.prs);
  const prs = new Map(list.map((pr) => [pr.number, pr]));
  const random = rng(workload.seed ^ 0x9e3779b9);
  const start = Date.parse("2026-11-23T00:00:00Z");
  let clock = start;
  const codeHost = new SimCodeHost(prs, workload, random, () => clock - start, start);
  const { url, drop } = await freshDatabase(store.kind, store.kind === "postgres" ? store.adminUrl : "", "greenline-sim");
  const db = await Database.open(url);
  const services: Services = { db, codeHost, now: () => new Date(clock), newId: () => orderedId(), readCache: new ReadCache(), log: undefined as never };
  const wall0 = performance.now();
  const cpu0 = process.cpuUsage();
  let events = 0;
  let chunkWallMs: number[] = [];
  let chunkCpuMs: number[] = [];
  try {
    const org = await db.transaction((tx) => ensureOrganization(tx, "sim"));
    const principal: Principal = { organizationId: org.id, organizationSlug: org.slug, tokenId: "sim", role: "write" };
    const address = { repo: { host: "github.com", owner: "sim", name: "repo" }, targetBranch: "main" };
    await createQueue(services, principal, { ...address, ...settings, mode: strategy.parallel ? "parallel" : "single" });
    if (strategy.autoQuarantine === false) await updateFlakySettings(services, principal, { repo: address.repo, org_url_slug: principal.organizationSlug, settings: { autoQuarantine: false } });
    const queue = await db.read((tx) => tx.queue.findFirstOrThrow({ where: { branch: "main" } }));
    const arrivalEnd = options.prs !== undefined ? list.at(-1)!.arrivedAt : workload.hours * 60 * MINUTE;
    const stopAt = arrivalEnd + (options.drainHours ?? 4) * 60 * MINUTE;
    let nextArrival = 0;
    let urgentCandidates = 0;
    let urgentCancelled = 0;
    const urgentAhead: number[] = [];
    const chunkMarks: number[] = [];
    const cpuMarks: number[] = [];
    /**
     * A PR's own CI before it is submitted, as CI uploads it: its head commit on its branch, and a
     * failed job re-run (by a developer, or CI's retry of failed jobs) up to twice, on the same
     * commit. A broken PR's break shows only on top of the others (its own CI is green), so only
     * flaky tests fail here; a pass after a failure on one commit is what detection learns from.
     * Its own random source: every strategy sees the same PR CI.
     */
    const pullRequestCi = async (suite: TestSuite, prNumber: number) => {
      const random = rng((workload.seed * 7919 + prNumber) >>> 0);
      const branch = `pr/${prNumber}`;
      const sha = shaOf(branch);
      for (let attempt = 0; attempt < 3; attempt++) {
        const failures = suite.run([], random);
        await uploadRunResults(services, principal, address.repo, { testBranch: branch, sha, junit: suite.junit(failures) });
        if (failures.length === 0) break;
      }
    };
    const settle = async () => {
      await runEffects(services, queue.id);
    };
    /** Every PR in line whose place changed since it was last read (or new in line): the estimate it is shown now. */
    const readPlaces = async () => {
      const now = new Date(clock);
      const places = await db.read(async (tx) => {
        const { live, placesAt } = await lineWithPlaces(tx, await getQueue(tx, queue.id));
        const placeOf = placesAt(now);
        return live.map((e) => ({ prNumber: e.prNumber, state: e.state, ...placeOf(e.prNumber) }));
      });
      for (const place of places) {
        if (!place.position) continue;
        const pr = prs.get(place.prNumber)!;
        pr.placeEstimates ??= [];
        if (pr.placeEstimates.at(-1)?.index === place.position.index) continue;
        pr.placeEstimates.push({ at: clock - start, index: place.position.index, state: place.state, estimatedAt: place.estimatedMergeAt === null ? null : Date.parse(place.estimatedMergeAt) - start });
      }
    };
    for (;;) {
      const due = [...codeHost.running.values()].reduce((m, r) => Math.min(m, r.dueAt), Infinity);
      // The store's own plain-SQL read (a Prisma query here cost as much as a decision's store path).
      const timer = (await db.read((tx) => findQueueInRepository(tx, queue.id)))!.timerAt;
      const timerAt = timer ? timer.getTime() - start : Infinity;
      const arrival = nextArrival < list.length ? list[nextArrival]!.arrivedAt : Infinity;
      const next = Math.min(due, timerAt, arrival);
      if (!Number.isFinite(next) || next > stopAt) break;
      clock = start + Math.max(next, clock - start);
      if (arrival === next) {
        if (nextArrival % FLATNESS_CHUNK === 0) {
          chunkMarks.push(performance.now());
          const used = process.cpuUsage();
          cpuMarks.push((used.user + used.system) / 1000);
        }
        const pr = list[nextArrival++]!;
        const input = { ...address, prNumber: pr.number };
        if (strategy.parallel) await setImpactedTargets(services, principal, { ...input, sha: `pr-${pr.number}`, impactedTargets: workload.targets === null ? "ALL" : pr.targets });
        if (codeHost.suite) await pullRequestCi(codeHost.suite, pr.number);
        let urgent = false;
        if (workload.urgent && !pr.broken) {
          const waiting = await db.read((tx) => tx.queueEntry.count({ where: { queueId: queue.id, state: { in: ["pending", "testing", "pending_failure"] } } }));
          if (waiting >= workload.urgent.behind && urgentCandidates++ % workload.urgent.every === 0) {
            urgent = true;
            pr.urgent = true;
            urgentAhead.push(waiting);
          }
        }
        await submitPullRequest(services, principal, { ...input, ...(urgent ? { priority: "urgent" as const } : {}) });
        if (urgent) {
          const before = codeHost.cancelled;
          await settle();
          urgentCancelled += codeHost.cancelled - before;
        }
        if (options.estimates) {
          await settle();
          const answer = JSON.parse(await getSubmittedPullRequestJson(services, principal, input)) as { estimatedMergeAt: string | null };
          pr.estimatedAt = answer.estimatedMergeAt === null ? null : Date.parse(answer.estimatedMergeAt) - start;
        }
      } else if (due === next) {
        // CI uploads its test results, then reports its status: the results are there when the failure is judged.
        for (const [testBranch, run] of codeHost.running) {
          if (!codeHost.suite || run.uploaded || Math.floor(run.dueAt) > clock - start) continue;
          await uploadRunResults(services, principal, address.repo, { testBranch, sha: run.sha, junit: codeHost.junitOf(run) });
          run.uploaded = true;
        }
        await deliverPolledCiResults(services, codeHost);
        // Virtual time only moves on through events: a result left undelivered would stall it.
        if ([...codeHost.running.values()].some((r) => r.dueAt === due)) throw new Error("simulation: a due CI result was not delivered");
      } else {
        await applyQueueEvent(services, queue.id, { kind: "timer_fired" });
      }
      events++;
      await settle();
      if (options.estimates) await readPlaces();
    }
    const wallMs = performance.now() - wall0;
    chunkWallMs = chunkMarks.slice(1).map((t, i) => t - chunkMarks[i]!);
    chunkCpuMs = cpuMarks.slice(1).map((t, i) => t - cpuMarks[i]!);
    if (process.env.SIM_DEBUG) {
      const runs = await db.read((tx) => tx.testRun.findMany({ where: { queueId: queue.id }, orderBy: { startedAt: "asc" } }));
      for (const r of runs)
        console.log(
          ((r.startedAt.getTime() - start) / MINUTE).toFixed(0),
          r.runId,
          r.kind,
          r.status,
          r.failure,
          r.tested,
          "stack",
          JSON.parse(r.stack).length,
          r.finishedAt ? ((r.finishedAt.getTime() - start) / MINUTE).toFixed(0) : "-",
          r.flakeVerdict ?? "",
        );
    }
    const cpu = process.cpuUsage(cpu0);
    // The queue runs' uploads (a PR's own CI uploads for its branch, linked to no run).
    const uploads = await db.read((tx) => tx.testUpload.count({ where: { branch: { startsWith: "greenline/" } } }));
    const linkedUploads = await db.read((tx) => tx.testUpload.count({ where: { runId: { not: null } } }));
    if (process.env.SIM_DEBUG) console.log(`uploads ${uploads}, linked to their run ${linkedUploads}, CI re-runs ${codeHost.retries}`);
    // Results uploaded for a run's testing commit that did not reach the run would judge nothing: the bench would be wrong.
    if (linkedUploads < uploads) throw new Error(`simulation: ${uploads - linkedUploads} of ${uploads} uploads are not linked to their queue run`);
    // Outcomes, from the store.
    const entries = await db.read((tx) => tx.queueEntry.findMany({ where: { queueId: queue.id }, select: { prNumber: true, state: true, stateReason: true, stateChangedAt: true } }));
    const endTime = clock - start;
    for (const entry of entries) {
      const pr = prs.get(entry.prNumber)!;
      if (entry.state === "merged") {
        pr.outcome = "merged";
        pr.doneAt = codeHost.mergedAt.get(pr.number) ?? endTime;
      } else if (entry.state === "failed") pr.outcome = "failed";
    }
    const flakeEjections = entries.filter((e) => e.state === "failed" && !prs.get(e.prNumber)!.broken).length;
    // How long after CI first told of its breakage a broken PR was failed, in CI times.
    const T = workload.ciMinutes * MINUTE;
    const latencies = entries
      .filter((e) => e.state === "failed" && prs.get(e.prNumber)!.broken && codeHost.firstTestedAt.has(e.prNumber))
      .map((e) => (e.stateChangedAt.getTime() - start - codeHost.firstTestedAt.get(e.prNumber)!) / T);
    if (process.env.SIM_DEBUG) {
      for (const e of entries.filter((x) => prs.get(x.prNumber)!.broken)) {
        const tested = codeHost.firstTestedAt.get(e.prNumber);
        console.log(
          `broken PR ${e.prNumber}: ${e.state} (${e.stateReason}) at ${((e.stateChangedAt.getTime() - start) / MINUTE).toFixed(0)} min, first tested run ended ${tested === undefined ? "-" : (tested / MINUTE).toFixed(0)} min`,
        );
      }
    }
    // Steady state: merges after the warm-up and before arrivals stop, per hour.
    const warmup = (options.warmupHours ?? 2) * 60 * MINUTE;
    const window = Math.max(arrivalEnd - warmup, MINUTE);
    const mergedInWindow = [...codeHost.mergedAt.values()].filter((t) => t >= warmup && t <= arrivalEnd).length;
    const arrivedInWindow = list.filter((p) => p.arrivedAt >= warmup && p.arrivedAt <= arrivalEnd).length;
    const submitted = list.filter((p) => p.arrivedAt <= arrivalEnd);
    // Time in queue of every good PR that arrived (still queued at the end: counted until then).
    const good = submitted.filter((p) => !p.broken && p.outcome !== "failed");
    const times = good.map((p) => ((p.outcome === "merged" ? p.doneAt! : endTime) - p.arrivedAt) / MINUTE);
    const merged = [...codeHost.mergedAt.keys()].length;
    const throughputPerHour = (mergedInWindow / window) * 60 * MINUTE;
    const estimated = submitted.filter((p) => p.outcome === "merged" && p.estimatedAt !== undefined);
    const errors = estimated.filter((p) => p.estimatedAt !== null && p.doneAt! > p.arrivedAt).map((p) => Math.abs(p.doneAt! - p.estimatedAt!) / (p.doneAt! - p.arrivedAt));
    if (process.env.SIM_DEBUG_ESTIMATES)
      for (const p of estimated.filter((_, i) => i % 15 === 0))
        console.log(
          `PR ${p.number}: arrived ${(p.arrivedAt / MINUTE).toFixed(0)} min, estimated ${p.estimatedAt === null ? "-" : ((p.estimatedAt! - p.arrivedAt) / MINUTE).toFixed(0)} min, took ${((p.doneAt! - p.arrivedAt) / MINUTE).toFixed(0)} min`,
        );
    const placeErrors = estimated.flatMap((p) => (p.placeEstimates ?? []).filter((e) => e.estimatedAt !== null && p.doneAt! > e.at).map((e) => Math.abs(p.doneAt! - e.estimatedAt!) / (p.doneAt! - e.at)));
    if (process.env.SIM_DEBUG_ESTIMATES) {
      // Where the estimates told at each place go wrong: by the time left and the PR's state when told.
      const by = new Map<string, { told: number; offBy25: number; tooSoon: number }>();
      for (const p of estimated)
        for (const e of p.placeEstimates ?? []) {
          if (e.estimatedAt === null || p.doneAt! <= e.at) continue;
          const left = (p.doneAt! - e.at) / MINUTE;
          const key = `${left < 10 ? "<10" : left < 30 ? "10-30" : left < 60 ? "30-60" : left < 120 ? "60-120" : ">=120"} min left, ${e.state}`;
          const row = by.get(key) ?? { told: 0, offBy25: 0, tooSoon: 0 };
          row.told++;
          if (Math.abs(p.doneAt! - e.estimatedAt) / (p.doneAt! - e.at) > 0.25) {
            row.offBy25++;
            if (e.estimatedAt < p.doneAt!) row.tooSoon++;
          }
          by.set(key, row);
        }
      for (const [key, row] of by) console.log(key, row);
    }
    const urgentPrs = submitted.filter((p) => p.urgent);
    const urgentTimes = urgentPrs.map((p) => ((p.outcome === "merged" ? p.doneAt! : endTime) - p.arrivedAt) / MINUTE);
    const bound = theoreticalBound(strategy, workload);
    return {
      strategy: strategy.name,
      workload: workload.name,
      arrivals: submitted.length,
      arrivalsPerHour: round((arrivedInWindow / window) * 60 * MINUTE, 1),
      merged,
      throughputPerHour: round(throughputPerHour, 1),
      meanTimeInQueueMinutes: round(times.reduce((a, b) => a + b, 0) / Math.max(times.length, 1), 1),
      p95TimeInQueueMinutes: round(percentile(times, 95), 1),
      unfinished: good.filter((p) => p.outcome !== "merged").length,
      ciRuns: codeHost.ciRuns,
      ciRunsPerMerge: round(codeHost.ciRuns / Math.max(merged, 1), 2),
      ...spendOf(codeHost.ciSpans, warmup, arrivalEnd),
      flakeEjections,
      badMerges: codeHost.badMerges,
      brokenLatencyP95: latencies.length > 0 ? round(percentile(latencies, 95), 2) : null,
      brokenLatencyMax: latencies.length > 0 ? round(Math.max(...latencies), 2) : null,
      ciRetries: codeHost.retries,
      flakyFailures: codeHost.flakyFailures,
      uploads,
      linkedUploads,
      boundPerHour: round(bound, 1),
      ratioToBound: round(throughputPerHour / bound, 2),
      estimateErrorP50: errors.length > 0 ? round(percentile(errors, 50), 3) : null,
      estimateErrorP90: errors.length > 0 ? round(percentile(errors, 90), 3) : null,
      estimatesMissing: estimated.filter((p) => p.estimatedAt === null).length,
      placeEstimateErrorP50: options.estimates && placeErrors.length > 0 ? round(percentile(placeErrors, 50), 3) : null,
      placeEstimateErrorP90: options.estimates && placeErrors.length > 0 ? round(percentile(placeErrors, 90), 3) : null,
      placeEstimates: placeErrors.length,
      urgent: workload.urgent
        ? {
            count: urgentPrs.length,
            p95Minutes: urgentTimes.length > 0 ? round(percentile(urgentTimes, 95), 1) : null,
            maxMinutes: urgentTimes.length > 0 ? round(Math.max(...urgentTimes), 1) : null,
            lineAheadMean: urgentAhead.length > 0 ? round(urgentAhead.reduce((a, b) => a + b, 0) / urgentAhead.length, 1) : null,
            runsCancelled: urgentCancelled,
          }
        : null,
      wallMs: Math.round(wallMs),
      cpuMs: Math.round((cpu.user + cpu.system) / 1000),
      events,
      chunkWallMs,
      chunkCpuMs,
    };
  } finally {
    await db.close();
    await drop();
  }
}

/** The strategy's queue settings for this build: "off" is what a build without flakeHandling does; other values it cannot run. */
function settingsOfThisBuild(strategy: Strategy): Strategy["settings"] {
  const { flakeHandling, flakyRetries, ...settings } = strategy.settings;
  if (supportsFlakeHandling) return strategy.settings;
  if ((flakeHandling ?? "off") !== "off") throw new UnsupportedSettings(`flakeHandling "${flakeHandling}" is not supported by this build`);
  return settings;
}

/** CI runs in flight over [from, to]: on average, and at most. */
function spendOf(spans: readonly [number, number][], from: number, to: number): { runsInFlightMean: number; runsInFlightMax: number } {
  let spent = 0;
  const edges: [number, number][] = [];
  for (const [a, b] of spans) {
    spent += Math.max(0, Math.min(b, to) - Math.max(a, from));
    edges.push([a, 1], [b, -1]);
  }
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let now = 0;
  let max = 0;
  for (const [, d] of edges) max = Math.max(max, (now += d));
  return { runsInFlightMean: round(spent / Math.max(1, to - from), 2), runsInFlightMax: max };
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;
