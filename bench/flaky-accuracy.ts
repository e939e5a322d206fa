import { authenticate } from "../src/auth/tokens.js";
import { loadConfig } from "../src/config.js";
import { backtestFlakyPolicy } from "../src/flaky/backtest.js";
import { createLogger } from "../src/log.js";
import { testCaseId } from "../src/domain/flaky/identity.js";
import { parseJUnit } from "../src/formats/junit.js";
import { CORPUS_START, corpusTests, corpusUploads, type CorpusOptions, type CorpusTest, flakeRateOf, FULL, labelAt, QUICK } from "./flaky-corpus/corpus.js";
import { freshDatabase, machine, postgresReachable } from "./support.js";

/**
 * `bench:flaky -- --accuracy [--quick]` (issue 25): the labelled corpus (bench/flaky-corpus)
 * replayed through the real ingest path — each report uploaded over HTTP to the service in this
 * process, on its own clock, on SQLite and on PostgreSQL — and Greenline's verdicts read back
 * through the API (listUnhealthyTests) every two hours of corpus time, after the worker's
 * periodic re-judging. Printed per backend: precision, recall and F1 of "flaky" (recall over
 * tests flaky at ≥ 2%), of "broken" and of quarantine; runs and days until a flaky test of each
 * rate is first found (median, p90); broken tests ever quarantined; regressions excused (a
 * queue run in which a broken test failed while that test was quarantined); healthy tests ever
 * made flaky or broken (their only failures are infrastructure incidents). Ends with one JSON line.
 */

const ADMIN = process.env.GREENLINE_BENCH_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const TOKEN = "bench-token-0123456789abcdef";
const ORG = "bench";
const repo = { host: "github.com", owner: "bench", name: "polyglot" };
/** How often every verdict is read (broken tests quarantined, and tests found by the periodic re-judging; a flaky test failing in an upload is looked up at once). */
const CHECKPOINT_MS = 2 * 3600_000;

type Status = { status: "FLAKY" | "BROKEN"; quarantined: boolean };

export type AccuracyFigures = {
  backend: string;
  uploads: number;
  testCases: number;
  flaky: { precision: number; recall: number; f1: number; recallByRate: Record<string, string> };
  broken: { precision: number; recall: number; f1: number };
  quarantine: { precision: number; quarantined: number };
  detectRuns: Record<string, { median: number | null; p90: number | null; found: string }>;
  detectDays: Record<string, { median: number | null; p90: number | null }>;
  brokenQuarantined: number;
  /** Queue runs in which a broken test failed and check-quarantine, asked then with its failure (as `greenline test run` asks), said quarantined. */
  regressionsExcused: number;
  /** Queue runs in which a broken test failed while quarantined as last read (every two hours): the quarantine alone, before failure shapes. */
  quarantinedWhileBrokenRuns: number;
  /** Queue runs in which a quarantined test that is flaky failed and check-quarantine said it failed a new way (it counts: an ejection the quarantine no longer spares). */
  flakesNotExcused: number;
  infraMintedFlaky: number;
  /** Uploads judged an infrastructure failure with an incident in them, without one, and incidents not judged so. */
  infrastructure: { truePositives: number; falsePositives: number; missed: number };
  /**
   * The policy backtest (flaky-tests/backtest-policy) under the repository's own settings at the
   * corpus's end: tests it replayed, tests whose status or quarantine at the end differs from the
   * service's (must be 0: the replay judges as detection does), and its time.
   */
  backtest: { replayed: number; disagree: number; seconds: number };
  wallSeconds: number;
};

const keyOf = (t: { classname: string; name: string }) => `${t.classname}|${t.name}`;
const ratio = (a: number, b: number) => (b === 0 ? 1 : a / b);
const f1 = (p: number, r: number) => (p + r === 0 ? 0 : (2 * p * r) / (p + r));
const round = (x: number) => Math.round(x * 1000) / 1000;
const quantile = (xs: number[], q: number) => (xs.length === 0 ? null : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)]!);

