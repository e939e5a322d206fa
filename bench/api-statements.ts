// npx tsx bench/api-statements.ts [--prs 200]   (GREENLINE_BENCH_SHAPES=30: every statement shape, not the 6 most frequent)
//
// PostgreSQL statements per API request (bench/query-count.ts counts every statement the
// process sends): submitPullRequest (a new PR), setImpactedTargets, cancelPullRequest on a
// queue holding --prs PRs, and getQueue / getSubmittedPullRequest right after a write (a new
// version: the answer is built again) and again at the same version (from the cache). The
// service runs in this process with its worker stopped, so only the request's own statements
// are counted; the counts do not depend on the queue's length (the rows read do).
import { parseArgs } from "node:util";
import { countQueries } from "./query-count.js";
import { queueInProcess } from "./support.js";

const { values } = parseArgs({ options: { prs: { type: "string", default: "200" } } });
const PRS = Number(values.prs);
const { call, queue, fresh, shas, close } = await queueInProcess({ backend: "postgres", prs: PRS, fresh: 10, paused: true });
try {
  const rows: string[] = [];
  /** Counts the statements of `request` each time, after `before` (uncounted) when given. */
  const measure = async (label: string, requests: { before?: () => Promise<unknown>; request: () => Promise<unknown> }[]) => {
    const shapes = new Map<string, number>();
    let total = 0;
    for (const { before, request } of requests) {
      await before?.();
      const count = countQueries();
      try {
        await request();
      } finally {
        count.stop();
      }
      total += count.total;
      for (const [shape, n] of count.shapes) shapes.set(shape, (shapes.get(shape) ?? 0) + n);
    }
    const top = [...shapes.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.GREENLINE_BENCH_SHAPES ?? 6));
    rows.push(`| ${label} | ${(total / requests.length).toFixed(1)} | ${top.map(([shape, n]) => `${(n / requests.length).toFixed(1)}× \`${shape.slice(0, 70).replaceAll("|", "\\|")}\``).join("<br>")} |`);
  };
  const write = (n: number, tag: string) => () => call("setImpactedTargets", { ...queue, pr: { number: n, sha: shas.get(n) }, impactedTargets: [`//${tag}${n}`] });
  await measure(
    "submitPullRequest (new PR)",
    fresh.map((n) => ({ request: () => call("submitPullRequest", { ...queue, pr: { number: n } }) })),
  );
  await measure(
    "setImpactedTargets",
    fresh.map((n) => ({ request: write(n, "t") })),
  );
  await measure(
    "getQueue after a write (built again)",
    fresh.map((n) => ({ before: write(n, "u"), request: () => call("getQueue", queue) })),
  );
  await measure(
    "getQueue, same version (cached)",
    fresh.map(() => ({ request: () => call("getQueue", queue) })),
  );
  await measure(
    "getSubmittedPullRequest after a write",
    fresh.map((n) => ({ before: write(n, "v"), request: () => call("getSubmittedPullRequest", { ...queue, pr: { number: 50 } }) })),
  );
  await measure(
    "getSubmittedPullRequest, same version",
    fresh.map(() => ({ request: () => call("getSubmittedPullRequest", { ...queue, pr: { number: 50 } }) })),
  );
  await measure(
    "cancelPullRequest",
    fresh.map((n) => ({ request: () => call("cancelPullRequest", { ...queue, pr: { number: n } }) })),
  );
  console.log(`\nbench/api-statements — PostgreSQL statements per request, queue of ${PRS} PRs (paused), worker stopped`);
  console.log("| request | statements | most frequent |\n|---|---:|---|");
  for (const row of rows) console.log(row);
} finally {
  await close();
}
