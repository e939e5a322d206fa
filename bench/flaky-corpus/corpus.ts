import { createHash } from "node:crypto";
import { rng } from "../random.js";

/**
 * A labelled corpus of CI results (issue 25): days of CI for one repository whose tests' truth
 * is known, deterministic from a seed, nothing downloaded. The repository is polyglot, one CI
 * job per language, each writing the JUnit dialect its tool writes:
 *
 * - `web`: jest with jest-junit's defaults (a suite per test file; classname and name are both
 *   "{describe} {title}"; no file attribute), Node stack traces;
 * - `api`: pytest `--junitxml` (classname the dotted module, file and line attributes),
 *   tracebacks, setup errors as `<error>`;
 * - `svc`: go test through gotestsum (a suite per package with the `go.version` property; with
 *   `--rerun-fails` a failed test appears again in the same report);
 * - `core`: Maven Surefire (a suite per class, `type` attributes, Java stack traces; with
 *   `rerunFailingTestsCount` a test that failed then passed carries `<flakyFailure>`, one that
 *   failed again `<rerunFailure>`).
 *
 * Each test's truth: healthy; flaky at a rate from 0.5% to 30%; order-dependent (fails when
 * another test of its file ran before it, in runs whose order is shuffled); timing-dependent
 * (fails now and then when its job's runner is loaded); or broken from a commit (failing every
 * time, sometimes several tests at once with the same assertion), fixed later or not. Besides,
 * infrastructure incidents (a database that never started, a registry timeout, a full disk)
 * fail many tests of one job at once, whatever their truth.
 *
 * CI as it runs: pipelines through the day on PR branches (a PR's head), on the merge queue's
 * testing branches and on main (the queue's commit again, after its fast-forward); every
 * pipeline runs the four jobs; a failed job is re-run (the same commit, a new upload) now and
 * then, up to twice.
 */

export type Truth =
  | { kind: "healthy" }
  | { kind: "flaky"; rate: number }
  | { kind: "order"; after: number; rate: number }
  | { kind: "timing"; rate: number }
  | { kind: "broken"; fromTree: number; untilTree: number | null; flakyBefore?: number };

export type Language = "web" | "api" | "svc" | "core";
export const LANGUAGES: Language[] = ["web", "api", "svc", "core"];

export type CorpusTest = { index: number; language: Language; file: string; classname: string; name: string; truth: Truth };

/** One report as CI uploads it, with what the corpus knows of it. */
export type CorpusUpload = {
  at: number;
  language: Language;
  branch: string;
  sha: string;
  prNumber?: number;
  kind: "pr" | "queue" | "main";
  /** The main-line tree the commit holds (broken tests fail from their tree on; a PR holds the one it branched from). */
  tree: number;
  /** The job's JUnit XML files. */
  xml: string[];
  /** Tests that failed in this upload (at least one attempt), by index; and those run. */
  failed: number[];
  ran: number[];
  incident: string | null;
};

export type CorpusOptions = { seed: number; tests: number; days: number; pipelinesPerDay: number };
export const FULL: CorpusOptions = { seed: 25, tests: 2000, days: 30, pipelinesPerDay: 48 };
export const QUICK: CorpusOptions = { seed: 25, tests: 400, days: 12, pipelinesPerDay: 36 };

const FLAKY_RATES = [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3];
const DAY = 86_400_000;
export const CORPUS_START = Date.parse("2026-10-01T00:00:00Z");

