import { Probot, ProbotOctokit } from "probot";
import { GitHubCodeHost } from "../../src/adapters/github/code-host.js";
import { WriteGate } from "../../src/adapters/github/write-order.js";
import { nextEffectToRun } from "../../src/store/effects.js";
import { EFFECT_BACKOFF } from "../../src/worker/effects.js";
import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, TestClock, type TestServer } from "../support/harness.js";

const STATUS_CONTEXT = "greenline/merge-queue";

/**
 * The order of Greenline's writes to GitHub (docs/github.md, "Write order"): a queue's work (a
 * merge, a testing branch) goes before its statuses and comments, a status superseded by a later
 * one of the same PR head is never sent (and a crash between skipping it and sending the later
 * one loses nothing), and the process's write gate lets the best waiting write go next.
 * Orders are read from the simulator's request log; no test times anything.
 */
describe.each(BACKENDS)("write order, $name", (backend) => {
  const OWNER = "octo-order";
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const clock = new TestClock();

  /** Index in the simulator's log of the requests from `from` on that match. */
  const indexesOf = (from: number, method: string, path: RegExp) => gh.requests.flatMap((r, i) => (i >= from && r.method === method && path.test(r.path) ? [i] : []));
  const statusesOf = (name: string, sha: string) => gh.statuses.filter((s) => s.repo === `${OWNER}/${name}` && s.sha === sha && s.context === STATUS_CONTEXT);
  const queueIdOf = async (name: string) => (await server.greenline.services.db.read((tx) => tx.queue.findFirst({ where: { repository: { name } }, select: { id: true } })))!.id;

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    gh.useClock(() => clock.ms);
    server = await startTestServer(backend, { githubApp: githubAppOf(gh), now: clock.now, random: () => 0.5 });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 93, accountId: 930 });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("a merge decided while statuses wait in the outbox is made before them", async () => {
    const name = "merge-first";
    const repo = `${OWNER}/${name}`;
    await api.ok("createQueue", { ...github.queue(name), requiredStatuses: ["ci/test"], mergeMethod: "merge_commit", concurrency: 1 });
    for (let n = 1; n <= 6; n++) gh.openPr(repo, { number: n, files: { [`src/${n}.ts`]: `${n}` } });
    for (let n = 1; n <= 6; n++) await api.ok("submitPullRequest", github.pr(name, n));
    await github.drain();
    const tested = github.testingBranches(name)[0]!.sha;
    // Five waiting PRs are cancelled: each one's last status ("cancelled") waits in the outbox
    // (the worker has not run), and no later decision replaces it.
    for (let n = 2; n <= 6; n++) await api.ok("cancelPullRequest", github.pr(name, n));
    const from = gh.requests.length;
    // The run goes green: its merge is decided after those statuses.
    await github.ciPassesOnEveryBranch(name);
    await github.drain();
    expect(gh.branchHead(repo, "main")).toBe(tested);
    // The fast-forward: GraphQL's updateRefs.
    const merge = indexesOf(from, "POST", /^\/graphql$/);
    const statuses = indexesOf(from, "POST", /\/statuses\//);
    expect(merge).toHaveLength(1);
    expect(statuses.length).toBeGreaterThanOrEqual(5);
    // The fast-forward went first; the statuses (queued before it) after. It was the other way round.
    expect(merge[0]!).toBeLessThan(statuses[0]!);
    // Every PR still shows its latest state.
    expect(statusesOf(name, gh.pr(repo, 1)!.headSha).at(-1)).toMatchObject({ state: "success" });
    for (let n = 2; n <= 6; n++) expect(statusesOf(name, gh.pr(repo, n)!.headSha).at(-1)).toMatchObject({ state: "error" });
  });

  /**
   * PR #2 waits behind #1; its first status fails (502, twice: the HTTP layer asks once more)
   * and waits out a backoff, so it stays in the outbox when the next decision (#1 cancelled,
   * #2 starts testing) appends a newer status for the same head.
   */
  async function supersededStatus(name: string): Promise<{ sha: string; from: number }> {
    const repo = `${OWNER}/${name}`;
    await api.ok("createQueue", { ...github.queue(name), requiredStatuses: ["ci/test"], mergeMethod: "merge_commit", concurrency: 1 });
    gh.openPr(repo, { number: 1, files: { "src/1.ts": "1" } });
    gh.openPr(repo, { number: 2, files: { "src/2.ts": "2" } });
    await api.ok("submitPullRequest", github.pr(name, 1));
    await github.drain();
    const sha = gh.pr(repo, 2)!.headSha;
    gh.failNext("POST", new RegExp(`/${name}/statuses/${sha}$`), 502, "Server Error", 2);
    await api.ok("submitPullRequest", github.pr(name, 2));
    await github.drain();
    expect(statusesOf(name, sha)).toEqual([]);
    await api.ok("cancelPullRequest", github.pr(name, 1));
    await github.drain();
    expect(await github.stateOf(name, 2)).toBe("testing");
    return { sha, from: gh.requests.length };
  }

  test("a status superseded by a later one of the same PR head is not sent; the later one is, once", async () => {
    const name = "superseded";
    const { sha, from } = await supersededStatus(name);
    clock.advance(EFFECT_BACKOFF.capMs);
    await github.drain();
    // Only the newer status went: the failed "submitted" one was not sent again before it.
    expect(indexesOf(from, "POST", new RegExp(`/statuses/${sha}$`))).toHaveLength(1);
    expect(statusesOf(name, sha)).toHaveLength(1);
    expect(statusesOf(name, sha)[0]).toMatchObject({ state: "pending", description: expect.stringContaining("Testing") });
  });

  test("a crash after the superseded status is skipped and before the later one is sent loses nothing", async () => {
    const name = "crash-between";
    const { sha, from } = await supersededStatus(name);
    clock.advance(EFFECT_BACKOFF.capMs);
    const queueId = await queueIdOf(name);
    // What the worker does before it sends: skip the superseded status. Then the process dies.
    await nextEffectToRun(server.greenline.services.db, queueId, clock.now());
    expect(indexesOf(from, "POST", /\/statuses\//)).toEqual([]);
    const rows = await server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { queueId, kind: "pr_status" }, orderBy: { seq: "asc" } }));
    const ofHead = rows.filter((row) => (JSON.parse(row.payload) as { sha: string }).sha === sha);
    expect(ofHead.map((row) => ({ done: row.doneAt !== null, gaveUp: row.gaveUp }))).toEqual([
      { done: true, gaveUp: false },
      { done: false, gaveUp: false },
    ]);
    // The later status took over the failed one's attempt (a retry stays a retry).
    expect(ofHead[1]!.attempts).toBe(1);
    // A worker starting afresh (the state is all in the database) sends the later status.
    await github.drain();
    expect(statusesOf(name, sha)).toHaveLength(1);
    expect(statusesOf(name, sha)[0]).toMatchObject({ state: "pending", description: expect.stringContaining("Testing") });
  });

  test("the write gate lets the best waiting write go next: a clean-up before statuses asked for earlier", async () => {
    const name = "gate";
    const repo = `${OWNER}/${name}`;
    gh.openPr(repo, { number: 1, files: { "src/1.ts": "1" } });
    gh.openPr(repo, { number: 2, files: { "src/2.ts": "2" } });
    const sha = gh.pr(repo, 1)!.headSha;
    // A branch to delete, as a run's testing branch is when it is cancelled.
    gh.createBranch(repo, "greenline/main-run-1", gh.pr(repo, 2)!.headSha);
    const probot = new Probot({
      appId: gh.appId,
      privateKey: gh.privateKey,
      baseUrl: gh.url,
      Octokit: ProbotOctokit.defaults({ retry: { enabled: false }, throttle: { enabled: false } }),
    });
    // The gate's clock stands still until every write waits for its turn: then it runs, and
    // the turns come 100 ms apart. The order is what is asserted, never a time.
    let frozen = true;
    const gate = new WriteGate(100, () => (frozen ? 0 : 1_000_000 + performance.now()));
    const host = new GitHubCodeHost(probot, { writeGate: gate });
    const ref = { host: "github.com", owner: OWNER, name };
    // One write takes the first turn (and the installation's token is asked for once).
    await host.setPullRequestStatus(ref, sha, { state: "pending", description: "status 0" });
    const from = gh.requests.length;
    const statuses = [1, 2, 3, 4].map((i) => host.setPullRequestStatus(ref, sha, { state: "pending", description: `status ${i}` }));
    // While four statuses wait, a clean-up write (a testing branch's deletion) is asked for.
    const cleanup = host.cancelTestRun(ref, "greenline/main-run-1");
    for (let i = 0; i < 600 && gate.waiting < 5; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(gate.waiting).toBe(5);
    frozen = false;
    await Promise.all([...statuses, cleanup]);
    const writes = gh.requests.slice(from).filter((r) => r.method !== "GET" && !r.path.includes("/access_tokens"));
    // The clean-up went first, then the statuses in the order they were asked for.
    expect(writes.map((r) => r.method)).toEqual(["DELETE", "POST", "POST", "POST", "POST"]);
    expect(statusesOf(name, sha).map((s) => s.description)).toEqual(["status 0", "status 1", "status 2", "status 3", "status 4"]);
  });
});
