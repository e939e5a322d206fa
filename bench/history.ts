// npm run bench:history [-- --history=100000 --live=1000 --rounds=20 --backend=sqlite|postgres --keep]
//
// The dashboard's history page (/history) at scale: on a fresh database, organization acme has
// 20 queues holding `history` concluded PRs (merged, failed or cancelled over 200 days, 3
// transitions each, one in 25 restarted on request) written straight into the tables, and one
// more queue with `live` PRs in line submitted through the API (paused, so they stay); another
// organization has a fifth as many of its own. Then the signed-in page is timed over HTTP, one
// request at a time, the kinds interleaved: unfiltered, a title search for a common word and
// for a word no title holds (the worst case: every entry of the organization scanned), an
// author's PRs, a state and reason, and a page 90,000 rows deep (by its key, as the Older links
// carry it). Reported: p50/p95/max ms and the page's bytes per kind, on SQLite and PostgreSQL,
// with the machine's load. `--keep` leaves the databases (their URLs printed) for EXPLAIN.
import { Writable } from "node:stream";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { createToken } from "../src/auth/tokens.js";
import { DAY_MS, MINUTE_MS } from "../src/domain/time.js";
import { createLogger } from "../src/log.js";
import { startGreenline } from "../src/server.js";
import { orderedId } from "../src/store/ids.js";
import { benchConfig, freshDatabase, machine, postgresReachable } from "./support.js";

