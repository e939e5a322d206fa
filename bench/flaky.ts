// npm run bench:flaky [-- --quick] [--ingest-only] [--accuracy]
//
// `--accuracy`: detection measured on a labelled corpus instead (bench/flaky-accuracy.ts;
// `--quick`: a smaller corpus).
//
// Flaky-test ingestion and queries, on SQLite and on PostgreSQL side by side.
//
// 1. Ingest: a ~20 MB JUnit report (100,000 test cases; the largest whose JSON envelope fits
//    the 20 MiB body limit) is uploaded to the service, running in its own process as
//    `npm start` runs it: once with every test new, then three times more as another commit of
//    the same tests (the steady state of CI). Reported: test cases/s end to end (HTTP, JSON, XML,
//    ids, writes, detection) and the server's peak memory (VmHWM), next to the raw insert rate
//    of the very rows that upload stores, written through the same driver in one transaction
//    with nothing else to do (the physical limit), measured in the same run.
// 2. Queries: 10,000,000 results over 30 days across 50,000 tests are written straight into the
//    tables; then list-failing-tests over 7-day and 24-hour windows and get-test-details are
//    timed one request at a time over HTTP (p50/p95).
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { failureSignature, normalizeFailure } from "../src/domain/flaky/failures.js";
import { testCaseId } from "../src/domain/flaky/identity.js";
import { Database } from "../src/store/database.js";
import type { Sql } from "../src/store/sql.js";
import { runAccuracy } from "./flaky-accuracy.js";
import { rng as random } from "./random.js";
import { freePort, machine, postgresReachable, startProcess, withAdmin } from "./support.js";

const { values } = parseArgs({ options: { quick: { type: "boolean", default: false }, "ingest-only": { type: "boolean", default: false }, accuracy: { type: "boolean", default: false } } });
const QUICK = values.quick;
const REPORT_CASES = QUICK ? 10_000 : 100_000;
const TESTS = QUICK ? 5_000 : 50_000;
const UPLOADS = QUICK ? 200 : 2_000;
const SHARDS = 10; // each upload holds one shard of the tests: TESTS / SHARDS cases
const REQUESTS = QUICK ? 40 : 200;
const DAY = 24 * 3600_000;

const here = dirname(fileURLToPath(import.meta.url));
const mainScript = join(here, "../src/main.js");
const POSTGRES_ADMIN = process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const TOKEN = "bench-token-0123456789abcdef";
const ORG = "bench";
const repo = { host: "github.com", owner: "bench", name: "web" };
const headers = { "content-type": "application/json", "x-api-token": TOKEN };

type ReportCase = { suite: number; classname: string; name: string; file: string; failed: boolean; message: string };

/** The report's test cases: 500 suites (files), 2% failing with a handful of kinds of failure. */
function reportCases(): ReportCase[] {
  const next = random(7);
  return Array.from({ length: REPORT_CASES }, (_, i) => {
    const suite = i % 500;
    const failed = next() < 0.02;
    return {
      suite,
      classname: `com.acme.module${suite % 40}.Feature${suite}Test`,
      name: `behaves_correctly_in_scenario_${i}_when_called_twice`,
      file: `src/module${suite % 40}/feature${suite}/Feature${suite}Test.java`,
      failed,
      message: failed ? `expected:<${Math.floor(next() * 100)}> but was:<${Math.floor(next() * 100)}> after ${Math.floor(next() * 5000)}ms` : "",
    };
  });
}

function reportXml(cases: ReportCase[], at: Date): string {
  const bySuite = new Map<number, ReportCase[]>();
  for (const c of cases) bySuite.set(c.suite, [...(bySuite.get(c.suite) ?? []), c]);
  const parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n'];
  for (const [suite, list] of bySuite) {
    parts.push(`<testsuite name="Feature${suite}Test" tests="${list.length}" timestamp="${at.toISOString()}">\n`);
    for (const c of list) {
      parts.push(`  <testcase classname="${c.classname}" name="${c.name}" file="${c.file}" time="0.0${suite % 10}3">`);
      if (c.failed) parts.push(`<failure message="${c.message.replace(/</g, "&lt;")}" type="java.lang.AssertionError">java.lang.AssertionError at ${c.classname}.test(${c.file}:${suite})</failure>`);
      parts.push("</testcase>\n");
    }
    parts.push("</testsuite>\n");
  }
  parts.push("</testsuites>\n");
  return parts.join("");
}

