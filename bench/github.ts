import { BACKENDS } from "../test/support/backends.js";
import { GitHubSimulator } from "../test/support/github-simulator.js";
import { startTestServer, type TestServer } from "../test/support/harness.js";
import { githubAppOf, installationCreated, postWebhook } from "../test/support/webhook-post.js";

/**
 * npm run bench:github [-- --prs 40] [-- --counts-only] [-- --only paced]
 *
 * GitHub calls per merged PR: the real service (Probot, Octokit, worker, SQLite) against the
 * GitHub simulator, as the tests run it (so it runs with tsx: the simulator lives in
 * test/support, outside the build). Each scenario opens N PRs, submits them with the
 * `/greenline merge` comment, lets simulated CI pass every testing branch (a signed `status`
 * webhook), delivers GitHub's `push` for each move of the target, and counts the requests in
 * the simulator's log (installation tokens included), grouped by route.
 *
 * Then, timed (unless --counts-only), with Octokit's write throttle on as in production (a
 * second between writes) and the worker running on its own: `paced`, N PRs submitted at once by
 * comment, CI taking 3 s per testing branch; `backlog`, the time from the CI result that makes a
 * run green to the merge call (the fast-forward) while no status waits, and while a status for
 * each of N newly submitted PRs waits. The last line is one JSON object keyed by scenario.
 */

const prsArg = process.argv.indexOf("--prs");
const N = prsArg > 0 ? Number(process.argv[prsArg + 1]) : 20;
const COUNTS_ONLY = process.argv.includes("--counts-only");
const onlyArg = process.argv.indexOf("--only");
/** Whether scenario `name` runs (`--only name` runs that one). */
const runs = (name: string) => onlyArg < 0 || process.argv[onlyArg + 1] === name;
/** How long simulated CI takes in the timed scenarios. */
const CI_MS = 3_000;
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

const repository = (name: string) => ({ id: 1, name, full_name: `${OWNER}/${name}`, html_url: `https://github.com/${OWNER}/${name}`, owner: { login: OWNER, name: OWNER } });

async function main(): Promise<void> {
  const results: Record<string, object> = {};
  try {
    await countCalls(results);
    if (!COUNTS_ONLY) await timed(results);
  } finally {
    console.log(JSON.stringify(results));
  }
}