/** Each test's truth, fixed by the seed. */
export function corpusTests(options: CorpusOptions): CorpusTest[] {
  const random = rng(options.seed);
  const perLanguage = Math.ceil(options.tests / LANGUAGES.length);
  const tests: CorpusTest[] = [];
  for (let i = 0; i < options.tests; i++) {
    const language = LANGUAGES[Math.floor(i / perLanguage)]!;
    const local = i % perLanguage;
    const fileNo = Math.floor(local / 8);
    tests.push({ index: i, language, ...namesOf(language, fileNo, local), truth: { kind: "healthy" } });
  }
  const treesTotal = options.days * options.pipelinesPerDay * 0.4;
  const pick = () => Math.floor(random() * tests.length);
  const healthy = () => {
    for (;;) {
      const t = tests[pick()]!;
      if (t.truth.kind === "healthy") return t;
    }
  };
  // 3% flaky, most of them rarely (rates weighted 4:4:4:3:2:1:1 from 0.5% to 30%: a job of 500
  // tests then fails on a flake about half the time, as Slack's did before its work on flakes);
  // 0.75% order-dependent; 0.75% timing-dependent.
  const flaky = Math.max(FLAKY_RATES.length, Math.round(options.tests * 0.03));
  const weighted = FLAKY_RATES.flatMap((rate, i) => Array.from({ length: [4, 4, 4, 3, 2, 1, 1][i]! }, () => rate));
  for (let k = 0; k < flaky; k++) healthy().truth = { kind: "flaky", rate: k < FLAKY_RATES.length ? FLAKY_RATES[k]! : weighted[k % weighted.length]! };
  for (let k = 0; k < Math.max(2, Math.round(options.tests * 0.0075)); k++) {
    const t = healthy();
    // The test it fails after: another of its file (the file's first, unless it is that one).
    const sameFile = tests.filter((o) => o.file === t.file && o.index !== t.index);
    t.truth = { kind: "order", after: sameFile[0]!.index, rate: ORDER_SHUFFLED * 0.5 * 0.5 };
  }
  for (let k = 0; k < Math.max(2, Math.round(options.tests * 0.0075)); k++) healthy().truth = { kind: "timing", rate: LOADED_JOBS * TIMING_FAILS };
  // Breaks: ~1% of tests, a third of them in groups of 3–6 of one language (one change, one assertion).
  const breaks = Math.max(4, Math.round(options.tests * 0.006));
  for (let k = 0; k < breaks; k++) {
    const fromTree = Math.floor(treesTotal * (0.1 + 0.6 * random()));
    // Fixed later or not (the first break is, the second is not, then at random).
    const fixed = k === 0 ? true : k === 1 ? false : random() < 0.5;
    const untilTree = fixed ? fromTree + Math.floor(treesTotal * (0.05 + 0.1 * random())) : null;
    // Every fourth break hits a test that was flaky before (a flaky test that then broke).
    if (k % 4 === 3) {
      const flaky = tests.filter((t) => t.truth.kind === "flaky");
      const t = flaky[Math.floor(random() * flaky.length)]!;
      t.truth = { kind: "broken", fromTree, untilTree, flakyBefore: (t.truth as { rate: number }).rate };
      continue;
    }
    const first = healthy();
    const group = k % 3 === 0 ? 3 + Math.floor(random() * 4) : 1;
    // A group: one change (a shared helper, a fixture) breaking tests in several files at once, with one kind of assertion.
    const others = tests.filter((t) => t.language === first.language && t.truth.kind === "healthy" && t.file !== first.file);
    const members = [first, ...Array.from({ length: group - 1 }, () => others[Math.floor(random() * others.length)]!)];
    for (const t of members) t.truth = { kind: "broken", fromTree, untilTree };
  }
  return tests;
}

/** Share of runs whose test order is shuffled (an order-dependent test fails half the time its other test ran first, which a shuffle makes even odds). */
const ORDER_SHUFFLED = 0.25;
/** Share of jobs on a loaded runner, and the chance a timing-dependent test fails on one. */
const LOADED_JOBS = 0.2;
const TIMING_FAILS = 0.4;

function namesOf(language: Language, fileNo: number, local: number): { file: string; classname: string; name: string } {
  switch (language) {
    case "web": {
      const name = `Checkout step ${fileNo} renders case ${local}`;
      return { file: `src/web/checkout/step${fileNo}.test.tsx`, classname: name, name };
    }
    case "api":
      return { file: `tests/api/test_orders_${fileNo}.py`, classname: `tests.api.test_orders_${fileNo}`, name: `test_order_case_${local}` };
    case "svc":
      return { file: `orders/orders${fileNo}_test.go`, classname: `github.com/acme/svc/orders${fileNo}`, name: `TestOrders${fileNo}/case_${local}` };
    case "core":
      return { file: `core/src/test/java/com/acme/core/Order${fileNo}Test.java`, classname: `com.acme.core.Order${fileNo}Test`, name: `shouldHandleCase${local}` };
  }
}

