// npm run bench:web [-- --requests <n>] [--loads <n>] [--transitions <n>] [--prs <n>] [--skip-overview] [--quick]
// npm run bench:web -- --budget [options of bench/pages.ts]: every page's server time and weight at 1,000 PRs in line and 100,000 in history
//
// The dashboard's queue page with 500 PRs in line (or --prs) and 50 runs in flight (sandbox code host,
// simulated CI that takes a day, so the runs stay in flight), on SQLite and on PostgreSQL:
// - server: GET of the signed-in queue page, its live part and the overview, next to getQueue
//   over the API for the same queue (the baseline, measured in the same run, interleaved);
// - browser: first paint / first contentful paint of the queue page in headless Chromium over
//   cold loads, next to the same bytes served as a static file by a bare HTTP server (same
//   scripts and styles), and a plain page of the same size without any;
// - live lag: a PR cancelled through the API → the page showing it (the server-sent event carries
//   the out-of-band swaps of what changed), seen by a MutationObserver in the page;
// - page weight: the scripts and styles the page references, raw and gzip, against the 100 KB goal.
// The service runs in its own process, as `npm start` runs it. Chromium is Debian's
// /usr/bin/chromium, or GREENLINE_CHROMIUM.
import { createServer, type Server } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { type Browser, chromium } from "playwright-core";
import { freePort, machine, postgresReachable, startProcess, withAdmin } from "./support.js";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "200" },
    loads: { type: "string", default: "10" },
    transitions: { type: "string", default: "30" },
    prs: { type: "string", default: "500" },
    // Leaves the overview out of the server times (it answered 500 on SQLite at 1,000 PRs before its figures were aggregated in the database).
    "skip-overview": { type: "boolean", default: false },
    quick: { type: "boolean", default: false },
    /** The pages' budget instead (bench/pages.ts): 1,000 PRs in line, 100,000 in history, every page. */
    budget: { type: "boolean", default: false },
  },
  strict: false,
});
if (values.budget) {
  await import("./pages.js");
  process.exit(0);
}
const REQUESTS = values.quick ? 30 : Number(values.requests);
const LOADS = values.quick ? 3 : Number(values.loads);
const TRANSITIONS = values.quick ? 5 : Number(values.transitions);
const PRS = Number(values.prs);
const RUNS = 50;
const here = dirname(fileURLToPath(import.meta.url));
const mainScript = join(here, "../src/main.js");
const CHROMIUM = process.env.GREENLINE_CHROMIUM ?? "/usr/bin/chromium";
const POSTGRES_ADMIN = process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const TOKEN = "bench-token-0123456789abcdef";
const repo = { host: "github.com", owner: "bench", name: "web" };
const queue = { repo, targetBranch: "main" };
const PAGE_PATH = `/queues/${repo.host}/${repo.owner}/${repo.name}/main`;
const headers = { "content-type": "application/json", "x-api-token": TOKEN };

/** Epoch milliseconds with sub-millisecond precision, on the same clock as a page's performance.timeOrigin + performance.now(). */
const epochNow = () => performance.timeOrigin + performance.now();

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
type Stats = { n: number; p50: number; p95: number; p99: number };
const stats = (samples: number[]): Stats => ({ n: samples.length, p50: percentile(samples, 50), p95: percentile(samples, 95), p99: percentile(samples, 99) });