async function post(base: string, op: string, body: unknown): Promise<any> {
  const payload = typeof body === "string" || body instanceof Buffer ? body : JSON.stringify(body);
  const response = await fetch(`${base}/v1/${op}`, { method: "POST", headers, body: payload });
  const text = await response.text();
  if (!response.ok) throw new Error(`${op}: ${response.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

const sha = (n: number) => n.toString(16).padStart(40, "0");
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

type Backend = { name: "sqlite" | "postgres"; create(): Promise<{ url: string; drop(): Promise<void> }> };

async function withServer<T>(databaseUrl: string, fn: (base: string, pid: number) => Promise<T>): Promise<T> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await startProcess(
    mainScript,
    {
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: databaseUrl,
      GREENLINE_API_TOKEN: TOKEN,
      GREENLINE_ORG: ORG,
      LOG_LEVEL: "warn",
      // e.g. "--max-old-space-size=256" to see how the server fares with less heap
      NODE_OPTIONS: process.env.BENCH_SERVER_NODE_OPTIONS ?? "",
    },
    `${base}/healthz`,
  );
  try {
    return await fn(base, server.child.pid!);
  } finally {
    await server.stop();
  }
}

type IngestFigures = { bodyMb: number; coldCasesPerS: number; warmCasesPerS: number; rawColdCasesPerS: number; rawWarmCasesPerS: number; peakRssMb: number; idleRssMb: number };

async function measureIngest(backend: Backend): Promise<IngestFigures> {
  const cases = reportCases();
  const xml = reportXml(cases, new Date());
  // The body's bytes, as a CI job sends them: encoding them is the client's work, not the service's.
  const body = (commit: number) => Buffer.from(JSON.stringify({ repo, org_url_slug: ORG, commit_sha: sha(commit), branch: "main", junit_xml: [xml] }));
  const bodyMb = Buffer.byteLength(body(1)) / 1024 / 1024;

  const db = await backend.create();
  let cold = 0;
  const warm: number[] = [];
  let peak = 0;
  let idle = 0;
  try {
    await withServer(db.url, async (base, pid) => {
      idle = peakRssMb(pid);
      // Bodies are made before the clock starts: the client's JSON.stringify is not the service's time.
      let next = body(1);
      let t = performance.now();
      const first = await post(base, "flaky-tests/upload", next);
      cold = (performance.now() - t) / 1000;
      if (first.test_cases !== REPORT_CASES) throw new Error(`uploaded ${first.test_cases} test cases, expected ${REPORT_CASES}`);
      for (let i = 0; i < 3; i++) {
        next = body(2 + i);
        t = performance.now();
        await post(base, "flaky-tests/upload", next);
        warm.push((performance.now() - t) / 1000);
      }
      peak = peakRssMb(pid);
    });
  } finally {
    await db.drop();
  }

  // The raw insert rate of the same rows, through the same driver, in one transaction each.
  const raw = await backend.create();
  try {
    const database = await Database.open(raw.url);
    try {
      const now = new Date();
      const ids = cases.map((c) => testCaseId(ORG, "github.com/bench/web", { file: c.file, classname: c.classname, parent: `Feature${c.suite}Test`, name: c.name }));
      const repositoryId = randomUUID();
      await database.transaction(async (tx) => {
        const org = await tx.organization.create({ data: { id: randomUUID(), slug: ORG } });
        await tx.repository.create({ data: { id: repositoryId, organizationId: org.id, host: repo.host, owner: repo.owner, name: repo.name, key: "github.com/bench/web" } });
      });
      const rawUpload = async (uploadId: string, withCases: boolean) => {
        const t = performance.now();
        await database.sqlTransaction(async (sql) => {
          const [upload] = await sql.all<{ key: unknown }>(
            `INSERT INTO "TestUpload" ("id", "repositoryId", "commitSha", "branch", "variant", "createdAt", "testCases", "failures") VALUES (?, ?, ?, 'main', '', ?, ?, ?) RETURNING "key"`,
            [uploadId, repositoryId, sha(1), now, cases.length, 0],
          );
          if (withCases) {
            await sql.insert(
              "TestCase",
              ["id", "repositoryId", "name", "file", "classname", "parent", "variant", "codeowners", "status", "statusReason", "statusAt", "quarantineSetting", "quarantined", "createdAt"],
              cases.map((c, i) => [ids[i], repositoryId, c.name, c.file, c.classname, `Feature${c.suite}Test`, "", "[]", "healthy", "first seen", now, "auto", false, now]),
            );
          }
          const keys = await sql.all<{ key: unknown }>(`SELECT "key" FROM "TestCase" WHERE "repositoryId" = ? ORDER BY "key"`, [repositoryId]);
          const uploadKey = Number(upload!.key);
          await sql.insert(
            "TestResult",
            ["testCaseKey", "at", "uploadKey", "failed", "passed"],
            cases.map((c, i) => [Number(keys[i]!.key), now.getTime(), uploadKey, c.failed, !c.failed]),
          );
          await sql.insert(
            "TestFailure",
            ["repositoryId", "at", "testCaseKey", "uploadKey", "prNumber", "signature"],
            cases.flatMap((c, i) => (c.failed ? [[repositoryId, now.getTime(), Number(keys[i]!.key), uploadKey, null, "sig"]] : [])),
          );
        });
        return (performance.now() - t) / 1000;
      };
      const rawCold = await rawUpload(randomUUID(), true);
      // Three times, as the service's steady state is timed, and the median taken: one
      // transaction's time varies with the machine as much as the service's does.
      const rawWarm = median([await rawUpload(randomUUID(), false), await rawUpload(randomUUID(), false), await rawUpload(randomUUID(), false)]);
      return {
        bodyMb,
        coldCasesPerS: REPORT_CASES / cold,
        warmCasesPerS: REPORT_CASES / median(warm),
        rawColdCasesPerS: REPORT_CASES / rawCold,
        rawWarmCasesPerS: REPORT_CASES / rawWarm,
        peakRssMb: peak,
        idleRssMb: idle,
      };
    } finally {
      await database.close();
    }
  } finally {
    await raw.drop();
  }
}

/** Writes TESTS tests and UPLOADS × TESTS/SHARDS results over 30 days into the repository the API created. */
async function seedHistory(databaseUrl: string, now: number): Promise<{ results: number; failures: number; seconds: number }> {
  const t = performance.now();
  const database = await Database.open(databaseUrl, { migrate: false });
  let results = 0;
  let failures = 0;
  try {
    const repository = await database.read((tx) => tx.repository.findUniqueOrThrow({ where: { key: "github.com/bench/web" } }));
    const start = now - 30 * DAY;
    const spacing = (30 * DAY) / UPLOADS;
    await database.sqlTransaction(async (sql) => {
      await sql.insert(
        "TestUpload",
        ["id", "repositoryId", "commitSha", "branch", "prNumber", "variant", "createdAt", "testCases", "failures"],
        Array.from({ length: UPLOADS }, (_, u) => [
          randomUUID(),
          repository.id,
          sha(10_000 + u),
          u % 3 === 0 ? "main" : `feature-${u % 500}`,
          u % 3 === 0 ? null : 1000 + (u % 500),
          "",
          new Date(start + u * spacing),
          TESTS / SHARDS,
          0,
        ]),
      );
      const rows = Array.from({ length: TESTS }, (_, i) => [
        testCaseId(ORG, "github.com/bench/web", { file: `src/t${i % 300}.test.ts`, classname: `Suite${i % 300}`, parent: "seed", name: `seeded test ${i}` }),
        repository.id,
        `seeded test ${i}`,
        `src/t${i % 300}.test.ts`,
        `Suite${i % 300}`,
        "seed",
        "",
        "[]",
        "healthy",
        "first seen",
        new Date(start),
        "auto",
        false,
        new Date(start),
      ]);
      await sql.insert("TestCase", ["id", "repositoryId", "name", "file", "classname", "parent", "variant", "codeowners", "status", "statusReason", "statusAt", "quarantineSetting", "quarantined", "createdAt"], rows);
    });
    const uploads = await database.sqlRead((sql) => sql.all<{ key: unknown; prNumber: unknown }>(`SELECT "key", "prNumber" FROM "TestUpload" WHERE "repositoryId" = ? ORDER BY "key"`, [repository.id]));
    const tests = await database.sqlRead((sql) => sql.all<{ key: unknown }>(`SELECT "key" FROM "TestCase" WHERE "repositoryId" = ? AND "parent" = 'seed' ORDER BY "key"`, [repository.id]));
    const next = random(42);
    const BATCH = 500; // tests per transaction (≈ 100,000 results)
    for (let from = 0; from < tests.length; from += BATCH) {
      await database.sqlTransaction(async (sql: Sql) => {
        const resultRows: unknown[][] = [];
        const failureRows: unknown[][] = [];
        const kinds = new Map<string, unknown[]>();
        for (let i = from; i < Math.min(from + BATCH, tests.length); i++) {
          const key = Number(tests[i]!.key);
          // 1% broken (90% failing), 3% flaky (15%), the rest fail rarely (0.1%).
          const p = i % 100 === 0 ? 0.9 : i % 100 <= 3 ? 0.15 : 0.001;
          for (let u = i % SHARDS; u < UPLOADS; u += SHARDS) {
            const at = Math.round(start + u * spacing);
            const failed = next() < p;
            resultRows.push([key, at, Number(uploads[u]!.key), failed, !failed]);
            if (failed) {
              const summary = normalizeFailure(`Timeout of ${1000 + (i % 3) * 1000}ms exceeded in step ${u % 3}`);
              const signature = failureSignature(summary);
              failureRows.push([repository.id, at, key, Number(uploads[u]!.key), uploads[u]!.prNumber === null ? null : Number(uploads[u]!.prNumber), signature]);
              const kind = kinds.get(`${key} ${signature}`);
              if (kind) {
                kind[3] = (kind[3] as number) + 1;
                kind[4] = at;
              } else kinds.set(`${key} ${signature}`, [key, signature, summary, 1, at]);
            }
          }
        }
        await sql.insert("TestResult", ["testCaseKey", "at", "uploadKey", "failed", "passed"], resultRows);
        await sql.insert("TestFailure", ["repositoryId", "at", "testCaseKey", "uploadKey", "prNumber", "signature"], failureRows);
        await sql.insert("FailureSignature", ["testCaseKey", "signature", "summary", "count", "lastAt"], [...kinds.values()]);
        results += resultRows.length;
        failures += failureRows.length;
      });
    }
    await database.sqlTransaction((sql) => sql.run("ANALYZE"));
  } finally {
    await database.close();
  }
  return { results, failures, seconds: (performance.now() - t) / 1000 };
}

type QueryFigures = { results: number; failures: number; seedSeconds: number; list7d: number[]; list24h: number[]; details: number[]; failingIn7d: number };

async function measureQueries(backend: Backend): Promise<QueryFigures> {
  const db = await backend.create();
  try {
    // The service registers the organization and, with a first upload, the repository.
    await withServer(db.url, (base) => post(base, "flaky-tests/upload", { repo, org_url_slug: ORG, commit_sha: sha(1), branch: "main", junit_xml: ['<testsuite name="x"><testcase name="t"/></testsuite>'] }));
    const now = Date.now();
    const seeded = await seedHistory(db.url, now);
    return await withServer(db.url, async (base) => {
      const next = random(99);
      const time = async (op: string, body: unknown) => {
        const t = performance.now();
        const answer = await post(base, op, body);
        return { ms: performance.now() - t, answer };
      };
      const list = (hours: number) => {
        const end = now - Math.floor(next() * (30 * DAY - hours * 3600_000));
        return time("flaky-tests/list-failing-tests", {
          repo,
          org_url_slug: ORG,
          start_time: new Date(end - hours * 3600_000).toISOString(),
          end_time: new Date(end).toISOString(),
          page_query: { page_size: 100 },
        });
      };
      for (let i = 0; i < 10; i++) await list(168); // warm-up
      const list7d: number[] = [];
      const list24h: number[] = [];
      const details: number[] = [];
      let failingIn7d = 0;
      const ids: string[] = [];
      for (let i = 0; i < REQUESTS; i++) {
        const r = await list(168);
        list7d.push(r.ms);
        failingIn7d = Math.max(failingIn7d, r.answer.page.total_rows);
        for (const t of r.answer.tests.slice(0, 3)) ids.push(t.id);
      }
      for (let i = 0; i < REQUESTS; i++) list24h.push((await list(24)).ms);
      for (let i = 0; i < REQUESTS; i++) details.push((await time("flaky-tests/get-test-details", { repo, org_url_slug: ORG, test_id: ids[i % ids.length] })).ms);
      return { results: seeded.results, failures: seeded.failures, seedSeconds: seeded.seconds, list7d, list24h, details, failingIn7d };
    });
  } finally {
    await db.drop();
  }
}

const dir = mkdtempSync(join(tmpdir(), "greenline-bench-flaky-"));
const backends: Backend[] = [
  {
    name: "sqlite",
    async create() {
      const path = join(dir, `${randomUUID()}.db`);
      return { url: `file:${path}`, drop: async () => rmSync(path, { force: true }) };
    },
  },
];
if (await postgresReachable(POSTGRES_ADMIN)) {
  backends.push({
    name: "postgres",
    async create() {
      const name = `greenline_bench_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
      await withAdmin(POSTGRES_ADMIN, (c) => c.query(`CREATE DATABASE "${name}"`));
      const url = new URL(POSTGRES_ADMIN);
      url.pathname = `/${name}`;
      return { url: url.toString(), drop: () => withAdmin(POSTGRES_ADMIN, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined) };
    },
  });
} else {
  console.log(`PostgreSQL is not reachable at ${POSTGRES_ADMIN}: measuring SQLite only`);
}

