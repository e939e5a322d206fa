import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pg from "pg";
import { createLogger } from "../src/log.js";
import { startGreenline } from "../src/server.js";
import { countQueries } from "./query-count.js";
import { benchConfig, freePort, machine, waitFor, withAdmin } from "./support.js";

/**
 * Many queues, several replicas (issue 23, goal 3): N queues in M installations (repository
 * owners) on the sandbox code host with simulated CI, PRs arriving at a steady rate across them
 * through the HTTP API, one PostgreSQL database created for the run, R replicas as separate
 * `node dist/src/main.js` processes sharing it. Reports decisions (applied queue events) per
 * second and per CPU-second of the replicas (utime+stime from /proc/<pid>/stat), the latency from
 * a CI result's arrival (the sandbox job's due time: CI finished) to the merge effect (its doneAt:
 * the sandbox merge is one short transaction, so this bounds its start from above), whether every
 * PR merged exactly once and none was lost, and each replica's RSS in the first and last fifth.
 * Before the runs: statements per idle worker tick with few and many queues (in-process).
 *
 * Isolation (goal 4): `--slow-installation` (every code-host call of installation inst-000's
 * queues answers after --fault-ms, 5 s) or `--failing-installation` (its writes answer 500:
 * GREENLINE_SANDBOX_FAULTS=inst-000=fail-writes) runs each replica count twice, same seed and
 * rate: first without the fault, then with it; and reports the other queues' CI result → merge
 * p50/p95/p99 in both and their ratio. The drain then waits for the other queues' PRs only.
 *
 *   node dist/bench/scale.js [--quick] [--queues=N] [--installations=M] [--rate=PRs/s]
 *     [--seconds=S] [--ci-ms=MS] [--replicas=1,2,3] [--kill] [--interval-ms=250]
 *     [--slow-installation | --failing-installation] [--fault-ms=5000]
 *
 * GREENLINE_BENCH_SERVER_NODE_ARGS passes Node options to every replica (a CPU profile each).
 */

const root = join(import.meta.dirname, "../..");
const ADMIN_URL = process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
/** GREENLINE_BENCH_SERVER_NODE_ARGS: Node options for every replica (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"). */
const serverExecArgv = process.env.GREENLINE_BENCH_SERVER_NODE_ARGS?.split(" ").filter((a) => a !== "") ?? [];
const TOKEN = "scale-bench-token-0123456789abcdef";
const ORG = "bench";

type Fault = { kind: "slow" | "failing"; owner: string; setting: string };
type Options = { queues: number; installations: number; rate: number; seconds: number; ciMs: number; replicas: number[]; kill: boolean; intervalMs: number; drainS: number; idle: boolean; fault: Fault | null };

/** The installation whose code host is slow or failing in the isolation runs. */
const FAULTY_OWNER = "inst-000";

function parseArgs(argv: string[]): Options {
  const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
  const quick = argv.includes("--quick");
  return {
    queues: Number(flag("queues") ?? (quick ? 100 : 1000)),
    installations: Number(flag("installations") ?? (quick ? 20 : 200)),
    rate: Number(flag("rate") ?? (quick ? 3 : 5)),
    seconds: Number(flag("seconds") ?? (quick ? 90 : 300)),
    ciMs: Number(flag("ci-ms") ?? 2000),
    replicas: (flag("replicas") ?? (quick ? "1,3" : "1,2,3")).split(",").map(Number),
    kill: argv.includes("--kill"),
    intervalMs: Number(flag("interval-ms") ?? 250),
    drainS: Number(flag("drain-s") ?? (quick ? 150 : 400)),
    idle: !argv.includes("--no-idle"),
    fault: argv.includes("--slow-installation")
      ? { kind: "slow", owner: FAULTY_OWNER, setting: `${FAULTY_OWNER}=slow:${Number(flag("fault-ms") ?? 5000)}` }
      : argv.includes("--failing-installation")
        ? { kind: "failing", owner: FAULTY_OWNER, setting: `${FAULTY_OWNER}=fail-writes` }
        : null,
  };
}

const ticksPerSecond = 100; // CLK_TCK on Linux

