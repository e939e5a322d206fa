// npm run bench:analytics [-- --prs <n>] [--queues <n>] [--requests <n>] [--backends sqlite,postgres] [--explain]
//
// The analytics page (/analytics) at scale (issue 27, part 8): 100,000 PRs of history over 90
// days across 10 queues of one organization (each merged, failed or cancelled, with its
// transitions; 1.15 runs a PR, some passed by flake handling; most told an estimate), 1,000 PRs
// in line in one of them (submitted through the API, the worker stopped), and another
// organization's queue with history of its own. Times the signed-in page for the organization
// and for one queue over each window (7, 30, 90 days), and a CSV export, on SQLite and on
// PostgreSQL: the whole request, seen from a client in the same process (an upper bound on the
// server's time). --explain prints the query plans of the analytics' statements at that size.
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/log.js";
import { startGreenline } from "../src/server.js";
import { DEFAULT_QUEUE_SETTINGS } from "../src/domain/queue-settings.js";
import { sqlOf } from "../src/store/database.js";
import { createQueue } from "../src/store/queues.js";
import { freshDatabase, machine, postgresReachable } from "./support.js";

const { values } = parseArgs({
  options: {
    prs: { type: "string", default: "100000" },
    queues: { type: "string", default: "10" },
    requests: { type: "string", default: "20" },
    backends: { type: "string", default: "sqlite,postgres" },
    explain: { type: "boolean", default: false },
  },
});
const PRS = Number(values.prs);
const QUEUES = Number(values.queues);
const REQUESTS = Number(values.requests);
const IN_LINE = 1000;
const RUN = ["id", "queueId", "runId", "kind", "baseSha", "stack", "tested", "status", "startedAt", "finishedAt", "flakeVerdict"];
const TRANSITION = ["id", "entryId", "queueId", "fromState", "toState", "reason", "at"];
const ENTRY = [
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
  "estimatedMergeAt",
];
const DAY = 86_400_000;
const MIN = 60_000;
const ADMIN = process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const TOKEN = "bench-token-0123456789abcdef";

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** A deterministic pseudo-random sequence (the same history on both databases). */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function bench(backend: "sqlite" | "postgres"): Promise<void> {
  const { url, drop } = await freshDatabase(backend, ADMIN, "greenline-analytics");
  const config = loadConfig({ DATABASE_URL: url, GREENLINE_API_TOKEN: TOKEN, GREENLINE_ORG: "bench", PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn" }, () => "");
  const greenline = await startGreenline(config, { log: createLogger("warn"), startWorker: false });
  try {
    const call = async (op: string, body: unknown, token = TOKEN) => {
      const response = await fetch(`${greenline.url}/v1/${op}`, { method: "POST", headers: { "content-type": "application/json", "x-api-token": token }, body: JSON.stringify(body) });
      if (!response.ok) throw new Error(`${op}: ${response.status} ${await response.text()}`);
      return response.text();
    };
    const queues = Array.from({ length: QUEUES }, (_, i) => ({ repo: { host: "github.com", owner: "bench", name: `repo${Math.floor(i / 2)}` }, targetBranch: i % 2 === 0 ? "main" : "release/1.x" }));
    for (const q of queues) await call("createQueue", { ...q, state: "paused" });
    const db = greenline.services.db;
    const ids = await db.read((tx) => tx.queue.findMany({ select: { id: true } }));
    // Another organization, with history of its own (never counted).
    await db.write(async (tx) => {
      await tx.organization.create({ data: { id: "other-org", slug: "other" } });
      await tx.repository.create({ data: { id: "other-repo", organizationId: "other-org", host: "github.com", owner: "other", name: "web", key: "github.com/other/web" } });
    });

    const started = performance.now();
    const now = Date.now();
    const rand = random(27);
    const REASONS = ["tests_failed", "tests_failed", "tests_failed", "timeout", "merge_conflict", "checks_never_started"];
    const seedQueue = async (queueId: string, count: number, firstNumber: number) => {
      const entries: unknown[][] = [];
      const transitions: unknown[][] = [];
      const runs: unknown[][] = [];
      for (let i = 0; i < count; i++) {
        const number = firstNumber + i;
        const id = `${queueId}-h${number}`;
        // Busier in working hours: submissions between 06:00 and 20:00 UTC mostly.
        const day = Math.floor(rand() * 90);
        const hour = rand() < 0.85 ? 6 + Math.floor(rand() * 14) : Math.floor(rand() * 24);
        const submitted = Math.floor((now - 90 * DAY) / DAY) * DAY + DAY + day * DAY + hour * 3_600_000 + Math.floor(rand() * 3_600_000);
        const inQueue = Math.floor((5 + rand() * rand() * 180) * MIN);
        const end = Math.min(submitted + inQueue, now - 1000);
        const roll = rand();
        const state = roll < 0.85 ? "merged" : roll < 0.95 ? "failed" : "cancelled";
        const reason = state === "merged" ? "merged" : state === "failed" ? REASONS[Math.floor(rand() * REASONS.length)]! : "cancelled";
        const estimate = state === "merged" && rand() < 0.8 ? new Date(submitted + inQueue + Math.floor((rand() - 0.5) * 30 * MIN)) : null;
        entries.push([id, queueId, number, `PR ${number}`, "a".repeat(40), "main", "dev", state, new Date(end), reason, 100, "medium", false, false, "mergeable", new Date(submitted), estimate]);
        const t0 = new Date(submitted);
        const t1 = new Date(submitted + Math.min(60_000, end - submitted));
        transitions.push([`${id}-0`, id, queueId, null, "pending", "submitted", t0]);
        transitions.push([`${id}-1`, id, queueId, "pending", "testing", "testing", t1]);
        if (state === "merged") transitions.push([`${id}-2`, id, queueId, "testing", "tests_passed", "tests_passed", new Date(end - 1000)]);
        transitions.push([`${id}-3`, id, queueId, state === "merged" ? "tests_passed" : "testing", state, reason, new Date(end)]);
        const runCount = rand() < 0.15 ? 2 : 1;
        for (let r = 0; r < runCount; r++) {
          const flaky = rand() < 0.05 ? JSON.stringify({ retries: 1, infrastructureRetried: false, excused: {}, judged: {}, last: null }) : null;
          runs.push([`${id}-r${r}`, queueId, `run-h${number}-${r}`, "main", "b".repeat(40), "[]", "[]", r === runCount - 1 && state === "merged" ? "passed" : "failed", t1, new Date(end), flaky]);
        }
      }
      for (let i = 0; i < entries.length; i += 2000) {
        await db.write(async (tx) => {
          const sql = sqlOf(tx);
          await sql.insert("QueueEntry", ENTRY, entries.slice(i, i + 2000));
        });
      }
      for (let i = 0; i < transitions.length; i += 2000) await db.write((tx) => sqlOf(tx).insert("Transition", TRANSITION, transitions.slice(i, i + 2000)));
      for (let i = 0; i < runs.length; i += 2000) await db.write((tx) => sqlOf(tx).insert("TestRun", RUN, runs.slice(i, i + 2000)));
    };
    const perQueue = Math.floor(PRS / ids.length);
    for (const { id } of ids) await seedQueue(id, perQueue, 1);
    await db.write((tx) => createQueue(tx, { id: "other-queue", repositoryId: "other-repo", branch: "main", settings: DEFAULT_QUEUE_SETTINGS, state: "running", head: null }));
    await seedQueue("other-queue", 10_000, 1);
    // 1,000 in line in the first queue (written as the engine would leave them waiting: the page
    // reads the history, not the line, so they are there for the tables' size and the scans).
    await db.write(async (tx) => {
      const sql = sqlOf(tx);
      const queueId = ids[0]!.id;
      const at = new Date(now - 3_600_000);
      const rows = Array.from({ length: IN_LINE }, (_, n) => [
        `${queueId}-l${n}`,
        queueId,
        900_000 + n,
        `PR ${n}`,
        "c".repeat(40),
        "main",
        "dev",
        "pending",
        at,
        "submitted",
        100,
        "medium",
        false,
        true,
        "mergeable",
        at,
        null,
      ]);
      await sql.insert("QueueEntry", ENTRY, rows);
      await sql.insert(
        "Transition",
        TRANSITION,
        rows.map((row) => [`${row[0]}-0`, row[0], queueId, null, "pending", "submitted", at]),
      );
    });
    if (backend === "postgres") await db.sqlRead((sql) => sql.run("ANALYZE"));
    const seedSeconds = (performance.now() - started) / 1000;

    // A session for the dashboard.
    const signIn = await fetch(`${greenline.url}/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: greenline.url },
      body: new URLSearchParams({ token: TOKEN, next: "/" }),
    });
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
    const get = async (path: string) => {
      const t = performance.now();
      const response = await fetch(`${greenline.url}${path}`, { headers: { cookie } });
      const body = await response.text();
      if (response.status !== 200) throw new Error(`${path}: ${response.status} ${body.slice(0, 300)}`);
      return { ms: performance.now() - t, bytes: body.length };
    };
    const queueParam = encodeURIComponent(`github.com/bench/repo0/main`);
    const paths: [string, string][] = [];
    for (const w of [7, 30, 90]) {
      paths.push([`organization, ${w} days`, `/analytics?window=${w}`]);
      paths.push([`one queue (1,000 in line), ${w} days`, `/analytics?window=${w}&queue=${queueParam}`]);
    }
    paths.push(["CSV time_in_queue, organization, 90 days", "/analytics.csv?metric=time_in_queue&window=90"]);
    paths.push(["CSV failures_by_reason, one queue, 90 days", `/analytics.csv?metric=failures_by_reason&window=90&queue=${queueParam}`]);
    const counts = await db.sqlRead(async (sql) => ({
      entries: Number((await sql.all<{ n: number | string }>(`SELECT COUNT(*) AS "n" FROM "QueueEntry"`))[0]!.n),
      transitions: Number((await sql.all<{ n: number | string }>(`SELECT COUNT(*) AS "n" FROM "Transition"`))[0]!.n),
      runs: Number((await sql.all<{ n: number | string }>(`SELECT COUNT(*) AS "n" FROM "TestRun"`))[0]!.n),
    }));
    console.log(
      `\n## ${backend}: ${counts.entries} PRs (${counts.transitions} transitions, ${counts.runs} runs) seeded in ${seedSeconds.toFixed(0)} s; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
    console.log(`| request | p50 ms | p95 ms | max ms | bytes |\n|---|---|---|---|---|`);
    for (const [name, path] of paths) {
      await get(path); // warm
      const samples: number[] = [];
      let bytes = 0;
      for (let i = 0; i < REQUESTS; i++) {
        const { ms, bytes: b } = await get(path);
        samples.push(ms);
        bytes = b;
      }
      console.log(`| ${name} | ${percentile(samples, 50).toFixed(1)} | ${percentile(samples, 95).toFixed(1)} | ${Math.max(...samples).toFixed(1)} | ${bytes} |`);
    }
    console.log(
      `load average after: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
    if (values.explain) await explain(backend, db, ids[0]!.id);
  } finally {
    await greenline.close();
    await drop();
  }
}

/** The plans of the analytics' statements over 90 days of one queue, as the database runs them. */
async function explain(backend: "sqlite" | "postgres", db: Awaited<ReturnType<typeof startGreenline>>["services"]["db"], queueId: string): Promise<void> {
  const { loadAnalytics } = await import("../src/store/analytics.js");
  await db.sqlRead(async (sql) => {
    const seen: { text: string; params: readonly unknown[] }[] = [];
    const spy = Object.assign(Object.create(sql) as typeof sql, {
      all: <T>(text: string, params: readonly unknown[] = []) => {
        seen.push({ text, params });
        return sql.all<T>(text, params);
      },
    });
    const from = new Date(Date.now() - 90 * DAY);
    const to = new Date();
    await loadAnalytics(spy, { organizationId: "x", queueId }, from, to);
    const organizationId = (await sql.all<{ id: string }>(`SELECT "id" FROM "Organization" WHERE "slug" = 'bench'`))[0]!.id;
    await loadAnalytics(spy, { organizationId }, from, to);
    for (const { text, params } of seen) {
      const plan = backend === "sqlite" ? await sql.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params) : await sql.all<{ "QUERY PLAN": string }>(`EXPLAIN ANALYZE ${text}`, params);
      console.log(`\n${text.replace(/\s+/g, " ").slice(0, 120)}…`);
      for (const row of plan) console.log(`  ${"detail" in row ? row.detail : row["QUERY PLAN"]}`);
    }
  });
}

console.log(`# Analytics at scale: ${PRS} PRs of history over 90 days in ${QUEUES} queues, ${IN_LINE} in line; ${REQUESTS} requests each (after one to warm); ${machine()}`);
for (const backend of values.backends.split(",") as ("sqlite" | "postgres")[]) {
  if (backend === "postgres" && !(await postgresReachable(ADMIN))) {
    console.log("PostgreSQL not reachable: skipped");
    continue;
  }
  await bench(backend);
}