if (values.accuracy) {
  await runAccuracy(QUICK);
  process.exit(0);
}

console.log(`bench:flaky${QUICK ? " --quick" : ""} on ${machine()}`);
const summary: Record<string, unknown> = {};
try {
  for (const backend of backends) {
    const ingest = await measureIngest(backend);
    const rate = (x: number) => `${Math.round(x).toLocaleString("en-US")}/s`;
    console.log(`\n${backend.name}: ingest of one ${ingest.bodyMb.toFixed(1)} MiB upload (${REPORT_CASES.toLocaleString("en-US")} test cases, 2% failing)`);
    console.log(`  new tests:      ${rate(ingest.coldCasesPerS)}   raw insert of the same rows ${rate(ingest.rawColdCasesPerS)}   ratio ${(ingest.coldCasesPerS / ingest.rawColdCasesPerS).toFixed(2)}`);
    console.log(`  existing tests: ${rate(ingest.warmCasesPerS)}   raw insert of the same rows ${rate(ingest.rawWarmCasesPerS)}   ratio ${(ingest.warmCasesPerS / ingest.rawWarmCasesPerS).toFixed(2)}`);
    console.log(`  server memory: peak ${ingest.peakRssMb.toFixed(0)} MB (idle ${ingest.idleRssMb.toFixed(0)} MB before the uploads)`);
    if (values["ingest-only"]) continue;
    const queries = await measureQueries(backend);
    const ms = (xs: number[]) => `p50 ${median(xs).toFixed(1)} ms, p95 ${percentile(xs, 95).toFixed(1)} ms`;
    console.log(
      `${backend.name}: queries over ${queries.results.toLocaleString("en-US")} results (${queries.failures.toLocaleString("en-US")} failures) of ${TESTS.toLocaleString("en-US")} tests over 30 days (seeded in ${queries.seedSeconds.toFixed(0)} s)`,
    );
    console.log(`  list-failing-tests, 7-day window (up to ${queries.failingIn7d.toLocaleString("en-US")} failing tests, page of 100): ${ms(queries.list7d)}`);
    console.log(`  list-failing-tests, 24-hour window: ${ms(queries.list24h)}`);
    console.log(`  get-test-details: ${ms(queries.details)}`);
    summary[backend.name] = {
      ingest: {
        cold: { casesPerS: Math.round(ingest.coldCasesPerS), rawCasesPerS: Math.round(ingest.rawColdCasesPerS), ratio: +(ingest.coldCasesPerS / ingest.rawColdCasesPerS).toFixed(3) },
        warm: { casesPerS: Math.round(ingest.warmCasesPerS), rawCasesPerS: Math.round(ingest.rawWarmCasesPerS), ratio: +(ingest.warmCasesPerS / ingest.rawWarmCasesPerS).toFixed(3) },
        peakRssMb: Math.round(ingest.peakRssMb),
        bodyMiB: +ingest.bodyMb.toFixed(2),
      },
      queries: {
        results: queries.results,
        list7d: { p50: +median(queries.list7d).toFixed(1), p95: +percentile(queries.list7d, 95).toFixed(1) },
        list24h: { p50: +median(queries.list24h).toFixed(1), p95: +percentile(queries.list24h, 95).toFixed(1) },
        details: { p50: +median(queries.details).toFixed(1), p95: +percentile(queries.details, 95).toFixed(1) },
      },
    };
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify(summary));