function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[11], fields[12]: utime, stime (fields 14 and 15 of the whole line)
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
  } catch {
    return Number.NaN;
  }
}

function rssMb(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

async function createDatabase(tag: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `greenline_scale_${tag}_${Date.now()}`;
  await withAdmin(ADMIN_URL, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = ADMIN_URL.replace(/\/[^/]*$/, `/${name}`);
  return { url, drop: () => withAdmin(ADMIN_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined) };
}

class Replica {
  child: ChildProcess | null = null;
  output = "";
  cpuAtDeath: number | null = null;
  readonly rss: { at: number; mb: number }[] = [];
  constructor(
    readonly port: number,
    readonly env: Record<string, string>,
  ) {}
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  get pid(): number {
    return this.child!.pid!;
  }
  async start(): Promise<void> {
    this.child = spawn(process.execPath, [...serverExecArgv, join(root, "dist/src/main.js")], {
      cwd: root,
      env: { ...process.env, LOG_LEVEL: "warn", GREENLINE_ENV_FILE: "", ...this.env, PORT: String(this.port), HOST: "127.0.0.1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child.stdout!.on("data", (d) => (this.output = (this.output + d).slice(-5_000)));
    this.child.stderr!.on("data", (d) => (this.output = (this.output + d).slice(-5_000)));
    await waitFor(`${this.url}/healthz`, 120_000);
  }
  cpu(): number {
    return this.cpuAtDeath ?? cpuSeconds(this.pid);
  }
  kill(): void {
    this.cpuAtDeath = cpuSeconds(this.pid);
    this.child!.kill("SIGKILL");
  }
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
  }
}

async function api(url: string, operation: string, body: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${url}/v1/${operation}`, { method: "POST", headers: { "content-type": "application/json", "x-api-token": TOKEN }, body: JSON.stringify(body) });
  return { status: response.status, text: await response.text() };
}

const queueRepo = (i: number, installations: number) => ({ host: "github.com", owner: `inst-${String(i % installations).padStart(3, "0")}`, name: `repo-${Math.floor(i / installations)}` });

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Latency = { p50: number | null; p95: number | null; p99: number | null; count: number };

type RunResult = {
  replicas: number;
  /** GREENLINE_SANDBOX_FAULTS of the run ("" without). */
  fault: string;
  submitted: number;
  non2xx: number;
  non2xxAnswers: Record<string, string>;
  merged: number;
  mergedExactlyOnce: boolean;
  /** Still in their queues when the run stopped (the drain's bound, or a minute without a merge). */
  unfinished: number;
  lost: number;
  wallS: number;
  events: number;
  decisionsPerS: number;
  cpuS: number;
  decisionsPerCpuS: number;
  cpuCores: number;
  ciResultToMergeMs: Latency;
  /** The queues of the other installations than the faulty one (isolation runs; with or without the fault). */
  othersCiResultToMergeMs: Latency;
  /** The faulty installation's PRs: submitted, merged by the end of the run. */
  faultyInstallation: { submitted: number; merged: number } | null;
  rssMb: { first: number | null; last: number | null }[];
  killed: boolean;
  loadAverage: number[];
};

async function runScale(options: Options, replicaCount: number, fault: Fault | null): Promise<RunResult> {
  const database = await createDatabase(`r${replicaCount}${fault ? `_${fault.kind}` : ""}`);
  const env = {
    ...(fault ? { GREENLINE_SANDBOX_FAULTS: fault.setting } : {}),
    DATABASE_URL: database.url,
    GREENLINE_API_TOKEN: TOKEN,
    GREENLINE_ORG: ORG,
    GREENLINE_SANDBOX_CI_MS: String(options.ciMs),
    GREENLINE_WORKER_INTERVAL_MS: String(options.intervalMs),
  };
  const replicas = await Promise.all(Array.from({ length: replicaCount }, async () => new Replica(await freePort(), env)));
  const admin = new pg.Client({ connectionString: database.url });
  let sampler: NodeJS.Timeout | null = null;
  try {
    // The first replica migrates; the others start on the migrated database.
    await replicas[0]!.start();
    await Promise.all(replicas.slice(1).map((r) => r.start()));
    await admin.connect();
    // The queues, through the API (8 at a time).
    const queueIds: number[] = Array.from({ length: options.queues }, (_, i) => i);
    for (let i = 0; i < queueIds.length; i += 8) {
      await Promise.all(
        queueIds.slice(i, i + 8).map(async (q) => {
          const answer = await api(replicas[q % replicas.length]!.url, "createQueue", { repo: queueRepo(q, options.installations), targetBranch: "main", concurrency: 2 });
          if (answer.status !== 200) throw new Error(`createQueue answered ${answer.status}: ${answer.text}`);
        }),
      );
    }
    // Steady arrivals: PR k goes to a queue drawn at random (seeded), numbered within its queue.
    let seed = 12345;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const total = Math.round(options.rate * options.seconds);
    const nextNumber = new Map<number, number>();
    const submitted: { queue: number; number: number }[] = [];
    let non2xx = 0;
    /** The non-2xx answers seen, by status (the last one of each). */
    const answers = new Map<number, string>();
    const pending = new Set<Promise<void>>();
    let live = replicas;
    const cpuBefore = replicas.map((r) => r.cpu());
    const started = performance.now();
    const startedAt = Date.now();
    sampler = setInterval(() => {
      for (const r of replicas) {
        if (r.cpuAtDeath !== null) continue;
        const mb = rssMb(r.pid);
        if (mb !== null) r.rss.push({ at: Date.now() - startedAt, mb });
      }
    }, 1_000);
    const killAt = options.kill && replicaCount > 1 ? Math.floor(total / 2) : -1;
    for (let k = 0; k < total; k++) {
      const due = started + (k * 1000) / options.rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      if (k === killAt) {
        replicas.at(-1)!.kill();
        live = replicas.slice(0, -1);
      }
      const queue = Math.floor(random() * options.queues);
      const number = (nextNumber.get(queue) ?? 0) + 1;
      nextNumber.set(queue, number);
      submitted.push({ queue, number });
      const request = (async () => {
        for (let attempt = 0; attempt < 60; attempt++) {
          // A retry goes to another live replica (the one asked may have just been killed).
          const target = live[(k + attempt) % live.length]!;
          const answer = await api(target.url, "submitPullRequest", { repo: queueRepo(queue, options.installations), targetBranch: "main", pr: { number } }).catch(() => ({ status: 0, text: "connection failed" }));
          if (answer.status === 200) return;
          non2xx++;
          answers.set(answer.status, answer.text.slice(0, 200));
          await sleep(Math.min(5_000, 500 * (attempt + 1)));
        }
        throw new Error(`submitPullRequest of ${queue}#${number} kept failing: ${JSON.stringify([...answers])}`);
      })();
      const tracked = request.finally(() => pending.delete(tracked));
      pending.add(tracked);
    }
    await Promise.all(pending);
    // With an installation faulty (isolation runs, with or without the fault), the drain waits
    // for the other installations' PRs: the faulty one's may not merge in the run's time.
    const faulty = options.fault ? submitted.filter((p) => queueRepo(p.queue, options.installations).owner === options.fault!.owner).length : 0;
    const target = total - faulty;
    const mergedOthers = async () => {
      const { rows } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM "SandboxPullRequest" WHERE state = 'merged' AND "repoKey" NOT LIKE $1`, [options.fault ? `%/${options.fault.owner}/%` : "-"]);
      return Number(rows[0]!.n);
    };
    // Drained: every submitted PR merged in the sandbox (no failures, no flakes configured), or
    // no merge for a minute (the rest is reported unfinished), or the drain's bound passed.
    const deadline = performance.now() + options.drainS * 1000;
    let merged = 0;
    let drainedAt = performance.now();
    let progressAt = performance.now();
    for (;;) {
      const others = await mergedOthers();
      if (others > merged) progressAt = performance.now();
      merged = others;
      drainedAt = performance.now();
      if (merged >= target || performance.now() > deadline || performance.now() - progressAt > 60_000) break;
      await sleep(250);
    }
    {
      const { rows } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM "SandboxPullRequest" WHERE state = 'merged'`);
      merged = Number(rows[0]!.n);
    }
    const cpuS = replicas.reduce((sum, r, i) => sum + (r.cpu() - cpuBefore[i]!), 0);
    const wallS = (drainedAt - started) / 1000;
    clearInterval(sampler);
    sampler = null;
    // Merged exactly once: one merge commit per submitted PR (a repeated merge would add another).
    const { rows: commits } = await admin.query<{ repoKey: string; message: string; n: string }>(
      `SELECT "repoKey", message, count(*) AS n FROM "SandboxCommit" WHERE message LIKE 'Sandbox pull request #% (#%)' GROUP BY "repoKey", message`,
    );
    const twice = commits.filter((c) => Number(c.n) > 1).length;
    const { rows: events } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM "QueueEvent"`);
    const { rows: latencies } = await admin.query<{ ms: number; owner: string }>(
      `SELECT EXTRACT(EPOCH FROM (e."doneAt" - j."dueAt")) * 1000 AS ms, r.owner
         FROM "Effect" e JOIN "SandboxCiJob" j ON j."queueId" = e."queueId" AND j."runId" = (e.payload::json->>'runId')
         JOIN "Queue" q ON q.id = e."queueId" JOIN "Repository" r ON r.id = q."repositoryId"
        WHERE e.kind = 'merge' AND e."doneAt" IS NOT NULL AND j.outcome = 'passed' AND NOT e."gaveUp"`,
    );
    const ms = latencies.map((l) => Number(l.ms)).sort((a, b) => a - b);
    const othersMs = latencies
      .filter((l) => l.owner !== options.fault?.owner)
      .map((l) => Number(l.ms))
      .sort((a, b) => a - b);
    const latencyOf = (sorted: number[]): Latency => ({ p50: roundOrNull(percentile(sorted, 50)), p95: roundOrNull(percentile(sorted, 95)), p99: roundOrNull(percentile(sorted, 99)), count: sorted.length });
    const fifth = (r: Replica, which: "first" | "last") => {
      const span = r.rss.at(-1)?.at ?? 0;
      const picked = r.rss.filter((s) => (which === "first" ? s.at <= span / 5 : s.at >= (span * 4) / 5));
      return picked.length ? Math.round((picked.reduce((a, s) => a + s.mb, 0) / picked.length) * 10) / 10 : null;
    };
    const eventCount = Number(events[0]!.n);
    // Lost: submitted, not merged, and no longer in its queue (failed, cancelled, or gone).
    const { rows: queued } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM "QueueEntry" WHERE state NOT IN ('merged', 'failed', 'cancelled')`);
    const unfinished = Number(queued[0]!.n);
    const faultyMerged = options.fault ? merged - (await mergedOthers()) : 0;
    return {
      replicas: replicaCount,
      fault: fault?.setting ?? "",
      submitted: total,
      non2xx,
      non2xxAnswers: Object.fromEntries(answers),
      merged,
      mergedExactlyOnce: twice === 0 && commits.length === merged,
      unfinished,
      lost: total - merged - unfinished,
      wallS: round(wallS),
      events: eventCount,
      decisionsPerS: round(eventCount / wallS),
      cpuS: round(cpuS),
      decisionsPerCpuS: round(eventCount / cpuS),
      cpuCores: round(cpuS / wallS),
      ciResultToMergeMs: latencyOf(ms),
      othersCiResultToMergeMs: latencyOf(othersMs),
      faultyInstallation: options.fault ? { submitted: faulty, merged: faultyMerged } : null,
      rssMb: replicas.map((r) => ({ first: fifth(r, "first"), last: fifth(r, "last") })),
      killed: killAt >= 0,
      loadAverage: loadavg().map(round),
    };
  } finally {
    if (sampler) clearInterval(sampler);
    await admin.end().catch(() => undefined);
    await Promise.all(replicas.map((r) => r.stop().catch(() => undefined)));
    await database.drop().catch(() => undefined);
  }
}

