import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * What Greenline asks GitHub, call by call, where calls used to be wasted (`npm run bench:github`
 * counts them per merged PR): a PR read asks for the up-to-date base only for a queue that merges
 * directly; a tested run is fast-forwarded with one list of the target's open PRs, without a
 * comparison or a read of the target first; a PR merged through GitHub is read once, just before its merge (it must still
 * be open and based on the target: issue 22), and a rebase takes its commit count from that read.
 * A `/greenline merge` comment is one PR read (its submission uses the comment's read), one
 * permission check a minute per author, and no reply where the queue shows statuses.
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

  test("a tested run is fast-forwarded and its testing branch deleted in one atomic ref update, after one list of open PRs: no read of the target, no per-PR read, no comparison, no separate deletion", async () => {
    const repo = `${OWNER}/ff`;
    await api.ok("createQueue", { ...github.queue("ff"), requiredStatuses: ["ci/test"], mergeMethod: "merge_commit" });
    gh.openPr(repo, { number: 1, files: { "src/one.ts": "1" } });
    await api.ok("submitPullRequest", github.pr("ff", 1));
    await server.greenline.worker.drain();
    const { testBranch, testBranchSha: tested } = await api.ok("getMergeQueueTestingDetails", github.pr("ff", 1));
    const from = gh.requests.length;
    await github.ciPassesOnEveryBranch("ff");
    await server.greenline.worker.drain();
    expect(await github.stateOf("ff", 1)).toBe("merged");
    expect(gh.branchHead(repo, "main")).toBe(tested);
    expect(gh.hasBranch(repo, testBranch)).toBe(false);
    const calls = callsSince(from, "ff");
    // It was a read of the PR, of main, and a comparison of main with the tested commit; then a
    // read of main, the push (PATCH) and the deletion of the testing branch. One list of the
    // target's open PRs checks that no PR's head moved since it was tested (a fast-forward is not
    // pinned to the heads as a PR merge is).
    expect(calls.filter((c) => !c.startsWith("POST /statuses/"))).toEqual(["GET /pulls", "POST /graphql"]);
  });

  test("a target moved behind Greenline's back (its push not delivered) refuses the fast-forward: the target is read then, the run is tested again on it, and lands", async () => {
    const repo = `${OWNER}/ffmoved`;
    await api.ok("createQueue", { ...github.queue("ffmoved"), requiredStatuses: ["ci/test"], mergeMethod: "merge_commit" });
    gh.openPr(repo, { number: 1, files: { "src/one.ts": "1" } });
    await api.ok("submitPullRequest", github.pr("ffmoved", 1));
    await server.greenline.worker.drain();
    const tested = (await api.ok("getMergeQueueTestingDetails", github.pr("ffmoved", 1))).testBranchSha;
    // Someone's commit on main; the harness delivers no webhook: Greenline does not know.
    const foreign = gh.push(repo, "main", { "docs/foreign.md": "pushed by hand\n" });
    const from = gh.requests.length;
    await github.ciPassesOnEveryBranch("ffmoved");
    await server.greenline.worker.drain();
    const refs = gh.requests.slice(from).filter((r) => r.path === "/graphql" || r.path.startsWith(`/repos/${OWNER}/ffmoved/git/refs/heads/main`) || r.path === `/repos/${OWNER}/ffmoved/branches/main`);
    expect(refs.map((r) => `${r.method} ${r.path.replace(`/repos/${OWNER}/ffmoved`, "")} ${(r.response as { errors?: unknown[] } | undefined)?.errors ? "refused" : r.status}`)).toEqual([
      "POST /graphql refused",
      "GET /branches/main 200",
    ]);
    expect(gh.branchHead(repo, "main")).toBe(foreign);
    expect(await github.stateOf("ffmoved", 1)).toBe("testing");
    const retested = (await api.ok("getMergeQueueTestingDetails", github.pr("ffmoved", 1))).testBranchSha;
    expect(retested).not.toBe(tested);
    expect(gh.parentsOf(retested)[0]).toBe(foreign);
    await github.ciPassesOnEveryBranch("ffmoved");
    await server.greenline.worker.drain();
    expect(await github.stateOf("ffmoved", 1)).toBe("merged");
    expect(gh.branchHead(repo, "main")).toBe(retested);
    expect(Object.keys(gh.files(repo, "main")).sort()).toEqual(["README.md", "docs/foreign.md", "src/one.ts"]);
  });

  test("a target moved back to an older commit (a force-push, not delivered) is not fast-forwarded onto: the push was conditional on where the run was built", async () => {
    const repo = `${OWNER}/ffback`;
    const old = gh.branchHead(repo, "main");
    const dropped = gh.push(repo, "main", { "docs/dropped.md": "to be taken back\n" });
    await api.ok("createQueue", { ...github.queue("ffback"), requiredStatuses: ["ci/test"], mergeMethod: "merge_commit" });
    gh.openPr(repo, { number: 1, files: { "src/one.ts": "1" } });
    await api.ok("submitPullRequest", github.pr("ffback", 1));
    await server.greenline.worker.drain();
    const tested = (await api.ok("getMergeQueueTestingDetails", github.pr("ffback", 1))).testBranchSha;
    expect(gh.parentsOf(tested)[0]).toBe(dropped);
    // main taken back to before `dropped`: a fast-forward to the tested commit would bring it back.
    gh.createBranch(repo, "main", old);
    await github.ciPassesOnEveryBranch("ffback");
    await server.greenline.worker.drain();
    expect(gh.branchHead(repo, "main")).toBe(old);
    expect(await github.stateOf("ffback", 1)).toBe("testing");
  });

  test("GitHub refusing the atomic update for another reason than the target (here the testing branch moved) falls back to the REST push, and that target is pushed by REST from then on", async () => {
    const repo = `${OWNER}/ffrest`;
    await api.ok("createQueue", { ...github.queue("ffrest"), requiredStatuses: ["ci/test"], mergeMethod: "merge_commit" });
    gh.openPr(repo, { number: 1, files: { "src/one.ts": "1" } });
    await api.ok("submitPullRequest", github.pr("ffrest", 1));
    await server.greenline.worker.drain();
    const first = await api.ok("getMergeQueueTestingDetails", github.pr("ffrest", 1));
    gh.push(repo, first.testBranch, { "ci-noise.txt": "pushed to the testing branch\n" });
    let from = gh.requests.length;
    await github.ciPassesOn("ffrest", first.testBranchSha);
    await server.greenline.worker.drain();
    expect(await github.stateOf("ffrest", 1)).toBe("merged");
    expect(gh.branchHead(repo, "main")).toBe(first.testBranchSha);
    expect(callsSince(from, "ffrest").filter((c) => !c.startsWith("POST /statuses/"))).toEqual([
      "GET /pulls",
      "POST /graphql",
      "GET /branches/main",
      "PATCH /git/refs/heads/main",
      `DELETE /git/refs/heads/${first.testBranch}`,
    ]);
    gh.openPr(repo, { number: 2, files: { "src/two.ts": "2" } });
    await api.ok("submitPullRequest", github.pr("ffrest", 2));
    await server.greenline.worker.drain();
    const second = await api.ok("getMergeQueueTestingDetails", github.pr("ffrest", 2));
    from = gh.requests.length;
    await github.ciPassesOnEveryBranch("ffrest");
    await server.greenline.worker.drain();
    expect(await github.stateOf("ffrest", 2)).toBe("merged");
    // Without the atomic update, the push is made as before it: just after a read of the target
    // (a REST push does not refuse a target moved back).
    expect(callsSince(from, "ffrest").filter((c) => !c.startsWith("POST /statuses/"))).toEqual(["GET /pulls", "GET /branches/main", "PATCH /git/refs/heads/main", `DELETE /git/refs/heads/${second.testBranch}`]);
  });

  test("a run already on the target (an earlier attempt's fast-forward, unrecorded) is found when its PR is no longer open: merged, not refused, not pushed again", async () => {
    const repo = `${OWNER}/ffdone`;
    await api.ok("createQueue", { ...github.queue("ffdone"), requiredStatuses: ["ci/test"], mergeMethod: "merge_commit" });
    gh.openPr(repo, { number: 1, files: { "src/one.ts": "1" } });
    await api.ok("submitPullRequest", github.pr("ffdone", 1));
    await server.greenline.worker.drain();
    const tested = (await api.ok("getMergeQueueTestingDetails", github.pr("ffdone", 1))).testBranchSha;
    // main at the tested commit already: GitHub marks the PR merged (no webhook delivered).
    gh.createBranch(repo, "main", tested);
    expect(gh.pr(repo, 1)?.merged).toBe(true);
    const from = gh.requests.length;
    await github.ciPassesOnEveryBranch("ffdone");
    await server.greenline.worker.drain();
    expect(await github.stateOf("ffdone", 1)).toBe("merged");
    expect(gh.branchHead(repo, "main")).toBe(tested);
    expect(callsSince(from, "ffdone").filter((c) => c.includes("/git/refs/heads/main"))).toEqual([]);
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

  test("a `/greenline merge` reads its PR once, asks its author's permission once a minute, and is answered by the queue's status, not a reply", async () => {
    const repo = `${OWNER}/cmd`;
    await api.ok("createQueue", { ...github.queue("cmd"), requiredStatuses: ["ci/test"] });
    for (const n of [1, 2]) gh.openPr(repo, { number: n, files: { [`src/${n}.ts`]: String(n) } });
    gh.grant(repo, "dev", "write");
    const from = gh.requests.length;
    for (const n of [1, 2]) await github.deliverThenDrain("issue_comment", commentOf(github, "cmd", n, "dev", "/greenline merge"));
    expect([await github.stateOf("cmd", 1), await github.stateOf("cmd", 2)]).toEqual(["testing", "pending"]);
    const calls = callsSince(from, "cmd");
    // It was a read for the base branch and another by the submission, per command.
    expect(calls.filter((c) => c.startsWith("GET /pulls/"))).toEqual(["GET /pulls/1", "GET /pulls/2"]);
    // It was one per command: the second command within the minute is its author's allowed answer, kept.
    expect(calls.filter((c) => c.includes("/collaborators/"))).toEqual(["GET /collaborators/dev/permission"]);
    // It was a reply per command ("@dev queued for `main`…"): the status says it.
    expect(calls.filter((c) => c.includes("/comments"))).toEqual([]);
    const statuses = (n: number) => gh.statuses.filter((st) => st.repo === repo && st.sha === gh.pr(repo, n)!.headSha).map((st) => st.description);
    expect(statuses(2)).toEqual([expect.stringMatching(/^Submitted to the merge queue \(2nd in line/)]);
    // A PR that starts testing in the decision that queued it gets that status alone: "submitted" is never written.
    expect(statuses(1)).toEqual([expect.stringMatching(/^Testing on top of the pull requests ahead of it/)]);
  });

  test("a `/greenline merge` is still answered when it asks for what the status does not show, and on a queue without statuses", async () => {
    const repo = `${OWNER}/replies`;
    gh.createBranch(repo, "quiet", "main");
    await api.ok("createQueue", { ...github.queue("replies"), requiredStatuses: ["ci/test"] });
    await api.ok("createQueue", { ...github.queue("replies"), targetBranch: "quiet", requiredStatuses: ["ci/test"], statusCheckEnabled: false });
    gh.openPr(repo, { number: 1, files: { "src/1.ts": "1" } });
    gh.openPr(repo, { number: 2, base: "quiet", files: { "src/2.ts": "2" } });
    gh.grant(repo, "dev", "write");
    await github.deliverThenDrain("issue_comment", commentOf(github, "replies", 1, "dev", "/greenline merge --priority high"));
    await github.deliverThenDrain("issue_comment", commentOf(github, "replies", 2, "dev", "/greenline merge"));
    const replies = (n: number) => gh.comments.filter((c) => c.repo === repo && c.number === n).map((c) => c.body);
    expect(replies(1)).toEqual([expect.stringMatching(/^@dev queued for `main` at priority high\./)]);
    expect(replies(2)).toEqual([expect.stringMatching(/^@dev queued for `quiet`/)]);
  });
});

/** A `/greenline merge`-style comment on PR `n` of repository `name`, as GitHub delivers it. */
function commentOf(github: GitHubDriver, name: string, n: number, user: string, body: string) {
  return {
    action: "created",
    issue: { number: n, pull_request: { url: `https://api.github.com/repos/${github.owner}/${name}/pulls/${n}` } },
    comment: { id: n * 100 + body.length, body, user: { login: user, id: 7, type: "User" } },
    repository: github.repository(name),
    installation: { id: github.installation },
    sender: { login: user, id: 7, type: "User" },
  };
}

/**
 * The command author's permission (docs/decisions.md, "Command authors' permission, cached a
 * minute"): an allowed answer is kept a minute per installation, repository and user; a refusal
 * is never kept; a `member` delivery (who may push changed) forgets it at once.
 */
describe.each(BACKENDS)("Command authors' permission, $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let github: GitHubDriver;
  const clock = new TestClock();
  const OWNER = "octo-perm";
  const REPO = `${OWNER}/app`;
  const permissionChecks = () => gh.requests.filter((r) => r.path.startsWith(`/repos/${REPO}/collaborators/`)).length;
  const replies = (n: number) => gh.comments.filter((c) => c.repo === REPO && c.number === n).map((c) => c.body);

  beforeAll(async () => {
    // As strict as GitHub: a PR's first read answers `mergeable: null` (still computing).
    gh = await new GitHubSimulator().start();
    server = await startTestServer(backend, { githubApp: githubAppOf(gh), now: clock.now });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 80 });
    await github.api.ok("createQueue", { ...github.queue("app"), requiredStatuses: ["ci/test"] });
    for (const n of [1, 2, 3, 4, 5]) gh.openPr(REPO, { number: n, files: { [`src/${n}.ts`]: String(n) } });
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("a refusal is asked again, an allowed answer is kept a minute, and a member delivery forgets it at once", async () => {
    gh.grant(REPO, "eve", "read");
    await github.deliverThenDrain("issue_comment", commentOf(github, "app", 1, "eve", "/greenline merge"));
    expect(replies(1)).toEqual(["@eve only people who can push to octo-perm/app can use the merge queue (your access: read)."]);
    // Given write access, she is heard at once: the refusal was not kept.
    gh.grant(REPO, "eve", "write");
    await github.deliverThenDrain("issue_comment", commentOf(github, "app", 1, "eve", "/greenline merge"));
    expect(await github.stateOf("app", 1)).not.toBe("cancelled");
    expect(permissionChecks()).toBe(2);
    // Within the minute, her next command is not asked about.
    await github.deliverThenDrain("issue_comment", commentOf(github, "app", 2, "eve", "/greenline merge"));
    expect(permissionChecks()).toBe(2);
    // A minute later it is.
    clock.advance(61_000);
    await github.deliverThenDrain("issue_comment", commentOf(github, "app", 3, "eve", "/greenline merge"));
    expect(permissionChecks()).toBe(3);
    // Her access taken away, and GitHub's `member` delivery saying so: the kept answer is forgotten.
    gh.grant(REPO, "eve", "read");
    await github.deliverThenDrain("member", {
      action: "edited",
      member: { login: "eve", id: 9, type: "User" },
      changes: { permission: { from: "write", to: "read" } },
      repository: github.repository("app"),
      installation: { id: github.installation },
      sender: { login: "admin", id: 1, type: "User" },
    });
    await github.deliverThenDrain("issue_comment", commentOf(github, "app", 4, "eve", "/greenline merge"));
    expect(permissionChecks()).toBe(4);
    expect(replies(4)).toEqual(["@eve only people who can push to octo-perm/app can use the merge queue (your access: read)."]);
    expect((await github.api.call("getSubmittedPullRequest", github.pr("app", 4))).status).toBe(404);
  });

  test("a PR whose mergeability GitHub is still computing at the comment's read is read again by its submission, and queued ready", async () => {
    gh.grant(REPO, "dan", "write");
    const from = gh.requests.length;
    await github.deliverThenDrain("issue_comment", commentOf(github, "app", 5, "dan", "/greenline merge"));
    expect(gh.requests.slice(from).filter((r) => r.path === `/repos/${REPO}/pulls/5`)).toHaveLength(2);
    expect(await github.stateOf("app", 5)).not.toBe("not_ready");
  });
});
