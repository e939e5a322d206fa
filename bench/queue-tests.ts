import { createHash } from "node:crypto";
import { ZUploadTestResultsRequest } from "../src/api/flaky/upload-schemas.js";
import type { Principal } from "../src/auth/tokens.js";
import type { Services } from "../src/app/services.js";
import { uploadTestResults } from "../src/flaky/ingest.js";
import type { RepoRef } from "../src/ports/code-host.js";
import { rng } from "./random.js";

/**
 * The simulated CI's tests, for workloads that model flakes per test (bench/queue-sim.ts): a
 * repository's tests in files, a stable set of flaky tests each failing now and then with one of
 * its own one or two messages, and one test broken by each broken PR. A run's results are
 * uploaded as a JUnit report through the service's upload (as CI would), then its CI result is
 * delivered: failed when a test failed.
 */

/** Per-test flakes of a workload: `count` tests in `files` files, `flaky` of them flaky. */
export type TestModel = { count: number; flaky: number; files: number };

export type TestFailure = { test: number; message: string };

/** Failure messages flaky tests fail with (timeouts, races, services not ready): `%` is the test's own name. */
const FLAKY_MESSAGES = [
  "Timeout - Async callback was not invoked within the 5000 ms timeout specified by jest.setTimeout (%)",
  "connect ECONNREFUSED 127.0.0.1:6379 while seeding % fixtures",
  "expect(element).toBeVisible(): #% was not visible within 2000 ms",
  "socket hang up: GET /api/% (ECONNRESET)",
  "Deadlock found when trying to get lock in %; try restarting transaction",
  "Navigation timeout of 30000 ms exceeded waiting for % to load",
];

export class TestSuite {
  /** The flaky tests, and each one's own messages (its flaky modes). */
  readonly flakyModes = new Map<number, string[]>();
  /** Probability that one flaky test fails in a run: at least one of them fails with the workload's flakeRate. */
  readonly perTestFlakeRate: number;
  readonly #healthy: number[];
  /** Each test's passing testcase, written once. */
  readonly #passing: string[];

  constructor(
    readonly model: TestModel,
    flakeRate: number,
    readonly seed: number,
  ) {
    const random = rng(seed ^ 0x7e57);
    const order = Array.from({ length: model.count }, (_, i) => i);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (const test of order.slice(0, model.flaky)) {
      const first = Math.floor(random() * FLAKY_MESSAGES.length);
      const modes = [first, ...(random() < 0.5 ? [(first + 1 + Math.floor(random() * (FLAKY_MESSAGES.length - 1))) % FLAKY_MESSAGES.length] : [])];
      this.flakyModes.set(
        test,
        modes.map((m) => FLAKY_MESSAGES[m]!.replace("%", this.nameOf(test))),
      );
    }
    this.#healthy = order.slice(model.flaky).sort((a, b) => a - b);
    this.perTestFlakeRate = model.flaky === 0 ? 0 : 1 - (1 - flakeRate) ** (1 / model.flaky);
    this.#passing = Array.from({ length: model.count }, (_, i) => `<testcase classname="${this.classOf(i)}" name="${this.nameOf(i)}" file="${this.fileOf(i)}" time="0.012"/>`);
  }

  nameOf(test: number): string {
    return `behaves as specified in case ${test}`;
  }

  classOf(test: number): string {
    return `suite${test % this.model.files}`;
  }

  fileOf(test: number): string {
    return `src/suite${test % this.model.files}.test.ts`;
  }

  /** The test a broken PR breaks: fixed by the seed and the PR, never a flaky one. */
  brokenTestOf(prNumber: number): number {
    const random = rng((this.seed * 31 + prNumber * 2_654_435_761) >>> 0);
    return this.#healthy[Math.floor(random() * this.#healthy.length)]!;
  }

  /** One CI run's failures: the broken PRs' tests fail, each flaky test fails with its own chance (one of its modes). */
  run(brokenPrs: number[], random: () => number): TestFailure[] {
    const failures = new Map<number, string>();
    for (const [test, modes] of this.flakyModes) {
      if (random() < this.perTestFlakeRate) failures.set(test, modes[Math.floor(random() * modes.length)]!);
    }
    for (const pr of brokenPrs) {
      const test = this.brokenTestOf(pr);
      failures.set(test, `AssertionError: expected ${100 + (test % 17)} to equal ${101 + (test % 17)} (${this.nameOf(test)})`);
    }
    return [...failures].map(([test, message]) => ({ test, message })).sort((a, b) => a.test - b.test);
  }

  /** The run's JUnit report: every test, the failed ones with their message. */
  junit(failures: TestFailure[]): string {
    const failed = new Map(failures.map((f) => [f.test, f.message]));
    const suites: string[][] = Array.from({ length: this.model.files }, () => []);
    for (let test = 0; test < this.model.count; test++) {
      const message = failed.get(test);
      suites[test % this.model.files]!.push(
        message === undefined
          ? this.#passing[test]!
          : `<testcase classname="${this.classOf(test)}" name="${this.nameOf(test)}" file="${this.fileOf(test)}" time="0.012"><failure message="${escapeXml(message)}">${escapeXml(message)}</failure></testcase>`,
      );
    }
    const body = suites.map((cases, file) => `<testsuite name="suite${file}" tests="${cases.length}">\n${cases.join("\n")}\n</testsuite>`).join("\n");
    return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n${body}\n</testsuites>\n`;
  }
}

const escapeXml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** The commit the simulated code host builds for a testing branch: a stable hex sha, as a host would give. */
export function shaOf(testBranch: string): string {
  return createHash("sha1").update(testBranch).digest("hex");
}

/**
 * Uploads a run's results as CI's upload step would (the function behind the API's upload), for
 * the run's testing commit on its testing branch: the upload is linked to the queue run.
 */
export async function uploadRunResults(services: Services, principal: Principal, repo: RepoRef, run: { testBranch: string; sha: string; junit: string }): Promise<void> {
  // Validated as the API validates the request body, then handled by the same function.
  const input = ZUploadTestResultsRequest.parse({ repo, org_url_slug: principal.organizationSlug, commit_sha: run.sha, branch: run.testBranch, junit_xml: [run.junit] });
  await uploadTestResults(services, principal, input);
}