const round = (x: number) => Math.round(x * 100) / 100;
const roundOrNull = (x: number | null) => (x === null ? null : Math.round(x));

/**
 * Statements one idle worker tick sends to PostgreSQL, with `few` and `many` queues that have
 * nothing to do (in-process: the real worker, its statements counted on the pg client).
 */
async function idleTickStatements(queueCounts: number[]): Promise<Record<string, number>> {
  const result: Record<string, number> = {};
  for (const n of queueCounts) {
    const database = await createDatabase(`idle${n}`);
    const config = benchConfig(database.url, { token: TOKEN, org: ORG });
    const sink = new Writable({ write: (_c, _e, cb) => cb() });
    const greenline = await startGreenline(config, { log: createLogger("warn", sink), startWorker: false });
    try {
      for (let q = 0; q < n; q++) {
        const answer = await api(greenline.url, "createQueue", { repo: queueRepo(q, 20), targetBranch: "main" });
        if (answer.status !== 200) throw new Error(`createQueue answered ${answer.status}: ${answer.text}`);
      }
      // Settle whatever the creation left (first ticks), then count steady idle ticks.
      await greenline.worker.drain();
      for (let i = 0; i < 3; i++) await greenline.worker.tick();
      const count = countQueries();
      const ticks = 20;
      try {
        for (let i = 0; i < ticks; i++) await greenline.worker.tick();
      } finally {
        count.stop();
      }
      result[String(n)] = round(count.total / ticks);
    } finally {
      await greenline.close();
      await database.drop();
    }
  }
  return result;
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  console.error(`bench:scale on ${machine()}; load average ${loadavg().map(round).join(", ")}`);
  console.error(JSON.stringify({ options }));
  let idle: Record<string, number> | null = null;
  if (options.idle) {
    idle = await idleTickStatements([10, 200]);
    console.error(`statements per idle worker tick (queues → statements): ${JSON.stringify(idle)}`);
  }
  const results: Record<string, RunResult> = {};
  const isolation: Record<string, unknown> = {};
  const faultedRuns: RunResult[] = [];
  for (const r of options.replicas) {
    const result = await runScale(options, r, null);
    results[String(r)] = result;
    console.error(JSON.stringify(result));
    if (!options.fault) continue;
    // The same run with the fault (same seed, rate and queues): the other queues' latency beside it.
    const faulted = await runScale(options, r, options.fault);
    console.error(JSON.stringify(faulted));
    faultedRuns.push(faulted);
    const before = result.othersCiResultToMergeMs;
    const after = faulted.othersCiResultToMergeMs;
    const ratio = (a: number | null, b: number | null) => (a && b ? round(b / a) : null);
    isolation[String(r)] = {
      baselineMs: before,
      faultedMs: after,
      ratio: { p50: ratio(before.p50, after.p50), p95: ratio(before.p95, after.p95), p99: ratio(before.p99, after.p99) },
      faultyInstallation: faulted.faultyInstallation,
      othersMergedExactlyOnce: faulted.mergedExactlyOnce,
      loadAverage: [result.loadAverage, faulted.loadAverage],
    };
  }
  if (options.fault) console.log(JSON.stringify({ isolation: { fault: options.fault.setting, replicas: isolation } }));
  const replicas = Object.fromEntries(
    Object.entries(results).map(([r, x]) => [
      r,
      {
        decisionsPerS: x.decisionsPerS,
        decisionsPerCpuS: x.decisionsPerCpuS,
        p95CiResultToMergeStartMs: x.ciResultToMergeMs.p95,
        mergedExactlyOnce: x.mergedExactlyOnce,
        lost: x.lost,
        ...(x.unfinished > 0 ? { unfinished: x.unfinished } : {}),
      },
    ]),
  );
  console.log(JSON.stringify({ replicas }));
  if (idle) console.error(JSON.stringify({ idleTickStatements: idle }));
  // Isolation runs: the faulty installation's PRs may fail or wait; none may merge twice.
  const ok = options.fault ? [...Object.values(results), ...faultedRuns].every((x) => x.mergedExactlyOnce) : Object.values(results).every((x) => x.mergedExactlyOnce && x.lost === 0 && x.unfinished === 0);
  process.exit(ok ? 0 : 1);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