async function countCalls(results: Record<string, object>): Promise<void> {
  const gh = await new GitHubSimulator().start();
  const sqlite = BACKENDS.find((b) => b.name === "sqlite")!;
  const server: TestServer = await startTestServer(sqlite, { githubApp: githubAppOf(gh) });
  const deliver = async (event: string, payload: object) => {
    const response = await postWebhook(server.url, gh, event, payload);
    if (response.status !== 200) throw new Error(`${event} delivery answered ${response.status}`);
    // Deliveries are recorded and answered at once; the worker processes them.
    await server.greenline.worker.processWebhooks();
  };
  const installation = { id: INSTALLATION };
  gh.installApp(INSTALLATION, OWNER);
  await deliver("installation", installationCreated(INSTALLATION, OWNER, 910));
  const api = await server.clientFor(OWNER);

  try {
    for (const scenario of SCENARIOS) {
      const name = scenario.name;
      if (!runs(name)) continue;
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
      const callsPerMergedPr = Number((requests.length / Math.max(merged, 1)).toFixed(1));
      results[name] = { prs: N, merged, calls: requests.length, callsPerMergedPr, ciRuns };
      console.log(`\n${name}: ${scenario.description}`);
      console.log(`  ${merged}/${N} merged, ${ciRuns} CI runs, ${requests.length} GitHub calls: ${callsPerMergedPr} per merged PR`);
      for (const [route, count] of [...byRoute].sort((a, b) => b[1] - a[1])) console.log(`  ${String(count).padStart(5)}  ${route}`);
    }
  } finally {
    await server.close();
    await gh.stop();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => Number((ms / 1000).toFixed(2));

/**
 * The timed scenarios: the service as in production (Octokit's write throttle on, the worker
 * ticking on its own), simulated CI answering each testing branch CI_MS after it appears
 * (`ci: false` holds the answers: the scenario delivers them), GitHub's `push` delivered for
 * each move of the target. A run's green-to-merge time is from the post of the `status` webhook
 * that made it green to the simulator's receipt of the fast-forward of the target to it.
 */
async function timed(results: Record<string, object>): Promise<void> {
  const gh = await new GitHubSimulator().start();
  const sqlite = BACKENDS.find((b) => b.name === "sqlite")!;
  const server: TestServer = await startTestServer(sqlite, { githubApp: githubAppOf(gh, { throttle: true }), startWorker: true });
  const installation = { id: INSTALLATION + 1 };
  const owner = `${OWNER}-timed`;
  gh.installApp(installation.id, owner);
  const post = async (event: string, payload: object) => {
    const response = await postWebhook(server.url, gh, event, payload);
    if (response.status !== 200) throw new Error(`${event} delivery answered ${response.status}`);
  };
  await post("installation", installationCreated(installation.id, owner, 920));
  // The delivery is answered at once and processed by the worker: the installation must be
  // known before a queue is created on it (else 404, as for a repository nobody installed on).
  await server.greenline.worker.processWebhooks();
  const api = await server.clientFor(owner);
  const repositoryOf = (name: string) => ({ ...repository(name), full_name: `${owner}/${name}`, owner: { login: owner, name: owner } });
  /** Green times by tested sha; CI and pushes, every 50 ms, until stopped. */
  const harness = (name: string, ci: boolean) => {
    const repo = `${owner}/${name}`;
    const green = new Map<string, number>();
    const seen = new Set<string>();
    let main = gh.branchHead(repo, "main");
    let stopped = false;
    const greenRun = async (sha: string) => {
      green.set(sha, performance.now());
      await post("status", { sha, context: "ci/test", state: "success", repository: repositoryOf(name), installation });
    };
    const loop = (async () => {
      while (!stopped) {
        for (const branch of gh.branches(repo, "greenline/")) {
          if (seen.has(branch.sha)) continue;
          seen.add(branch.sha);
          if (ci) setTimeout(() => void greenRun(branch.sha).catch((e) => console.error(e)), CI_MS);
        }
        const head = gh.branchHead(repo, "main");
        if (head !== main) {
          await post("push", { ref: "refs/heads/main", before: main, after: head, deleted: false, repository: repositoryOf(name), installation });
          main = head;
        }
        await sleep(50);
      }
    })();
    /** ms from green to the fast-forward to `sha` (null: not merged so). */
    const greenToMerge = (sha: string): number | null => {
      const at = green.get(sha);
      // The fast-forward: GraphQL's updateRefs moving main to `sha` (answered without errors), or the REST push.
      const movesMain = (r: (typeof gh.requests)[number]) =>
        r.path === "/graphql" && r.status === 200 && !(r.response as any)?.errors && ((r.graphql?.variables as any)?.input?.refUpdates ?? []).some((u: any) => u.name === "refs/heads/main" && u.afterOid === sha);
      const merge = gh.requests.find((r) => movesMain(r) || (r.method === "PATCH" && r.path.endsWith("/git/refs/heads/main") && r.status === 200 && (r.response as any)?.object?.sha === sha));
      return at === undefined || !merge ? null : merge.at - at;
    };
    return {
      repo,
      green,
      greenRun,
      greenToMerge,
      stop: async () => {
        stopped = true;
        await loop;
      },
    };
  };
  const pendingEffects = (name: string) => server.greenline.services.db.read((tx) => tx.effect.count({ where: { doneAt: null, queue: { repository: { name } } } }));
  const until = async (what: string, done: () => boolean | Promise<boolean>, timeoutMs = 15 * 60_000) => {
    const started = performance.now();
    while (!(await done())) {
      if (performance.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
      await sleep(100);
    }
  };

  try {
    // paced: N PRs at once by comment, CI_MS builds.
    if (runs("paced")) {
      const name = "paced";
      const queue = { repo: { host: "github.com", owner, name }, targetBranch: "main" };
      await api.ok("createQueue", { ...queue, requiredStatuses: ["ci/test"], concurrency: 4, mergeMethod: "merge_commit" });
      for (let n = 1; n <= N; n++) gh.openPr(`${owner}/${name}`, { number: n, files: { [`src/file-${n}.ts`]: `export const n = ${n};\n` } });
      gh.grant(`${owner}/${name}`, "dev", "write");
      const h = harness(name, true);
      const before = gh.requests.length;
      const started = performance.now();
      for (let n = 1; n <= N; n++) {
        await post("issue_comment", {
          action: "created",
          issue: { number: n, pull_request: { url: `https://api.github.com/repos/${h.repo}/pulls/${n}` } },
          comment: { id: 1000 + n, body: "/greenline merge", user: { login: "dev", type: "User" } },
          repository: repositoryOf(name),
          installation,
          sender: { login: "dev", type: "User" },
        });
      }
      const merged = () => Array.from({ length: N }, (_, i) => gh.pr(h.repo, i + 1)?.merged).filter(Boolean).length;
      await until("the paced queue to merge", () => merged() === N);
      const allMergedS = seconds(performance.now() - started);
      await until("the paced queue's outbox", async () => (await pendingEffects(name)) === 0);
      await h.stop();
      const requests = gh.requests.slice(before);
      const waits = [...h.green.keys()]
        .map(h.greenToMerge)
        .filter((ms): ms is number => ms !== null)
        .sort((a, b) => a - b);
      const statuses = requests.filter((r) => r.method === "POST" && r.path.includes("/statuses/")).length;
      results[name] = {
        prs: N,
        merged: merged(),
        allMergedS,
        calls: requests.length,
        callsPerMergedPr: Number((requests.length / N).toFixed(1)),
        statusesPerMergedPr: Number((statuses / N).toFixed(1)),
        greenToMergeP50S: seconds(waits[Math.floor(waits.length / 2)] ?? Number.NaN),
        greenToMergeMaxS: seconds(waits.at(-1) ?? Number.NaN),
      };
      console.log(`\n${name}: ${N} PRs by comment at once, single mode, 4 in flight, ${CI_MS / 1000} s CI, write throttle on`);
      console.log(`  all merged after ${allMergedS} s; ${requests.length} calls (${statuses} statuses): ${(requests.length / N).toFixed(1)} per merged PR`);
      console.log(`  green to merge: p50 ${seconds(waits[Math.floor(waits.length / 2)] ?? Number.NaN)} s, max ${seconds(waits.at(-1) ?? Number.NaN)} s (${waits.length} runs)`);
    }
    // backlog: green to merge of one run, with no status waiting, then with one for each of N new PRs.
    if (runs("backlog")) {
      const name = "backlog";
      const queue = { repo: { host: "github.com", owner, name }, targetBranch: "main" };
      await api.ok("createQueue", { ...queue, requiredStatuses: ["ci/test"], concurrency: 1, mergeMethod: "merge_commit" });
      const h = harness(name, false);
      const rounds = 3;
      for (let n = 1; n <= rounds + 1 + N; n++) gh.openPr(h.repo, { number: n, files: { [`src/file-${n}.ts`]: `export const n = ${n};\n` } });
      const tested = new Set<string>();
      /** The testing branch of the PR just submitted (the only run in flight), once the outbox is done. */
      const testingSha = async (pr: number) => {
        let sha: string | undefined;
        await until(`PR #${pr}'s testing branch`, async () => {
          sha = gh.branches(h.repo, "greenline/").find((b) => !tested.has(b.sha))?.sha;
          return sha !== undefined && (await pendingEffects(name)) === 0;
        });
        tested.add(sha!);
        return sha!;
      };
      const idle: number[] = [];
      for (let n = 1; n <= rounds; n++) {
        await api.ok("submitPullRequest", { ...queue, pr: { number: n } });
        const sha = await testingSha(n);
        await h.greenRun(sha);
        await until(`PR #${n}'s merge`, () => h.greenToMerge(sha) !== null);
        idle.push(h.greenToMerge(sha)!);
        await until("the backlog queue's outbox", async () => (await pendingEffects(name)) === 0);
      }
      const first = rounds + 1;
      await api.ok("submitPullRequest", { ...queue, pr: { number: first } });
      const sha = await testingSha(first);
      // Someone looked at each PR before (its page): GitHub knows its mergeability, and the
      // submissions need no re-reads, which would add reads in the worker's round to the statuses.
      for (let n = first + 1; n <= first + N; n++) await fetch(`${gh.url}/repos/${h.repo}/pulls/${n}`, { headers: { authorization: `token ghs_installation_${installation.id}` } });
      // N PRs join the line while the worker is stopped (a status each waits), then the worker
      // starts on them, and the run goes green while it is at it.
      await server.greenline.worker.stop();
      for (let n = first + 1; n <= first + N; n++) await api.ok("submitPullRequest", { ...queue, pr: { number: n } });
      server.greenline.worker.start();
      await sleep(1_500);
      const waiting = await pendingEffects(name);
      await h.greenRun(sha);
      await until(`PR #${first}'s merge behind the backlog`, () => h.greenToMerge(sha) !== null);
      const behind = h.greenToMerge(sha)!;
      // What GitHub was asked between the green result and the merge, by route.
      const greenAt = h.green.get(sha)!;
      const between = new Map<string, number>();
      for (const r of gh.requests) if (r.at > greenAt && r.at < greenAt + behind) between.set(routeOf(r.method, r.path), (between.get(routeOf(r.method, r.path)) ?? 0) + 1);
      await until("the backlog queue's outbox", async () => (await pendingEffects(name)) === 0);
      await h.stop();
      idle.sort((a, b) => a - b);
      results[name] = { greenToMergeNoBacklogS: seconds(idle[Math.floor(idle.length / 2)]!), greenToMergeWithBacklogS: seconds(behind), effectsWaitingAtGreen: waiting };
      console.log(`\n${name}: green to merge (the fast-forward), single mode, 1 in flight, write throttle on`);
      console.log(`  no status waiting: ${idle.map(seconds).join(", ")} s; ${N} PRs just submitted, ${waiting} effects waiting at green: ${seconds(behind)} s`);
      console.log(`  asked between that green result and its merge: ${[...between].map(([route, count]) => `${count} ${route}`).join(", ")}`);
    }
  } finally {
    await server.close();
    await gh.stop();
  }
}

await main();
