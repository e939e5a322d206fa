// npx tsx bench/hostile-uploads.ts
//
// Issue 22's hostile uploads, timed in this process (no server): how long the JUnit scanner
// takes on a 400 KB report with 40,000 attributes on one testcase, and how long a 600 KB
// bundle that unpacks to 1.3 million one-line testcases takes to be read (zstd, tar, meta.json)
// and refused at the 200,000 test case limit: the work the service does before it answers 400.
// The longest stretch without a turn of the event loop is reported next to each: what another
// request waits at most meanwhile. Figures go to docs/benchmarks.md.
import { compress, init } from "@bokuweb/zstd-wasm";
import { pack } from "tar-stream";
import { readBundle } from "../src/flaky/bundle.js";
import { MAX_TEST_CASES } from "../src/flaky/ingest.js";
import { JUnitReader, parseJUnit } from "../src/formats/junit.js";

/** Runs `work`, measuring it and the longest time the event loop went without a turn meanwhile. */
async function timed<T>(work: () => Promise<T> | T): Promise<{ result: T; ms: number; longestHoldMs: number }> {
  let longest = 0;
  let last = performance.now();
  let running = true;
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  const started = performance.now();
  const result = await work();
  const ms = performance.now() - started;
  running = false;
  tick();
  return { result, ms, longestHoldMs: longest };
}

await init();

const attributes = Array.from({ length: 40_000 }, (_, i) => ` a${i}="${i}"`).join("");
const wide = `<testsuite name="s"><testcase classname="c" name="wide"${attributes}/></testsuite>`;
const scan = await timed(() => parseJUnit(wide, () => {}));
console.log(`40,000 attributes (${(wide.length / 1024).toFixed(0)} KB): scanned in ${scan.ms.toFixed(0)} ms`);

const xml = `<testsuite name="s">${Array.from({ length: 1_300_000 }, (_, i) => `<testcase classname="c" name="t${i}"/>`).join("")}</testsuite>`;
const tar = pack();
const meta = {
  version: "1",
  org: "acme",
  repo: { repo: { host: "github.com", owner: "acme", name: "web" }, repo_head_sha: "c0ffee0000", repo_head_branch: "main" },
  bundle_upload_id: "b",
  file_sets: [{ file_set_type: "Junit", files: [{ path: "junit/0" }] }],
};
tar.entry({ name: "meta.json" }, JSON.stringify(meta));
tar.entry({ name: "junit/0" }, xml);
tar.finalize();
const chunks: Buffer[] = [];
for await (const chunk of tar) chunks.push(chunk as Buffer);
const body = compress(Buffer.concat(chunks), 15);
const refusal = await timed(async () => {
  const bundle = await readBundle(body);
  // What the upload service does next: count the testcases, reading only up to the limit.
  const reader = new JUnitReader(bundle.junit[0]!.xml);
  let count = 0;
  for (let batch = reader.read(4096); batch.length > 0 && count <= MAX_TEST_CASES; batch = reader.read(4096)) {
    count += batch.length;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return count;
});
console.log(
  `1.3 million testcases (${(body.length / 1024).toFixed(0)} KB bundle, ${(xml.length / 2 ** 20).toFixed(1)} MiB of XML): read and refused after ${refusal.result.toLocaleString("en-US")} testcases in ${refusal.ms.toFixed(0)} ms; longest hold of the event loop ${refusal.longestHoldMs.toFixed(0)} ms`,
);
