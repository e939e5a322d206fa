import { compress, init } from "@bokuweb/zstd-wasm";
import { pack } from "tar-stream";
import { encodeTestReport } from "../../src/flaky/bundle.js";
import { MAX_TEST_CASES } from "../../src/flaky/ingest.js";
import { BACKENDS } from "../support/backends.js";
import { repo, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * Issue 22: one upload must not stop the service for everyone. Each hostile upload below is
 * answered (refused with a 400 naming the limit it breaks, or stored), its work bounded, and a
 * cheap request sent meanwhile (GET /healthz, over and over) is answered while it is in
 * progress: no answer to one waits more than a fraction of the upload's own time. Times are
 * only ever compared with each other, never with a fixed figure.
 */

const ORG = "acme";
const SHA = "c0ffee".padEnd(40, "0");

type Entry = { name: string; body: string | Buffer };

/** meta.json as Trunk's client writes it (bundle/src/bundle_meta.rs), listing `junit` as its JUnit file set. */
function metaJson(id: string, repoName: string, junit: string[], internalBin: boolean) {
  const files = junit.map((path, i) => ({ original_path: `/ci/reports/${i}.xml`, original_path_rel: `reports/${i}.xml`, path, owners: [], team: null }));
  return {
    version: "1",
    cli_version: "cargo=0.11.9 git=fcbc1bd rustc=1.89.0",
    org: ORG,
    repo: {
      repo: { host: "github.com", owner: ORG, name: repoName },
      repo_root: "/ci",
      repo_url: `https://github.com/${ORG}/${repoName}.git`,
      repo_head_sha: SHA,
      repo_head_sha_short: SHA.slice(0, 7),
      repo_head_branch: "refs/heads/main",
      repo_head_commit_epoch: 1_795_000_000,
      repo_head_commit_message: "Test",
      repo_head_author_name: "Ada",
      repo_head_author_email: "ada@example.com",
    },
    bundle_upload_id: id,
    tags: [],
    file_sets: [{ file_set_type: "Junit", files, glob: "reports/*.xml" }],
    envs: { CI: "true" },
    upload_time_epoch: 1_795_000_000,
    test_command: null,
    os_info: "linux",
    quarantined_tests: [],
    codeowners: null,
    use_uncloned_repo: false,
    num_files: files.length,
    num_tests: 0,
    command_line: "trunk flakytests upload --junit-paths reports/*.xml",
    trunk_envs: {},
    bundle_upload_id_v2: id,
    variant: null,
    internal_bundled_file: internalBin ? { original_path: "/tmp/x/internal.bin", original_path_rel: null, path: "internal.bin", owners: [], team: null } : null,
    failed_tests: [],
  };
}

/** bundle.tar.zstd as the client's bundler.rs makes it: a tar of meta.json and the files, zstd level 15. */
async function bundle(meta: object, entries: Entry[]): Promise<Uint8Array> {
  const tar = pack();
  tar.entry({ name: "meta.json" }, JSON.stringify(meta));
  for (const entry of entries) tar.entry({ name: entry.name }, entry.body);
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(chunk as Buffer);
  return compress(Buffer.concat(chunks), 15);
}

/** `n` one-line testcases, each a test of its own. */
const manyTestCases = (n: number, prefix = "t") => `<testsuite name="s">${Array.from({ length: n }, (_, i) => `<testcase classname="c" name="${prefix}${i}"/>`).join("")}</testsuite>`;

const ping = async (server: TestServer) => {
  const sent = performance.now();
  const answer = await fetch(`${server.url}/healthz`);
  await answer.text();
  if (answer.status !== 200) throw new Error(`/healthz answered ${answer.status}`);
  return performance.now() - sent;
};

/**
 * Runs `work` while asking GET /healthz again and again, one request after another, until it
 * ends: its answer, how long it took, how long each health check waited for its answer, and
 * the longest of a few health checks just before (the machine's own pace).
 */
async function whileServing<T>(server: TestServer, work: () => Promise<T>): Promise<{ result: T; duration: number; pings: number[]; idle: number }> {
  let idle = 0;
  for (let i = 0; i < 5; i++) idle = Math.max(idle, await ping(server));
  let done = false;
  const pings: number[] = [];
  const started = performance.now();
  const working = work().finally(() => {
    done = true;
  });
  const pinging = (async () => {
    while (!done) pings.push(await ping(server));
  })();
  const result = await working;
  const duration = performance.now() - started;
  await pinging;
  return { result, duration, pings, idle };
}

/**
 * Other requests were answered throughout: each health check sent while the upload was in
 * progress was answered, and none waited as much as three quarters of the upload's time (one
 * that waited for the upload to end would wait nearly all of it), or longer than a few times
 * what one waits with nothing else to do (an upload over in a moment).
 */
function expectServedMeanwhile({ duration, pings, idle }: { duration: number; pings: number[]; idle: number }) {
  const longestWait = Math.max(...pings);
  // The figures are in the failure message.
  expect({ longestWait: Math.round(longestWait), duration: Math.round(duration), idle: Math.round(idle), served: pings.length > 0 && (longestWait < 0.75 * duration || longestWait <= 3 * idle) }).toEqual({
    longestWait: expect.any(Number),
    duration: expect.any(Number),
    idle: expect.any(Number),
    served: true,
  });
}

const put = async (url: string, body: Uint8Array) => {
  const answer = await fetch(url, { method: "PUT", headers: { "content-type": "application/octet-stream" }, body });
  return { status: answer.status, body: (await answer.json()) as any };
};

beforeAll(async () => {
  await init();
});

describe.each(BACKENDS)("hostile uploads on $name", (backend) => {
  const clock = new TestClock(Date.parse("2026-11-22T12:00:00Z"));
  let server: TestServer;
  let repos = 0;
  /** A repository of its own for each test, and a bundle upload URL for it. */
  const newRepo = () => repo(`hostile-${++repos}`);
  const createUpload = (name: string) => server.api.ok<{ id: string; url: string }>("metrics/createBundleUpload", { repo: repo(name), orgUrlSlug: ORG, remoteUrls: [] });
  const failingTests = async (r: ReturnType<typeof repo>) =>
    (
      await server.api.ok("flaky-tests/list-failing-tests", {
        repo: r,
        org_url_slug: ORG,
        start_time: new Date(clock.ms - 86_400_000).toISOString(),
        end_time: new Date(clock.ms + 1).toISOString(),
        page_query: { page_size: 100 },
      })
    ).tests;

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now });
  });
  afterAll(() => server?.close());

  test("a bundle whose meta.json lists one file 1,000 times is refused at once, each listing counted against the 64 MiB limit", async () => {
    const target = newRepo();
    const upload = await createUpload(target.name);
    // 100 KB of JUnit (one failing test, then filler), 100 MB as listed: a 78 KB bundle ran the process out of memory.
    const xml = `<testsuite name="s"><testcase classname="c" name="boom"><failure message="x"/></testcase>${"<!-- filler -->".repeat(7000)}</testsuite>`;
    // Listed twice, the file is well within the limit: read (decoded once) and stored.
    const twice = await createUpload(target.name);
    const benign = await whileServing(server, async () => put(twice.url, await bundle(metaJson(twice.id, target.name, ["junit/0", "junit/0"], false), [{ name: "junit/0", body: xml }])));
    expect([benign.result.status, benign.result.body]).toEqual([200, { id: twice.id, stored: true, test_cases: 1, failures: 1 }]);
    const body = await bundle(metaJson(upload.id, target.name, Array(1000).fill("junit/0"), false), [{ name: "junit/0", body: xml }]);
    expect(body.length).toBeLessThan(100_000);
    const outcome = await whileServing(server, () => put(upload.url, body));
    expect([outcome.result.status, outcome.result.body.error.message]).toEqual([400, "(body): the bundle lists files that come to more than the limit of 64 MiB (junit/0 is listed 1000 times, and counts each time)"]);
    // Refused before any of it is read: in less time than the same file listed twice takes to be
    // stored (×3, for the machine's noise; the quickest of three refusals, so that one pause of
    // the process — a collection, a worker's tick — is not taken for reading the bundle).
    let refusedIn = outcome.duration;
    for (let i = 0; i < 2; i++) {
      const again = await createUpload(target.name);
      const listedAgain = await bundle(metaJson(again.id, target.name, Array(1000).fill("junit/0"), false), [{ name: "junit/0", body: xml }]);
      const retry = await whileServing(server, () => put(again.url, listedAgain));
      expect(retry.result.status).toBe(400);
      refusedIn = Math.min(refusedIn, retry.duration);
    }
    expect({ refusedIn: Math.round(refusedIn), storedTwiceIn: Math.round(benign.duration), quick: refusedIn < 3 * benign.duration }).toMatchObject({ quick: true });
    expect(outcome.pings.length).toBeGreaterThan(0);
  });

  test("a report with 40,000 attributes on one testcase is read in linear time: stored, others served meanwhile", async () => {
    const target = newRepo();
    const attributes = Array.from({ length: 40_000 }, (_, i) => ` a${i}="${i}"`).join("");
    const xml = `<testsuite name="s"><testcase classname="c" name="wide"${attributes}><failure message="x"/></testcase></testsuite>`;
    const outcome = await whileServing(server, () => server.api.call("flaky-tests/upload", { repo: target, org_url_slug: ORG, commit_sha: SHA, branch: "main", junit_xml: [xml] }));
    expect([outcome.result.status, outcome.result.body.test_cases]).toEqual([200, 1]);
    // Over in a moment now (linear: test/domain/junit-scanner.test.ts compares 4n with n), most of
    // it one element the scanner reads in one step: a health check sent meanwhile waits for that
    // step, so what is asserted is that one was answered while the upload was still going on (a
    // second was sent), not how its wait compares with so short an upload.
    expect(outcome.pings.length).toBeGreaterThanOrEqual(2);
    // The same attribute twice, the 40,001st, is still found.
    const twice = await server.api.call("flaky-tests/upload", { repo: target, org_url_slug: ORG, commit_sha: SHA, branch: "main", junit_xml: [xml.replace("><failure", ' a7="again"><failure')] });
    expect([twice.status, twice.body.error.details[0].path]).toEqual([400, "junit_xml[0]"]);
    expect(twice.body.error.message).toMatch(/the attribute a7 appears twice in <testcase>/);
  });

  // Reading 1.3 million test cases' worth of zstd to find the limit takes seconds of CPU: a loaded machine stretches it.
  test("a 600 KB bundle that unpacks to 1.3 million testcases is refused, naming the limit, nothing stored, others served meanwhile", async () => {
    const target = newRepo();
    const upload = await createUpload(target.name);
    const body = await bundle(metaJson(upload.id, target.name, ["junit/0"], false), [{ name: "junit/0", body: manyTestCases(1_300_000) }]);
    expect(body.length).toBeLessThan(1024 * 1024);
    const outcome = await whileServing(server, () => put(upload.url, body));
    expect([outcome.result.status, outcome.result.body.error]).toEqual([
      400,
      {
        code: "invalid_argument",
        message: "(body): the bundle holds more than the limit of 200,000 test cases per upload (counted across its reports)",
        details: [{ path: "(body)", message: "the bundle holds more than the limit of 200,000 test cases per upload (counted across its reports)" }],
      },
    ]);
    expectServedMeanwhile(outcome);
    expect(await failingTests(target)).toEqual([]);
  }, 240_000);

  test("the test case limit counts across an upload's reports, and counts testcases, not the text <testcase", async () => {
    const target = newRepo();
    const half = manyTestCases(MAX_TEST_CASES / 2 + 1);
    const refused = await server.api.call("flaky-tests/upload", { repo: target, org_url_slug: ORG, commit_sha: SHA, branch: "main", junit_xml: [half, half.replace(/name="t/g, 'name="u')] });
    expect([refused.status, refused.body.error.details]).toEqual([400, [{ path: "junit_xml", message: "holds more than the limit of 200,000 test cases per upload (counted across its reports)" }]]);
    expect(await failingTests(target)).toEqual([]);
    // A report whose failure output mentions <testcase more often than the limit holds one testcase.
    const quoted = `<testsuite name="s"><testcase classname="c" name="quotes"><failure message="x"><![CDATA[${"<testcase/>\n".repeat(MAX_TEST_CASES + 1)}]]></failure></testcase></testsuite>`;
    const stored = await server.api.call("flaky-tests/upload", { repo: target, org_url_slug: ORG, commit_sha: SHA, branch: "main", junit_xml: [quoted] });
    expect([stored.status, stored.body.test_cases]).toEqual([200, 1]);
  });

  test("a bundle of internal.bin only is refused past the test case limit before it is decoded", async () => {
    const target = newRepo();
    const upload = await createUpload(target.name);
    const runs = Array.from({ length: MAX_TEST_CASES + 1 }, () => ({}));
    const bin = Buffer.from(encodeTestReport({ testResults: [{ testCaseRuns: runs }], uploaderMetadata: { variant: "" } }));
    const answer = await put(upload.url, await bundle(metaJson(upload.id, target.name, [], true), [{ name: "internal.bin", body: bin }]));
    expect([answer.status, answer.body.error.message]).toEqual([400, "(body): the bundle internal.bin holds more than the limit of 200,000 test cases per upload"]);
  });

  test("a zstd frame of many tiny blocks under a large window (each block moves the window) is refused before decoding", async () => {
    const upload = await createUpload(newRepo().name);
    // A 64 MiB window (descriptor 0x80) and 100,000 raw blocks of one byte: 400 KB, 6.4 TB of copying for the decoder.
    const blocks = Buffer.alloc(100_000 * 4);
    for (let i = 0; i < 100_000; i++) {
      const header = (1 << 3) | (i === 99_999 ? 1 : 0);
      blocks.writeUIntLE(header, i * 4, 3);
      blocks[i * 4 + 3] = 0x20;
    }
    const outcome = await whileServing(server, () => put(upload.url, Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x80]), blocks])));
    expect([outcome.result.status, outcome.result.body.error.message]).toEqual([
      400,
      "(body): the bundle has more zstd blocks than its window allows: decoding 100000 blocks under a window of 67108864 bytes moves more than the limit of 32 GiB",
    ]);
  });

  test("a large upload that is within the limits is stored while other requests are answered throughout", async () => {
    const target = newRepo();
    const xml = manyTestCases(30_000);
    const outcome = await whileServing(server, () => server.api.call("flaky-tests/upload", { repo: target, org_url_slug: ORG, commit_sha: SHA, branch: "main", junit_xml: [xml] }));
    expect([outcome.result.status, outcome.result.body.test_cases]).toEqual([200, 30_000]);
    expectServedMeanwhile(outcome);
    expect(outcome.pings.length).toBeGreaterThan(3);
  });
});
