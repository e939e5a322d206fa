// npx tsc -p tsconfig.build.json && node [--cpu-prof] dist/bench/write-cost.js [--prs 1000] [--writes 200] [--backend sqlite|postgres]
//
// Milliseconds per API write (submitPullRequest of a new PR, setImpactedTargets, cancelPullRequest)
// on a queue holding --prs PRs, one request at a time, the service in this process with its
// worker stopped (so only the request's own work is timed), beside getQueue right after each
// write (the answer built again). Where bench:api measures throughput under ten connections
// (serialized by the queue's lock), this says what one write costs and, under --cpu-prof, where.
import { parseArgs } from "node:util";
import { queueInProcess } from "./support.js";

const { values } = parseArgs({
  options: { prs: { type: "string", default: "1000" }, writes: { type: "string", default: "200" }, backend: { type: "string", default: "sqlite" }, paused: { type: "boolean", default: false } },
});
const PRS = Number(values.prs);
const WRITES = Number(values.writes);
const { call, queue, fresh, shas, close } = await queueInProcess({ backend: values.backend === "postgres" ? "postgres" : "sqlite", prs: PRS, fresh: WRITES, paused: values.paused, concurrency: 3 });
try {
  const time = async (label: string, request: (n: number) => Promise<unknown>) => {
    const started = process.hrtime.bigint();
    for (const n of fresh) await request(n);
    const ms = Number(process.hrtime.bigint() - started) / 1e6 / fresh.length;
    console.log(`${label.padEnd(40)} ${ms.toFixed(2)} ms`);
  };
  console.log(`bench/write-cost — ${values.backend}, ${PRS} PRs queued${values.paused ? " (paused)" : ""}, ${WRITES} requests each, one at a time`);
  await time("submitPullRequest (new PR)", (n) => call("submitPullRequest", { ...queue, pr: { number: n } }));
  await time("setImpactedTargets", (n) => call("setImpactedTargets", { ...queue, pr: { number: n, sha: shas.get(n) }, impactedTargets: [`//t${n}`] }));
  await time("getQueue after setImpactedTargets", async (n) => {
    await call("setImpactedTargets", { ...queue, pr: { number: n, sha: shas.get(n) }, impactedTargets: [`//u${n}`] });
    await call("getQueue", queue);
  });
  await time("getQueue, same version", () => call("getQueue", queue));
  await time("cancelPullRequest", (n) => call("cancelPullRequest", { ...queue, pr: { number: n } }));
} finally {
  await close();
}