/** The corpus replayed on a fresh database of `backend` (`database`: one the caller made, dropped here). */
export async function measureAccuracy(backend: "sqlite" | "postgres", options: CorpusOptions, database?: { url: string; drop(): Promise<void> }): Promise<AccuracyFigures> {
  const { startGreenline } = await import("../src/server.js");
  const db = database ?? (await freshDatabase(backend, ADMIN, "greenline-accuracy"));
  let clock = CORPUS_START;
  const config = loadConfig({ DATABASE_URL: db.url, GREENLINE_API_TOKEN: TOKEN, GREENLINE_ORG: ORG, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn" }, () => "");
  const greenline = await startGreenline(config, { log: createLogger("warn"), startWorker: false, now: () => new Date(clock) });
  const wall0 = performance.now();
  try {
    const call = async (op: string, body: unknown) => {
      const response = await fetch(`${greenline.url}/v1/${op}`, { method: "POST", headers: { "content-type": "application/json", "x-api-token": TOKEN }, body: JSON.stringify(body) });
      const text = await response.text();
      if (!response.ok) throw new Error(`${op}: ${response.status} ${text}`);
      return JSON.parse(text);
    };
    const tests = corpusTests(options);
    const byKey = new Map(tests.map((t) => [keyOf(t), t]));
    const runs = new Array<number>(tests.length).fill(0);
    let tree = 0;
    let statuses = new Map<number, Status>();
    let statusOfId = new Map<string, Status>();
    const firstFlaky = new Map<number, { runs: number; at: number }>();
    const everBrokenQuarantined = new Set<number>();
    const everHealthyFlagged = new Set<number>();
    let regressionsExcused = 0;
    let quarantinedWhileBrokenRuns = 0;
    let flakesNotExcused = 0;
    const fullName = `${repo.host}/${repo.owner}/${repo.name}`;
    /** Each corpus test's id, as the service derives it from the report (set when first needed). */
    const idOf = new Map<number, string>();
    const infra = { truePositives: 0, falsePositives: 0, missed: 0 };
    let uploads = 0;
    let testCases = 0;
    const checkpoint = async () => {
      await greenline.worker.drain();
      const next = new Map<number, Status>();
      statusOfId = new Map();
      let token = "";
      for (;;) {
        const page = await call("flaky-tests/list-unhealthy-tests", { repo, org_url_slug: ORG, page_query: { page_size: 100, page_token: token } });
        for (const u of page.unhealthy_tests as { test_case_id: string; classname: string; name: string; status: "FLAKY" | "BROKEN"; quarantined: boolean }[]) {
          const t = byKey.get(keyOf(u));
          if (!t) throw new Error(`a test the corpus does not have: ${keyOf(u)}`);
          next.set(t.index, { status: u.status, quarantined: u.quarantined });
          statusOfId.set(u.test_case_id, { status: u.status, quarantined: u.quarantined });
        }
        token = page.page.next_page_token;
        if (!token) break;
      }
      statuses = next;
      for (const [index, s] of statuses) {
        const t = tests[index]!;
        const label = labelAt(t, tree);
        if (s.status === "FLAKY" && label === "flaky" && !firstFlaky.has(index)) firstFlaky.set(index, { runs: runs[index]!, at: clock });
        if (label === "broken" && s.quarantined) everBrokenQuarantined.add(index);
        if (t.truth.kind === "healthy") everHealthyFlagged.add(index);
      }
    };
    let nextCheckpoint = CORPUS_START + CHECKPOINT_MS;
    for (const upload of corpusUploads(options, tests)) {
      while (upload.at >= nextCheckpoint) {
        clock = nextCheckpoint;
        await checkpoint();
        nextCheckpoint += CHECKPOINT_MS;
      }
      clock = upload.at;
      if (upload.kind !== "pr") tree = Math.max(tree, upload.tree);
      const answer = await call("flaky-tests/upload", {
        repo,
        org_url_slug: ORG,
        commit_sha: upload.sha,
        branch: upload.branch,
        ...(upload.prNumber !== undefined ? { pr_number: upload.prNumber } : {}),
        check_name: `test (${upload.language})`,
        junit_xml: upload.xml,
      });
      uploads++;
      if (answer.infrastructure_failure) {
        if (upload.incident !== null) infra.truePositives++;
        else {
          infra.falsePositives++;
          if (process.env.ACCURACY_DEBUG && (infra.falsePositives <= 3 || infra.falsePositives % 50 === 0))
            console.log("judged infrastructure, no incident:", upload.language, upload.failed.length, "failed:", answer.infrastructure_failure_reason);
        }
      } else if (upload.incident !== null) infra.missed++;
      testCases += upload.ran.length;
      for (const i of upload.ran) runs[i]!++;
      // Time to detect at the resolution of one upload (ingest judges the tests it holds at once):
      // a flaky test not found yet that failed here is looked up now, by its id.
      const unfound = answer.infrastructure_failure ? [] : upload.failed.filter((i) => !firstFlaky.has(i) && labelAt(tests[i]!, upload.tree) === "flaky");
      if (unfound.length > 0) {
        if (unfound.some((i) => !idOf.has(i)))
          for (const xml of upload.xml)
            parseJUnit(xml, (c) => {
              const t = byKey.get(keyOf(c));
              if (t && !idOf.has(t.index)) idOf.set(t.index, testCaseId(ORG, fullName, { name: c.name, classname: c.classname, file: c.file, parent: c.parent }));
            });
        for (const i of unfound) {
          const details = await call("flaky-tests/get-test-details", { repo, org_url_slug: ORG, test_id: idOf.get(i) });
          if (details.test.status.value === "flaky") firstFlaky.set(i, { runs: runs[i]!, at: clock });
        }
      }
      // A queue run that a broken test failed, while the test was quarantined (as last read).
      if (upload.kind === "queue" && upload.incident === null && upload.failed.some((i) => labelAt(tests[i]!, upload.tree) === "broken" && statuses.get(i)?.quarantined)) quarantinedWhileBrokenRuns++;
      // What `greenline test run` asks after its upload: which failing tests are quarantined, given how each failed.
      if (upload.kind === "queue" && upload.incident === null && upload.failed.length > 0 && !answer.infrastructure_failure) {
        const failing: { index: number; id: string; test: Record<string, unknown> }[] = [];
        for (const xml of upload.xml)
          parseJUnit(xml, (c) => {
            const t = byKey.get(keyOf(c));
            if (!t || !c.failed || c.passed || failing.some((f) => f.index === t.index)) return;
            const identity = { name: c.name, classname: c.classname, file: c.file, parent: c.parent };
            const failure = { ...(c.failureType ? { type: c.failureType } : {}), ...(c.message ? { message: c.message } : {}), ...(c.failureText ? { text: c.failureText } : {}) };
            failing.push({ index: t.index, id: testCaseId(ORG, fullName, identity), test: { ...identity, failure } });
          });
        const checked = await call("flaky-tests/check-quarantine", { repo, org_url_slug: ORG, tests: failing.map((f) => f.test) });
        const excused = new Set<string>(checked.quarantined_test_ids);
        const newWays = new Set<string>(checked.new_failure_test_ids);
        if (failing.some((f) => excused.has(f.id) && labelAt(tests[f.index]!, upload.tree) === "broken")) regressionsExcused++;
        if (failing.some((f) => newWays.has(f.id) && labelAt(tests[f.index]!, upload.tree) === "flaky")) flakesNotExcused++;
      }
    }
    clock = nextCheckpoint;
    await checkpoint();

    // The policy backtest under the repository's own settings must end where detection is.
    const backtestStart = performance.now();
    const principal = (await authenticate(greenline.services.db, TOKEN))!;
    const { result: replay } = await backtestFlakyPolicy(greenline.services, principal, { repo, org_url_slug: ORG, since_days: Math.min(90, options.days + 1), settings: {} }, { now: new Date(clock) });
    let disagree = 0;
    const replayed = new Set<string>();
    for (const { test, current } of replay.replays.values()) {
      replayed.add(test.id);
      const stored = statusOfId.get(test.id) ?? { status: "HEALTHY", quarantined: false };
      if (stored.status.toLowerCase() !== current.status || stored.quarantined !== current.quarantined) {
        disagree++;
        if (process.env.ACCURACY_DEBUG) console.log("backtest disagrees:", test.name, stored, current.status, current.quarantined);
      }
    }
    for (const id of statusOfId.keys()) if (!replayed.has(id)) disagree++;
    const backtestFigures = { replayed: replayed.size, disagree, seconds: round((performance.now() - backtestStart) / 1000) };

    // Verdicts at the end of the corpus against the truth at its last tree.
    const flakyTruth = tests.filter((t) => labelAt(t, tree) === "flaky");
    const flakyTarget = flakyTruth.filter((t) => flakeRateOf(t) >= 0.02);
    const predictedFlaky = tests.filter((t) => statuses.get(t.index)?.status === "FLAKY");
    const flakyPrecision = ratio(predictedFlaky.filter((t) => labelAt(t, tree) === "flaky").length, predictedFlaky.length);
    const flakyRecall = ratio(flakyTarget.filter((t) => statuses.get(t.index)?.status === "FLAKY").length, flakyTarget.length);
    const brokenTruth = tests.filter((t) => labelAt(t, tree) === "broken");
    const predictedBroken = tests.filter((t) => statuses.get(t.index)?.status === "BROKEN");
    const brokenPrecision = ratio(predictedBroken.filter((t) => labelAt(t, tree) === "broken").length, predictedBroken.length);
    const brokenRecall = ratio(brokenTruth.filter((t) => statuses.get(t.index)?.status === "BROKEN").length, brokenTruth.length);
    const quarantined = tests.filter((t) => statuses.get(t.index)?.quarantined);
    if (process.env.ACCURACY_DEBUG)
      for (const t of tests.filter((x) => x.truth.kind === "broken" || (statuses.has(x.index) && labelAt(x, tree) !== statuses.get(x.index)!.status.toLowerCase())))
        console.log(
          JSON.stringify({
            test: t.index,
            language: t.language,
            file: t.file,
            truth: t.truth,
            label: labelAt(t, tree),
            tree,
            verdict: statuses.get(t.index) ?? "healthy",
            everQuarantined: everBrokenQuarantined.has(t.index),
          }),
        );
    const rates = [...new Set(flakyTruth.map(flakeRateOf))].sort((a, b) => a - b);
    const label = (rate: number) => `${Math.round(rate * 1000) / 10}%`;
    const recallByRate: Record<string, string> = {};
    const detectRuns: AccuracyFigures["detectRuns"] = {};
    const detectDays: AccuracyFigures["detectDays"] = {};
    for (const rate of rates) {
      const group = flakyTruth.filter((t) => flakeRateOf(t) === rate);
      const found = group.filter((t) => firstFlaky.has(t.index));
      recallByRate[label(rate)] = `${group.filter((t) => statuses.get(t.index)?.status === "FLAKY").length}/${group.length}`;
      // Never found: counted as never (Infinity), so p90 says "not within the corpus" when more than a tenth are missed.
      const runsTo = group.map((t) => firstFlaky.get(t.index)?.runs ?? Infinity);
      const daysTo = group.map((t) => {
        const f = firstFlaky.get(t.index);
        return f ? (f.at - CORPUS_START) / 86_400_000 : Infinity;
      });
      const fin = (x: number | null) => (x === null || !Number.isFinite(x) ? null : round(x));
      detectRuns[label(rate)] = { median: fin(quantile(runsTo, 0.5)), p90: fin(quantile(runsTo, 0.9)), found: `${found.length}/${group.length}` };
      detectDays[label(rate)] = { median: fin(quantile(daysTo, 0.5)), p90: fin(quantile(daysTo, 0.9)) };
    }
    return {
      backend,
      uploads,
      testCases,
      flaky: { precision: round(flakyPrecision), recall: round(flakyRecall), f1: round(f1(flakyPrecision, flakyRecall)), recallByRate },
      broken: { precision: round(brokenPrecision), recall: round(brokenRecall), f1: round(f1(brokenPrecision, brokenRecall)) },
      quarantine: { precision: round(ratio(quarantined.filter((t) => labelAt(t, tree) === "flaky").length, quarantined.length)), quarantined: quarantined.length },
      detectRuns,
      detectDays,
      brokenQuarantined: everBrokenQuarantined.size,
      regressionsExcused,
      quarantinedWhileBrokenRuns,
      flakesNotExcused,
      infraMintedFlaky: everHealthyFlagged.size,
      infrastructure: infra,
      backtest: backtestFigures,
      wallSeconds: round((performance.now() - wall0) / 1000),
    };
  } finally {
    await greenline.close();
    await db.drop();
  }
}

export async function runAccuracy(quick: boolean): Promise<void> {
  const options = quick ? QUICK : FULL;
  const tests = corpusTests(options);
  const count = (kind: CorpusTest["truth"]["kind"]) => tests.filter((t) => t.truth.kind === kind).length;
  console.log(`# bench:flaky --accuracy${quick ? " --quick" : ""} — ${machine()}`);
  console.log(
    `Corpus (seed ${options.seed}): ${options.tests} tests in 4 jobs (jest, pytest, go test, Surefire), ${options.days} days, ${options.pipelinesPerDay} pipelines a day; truth: ${count("healthy")} healthy, ${count("flaky")} flaky (0.5–30%), ${count("order")} order-dependent, ${count("timing")} timing-dependent, ${count("broken")} broken at some point.\n`,
  );
  const backends: ("sqlite" | "postgres")[] = ["sqlite"];
  if (await postgresReachable(ADMIN)) backends.push("postgres");
  else console.log(`PostgreSQL not reachable at ${ADMIN}: SQLite only.\n`);
  const results: AccuracyFigures[] = [];
  for (const backend of backends) {
    const r = await measureAccuracy(backend, options);
    results.push(r);
    console.log(`## ${backend}: ${r.uploads} uploads, ${r.testCases} test results, ${r.wallSeconds} s`);
    console.log("| verdict | precision | recall | F1 |\n|---|---|---|---|");
    console.log(`| flaky (recall over rates ≥ 2%) | ${r.flaky.precision} | ${r.flaky.recall} | ${r.flaky.f1} |`);
    console.log(`| broken (failing at the last commit) | ${r.broken.precision} | ${r.broken.recall} | ${r.broken.f1} |`);
    console.log(`| quarantined (${r.quarantine.quarantined} tests) | ${r.quarantine.precision} | – | – |\n`);
    console.log("| flake rate | found flaky at the end | runs to first found, median / p90 | days, median / p90 |\n|---|---|---|---|");
    for (const rate of Object.keys(r.detectRuns))
      console.log(
        `| ${rate} | ${r.flaky.recallByRate[rate]} (ever: ${r.detectRuns[rate]!.found}) | ${r.detectRuns[rate]!.median ?? "–"} / ${r.detectRuns[rate]!.p90 ?? "never"} | ${r.detectDays[rate]!.median ?? "–"} / ${r.detectDays[rate]!.p90 ?? "never"} |`,
      );
    console.log(
      `\nPolicy backtest (flaky-tests/backtest-policy) at the end under the repository's own settings: ${r.backtest.replayed} tests replayed in ${r.backtest.seconds} s, ${r.backtest.disagree} ending otherwise than detection.`,
    );
    console.log(`\nUploads judged an infrastructure failure: ${r.infrastructure.truePositives} holding an incident (${r.infrastructure.missed} incidents not judged so), ${r.infrastructure.falsePositives} without one.`);
    console.log(
      `Broken tests ever quarantined: ${r.brokenQuarantined}; regressions excused: ${r.regressionsExcused} (queue runs in which a broken test failed while quarantined as last read: ${r.quarantinedWhileBrokenRuns}; quarantined flaky tests' failures not excused, as a new way of failing: ${r.flakesNotExcused}); healthy tests ever made flaky or broken by infrastructure incidents: ${r.infraMintedFlaky}.\n`,
    );
  }
  const worst = (f: (r: AccuracyFigures) => number, pick: (a: number, b: number) => number) => results.map(f).reduce((a, b) => pick(a, b));
  console.log(
    JSON.stringify({
      flakyF1: worst((r) => r.flaky.f1, Math.min),
      brokenQuarantined: worst((r) => r.brokenQuarantined, Math.max),
      regressionsExcused: worst((r) => r.regressionsExcused, Math.max),
      infraMintedFlaky: worst((r) => r.infraMintedFlaky, Math.max),
      detectRunsP90At5pct: results[0]!.detectRuns["5%"]?.p90 ?? null,
      infrastructureFalsePositives: worst((r) => r.infrastructure.falsePositives, Math.max),
      backends: Object.fromEntries(results.map((r) => [r.backend, r])),
    }),
  );
}
