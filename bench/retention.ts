// npx tsx bench/retention.ts [--prs=20000] [--backend=sqlite|postgres]
//
// The history pruning job (src/queue/retention.ts), measured: a queue with N finished PRs of
// history (per PR: its entry, 6 transitions, 1 archived run, 9 done effects, 2 operator events,
// the shape the engine leaves), all past the retention, written straight into a fresh database.
// Then, on the real service (sandbox code host, the HTTP API), submits to another queue are
// timed alone (the baseline) and again while the whole history is pruned beside them. Reported:
// rows deleted, the pass's wall time and rows per second, the batches (each one transaction),
// and the submits' p50/p99 during the pass as a ratio of the baseline in the same run.
import { Writable } from "node:stream";
import { DAY_MS } from "../src/domain/time.js";
import { createLogger } from "../src/log.js";
import { PRUNE_BATCH, pruneHistory } from "../src/queue/retention.js";
import { startGreenline } from "../src/server.js";
import { orderedId } from "../src/store/ids.js";
import { benchConfig, machine, postgresReachable, withAdmin } from "./support.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir, loadavg } from "node:os";
import { join } from "node:path";

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const PRS = Number(arg("prs") ?? 20_000);
const SUBMITS = 60;
const TOKEN = "retention-bench-token-0123456789";
const PG_ADMIN = process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;

async function api(base: string, operation: string, body: unknown): Promise<void> {
  const response = await fetch(`${base}/v1/${operation}`, { method: "POST", headers: { "content-type": "application/json", "x-api-token": TOKEN }, body: JSON.stringify(body) });
  if (response.status !== 200) throw new Error(`${operation} answered ${response.status}: ${await response.text()}`);
}