/** What a test run does: passes, or fails with a message and a stack (and the failure's type). */
type Outcome = { failed: false } | { failed: true; type: string; message: string; stack: string; error?: boolean };

const INCIDENTS: { name: string; language: Language; type: string; message: string }[] = [
  { name: "database never started", language: "api", type: "psycopg.OperationalError", message: 'connection to server at "127.0.0.1", port 5432 failed: Connection refused' },
  { name: "registry timeout", language: "svc", type: "", message: "dial tcp: lookup proxy.golang.org on 127.0.0.53:53: read udp 127.0.0.1:41234->127.0.0.53:53: i/o timeout" },
  { name: "out of disk", language: "web", type: "Error", message: "ENOSPC: no space left on device, write" },
  {
    name: "database never started",
    language: "core",
    type: "org.springframework.jdbc.CannotGetJdbcConnectionException",
    message: "Failed to obtain JDBC Connection; nested exception is java.net.ConnectException: Connection refused",
  },
];

/** The whole corpus: every upload, in time order, with its report. */
export function* corpusUploads(options: CorpusOptions, tests: CorpusTest[]): Generator<CorpusUpload> {
  const random = rng(options.seed * 7919 + 1);
  const byLanguage = new Map<Language, CorpusTest[]>(LANGUAGES.map((l) => [l, tests.filter((t) => t.language === l)]));
  let tree = 0;
  let pr = 100;
  for (let day = 0; day < options.days; day++) {
    for (let p = 0; p < options.pipelinesPerDay; p++) {
      const at = CORPUS_START + day * DAY + Math.floor(((p + random()) / options.pipelinesPerDay) * DAY);
      // 60% PR heads (on the tree of main they branched from), 40% the queue's commits, each
      // tested on its testing branch and again on main once merged.
      const kind: CorpusUpload["kind"] = random() < 0.6 ? "pr" : "queue";
      const pipelines: { kind: CorpusUpload["kind"]; branch: string; sha: string; prNumber?: number; tree: number; at: number }[] = [];
      if (kind === "pr") {
        pr++;
        // A PR branched from main some merges ago (up to a day's worth): a break or a fix on main is not in it yet.
        const base = Math.max(0, tree - Math.floor(random() * random() * options.pipelinesPerDay * 0.4));
        pipelines.push({ kind, branch: `feature/change-${pr}`, sha: shaOf(`pr-${pr}`), prNumber: pr, tree: base, at });
      } else {
        tree++;
        const sha = shaOf(`main-${tree}`);
        pipelines.push({ kind: "queue", branch: `greenline/main/run-${tree}`, sha, tree, at });
        pipelines.push({ kind: "main", branch: "main", sha, tree, at: at + 20 * 60_000 });
      }
      for (const pipeline of pipelines)
        for (const language of LANGUAGES) {
          const incident = random() < 0.01 ? (INCIDENTS.find((i) => i.language === language) ?? null) : null;
          const loaded = random() < LOADED_JOBS;
          // A failed job is re-run on the same commit (by a person or CI's retry) now and then, up to twice.
          for (let attempt = 0; attempt < 3; attempt++) {
            const at = pipeline.at + attempt * 25 * 60_000;
            const upload = jobReport(byLanguage.get(language)!, language, pipeline.tree, random, { at, incident: attempt === 0 ? incident : null, loaded: attempt === 0 ? loaded : random() < LOADED_JOBS });
            yield { ...pipeline, at, language, ...upload };
            if (upload.failed.length === 0 || random() > 0.5) break;
          }
        }
    }
  }
}