async function api(base: string, op: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${base}/v1/${op}`, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) throw new Error(`${op}: ${response.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** PRS PRs through the API, eight clients at a time; with concurrency 50 and day-long CI, the first 50 start testing and stay so. */
async function seed(base: string): Promise<void> {
  await api(base, "createQueue", { ...queue, concurrency: RUNS });
  let next = 1;
  const worker = async () => {
    while (next <= PRS) {
      const number = next++;
      await api(base, "submitPullRequest", { ...queue, pr: { number } });
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  const deadline = Date.now() + 60_000 + PRS * 60;
  for (;;) {
    const prs = ((await api(base, "getQueue", queue)) as { enqueuedPullRequests: { state: string }[] }).enqueuedPullRequests;
    const testing = prs.filter((pr) => pr.state === "testing").length;
    if (prs.length === PRS && testing === RUNS) return;
    if (Date.now() > deadline) throw new Error(`after seeding: ${prs.length} PRs in line, ${testing} testing (want ${PRS}, ${RUNS})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Signs in with the API token through the sign-in form, as a browser does; the session cookie. */
async function signIn(base: string): Promise<{ name: string; value: string }> {
  const response = await fetch(`${base}/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
    body: new URLSearchParams({ token: TOKEN, next: "/" }),
  });
  if (response.status !== 303) throw new Error(`sign-in answered ${response.status}`);
  const [name, value] = response.headers.get("set-cookie")!.split(";")[0]!.split(/=(.*)/s) as [string, string];
  return { name, value };
}

type Timed = { label: string; bytes: number; stats: Stats };

/** Sequential requests (one at a time: latency, not throughput), the kinds interleaved so they share the machine's noise. */
async function serverTimes(base: string, cookie: string): Promise<Timed[]> {
  const kinds: { label: string; request: () => Promise<Response> }[] = [
    { label: "getQueue over the API (baseline)", request: () => fetch(`${base}/v1/getQueue`, { method: "POST", headers, body: JSON.stringify(queue) }) },
    { label: "queue page (HTML)", request: () => fetch(`${base}${PAGE_PATH}`, { headers: { cookie } }) },
    { label: "queue page, wall display (?tv)", request: () => fetch(`${base}${PAGE_PATH}?tv`, { headers: { cookie } }) },
    ...(values["skip-overview"] ? [] : [{ label: "overview page", request: () => fetch(`${base}/`, { headers: { cookie } }) }]),
  ];
  const samples = kinds.map(() => [] as number[]);
  const bytes = kinds.map(() => 0);
  for (let round = -10; round < REQUESTS; round++) {
    for (const [i, kind] of kinds.entries()) {
      const start = performance.now();
      const response = await kind.request();
      const body = await response.text();
      const ms = performance.now() - start;
      if (!response.ok) throw new Error(`${kind.label}: ${response.status}`);
      bytes[i] = Buffer.byteLength(body);
      if (round >= 0) samples[i]!.push(ms); // ten rounds of warm-up
    }
  }
  return kinds.map((k, i) => ({ label: k.label, bytes: bytes[i]!, stats: stats(samples[i]!) }));
}

/**
 * The baselines' server: the queue page's exact bytes as a static file (with the same scripts
 * and styles, gzip like Greenline's), and a plain page of the same size with no script or style.
 */
async function staticServer(snapshot: string, assets: Map<string, { type: string; body: Buffer }>): Promise<{ url: string; server: Server }> {
  const plain = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>plain</title></head><body>${"<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>\n".repeat(
    Math.ceil(Buffer.byteLength(snapshot) / 66),
  )}</body></html>`.slice(0, Buffer.byteLength(snapshot));
  const server = createServer((req, res) => {
    const asset = assets.get(req.url ?? "");
    if (asset) {
      const gzip = /\bgzip\b/.test(req.headers["accept-encoding"] ?? "");
      res.writeHead(200, { "content-type": asset.type, "cache-control": "public, max-age=31536000, immutable", ...(gzip ? { "content-encoding": "gzip" } : {}) });
      res.end(gzip ? gzipSync(asset.body, { level: 9 }) : asset.body);
      return;
    }
    const body = req.url === "/snapshot" ? snapshot : req.url === "/plain" ? plain : null;
    if (body === null) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(body);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${port}`, server };
}

/** The scripts and stylesheets a page references (src / href under /assets/). */
function assetUrls(page: string): string[] {
  return [...page.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
}

type Weight = { url: string; raw: number; gzip: number }[];

async function pageWeight(base: string, page: string): Promise<{ weight: Weight; assets: Map<string, { type: string; body: Buffer }> }> {
  const assets = new Map<string, { type: string; body: Buffer }>();
  const weight: Weight = [];
  for (const url of assetUrls(page)) {
    const response = await fetch(`${base}${url}`); // fetch decompresses: the raw asset
    const body = Buffer.from(await response.arrayBuffer());
    assets.set(url, { type: response.headers.get("content-type") ?? "application/octet-stream", body });
    weight.push({ url, raw: body.length, gzip: gzipSync(body, { level: 9 }).length });
  }
  return { weight, assets };
}

type Paint = { fp: number; fcp: number; ttfb: number };

/** Cold loads (a fresh browser context each: empty cache), the three pages interleaved; paint times from the page's own performance entries. */
async function paints(browser: Browser, targets: { label: string; url: string; cookie?: { name: string; value: string } }[]): Promise<{ label: string; fp: Stats; fcp: Stats; ttfb: Stats }[]> {
  const samples = targets.map(() => [] as Paint[]);
  for (let load = -1; load < LOADS; load++) {
    for (const [i, target] of targets.entries()) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      try {
        if (target.cookie) await context.addCookies([{ ...target.cookie, url: target.url }]);
        const page = await context.newPage();
        const response = await page.goto(target.url, { waitUntil: "load" });
        if (!response?.ok()) throw new Error(`${target.label}: ${response?.status()}`);
        // Browser code as text (this project compiles without the DOM's types). Paint entries are
        // queued once the frame is presented: wait for two frames past load.
        const paint = (await page.evaluate(`(async () => {
          for (let i = 0; i < 2; i++) await new Promise((r) => requestAnimationFrame(r));
          const of = (name) => performance.getEntriesByName(name, "paint")[0]?.startTime ?? Number.NaN;
          return { fp: of("first-paint"), fcp: of("first-contentful-paint"), ttfb: performance.getEntriesByType("navigation")[0].responseStart };
        })()`)) as Paint;
        if (Number.isNaN(paint.fp) || Number.isNaN(paint.fcp)) throw new Error(`${target.label}: no paint entries`);
        if (load >= 0) samples[i]!.push(paint); // one load of each as warm-up
      } finally {
        await context.close();
      }
    }
  }
  return targets.map((t, i) => ({
    label: t.label,
    fp: stats(samples[i]!.map((s) => s.fp)),
    fcp: stats(samples[i]!.map((s) => s.fcp)),
    ttfb: stats(samples[i]!.map((s) => s.ttfb)),
  }));
}

/**
 * A PR at the end of the line cancelled through the API, then the moment the page no longer
 * shows it in line, recorded in the page by a MutationObserver (performance.timeOrigin + now).
 * The cancellation commits between the request and its answer: the lag counted from the answer
 * is at most the true lag, counted from the request at least.
 */
type Lag = { fromAnswer: Stats; fromRequest: Stats; request: Stats; toEvent: Stats; eventToPart: Stats; partToDom: Stats };

async function liveLag(browser: Browser, base: string, cookie: { name: string; value: string }): Promise<Lag> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    await context.addCookies([{ ...cookie, url: base }]);
    const page = await context.newPage();
    await page.goto(`${base}${PAGE_PATH}`);
    await page.locator('[data-live="open"]').waitFor({ state: "attached", timeout: 30_000 });
    await page.evaluate(`(() => {
      window.watching = null;
      window.seen = {};
      const at = () => performance.timeOrigin + performance.now();
      let event = 0;
      let answer = 0;
      // The event's arrival: sse-swap announces it before swapping (sseBeforeMessage), hx-trigger="sse:…" only after.
      let announced = false;
      document.addEventListener("htmx:sseBeforeMessage", () => { event = at(); announced = true; });
      document.addEventListener("htmx:sseMessage", () => { if (!announced) event = at(); announced = false; });
      // A page that refetches its live part on the event (before 2026-11-24's patches) swaps it after htmx:beforeSwap;
      // a patch arrives with the event itself (then this part is zero).
      document.addEventListener("htmx:beforeSwap", () => { answer = at(); });
      new MutationObserver(() => {
        const n = window.watching;
        if (n !== null && window.seen[n] === undefined && !document.querySelector(\`.line [data-pr="\${n}"]\`)) window.seen[n] = { shown: at(), event, answer: Math.max(answer, event) };
      }).observe(document.body, { childList: true, subtree: true });
    })()`);
    const fromAnswer: number[] = [];
    const fromRequest: number[] = [];
    const request: number[] = [];
    const toEvent: number[] = [];
    const eventToPart: number[] = [];
    const partToDom: number[] = [];
    for (let k = 0; k < TRANSITIONS; k++) {
      const number = PRS - k;
      await page.evaluate((n) => {
        (globalThis as unknown as { watching: number }).watching = n;
      }, number);
      if ((await page.locator(`.line [data-pr="${number}"]`).count()) !== 1) throw new Error(`#${number} is not in line on the page`);
      const sent = epochNow();
      await api(base, "cancelPullRequest", { ...queue, pr: { number } });
      const answered = epochNow();
      const seenHandle = await page.waitForFunction((n) => (globalThis as unknown as { seen: Record<number, { shown: number; event: number; answer: number }> }).seen[n], number, { timeout: 30_000 });
      const seen = (await seenHandle.jsonValue())!;
      fromAnswer.push(seen.shown - answered);
      fromRequest.push(seen.shown - sent);
      request.push(answered - sent);
      toEvent.push(seen.event - answered);
      eventToPart.push(seen.answer - seen.event);
      partToDom.push(seen.shown - seen.answer);
      // Out of step with the stream's polling (every 200 ms), so the transitions fall anywhere in its period.
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 300));
    }
    return {
      fromAnswer: stats(fromAnswer),
      fromRequest: stats(fromRequest),
      request: stats(request),
      toEvent: stats(toEvent),
      eventToPart: stats(eventToPart),
      partToDom: stats(partToDom),
    };
  } finally {
    await context.close();
  }
}