async function run(backend: "sqlite" | "postgres"): Promise<void> {
  let url: string;
  let drop: () => Promise<void>;
  if (backend === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "retention-bench-"));
    url = `file:${join(dir, "g.db")}`;
    drop = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const name = `retention_bench_${process.pid}`;
    await withAdmin(PG_ADMIN, (c) => c.query(`CREATE DATABASE ${name}`));
    url = PG_ADMIN.replace(/\/[^/]*$/, `/${name}`);
    drop = () => withAdmin(PG_ADMIN, (c) => c.query(`DROP DATABASE ${name} WITH (FORCE)`)).then(() => undefined);
  }
  const config = benchConfig(url, { token: TOKEN, org: "acme" }, { sandbox: { ciMs: 3_600_000, failureRate: 0, flakeRate: 0 }, shutdownTimeoutMs: 5_000 });
  const sink = new Writable({ write: (_c, _e, done) => done() });
  const greenline = await startGreenline(config, { log: createLogger("warn", sink), startWorker: false });
  try {
    const base = greenline.url;
    const queueOf = (name: string) => ({ repo: { host: "github.com", owner: "acme", name }, targetBranch: "main" });
    await api(base, "createQueue", queueOf("history"));
    await api(base, "createQueue", queueOf("busy"));
    const { db } = greenline.services;
    const queueId = (await db.read((tx) => tx.queue.findFirstOrThrow({ where: { repository: { name: "history" } }, select: { id: true } }))).id;

    // The history: every row finished 100 days ago.
    const old = new Date(Date.now() - 100 * DAY_MS);
    const seeded = { entries: 0, transitions: 0, runs: 0, effects: 0, events: 0 };
    let seq = 0;
    const seedStarted = performance.now();
    for (let from = 1; from <= PRS; from += 500) {
      const entries: unknown[][] = [];
      const transitions: unknown[][] = [];
      const runs: unknown[][] = [];
      const effects: unknown[][] = [];
      const events: unknown[][] = [];
      for (let pr = from; pr < Math.min(from + 500, PRS + 1); pr++) {
        const entryId = orderedId();
        entries.push([entryId, queueId, pr, `PR ${pr}`, "a".repeat(40), "main", "dev", "merged", old, "merged", 100, "medium", false, false, "mergeable", old, 6]);
        const path = ["pending", "testing", "tests_passed", "merged", "merged", "merged"];
        path.forEach((state, i) => transitions.push([orderedId(), entryId, queueId, i === 0 ? null : path[i - 1], state, "reason", old, "{}"]));
        runs.push([orderedId(), queueId, `run-${pr}`, "main", "b".repeat(40), `[${pr}]`, `[${pr}]`, "passed", old, old, true]);
        for (const kind of ["start_run", "pr_status", "pr_status", "merge", "pr_status", "cancel_run", "pr_status", "pr_comment", "pr_status"]) effects.push([orderedId(), queueId, ++seq, kind, "{}", old, old]);
        events.push([orderedId(), queueId, "submitted", "{}", old], [orderedId(), queueId, "run_finished", "{}", old]);
      }
      await db.sqlTransaction(async (sql) => {
        await sql.insert(
          "QueueEntry",
          [
            "id",
            "queueId",
            "prNumber",
            "prTitle",
            "prSha",
            "prBaseBranch",
            "prAuthor",
            "state",
            "stateChangedAt",
            "stateReason",
            "priorityValue",
            "priorityName",
            "noBatch",
            "isCurrentlySubmitted",
            "mergeability",
            "submittedAt",
            "timelineCount",
          ],
          entries,
        );
        await sql.insert("Transition", ["id", "entryId", "queueId", "fromState", "toState", "reason", "at", "evidence"], transitions);
        await sql.insert("TestRun", ["id", "queueId", "runId", "kind", "baseSha", "stack", "tested", "status", "startedAt", "finishedAt", "archived"], runs);
        await sql.insert("Effect", ["id", "queueId", "seq", "kind", "payload", "createdAt", "doneAt"], effects);
        await sql.insert("QueueEvent", ["id", "queueId", "kind", "payload", "at"], events);
      });
      seeded.entries += entries.length;
      seeded.transitions += transitions.length;
      seeded.runs += runs.length;
      seeded.effects += effects.length;
      seeded.events += events.length;
    }
    const seedMs = performance.now() - seedStarted;
    const total = Object.values(seeded).reduce((a, b) => a + b, 0);

    let nextPr = 1;
    const submits = async (count: number, going: () => boolean = () => true): Promise<number[]> => {
      const times: number[] = [];
      for (let i = 0; i < count && going(); i++) {
        const started = performance.now();
        await api(base, "submitPullRequest", { ...queueOf("busy"), pr: { number: nextPr++ } });
        times.push(performance.now() - started);
      }
      return times;
    };
    await submits(10); // warm-up
    const alone = await submits(SUBMITS);

    let pruning = true;
    const pruneStarted = performance.now();
    const [pruned, beside] = await Promise.all([
      pruneHistory(greenline.services).finally(() => (pruning = false)),
      (async () => {
        const times: number[] = [];
        while (pruning) times.push(...(await submits(1)));
        return times;
      })(),
    ]);
    const pruneMs = performance.now() - pruneStarted;
    const deleted = pruned.effects + pruned.queueEvents + pruned.runs + pruned.pullRequests;
    // Transitions go with their PRs (a cascade): counted from what is left.
    const left = await db.read(async (tx) => ({ transitions: await tx.transition.count({ where: { queueId } }), entries: await tx.queueEntry.count({ where: { queueId } }) }));
    const batches = Math.ceil(pruned.effects / PRUNE_BATCH) + Math.ceil(pruned.queueEvents / PRUNE_BATCH) + Math.ceil(pruned.runs / PRUNE_BATCH) + Math.ceil(pruned.pullRequests / PRUNE_BATCH) + 4;
    console.log(
      `| ${backend} | ${PRS.toLocaleString("en")} | ${total.toLocaleString("en")} (seeded in ${(seedMs / 1000).toFixed(1)} s) | ${JSON.stringify(pruned)} + ${(seeded.transitions - left.transitions).toLocaleString("en")} transitions | ${(pruneMs / 1000).toFixed(1)} | ${Math.round((deleted + seeded.transitions - left.transitions) / (pruneMs / 1000)).toLocaleString("en")} | ${batches} (${(pruneMs / batches).toFixed(0)} ms each) | ${percentile(alone, 50).toFixed(1)} / ${percentile(alone, 99).toFixed(1)} | ${beside.length > 0 ? `${percentile(beside, 50).toFixed(1)} / ${percentile(beside, 99).toFixed(1)} (${beside.length} submits)` : "none finished"} | ${beside.length > 0 ? `${(percentile(beside, 50) / percentile(alone, 50)).toFixed(2)} / ${(percentile(beside, 99) / percentile(alone, 99)).toFixed(2)}` : "-"} |`,
    );
    if (left.entries !== 0 || left.transitions !== 0) throw new Error(`history left: ${JSON.stringify(left)}`);
  } finally {
    await greenline.close();
    await drop();
  }
}

console.log(
  `History pruning, ${machine()}, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
console.log("");
console.log("| backend | PRs of history | rows | deleted | wall s | rows/s | batches | submit p50 / p99 ms alone | submit p50 / p99 ms while pruning | ratio p50 / p99 |");
console.log("|---|---:|---:|---|---:|---:|---:|---|---|---|");
const only = arg("backend");
if (only !== "postgres") await run("sqlite");
if (only !== "sqlite") {
  if (await postgresReachable(PG_ADMIN)) await run("postgres");
  else console.log("| postgres | not reachable: skipped | | | | | | | | |");
}
console.log(
  `load after: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