function jobReport(
  tests: CorpusTest[],
  language: Language,
  tree: number,
  random: () => number,
  job: { at: number; incident: (typeof INCIDENTS)[number] | null; loaded: boolean },
): { xml: string[]; failed: number[]; ran: number[]; incident: string | null } {
  // The order the tests run in: as written, or shuffled within each file.
  const shuffled = random() < ORDER_SHUFFLED;
  const ranBefore = new Map<number, boolean>();
  if (shuffled) {
    const byFile = new Map<string, CorpusTest[]>();
    for (const t of tests) byFile.set(t.file, [...(byFile.get(t.file) ?? []), t]);
    for (const group of byFile.values()) {
      const order = group.map((t) => ({ t, key: random() }));
      order.sort((a, b) => a.key - b.key);
      const seen = new Set<number>();
      for (const { t } of order) {
        if (t.truth.kind === "order") ranBefore.set(t.index, seen.has(t.truth.after));
        seen.add(t.index);
      }
    }
  }
  const incidentHits = job.incident ? 0.4 + 0.6 * random() : 0;
  // In-report retries: gotestsum --rerun-fails, Surefire's rerunFailingTestsCount (half the jobs).
  const reruns = (language === "svc" || language === "core") && random() < 0.5;
  const attempts = (t: CorpusTest): Outcome[] => {
    const first = outcomeOf(t, tree, random, { incident: job.incident && random() < incidentHits ? job.incident : null, loaded: job.loaded, orderHit: ranBefore.get(t.index) === true });
    if (!first.failed || !reruns) return [first];
    return [first, outcomeOf(t, tree, random, { incident: null, loaded: job.loaded, orderHit: false })];
  };
  const results = tests.map((t) => ({ t, attempts: attempts(t) }));
  return {
    xml: reportOf(language, results, job.at),
    failed: results.filter((r) => r.attempts.some((a) => a.failed)).map((r) => r.t.index),
    ran: tests.map((t) => t.index),
    incident: job.incident?.name ?? null,
  };
}

function outcomeOf(t: CorpusTest, tree: number, random: () => number, job: { incident: (typeof INCIDENTS)[number] | null; loaded: boolean; orderHit: boolean }): Outcome {
  if (job.incident) return { failed: true, type: job.incident.type, message: job.incident.message, stack: stackOf(t, job.incident.type, job.incident.message), error: true };
  const truth = t.truth;
  let fails = false;
  let kind: "assertion" | "timeout" | "race" = "assertion";
  if (truth.kind === "flaky") {
    fails = random() < truth.rate;
    kind = t.index % 3 === 0 ? "timeout" : t.index % 3 === 1 ? "race" : "assertion";
  } else if (truth.kind === "order") {
    fails = job.orderHit && random() < 0.5;
  } else if (truth.kind === "timing") {
    fails = job.loaded && random() < TIMING_FAILS;
    kind = "timeout";
  } else if (truth.kind === "broken") {
    fails = tree >= truth.fromTree && (truth.untilTree === null || tree < truth.untilTree);
    if (!fails && truth.flakyBefore !== undefined && tree < truth.fromTree) {
      fails = random() < truth.flakyBefore;
      kind = "timeout";
    }
  }
  if (!fails) return { failed: false };
  return failureOf(t, kind, random);
}

