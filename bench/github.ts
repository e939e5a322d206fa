import { BACKENDS } from "../test/support/backends.js";
import { GitHubSimulator } from "../test/support/github-simulator.js";
import { startTestServer, type TestServer } from "../test/support/harness.js";
import { githubAppOf, installationCreated, postWebhook } from "../test/support/webhook-post.js";

/**
 * npm run bench:github [-- --prs 40]
 *
 * GitHub calls per merged PR: the real service (Probot, Octokit, worker, SQLite) against the
 * GitHub simulator, as the tests run it (so it runs with tsx: the simulator lives in
 * test/support, outside the build). Each scenario opens N PRs, submits them with the
 * `/greenline merge` comment, lets simulated CI pass every testing branch (a signed `status`
 * webhook), delivers GitHub's `push` for each move of the target, and counts the requests in
 * the simulator's log (installation tokens included), grouped by route. The last line is one
 * JSON object keyed by scenario.
 */

const prsArg = process.argv.indexOf("--prs");
const N = prsArg > 0 ? Number(process.argv[prsArg + 1]) : 20;
const OWNER = "bench-org";
const INSTALLATION = 91;

type Scenario = { name: string; description: string; settings: Record<string, unknown> };
const SCENARIOS: Scenario[] = [
  { name: "single", description: "single mode, 4 runs in flight, merge commits (fast-forward)", settings: { concurrency: 4, mergeMethod: "merge_commit" } },
  { name: "single-squash", description: "single mode, 4 runs in flight, squash merges", settings: { concurrency: 4, mergeMethod: "squash" } },
  { name: "batch", description: "batches of 4 to 8, 2 in flight, merge commits", settings: { concurrency: 2, batch: true, batchingMinSize: 4, mergeMethod: "merge_commit" } },
];

/** "GET /repos/:o/:r/pulls/:n" from "GET /repos/bench-org/single/pulls/3". */
function routeOf(method: string, path: string): string {
  const route = path
    .replace(/^\/repos\/[^/]+\/[^/]+/, "/repos/:repo")
    .replace(/\/(greenline|greenline-scratch)\/.+$/, "/$1/:branch")
    .replace(/[0-9a-f]{40}/g, ":sha")
    .replace(/\/\d+/g, "/:n");
  return `${method} ${route}`;
}

async function main(): Promise<void> {
  const gh = await new GitHubSimulator().start();
  const sqlite = BACKENDS.find((b) => b.name === "sqlite")!;
  const server: TestServer = await startTestServer(sqlite, { githubApp: githubAppOf(gh) });
  const deliver = async (event: string, payload: object) => {
    const response = await postWebhook(server.url, gh, event, payload);
    if (response.status !== 200) throw new Error(`${event} delivery answered ${response.status}`);
    // Deliveries are recorded and answered at once; the worker processes them.
    await server.greenline.worker.processWebhooks();
  };
  const repository = (name: string) => ({ id: 1, name, full_name: `${OWNER}/${name}`, html_url: `https://github.com/${OWNER}/${name}`, owner: { login: OWNER, name: OWNER } });
  const installation = { id: INSTALLATION };
  gh.installApp(INSTALLATION, OWNER);
  await deliver("installation", installationCreated(INSTALLATION, OWNER, 910));
  const api = await server.clientFor(OWNER);
  const results: Record<string, { prs: number; merged: number; calls: number; callsPerMergedPr: number; ciRuns: number }> = {};

  try {
    for (const scenario of SCENARIOS) {
      const name = scenario.name;
      const repo = `${OWNER}/${name}`;
      const queue = { repo: { host: "github.com", owner: OWNER, name }, targetBranch: "main" };
      await api.ok("createQueue", { ...queue, requiredStatuses: ["ci/test"], ...scenario.settings });
      for (let n = 1; n <= N; n++) gh.openPr(repo, { number: n, files: { [`src/file-${n}.ts`]: `export const n = ${n};\n` } });
      gh.grant(repo, "dev", "write");
      const before = gh.requests.length;
      for (let n = 1; n <= N; n++) {
        await deliver("issue_comment", {
          action: "created",
          issue: { number: n, pull_request: { url: `https://api.github.com/repos/${repo}/pulls/${n}` } },
          comment: { id: n, body: "/greenline merge", user: { login: "dev", type: "User" } },
          repository: repository(name),
          installation,
          sender: { login: "dev", type: "User" },
        });
      }
      const reported = new Set<string>();
      let main = gh.branchHead(repo, "main");
      let ciRuns = 0;
      for (let round = 0; round < 20 * N; round++) {
        await server.greenline.worker.drain();
        for (const branch of gh.branches(repo, "greenline/")) {
          if (reported.has(branch.sha)) continue;
          reported.add(branch.sha);
          ciRuns++;
          await deliver("status", { sha: branch.sha, context: "ci/test", state: "success", repository: repository(name), installation });
        }
        await server.greenline.worker.drain();
        const head = gh.branchHead(repo, "main");
        if (head !== main) {
          await deliver("push", { ref: "refs/heads/main", before: main, after: head, deleted: false, repository: repository(name), installation });
          main = head;
        }
        const { enqueuedPullRequests } = await api.ok("getQueue", queue);
        const effects = await server.greenline.services.db.read((tx) => tx.effect.count({ where: { doneAt: null, queue: { repository: { name } } } }));
        if (enqueuedPullRequests.length === 0 && effects === 0) break;
      }
      const requests = gh.requests.slice(before);
      let merged = 0;
      for (let n = 1; n <= N; n++) if (gh.pr(repo, n)?.merged) merged++;
      const byRoute = new Map<string, number>();
      for (const r of requests) byRoute.set(routeOf(r.method, r.path), (byRoute.get(routeOf(r.method, r.path)) ?? 0) + 1);
      results[name] = { prs: N, merged, calls: requests.length, callsPerMergedPr: Number((requests.length / Math.max(merged, 1)).toFixed(1)), ciRuns };
      console.log(`\n${name}: ${scenario.description}`);
      console.log(`  ${merged}/${N} merged, ${ciRuns} CI runs, ${requests.length} GitHub calls: ${results[name].callsPerMergedPr} per merged PR`);
      for (const [route, count] of [...byRoute].sort((a, b) => b[1] - a[1])) console.log(`  ${String(count).padStart(5)}  ${route}`);
    }
  } finally {
    await server.close();
    await gh.stop();
  }
  console.log(JSON.stringify(results));
}

await main();
