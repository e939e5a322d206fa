import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, type TestServer } from "../support/harness.js";

/**
 * What Greenline asks GitHub, call by call, where calls used to be wasted (`npm run bench:github`
 * counts them per merged PR): a PR read asks for the up-to-date base only for a queue that merges
 * directly; a tested run is fast-forwarded with one list of the target's open PRs and without a
 * comparison first; a PR merged through GitHub is read once, just before its merge (it must still
 * be open and based on the target: issue 22), and a rebase takes its commit count from that read.
 */
describe.each(BACKENDS)("GitHub calls, $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const OWNER = "octo-calls";

  /** The requests made from `from` on, as "METHOD path" without the repository prefix. */
  const callsSince = (from: number, name: string) => gh.requests.slice(from).map((r) => `${r.method} ${r.path.replace(`/repos/${OWNER}/${name}`, "")}`);

  beforeAll(async () => {
    // Mergeability known at the first read: what is counted here is what each step asks.
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    server = await startTestServer(backend, { githubApp: githubAppOf(gh) });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 79 });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("a queue that does not merge directly reads a submitted PR once: no comparison, no branch read", async () => {
    await api.ok("createQueue", { ...github.queue("nodirect"), requiredStatuses: ["ci/test"] });
    gh.openPr(`${OWNER}/nodirect`, { number: 1, files: { "src/one.ts": "1" } });
    const from = gh.requests.length;
    await api.ok("submitPullRequest", github.pr("nodirect", 1));
    // It was also a comparison of the PR with main and a read of main, on every clean PR.
    expect(callsSince(from, "nodirect")).toEqual(["GET /pulls/1"]);
  });

  test("a queue that merges directly still learns that a PR is up to date: it merges without a queue run", async () => {
    const repo = `${OWNER}/direct`;
    await api.ok("createQueue", { ...github.queue("direct"), requiredStatuses: ["ci/test"], directMergeMode: "always", mergeMethod: "squash" });
    gh.openPr(repo, { number: 1, files: { "src/one.ts": "1" } });
    await api.ok("submitPullRequest", github.pr("direct", 1));
    await server.greenline.worker.drain();
    expect(await github.stateOf("direct", 1)).toBe("merged");
    expect(gh.pr(repo, 1)?.merged).toBe(true);
    expect(gh.refPushes.filter((p) => p.repo === repo && p.branch.startsWith("greenline/"))).toEqual([]);
  });

  test("a tested run is fast-forwarded with one read of the target, one list of open PRs and the push: no per-PR read, no comparison", async () => {
    const repo = `${OWNER}/ff`;
    await api.ok("createQueue", { ...github.queue("ff"), requiredStatuses: ["ci/test"], mergeMethod: "merge_commit" });
    gh.openPr(repo, { number: 1, files: { "src/one.ts": "1" } });
    await api.ok("submitPullRequest", github.pr("ff", 1));
    await server.greenline.worker.drain();
    const tested = (await api.ok("getMergeQueueTestingDetails", github.pr("ff", 1))).testBranchSha;
    const from = gh.requests.length;
    await github.ciPassesOnEveryBranch("ff");
    await server.greenline.worker.drain();
    expect(await github.stateOf("ff", 1)).toBe("merged");
    expect(gh.branchHead(repo, "main")).toBe(tested);
    const calls = callsSince(from, "ff");
    // It was a read of the PR, of main, and a comparison of main with the tested commit.
    // One list of the target's open PRs checks that no PR's head moved since it was tested (a
    // fast-forward is not pinned to the heads as a PR merge is).
    expect(calls.filter((c) => c.startsWith("GET "))).toEqual(["GET /branches/main", "GET /pulls"]);
    expect(calls.filter((c) => c.includes("/git/refs/heads/main"))).toEqual(["PATCH /git/refs/heads/main"]);
  });

  test("a tested PR is squashed with one read of the target, one of the PR, the merge, and the check of where it landed", async () => {
    const repo = `${OWNER}/squash`;
    await api.ok("createQueue", { ...github.queue("squash"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(repo, { number: 1, files: { "src/one.ts": "1" } });
    await api.ok("submitPullRequest", github.pr("squash", 1));
    await server.greenline.worker.drain();
    const before = gh.branchHead(repo, "main");
    const from = gh.requests.length;
    await github.ciPassesOnEveryBranch("squash");
    await server.greenline.worker.drain();
    expect(await github.stateOf("squash", 1)).toBe("merged");
    const calls = callsSince(from, "squash").filter((c) => !c.startsWith("POST /statuses/") && !c.startsWith("DELETE "));
    // The PR is read just before its merge (still open, still based on main: GitHub merges into
    // its current base, issue 22); one comparison of the head before with main says the merge
    // landed on main and what it was made on (it was a read of the merge commit).
    expect(calls).toEqual(["GET /branches/main", "GET /pulls/1", "PUT /pulls/1/merge", `GET /compare/${before}...main`]);
  });

  test("a batch merged by rebase still reads each PR for its commits, and lands both", async () => {
    const repo = `${OWNER}/rebase`;
    await api.ok("createQueue", { ...github.queue("rebase"), requiredStatuses: ["ci/test"], mergeMethod: "rebase", batch: true, batchingMinSize: 2 });
    for (const n of [1, 2]) gh.openPr(repo, { number: n, files: { [`src/${n}.ts`]: String(n) } });
    for (const n of [1, 2]) await api.ok("submitPullRequest", github.pr("rebase", n));
    await server.greenline.worker.drain();
    const from = gh.requests.length;
    await github.ciPassesOnEveryBranch("rebase");
    await server.greenline.worker.drain();
    expect([await github.stateOf("rebase", 1), await github.stateOf("rebase", 2)]).toEqual(["merged", "merged"]);
    expect(Object.keys(gh.files(repo, "main")).sort()).toEqual(["README.md", "src/1.ts", "src/2.ts"]);
    const calls = callsSince(from, "rebase");
    expect(calls.filter((c) => c === "GET /pulls/1" || c === "GET /pulls/2")).toEqual(["GET /pulls/1", "GET /pulls/2"]);
  });

  test("stacked runs build on the scratch branch where the run before left it: one reset for the queue, not one per run", async () => {
    const repo = `${OWNER}/stack`;
    await api.ok("createQueue", { ...github.queue("stack"), concurrency: 3, requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    for (const n of [1, 2, 3]) gh.openPr(repo, { number: n, files: { [`src/${n}.ts`]: String(n) } });
    const from = gh.requests.length;
    for (const n of [1, 2, 3]) await api.ok("submitPullRequest", github.pr("stack", n));
    await server.greenline.worker.drain();
    const third = await api.ok("getMergeQueueTestingDetails", github.pr("stack", 3));
    expect(Object.keys(gh.files(repo, third.testBranch)).sort()).toEqual(["README.md", "src/1.ts", "src/2.ts", "src/3.ts"]);
    // The first run creates the scratch branch (its reset answers "Reference does not exist"); the next two start where it is.
    expect(callsSince(from, "stack").filter((c) => c.includes("greenline-scratch/"))).toEqual(["PATCH /git/refs/heads/greenline-scratch/main"]);
  });

  test("a scratch branch moved behind Greenline's back is noticed in the merge's answer: the run is built again from a reset", async () => {
    const repo = `${OWNER}/moved`;
    await api.ok("createQueue", { ...github.queue("moved"), concurrency: 2, requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    for (const n of [1, 2]) gh.openPr(repo, { number: n, files: { [`src/${n}.ts`]: String(n) } });
    await api.ok("submitPullRequest", github.pr("moved", 1));
    await server.greenline.worker.drain();
    gh.push(repo, "greenline-scratch/main", { STALE: "someone else's commit" });
    await api.ok("submitPullRequest", github.pr("moved", 2));
    await server.greenline.worker.drain();
    const second = await api.ok("getMergeQueueTestingDetails", github.pr("moved", 2));
    expect(second).toMatchObject({ status: "in_progress", dependentPrs: [1] });
    expect(Object.keys(gh.files(repo, second.testBranch)).sort()).toEqual(["README.md", "src/1.ts", "src/2.ts"]);
    expect(gh.pushesTo(repo, second.testBranch)).toBe(1);
  });
});