/** A failure as the test's tool words it, its variable parts drawn afresh each time. */
function failureOf(t: CorpusTest, kind: "assertion" | "timeout" | "race", random: () => number): Outcome {
  const n = () => Math.floor(random() * 1000);
  const expected = t.index % 50;
  const received = kind === "assertion" && t.truth.kind === "broken" ? expected + 1 : n();
  switch (t.language) {
    case "web": {
      const message =
        kind === "timeout"
          ? "thrown: Exceeded timeout of 5000 ms for a test.\nAdd a timeout value to this test to increase the timeout, if this is a long-running test. See https://jestjs.io/docs/api#testname-fn-timeout."
          : kind === "race"
            ? `TestingLibraryElementError: Unable to find an element with the text: Total ${n()}. This could be because the text is broken up by multiple elements.`
            : `expect(received).toBe(expected) // Object.is equality\n\nExpected: ${expected}\nReceived: ${received}`;
      return { failed: true, type: "Error", message, stack: stackOf(t, "Error", message) };
    }
    case "api": {
      const message =
        kind === "timeout"
          ? `requests.exceptions.ReadTimeout: HTTPConnectionPool(host='localhost', port=${8000 + (n() % 100)}): Read timed out. (read timeout=5)`
          : kind === "race"
            ? `AssertionError: assert ${n()} == ${n()}\n +  where ${n()} = len([...])`
            : `AssertionError: assert ${received} == ${expected}`;
      return { failed: true, type: kind === "timeout" ? "requests.exceptions.ReadTimeout" : "AssertionError", message, stack: stackOf(t, "AssertionError", message) };
    }
    case "svc": {
      const message =
        kind === "timeout" ? `panic: test timed out after 30s\n\ngoroutine ${n()} [running]:` : kind === "race" ? `WARNING: DATA RACE\nWrite at 0x00c000${n()} by goroutine ${n()}:` : `got ${received}, want ${expected}`;
      return { failed: true, type: "", message: "Failed", stack: `=== RUN   ${t.name}\n    ${t.file.split("/").pop()}:${40 + (t.index % 30)}: ${message}\n--- FAIL: ${t.name} (0.${n()}s)` };
    }
    case "core": {
      const type = kind === "timeout" ? "org.junit.jupiter.api.AssertTimeout$TimeoutFailedException" : "org.opentest4j.AssertionFailedError";
      const message = kind === "timeout" ? `execution timed out after ${1000 + n()} ms` : kind === "race" ? `expected: <${n()}> but was: <${n()}>` : `expected: <${expected}> but was: <${received}>`;
      return { failed: true, type, message, stack: stackOf(t, type, message) };
    }
  }
}