const { values } = parseArgs({
  options: {
    history: { type: "string", default: "100000" },
    live: { type: "string", default: "1000" },
    rounds: { type: "string", default: "20" },
    backend: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});
const HISTORY = Number(values.history);
const LIVE = Number(values.live);
const ROUNDS = Number(values.rounds);
const QUEUES = 20;
const TOKEN = "history-bench-token-0123456789abcdef";
const ADMIN = process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

const WORDS = ["Fix", "Add", "Remove", "Refactor", "Speed up", "Document", "Test", "Bump"];
const THINGS = ["checkout total", "login form", "search index", "billing export", "retry loop", "cache keys", "audit log", "dark mode", "CSV import", "rate limiter"];
const STATES = [
  { state: "merged", reason: "merged" },
  { state: "merged", reason: "merged_by_later_run" },
  { state: "failed", reason: "tests_failed" },
  { state: "cancelled", reason: "cancelled_by_user" },
  { state: "cancelled", reason: "pr_closed" },
] as const;

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;

async function call(base: string, token: string, operation: string, body: unknown): Promise<void> {
  const response = await fetch(`${base}/v1/${operation}`, { method: "POST", headers: { "content-type": "application/json", "x-api-token": token }, body: JSON.stringify(body) });
  if (response.status !== 200) throw new Error(`${operation} answered ${response.status}: ${await response.text()}`);
}

async function run(backend: "sqlite" | "postgres"): Promise<void> {
  const database = await freshDatabase(backend, ADMIN, "history-bench");
  const config = benchConfig(database.url, { token: TOKEN, org: "acme" }, { sandbox: { ciMs: 3_600_000, failureRate: 0, flakeRate: 0 } });
  const greenline = await startGreenline(config, { log: createLogger("warn", new Writable({ write: (_c, _e, done) => done() })), startWorker: false });
  try {
    const base = greenline.url;
    const { db } = greenline.services;
    const { token: otherToken } = await createToken(db, "other", "bench");
    const queueOf = (owner: string, name: string) => ({ repo: { host: "github.com", owner, name }, targetBranch: "main" });
    const orgs = [
      { token: TOKEN, owner: "acme", queues: QUEUES, entries: HISTORY },
      { token: otherToken, owner: "other", queues: 5, entries: Math.round(HISTORY / 5) },
    ];
    const seedStarted = performance.now();
    const now = Date.now();
    let rare = 0;
    for (const org of orgs) {
      const ids: string[] = [];
      for (let q = 0; q < org.queues; q++) {
        const name = `service-${String(q).padStart(2, "0")}`;
        await call(base, org.token, "createQueue", queueOf(org.owner, name));
        ids.push((await db.read((tx) => tx.queue.findFirstOrThrow({ where: { repository: { owner: org.owner, name } }, select: { id: true } }))).id);
      }
      for (let from = 0; from < org.entries; from += 1000) {
        const entries: unknown[][] = [];
        const transitions: unknown[][] = [];
        for (let i = from; i < Math.min(from + 1000, org.entries); i++) {
          const queueId = ids[i % ids.length]!;
          const submitted = new Date(now - 200 * DAY_MS + Math.floor((i * 200 * DAY_MS) / org.entries));
          const concluded = new Date(submitted.getTime() + (5 + (i % 50)) * MINUTE_MS);
          const { state, reason } = STATES[i % STATES.length]!;
          const title = `${WORDS[i % WORDS.length]} the ${THINGS[(i >> 3) % THINGS.length]}${i % 10000 === 7 ? " (xyzzy)" : ""}`;
          if (i % 10000 === 7 && org.owner === "acme") rare++;
          const entryId = orderedId(submitted.getTime());
          const restarted = i % 25 === 0;
          entries.push([
            entryId,
            queueId,
            1 + Math.floor(i / ids.length),
            title,
            "a".repeat(40),
            "main",
            `dev-${i % 200}`,
            state,
            concluded,
            reason,
            100,
            "medium",
            false,
            false,
            "mergeable",
            submitted,
            restarted ? 4 : 3,
          ]);
          transitions.push([orderedId(submitted.getTime()), entryId, queueId, null, "pending", "submitted", submitted, "{}"]);
          transitions.push([orderedId(submitted.getTime() + 1000), entryId, queueId, "pending", "testing", "testing", new Date(submitted.getTime() + 1000), "{}"]);
          if (restarted) transitions.push([orderedId(submitted.getTime() + 2000), entryId, queueId, "testing", "testing", "restart_requested", new Date(submitted.getTime() + 2000), "{}"]);
          transitions.push([orderedId(concluded.getTime()), entryId, queueId, "testing", state, reason, concluded, "{}"]);
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
        });
      }
    }
    // The live line: submitted through the API to a paused queue, so they stay in line.
    const live = queueOf("acme", "live");
    await call(base, TOKEN, "createQueue", { ...live, state: "paused" });
    let next = 1;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next <= LIVE) await call(base, TOKEN, "submitPullRequest", { ...live, pr: { number: next++ } });
      }),
    );
    const seedS = (performance.now() - seedStarted) / 1000;
    if (backend === "postgres") await db.sqlTransaction((sql) => sql.run(`ANALYZE`));

    const signIn = await fetch(`${base}/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
      body: new URLSearchParams({ token: TOKEN, next: "/" }),
    });
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
    // The key of the 90,000th row (newest first), as an Older link would carry it.
    const deep = await db.sqlRead((sql) =>
      sql.all<{ submittedAt: Date | string; id: string }>(
        `SELECT e."submittedAt" AS "submittedAt", e."id" AS "id" FROM "QueueEntry" e JOIN "Queue" q ON q."id" = e."queueId" JOIN "Repository" r ON r."id" = q."repositoryId" JOIN "Organization" o ON o."id" = r."organizationId" WHERE o."slug" = 'acme' ORDER BY e."submittedAt" DESC, e."id" DESC LIMIT 1 OFFSET ?`,
        [Math.min(90_000, Math.max(0, HISTORY + LIVE - 100))],
      ),
    );
    const deepToken = `${new Date(deep[0]!.submittedAt).getTime()}.${deep[0]!.id}`;
    const kinds = [
      { label: "unfiltered, newest 50", path: "/history", rows: 50 },
      { label: 'title search "billing" (1 in 10)', path: "/history?q=billing", rows: 50, bounded: true },
      // Matches too few to fill a page: the page reads its 10,000 PRs and stops (HISTORY_SCAN_LIMIT).
      { label: `title search "xyzzy" (${rare} rows in all: the page reads 10,000 PRs and stops)`, path: "/history?q=xyzzy", rows: -1 },
      { label: "author dev-17 (1 in 200)", path: "/history?author=dev-17", rows: 50, bounded: true },
      { label: "state failed, reason tests_failed", path: "/history?state=failed&reason=tests_failed", rows: 50, bounded: true },
      {
        label: "one queue, one month",
        path: `/history?queue=github.com%2Facme%2Fservice-03%3Amain&from=${new Date(now - 100 * DAY_MS).toISOString().slice(0, 10)}&to=${new Date(now - 70 * DAY_MS).toISOString().slice(0, 10)}`,
        rows: 50,
      },
      { label: "deep page (90,000 rows down)", path: `/history?before=${deepToken}`, rows: 50 },
    ];
    const samples = kinds.map(() => [] as number[]);
    const bytes = kinds.map(() => 0);
    const shown = kinds.map(() => 0);
    for (let round = -3; round < ROUNDS; round++) {
      for (const [i, kind] of kinds.entries()) {
        const started = performance.now();
        const response = await fetch(`${base}${kind.path}`, { headers: { cookie } });
        const text = await response.text();
        const ms = performance.now() - started;
        if (response.status !== 200) throw new Error(`${kind.path} answered ${response.status}: ${text.slice(0, 300)}`);
        const rows = (text.match(/<tr data-pr=/g) ?? []).length;
        // A search no index serves may stop at its scan limit short of a full page (it says so).
        if (kind.rows >= 0 && rows !== kind.rows && !(kind.bounded && rows < kind.rows)) throw new Error(`${kind.path}: ${rows} rows, expected ${kind.rows}`);
        shown[i] = rows;
        bytes[i] = Buffer.byteLength(text);
        if (round >= 0) samples[i]!.push(ms);
      }
    }
    console.log(
      `\n${backend}: ${HISTORY.toLocaleString("en")} PRs of history in ${QUEUES} queues + ${LIVE.toLocaleString("en")} in line (acme), ${orgs[1]!.entries.toLocaleString("en")} of another organization; seeded in ${seedS.toFixed(0)} s\n`,
    );
    console.log("| request | rows shown | p50 ms | p95 ms | max ms | page KB |");
    console.log("|---|---:|---:|---:|---:|---:|");
    kinds.forEach((kind, i) => {
      const s = samples[i]!;
      console.log(`| ${kind.label} | ${shown[i]} | ${percentile(s, 50).toFixed(1)} | ${percentile(s, 95).toFixed(1)} | ${Math.max(...s).toFixed(1)} | ${(bytes[i]! / 1024).toFixed(1)} |`);
    });
    // The rare search to its end: Older link after Older link, each page reading at most 10,000 PRs.
    const walkStarted = performance.now();
    let found = 0;
    let pages = 0;
    let link = "/history?q=xyzzy";
    while (link !== "") {
      const text = await (await fetch(`${base}${link}`, { headers: { cookie } })).text();
      found += (text.match(/<tr data-pr=/g) ?? []).length;
      pages++;
      link = /<a href="([^"]+)" rel="next">/.exec(text)?.[1]?.replaceAll("&amp;", "&") ?? "";
    }
    if (found !== rare) throw new Error(`walking the rare search found ${found} rows, not ${rare}`);
    console.log(`\nThe "xyzzy" search followed to its end: ${found} rows in ${pages} pages, ${(performance.now() - walkStarted).toFixed(0)} ms in all.`);
    if (values.keep) console.log(`\nkept: ${database.url}`);
  } finally {
    await greenline.close();
    if (!values.keep) await database.drop();
  }
}

console.log(
  `History page, ${machine()}, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}, ${ROUNDS} rounds`,
);
const backends = values.backend ? [values.backend as "sqlite" | "postgres"] : (["sqlite", "postgres"] as const);
for (const backend of backends) {
  if (backend === "postgres" && !(await postgresReachable(ADMIN))) {
    console.log("PostgreSQL not reachable: skipped");
    continue;
  }
  await run(backend);
}
console.log(
  `\nload after: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