type BackendResult = {
  backend: string;
  server: Timed[];
  paint: Awaited<ReturnType<typeof paints>>;
  lag: Lag;
  weight: Weight;
  htmlBytes: number;
};

async function measureBackend(backend: string, databaseUrl: string, browser: Browser): Promise<BackendResult> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await startProcess(
    mainScript,
    {
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: databaseUrl,
      GREENLINE_API_TOKEN: TOKEN,
      GREENLINE_ORG: "bench",
      LOG_LEVEL: "warn",
      GREENLINE_SANDBOX_CI_MS: String(86_400_000),
    },
    `${base}/healthz`,
  );
  try {
    const started = performance.now();
    await seed(base);
    console.warn(`${backend}: ${PRS} PRs in line, ${RUNS} testing, in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const session = await signIn(base);
    const cookie = `${session.name}=${session.value}`;
    const server = await serverTimes(base, cookie);
    const snapshot = await (await fetch(`${base}${PAGE_PATH}`, { headers: { cookie } })).text();
    const { weight, assets } = await pageWeight(base, snapshot);
    const bare = await staticServer(snapshot, assets);
    try {
      const paint = await paints(browser, [
        { label: "queue page (Greenline)", url: `${base}${PAGE_PATH}`, cookie: session },
        { label: "same bytes, static (bare node:http, same scripts and styles)", url: `${bare.url}/snapshot` },
        { label: "plain page of the same size (no script, no style)", url: `${bare.url}/plain` },
      ]);
      const lag = await liveLag(browser, base, session);
      return { backend, server, paint, lag, weight, htmlBytes: Buffer.byteLength(snapshot) };
    } finally {
      bare.server.closeAllConnections();
      await new Promise((r) => bare.server.close(r));
    }
  } finally {
    await server.stop();
  }
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});
const chromiumVersion = browser.version();
const results: BackendResult[] = [];
try {
  const dir = mkdtempSync(join(tmpdir(), "greenline-bench-web-"));
  try {
    results.push(await measureBackend("sqlite", `file:${join(dir, "bench.db")}`, browser));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (await postgresReachable(POSTGRES_ADMIN)) {
    const name = `greenline_bench_web_${process.pid}`;
    await withAdmin(POSTGRES_ADMIN, (c) => c.query(`CREATE DATABASE "${name}"`));
    try {
      const url = new URL(POSTGRES_ADMIN);
      url.pathname = `/${name}`;
      results.push(await measureBackend("postgres", url.toString(), browser));
    } finally {
      await withAdmin(POSTGRES_ADMIN, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    }
  } else {
    console.warn(`PostgreSQL not reachable at ${POSTGRES_ADMIN}: PostgreSQL rows skipped`);
  }
} finally {
  await browser.close();
}

const ms = (n: number) => (n < 10 ? n.toFixed(1) : n.toFixed(0));
const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
console.log(`\nbench:web — ${machine()}, Chromium ${chromiumVersion}; ${PRS} PRs in line, ${RUNS} runs in flight`);
console.log(`${REQUESTS} sequential requests of each kind (interleaved), ${LOADS} cold loads of each page, ${TRANSITIONS} transitions\n`);
console.log("| backend | server: GET | answer size | p50 ms | p95 ms | p99 ms | p95 vs getQueue |");
console.log("|---|---|---:|---:|---:|---:|---:|");
for (const r of results) {
  const baseline = r.server[0]!.stats.p95;
  for (const t of r.server) console.log(`| ${r.backend} | ${t.label} | ${kib(t.bytes)} | ${ms(t.stats.p50)} | ${ms(t.stats.p95)} | ${ms(t.stats.p99)} | ${(t.stats.p95 / baseline).toFixed(1)}× |`);
}
console.log("\n| backend | browser: cold load of | first paint p50 / p95 ms | first contentful paint p50 / p95 ms | time to first byte p50 / p95 ms |");
console.log("|---|---|---:|---:|---:|");
for (const r of results) {
  for (const p of r.paint) console.log(`| ${r.backend} | ${p.label} | ${ms(p.fp.p50)} / ${ms(p.fp.p95)} | ${ms(p.fcp.p50)} / ${ms(p.fcp.p95)} | ${ms(p.ttfb.p50)} / ${ms(p.ttfb.p95)} |`);
}
console.log("\n| backend | live lag: cancel over the API → page shows it | p50 ms | p95 ms | p99 ms |");
console.log("|---|---|---:|---:|---:|");
for (const r of results) {
  console.log(`| ${r.backend} | from the API's answer (at most the true lag) | ${ms(r.lag.fromAnswer.p50)} | ${ms(r.lag.fromAnswer.p95)} | ${ms(r.lag.fromAnswer.p99)} |`);
  console.log(`| ${r.backend} | from the API request (at least the true lag) | ${ms(r.lag.fromRequest.p50)} | ${ms(r.lag.fromRequest.p95)} | ${ms(r.lag.fromRequest.p99)} |`);
  console.log(`| ${r.backend} | (the cancellation's own round trip) | ${ms(r.lag.request.p50)} | ${ms(r.lag.request.p95)} | ${ms(r.lag.request.p99)} |`);
  console.log(`| ${r.backend} | of which: API answer → the stream's event in the page | ${ms(r.lag.toEvent.p50)} | ${ms(r.lag.toEvent.p95)} | ${ms(r.lag.toEvent.p99)} |`);
  console.log(`| ${r.backend} | of which: event → the live part fetched (htmx:beforeSwap; 0 when the event carries it) | ${ms(r.lag.eventToPart.p50)} | ${ms(r.lag.eventToPart.p95)} | ${ms(r.lag.eventToPart.p99)} |`);
  console.log(`| ${r.backend} | of which: live part (or patch) → the DOM swapped | ${ms(r.lag.partToDom.p50)} | ${ms(r.lag.partToDom.p95)} | ${ms(r.lag.partToDom.p99)} |`);
}
const weight = results[0]!.weight;
const total = (key: "raw" | "gzip") => weight.reduce((sum, w) => sum + w[key], 0);
console.log(`\n| page weight: asset | raw | gzip -9 |\n|---|---:|---:|`);
for (const w of weight) console.log(`| ${w.url} | ${kib(w.raw)} | ${kib(w.gzip)} |`);
console.log(`| **JS + CSS** | ${kib(total("raw"))} | ${kib(total("gzip"))} |`);
console.log(`| (the page's HTML, ${PRS} PRs, not compressed by the server) | ${kib(results[0]!.htmlBytes)} | — |`);
const goal = total("gzip") < 100 * 1024;
console.log(`\nPage weight goal (JS + CSS, gzip, under 100 KB): ${goal ? "met" : "NOT met"} — ${kib(total("gzip"))}`);
console.log(JSON.stringify({ machine: machine(), prs: PRS, runs: RUNS, results }));