function stackOf(t: CorpusTest, type: string, message: string): string {
  const line = 20 + (t.index % 60);
  switch (t.language) {
    case "web":
      return `${type}: ${message}\n    at Object.<anonymous> (/home/runner/work/acme/acme/${t.file}:${line}:23)\n    at Promise.then.completed (/home/runner/work/acme/acme/node_modules/jest-circus/build/utils.js:298:28)\n    at new Promise (<anonymous>)`;
    case "api":
      return `${t.file}:${line}: in ${t.name}\n    response = client.post("/orders", json=payload)\n${t.file}:${line + 3}: in ${t.name}\n>   assert response.status_code == 201\nE   ${message}`;
    case "svc":
      return message;
    case "core":
      return `${type}: ${message}\n\tat org.junit.jupiter.api.AssertionUtils.fail(AssertionUtils.java:55)\n\tat ${t.classname}.${t.name}(${t.file.split("/").pop()}:${line})\n\tat java.base/java.lang.reflect.Method.invoke(Method.java:568)`;
  }
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** The job's report files, as its tool writes them. */
function reportOf(language: Language, results: { t: CorpusTest; attempts: Outcome[] }[], at: number): string[] {
  // jest-junit and pytest write the local time without a zone (the runners' zone is UTC), gotestsum with one.
  const local = new Date(at).toISOString().slice(0, 19);
  const zoned = `${local}Z`;
  const byFile = new Map<string, typeof results>();
  for (const r of results) byFile.set(r.t.file, [...(byFile.get(r.t.file) ?? []), r]);
  const suites: string[] = [];
  const failures = (rs: typeof results) => rs.filter((r) => r.attempts.some((a) => a.failed)).length;
  for (const [file, rs] of byFile) {
    const first = rs[0]!.t;
    const cases = rs.map(({ t, attempts }) => caseOf(language, t, attempts)).join("");
    switch (language) {
      case "web":
        suites.push(`<testsuite name="${esc(file)}" errors="0" failures="${failures(rs)}" skipped="0" timestamp="${local}" time="1.2" tests="${rs.length}">${cases}</testsuite>`);
        break;
      case "api":
        suites.push(cases);
        break;
      case "svc":
        suites.push(
          `<testsuite tests="${rs.length}" failures="${failures(rs)}" time="0.4" name="${esc(first.classname)}" timestamp="${zoned}"><properties><property name="go.version" value="go1.22.5 linux/amd64"></property></properties>${cases}</testsuite>`,
        );
        break;
      case "core":
        suites.push(
          `<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" name="${esc(first.classname)}" time="0.9" tests="${rs.length}" errors="0" skipped="0" failures="${failures(rs)}">${cases}</testsuite>`,
        );
        break;
    }
  }
  const body = suites.join("\n");
  if (language === "api")
    return [
      `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="${failures(results)}" skipped="0" tests="${results.length}" time="12.3" timestamp="${local}" hostname="runner">${body}</testsuite></testsuites>`,
    ];
  // Surefire writes one file per test class (TEST-<class>.xml); CI uploads them all.
  if (language === "core") return suites.map((suite) => `<?xml version="1.0" encoding="UTF-8"?>\n${suite}`);
  return [`<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="${language === "web" ? "jest tests" : ""}" tests="${results.length}" failures="${failures(results)}">\n${body}\n</testsuites>`];
}

function caseOf(language: Language, t: CorpusTest, attempts: Outcome[]): string {
  const tag = (o: Outcome & { failed: true }, name = o.error ? "error" : "failure") => `<${name} message="${esc(o.message)}"${o.type ? ` type="${esc(o.type)}"` : ""}>${esc(o.stack)}</${name}>`;
  const failedAttempts = attempts.filter((a): a is Outcome & { failed: true } => a.failed);
  const last = attempts.at(-1)!;
  switch (language) {
    case "web":
      return `<testcase classname="${esc(t.classname)}" name="${esc(t.name)}" time="0.031">${failedAttempts.map((o) => tag(o, "failure")).join("")}</testcase>`;
    case "api":
      return `<testcase classname="${esc(t.classname)}" name="${esc(t.name)}" file="${esc(t.file)}" line="${t.index % 90}" time="0.012">${failedAttempts.map((o) => (o.error ? `<error message="failed on setup with &quot;${esc(`${o.type}: ${o.message}`)}&quot;">${esc(o.stack)}</error>` : tag(o))).join("")}</testcase>`;
    case "svc":
      // gotestsum writes each attempt as its own testcase.
      return attempts.map((o) => `<testcase classname="${esc(t.classname)}" name="${esc(t.name)}" time="0.010">${o.failed ? tag(o, "failure") : ""}</testcase>`).join("");
    case "core": {
      if (attempts.length === 1) return `<testcase name="${esc(t.name)}" classname="${esc(t.classname)}" time="0.004">${failedAttempts.map((o) => tag(o)).join("")}</testcase>`;
      // Surefire with reruns: failed then passed → flakyFailure; failed every time → failure + rerunFailure.
      if (!last.failed) return `<testcase name="${esc(t.name)}" classname="${esc(t.classname)}" time="0.004">${tag(failedAttempts[0]!, "flakyFailure")}</testcase>`;
      return `<testcase name="${esc(t.name)}" classname="${esc(t.classname)}" time="0.004">${tag(failedAttempts[0]!)}${failedAttempts
        .slice(1)
        .map((o) => tag(o, "rerunFailure"))
        .join("")}</testcase>`;
    }
  }
}

export function shaOf(s: string): string {
  return createHash("sha1").update(s).digest("hex");
}

/** Every test's truth as the evaluation reads it at a tree: flaky (any cause), broken (failing now), or healthy. */
export function labelAt(t: CorpusTest, tree: number): "flaky" | "broken" | "healthy" {
  const truth = t.truth;
  if (truth.kind === "flaky" || truth.kind === "order" || truth.kind === "timing") return "flaky";
  if (truth.kind === "broken" && tree >= truth.fromTree && (truth.untilTree === null || tree < truth.untilTree)) return "broken";
  if (truth.kind === "broken" && truth.flakyBefore !== undefined && tree < truth.fromTree) return "flaky";
  return "healthy";
}

/** A flaky test's rate (its chance to fail in one run), or 0. */
export function flakeRateOf(t: CorpusTest): number {
  const truth = t.truth;
  if (truth.kind === "broken") return truth.flakyBefore ?? 0;
  return truth.kind === "flaky" || truth.kind === "order" || truth.kind === "timing" ? truth.rate : 0;
}
