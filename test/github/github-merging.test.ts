import { REASONS } from "../../src/domain/reasons.js";
import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * Merging on GitHub, end to end (real server, real Octokit, the simulated GitHub over HTTP):
 * what GitHub refuses is shown and never loops, a PR is `merged` only once GitHub merged it,
 * the merge is pinned to the tested head, and someone else's commit landing between merges is
 * detected. Issue 12, items 2, 3 and 5.
 */
describe.each(BACKENDS)("merging on GitHub, $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  /** Greenline's and GitHub's clock: a rate limit's wait passes only when a test moves it. */
  const clock = new TestClock();
  const OWNER = "octo-m";
  const full = (name: string) => `${OWNER}/${name}`;

  /** Testing branches CI ran on (one per distinct commit). */
  const ciRuns = new Map<string, number>();

  /** Simulated CI: reports green on every testing branch not yet reported. */
  async function ciReports(name: string) {
    const runs = await github.ciPasses(name);
    if (runs > 0) ciRuns.set(name, (ciRuns.get(name) ?? 0) + runs);
  }

  async function runUntilDrained(name: string, rounds = 30) {
    for (let round = 0; round < rounds; round++) {
      await server.greenline.worker.drain();
      await ciReports(name);
      await server.greenline.worker.drain();
      const { enqueuedPullRequests } = await api.ok("getQueue", github.queue(name));
      const effects = await server.greenline.services.db.read((tx) => tx.effect.count({ where: { doneAt: null } }));
      if (enqueuedPullRequests.length === 0 && effects === 0) return;
    }
    throw new Error("the queue did not drain");
  }

  const statusesOf = (name: string, n: number) => gh.statuses.filter((st) => st.repo === full(name) && st.sha === gh.pr(full(name), n)!.headSha && st.context === "greenline/merge-queue");
  /** Effects of the queue of repository `name` that ever failed. */
  const failingEffects = (name: string) => server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { lastError: { not: null }, queue: { repository: { name } } } }));

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    gh.useClock(() => clock.ms);
    server = await startTestServer(backend, {
      githubApp: githubAppOf(gh),
      now: clock.now,
    });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 78 });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("item 2: a branch that requires pull requests refuses the fast-forward (422); the PRs are merged through the PR API instead, nothing wedges", async () => {
    gh.requirePullRequests(full("ff"), "main");
    await api.ok("createQueue", { ...github.queue("ff"), concurrency: 2, requiredStatuses: ["ci/test"], mergeMethod: "merge_commit" });
    gh.openPr(full("ff"), { number: 1, files: { "src/a.ts": "a" } });
    gh.openPr(full("ff"), { number: 2, files: { "src/b.ts": "b" } });
    for (const n of [1, 2]) await api.ok("submitPullRequest", github.pr("ff", n));
    await runUntilDrained("ff");

    expect([(await github.submitted("ff", 1)).state, (await github.submitted("ff", 2)).state]).toEqual(["merged", "merged"]);
    expect([gh.pr(full("ff"), 1)!.merged, gh.pr(full("ff"), 2)!.merged]).toEqual([true, true]);
    expect(Object.keys(gh.files(full("ff"), "main")).sort()).toEqual(["README.md", "src/a.ts", "src/b.ts"]);
    // The refused push was asked once; after that the target is merged through the PR API.
    expect(gh.requests.filter((r) => r.method === "PATCH" && r.path.endsWith("/git/refs/heads/main"))).toHaveLength(1);
    expect(await failingEffects("ff")).toEqual([]);
  });

  test("item 3: GitHub's 405 (a required review missing) fails the PR with GitHub's own words, once: no retest loop", async () => {
    gh.requirePullRequests(full("reviews"), "main", { approvals: 1 });
    await api.ok("createQueue", { ...github.queue("reviews"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(full("reviews"), { number: 1, files: { "src/a.ts": "a" } });
    // Approved, so ready (GitHub says `blocked` without the review, and Greenline waits).
    gh.approve(full("reviews"), 1);
    await api.ok("submitPullRequest", github.pr("reviews", 1));
    await server.greenline.worker.drain();
    expect((await github.submitted("reviews", 1)).state).toBe("testing");
    // While it is tested, the reviewer asks for changes; the review's delivery is lost, so
    // only GitHub's answer to the merge (405) tells Greenline.
    gh.review(full("reviews"), 1, "reviewer", "changes_requested");
    await runUntilDrained("reviews");

    const message = "At least 1 approving review is required by reviewers with write access.";
    expect(await github.submitted("reviews", 1)).toMatchObject({ state: "failed", stateReason: "merge_refused", failureMessage: message });
    expect(gh.pr(full("reviews"), 1)).toMatchObject({ merged: false, state: "open" });
    // One CI run: a refusal is not a moved target, nothing is retested.
    expect(ciRuns.get("reviews")).toBe(1);
    // The status, the comment and the API's timeline say the same sentence, with GitHub's words.
    const said = `${REASONS.merge_refused} ${message}`;
    expect(statusesOf("reviews", 1).at(-1)).toMatchObject({ state: "failure", description: said });
    expect(statusesOf("reviews", 1).map((st) => st.description)).not.toContain(REASONS.merged);
    // The comment quotes GitHub's words under the sentence (Markdown), the same words.
    expect(gh.comments.filter((c) => c.repo === full("reviews")).map((c) => c.body)).toEqual([expect.stringContaining(`**failed** (\`merge_refused\`). ${REASONS.merge_refused}\n\n> ${message}`)]);
    const timeline = await github.timelineOf("reviews", 1);
    expect(timeline.at(-1)).toMatchObject({ state: "failed", reason: "merge_refused", message: said, actor: { kind: "code_host", name: "github" }, evidence: { effect: { kind: "merge", message } } });
    expect(await failingEffects("reviews")).toEqual([]);
  });

  test('a PR is merged in Greenline only after GitHub merged it: "Passed, merging" until then', async () => {
    await api.ok("createQueue", { ...github.queue("confirm"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(full("confirm"), { number: 1, files: { "src/a.ts": "a" } });
    await api.ok("submitPullRequest", github.pr("confirm", 1));
    await server.greenline.worker.drain();
    // CI reports green; the merge is decided, not yet carried out.
    await ciReports("confirm");
    expect(gh.pr(full("confirm"), 1)!.merged).toBe(false);
    expect(await github.submitted("confirm", 1)).toMatchObject({ state: "tests_passed", stateReason: "merging" });
    await server.greenline.worker.drain();
    expect(gh.pr(full("confirm"), 1)!.merged).toBe(true);
    expect(await github.submitted("confirm", 1)).toMatchObject({ state: "merged", stateReason: "merged" });
    // "Tests passed" waited in the outbox behind the merge; "Merged" replaced it before it was written (GitHub shows a context's latest status only).
    expect(statusesOf("confirm", 1).map((st) => st.description)).toEqual([`${REASONS.testing.replace(/\.$/, "")} (1st in line).`, REASONS.merged]);
    // The "Merged" status went out after GitHub's merge, not before.
    const paths = gh.requests.map((r) => `${r.method} ${r.path}`);
    const merge = paths.indexOf(`PUT /repos/${full("confirm")}/pulls/1/merge`);
    const lastStatus = paths.lastIndexOf(`POST /repos/${full("confirm")}/statuses/${gh.pr(full("confirm"), 1)!.headSha}`);
    expect(merge).toBeGreaterThan(-1);
    expect(lastStatus).toBeGreaterThan(merge);
  });

  test("item 5: a push to the PR during testing whose synchronize delivery is lost never lands: GitHub refuses the pinned merge, the PR is cancelled", async () => {
    await api.ok("createQueue", { ...github.queue("pinned"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(full("pinned"), { number: 1, files: { "src/a.ts": "a" } });
    gh.openPr(full("pinned"), { number: 2, files: { "src/b.ts": "b" } });
    for (const n of [1, 2]) await api.ok("submitPullRequest", github.pr("pinned", n));
    await server.greenline.worker.drain();
    const tested = gh.pr(full("pinned"), 1)!.headSha;
    // Someone pushes untested code to #1 while it is tested; GitHub's synchronize never arrives.
    gh.amendPr(full("pinned"), 1, { "src/untested.ts": "never tested" });
    await runUntilDrained("pinned");

    expect(await github.submitted("pinned", 1)).toMatchObject({ state: "cancelled", stateReason: "pr_updated", prSha: tested });
    expect(gh.pr(full("pinned"), 1)).toMatchObject({ merged: false, state: "open" });
    expect(gh.files(full("pinned"), "main")["src/untested.ts"]).toBeUndefined();
    // #2, tested on top of #1, is tested again without it and lands.
    expect((await github.submitted("pinned", 2)).state).toBe("merged");
    expect(Object.keys(gh.files(full("pinned"), "main")).sort()).toEqual(["README.md", "src/b.ts"]);
    expect(gh.comments.filter((c) => c.repo === full("pinned") && c.number === 1).map((c) => c.body)).toEqual([expect.stringContaining(`**cancelled** (\`pr_updated\`). ${REASONS.pr_updated}`)]);
    expect(await failingEffects("pinned")).toEqual([]);
  });

  test('409 "Base branch was modified" is a moved target, not a moved head: the PR is tested again on the new head and lands', async () => {
    await api.ok("createQueue", { ...github.queue("base"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(full("base"), { number: 1, files: { "src/a.ts": "a" } });
    // Someone pushes to main as GitHub merges: it answers 409 and merges nothing (the HTTP
    // layer does not ask again: a 409 is an answer).
    gh.beforeMerge(full("base"), 1, () => {
      gh.push(full("base"), "main", { "docs/hotfix.md": "outside" });
      return { status: 409, message: "Base branch was modified. Review and try the merge again." };
    });
    await api.ok("submitPullRequest", github.pr("base", 1));
    await runUntilDrained("base");
    // Tested again on the new head, so what landed was tested as it is: a plain "merged".
    expect(await github.submitted("base", 1)).toMatchObject({ state: "merged", stateReason: "merged" });
    expect(ciRuns.get("base")).toBe(2);
    expect(gh.requests.filter((r) => r.method === "PUT" && r.path === `/repos/${full("base")}/pulls/1/merge`)).toHaveLength(2);
    expect(Object.keys(gh.files(full("base"), "main")).sort()).toEqual(["README.md", "docs/hotfix.md", "src/a.ts"]);
    expect(await failingEffects("base")).toEqual([]);
  });

  test("item 5: resubmitting a PR under test after a push does not re-pin it: it is cancelled (pr_updated) and tested again at the new head", async () => {
    await api.ok("createQueue", { ...github.queue("resubmit"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(full("resubmit"), { number: 1, files: { "src/a.ts": "a" } });
    await api.ok("submitPullRequest", github.pr("resubmit", 1));
    await server.greenline.worker.drain();
    const first = await api.ok("getMergeQueueTestingDetails", github.pr("resubmit", 1));
    const pushed = gh.amendPr(full("resubmit"), 1, { "src/later.ts": "pushed during testing" });
    await api.ok("submitPullRequest", github.pr("resubmit", 1));
    await server.greenline.worker.drain();
    // The run testing the old head is not the one deciding any more.
    const second = await api.ok("getMergeQueueTestingDetails", github.pr("resubmit", 1));
    expect(second.testRunId).not.toBe(first.testRunId);
    expect(await github.submitted("resubmit", 1)).toMatchObject({ state: "testing", prSha: pushed });
    await runUntilDrained("resubmit");
    expect((await github.submitted("resubmit", 1)).state).toBe("merged");
    expect(gh.files(full("resubmit"), "main")["src/later.ts"]).toBe("pushed during testing");
  });

  test("a PR being merged can no longer be cancelled or resubmitted: the API says so", async () => {
    await api.ok("createQueue", { ...github.queue("busy"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(full("busy"), { number: 1, files: { "src/a.ts": "a" } });
    await api.ok("submitPullRequest", github.pr("busy", 1));
    await server.greenline.worker.drain();
    await ciReports("busy");
    expect((await github.submitted("busy", 1)).state).toBe("tests_passed");
    const cancel = await api.call("cancelPullRequest", github.pr("busy", 1));
    expect(cancel.status).toBe(409);
    const resubmit = await api.call("submitPullRequest", github.pr("busy", 1));
    expect(resubmit.status).toBe(409);
    await server.greenline.worker.drain();
    expect((await github.submitted("busy", 1)).state).toBe("merged");
  });

  test("a merge interrupted between two PRs (GitHub failed) resumes where it stopped: nothing merged twice, nothing retested", async () => {
    await api.ok("createQueue", { ...github.queue("resume"), requiredStatuses: ["ci/test"], mergeMethod: "squash", batch: true, batchingMinSize: 2 });
    for (const n of [1, 2]) gh.openPr(full("resume"), { number: n, files: { [`src/${n}.ts`]: `${n}` } });
    // GitHub fails once on #2's merge, after #1 merged: a secondary rate limit (not retried by
    // the HTTP layer), to be waited out for a minute.
    const merge2 = new RegExp(`^/repos/${full("resume")}/pulls/2/merge$`);
    gh.failNext("PUT", merge2, 403, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", 1, { "retry-after": "60" });
    for (const n of [1, 2]) await api.ok("submitPullRequest", github.pr("resume", n));
    await server.greenline.worker.drain();
    await ciReports("resume");
    await server.greenline.worker.drain();
    expect([gh.pr(full("resume"), 1)!.merged, gh.pr(full("resume"), 2)!.merged]).toEqual([true, false]);
    // Nothing is asked of GitHub again before the minute is over.
    const mergesOf2 = () => gh.requests.filter((r) => r.method === "PUT" && merge2.test(r.path)).length;
    expect(mergesOf2()).toBe(1);
    clock.advance(30_000);
    await server.greenline.worker.drain();
    expect(mergesOf2()).toBe(1);
    clock.advance(31_000);
    await runUntilDrained("resume");

    expect([(await github.submitted("resume", 1)).state, (await github.submitted("resume", 2)).state]).toEqual(["merged", "merged"]);
    expect([(await github.submitted("resume", 1)).stateReason, (await github.submitted("resume", 2)).stateReason]).toEqual(["merged", "merged"]);
    expect(ciRuns.get("resume")).toBe(1);
    // The merge effect failed once (GitHub's 403), then completed.
    expect((await failingEffects("resume")).map((e) => [e.kind, e.doneAt !== null])).toEqual([["merge", true]]);
    expect(gh.requests.filter((r) => r.method === "PUT" && r.path === `/repos/${full("resume")}/pulls/1/merge`)).toHaveLength(1);
    expect(gh.history(full("resume"), "main")).toHaveLength(3);
  });

  test("a commit of someone else's landing between one-by-one merges stops them: the merged PRs are merged, the rest tested again, each PR told", async () => {
    await api.ok("createQueue", { ...github.queue("foreign"), requiredStatuses: ["ci/test"], mergeMethod: "squash", batch: true, batchingMinSize: 3 });
    for (const n of [1, 2, 3]) gh.openPr(full("foreign"), { number: n, files: { [`src/${n}.ts`]: `${n}` } });
    // Just before GitHub merges #2, someone pushes to main.
    gh.beforeMerge(full("foreign"), 2, () => {
      gh.push(full("foreign"), "main", { "docs/foreign.md": "outside" });
    });
    for (const n of [1, 2, 3]) await api.ok("submitPullRequest", github.pr("foreign", n));
    await server.greenline.worker.drain();
    await ciReports("foreign");
    await server.greenline.worker.drain();

    const states = await Promise.all([1, 2, 3].map(async (n) => (await github.submitted("foreign", n)).state));
    expect(states).toEqual(["merged", "merged", "pending"]);
    expect((await github.submitted("foreign", 2)).stateReason).toBe("merged_after_target_moved");
    expect((await github.submitted("foreign", 3)).stateReason).toBe("target_moved_during_merge");
    // #3 was not merged: it is tested again on the new head (which holds the foreign commit).
    expect(gh.pr(full("foreign"), 3)!.merged).toBe(false);
    await api.ok("updateQueue", { ...github.queue("foreign"), batch: false });
    await server.greenline.worker.drain();
    const retest = await api.ok("getMergeQueueTestingDetails", github.pr("foreign", 3));
    expect(gh.files(full("foreign"), retest.testBranch)["docs/foreign.md"]).toBe("outside");
    const comments = (n: number) => gh.comments.filter((c) => c.repo === full("foreign") && c.number === n).map((c) => c.body);
    expect(comments(1)).toEqual([]);
    expect(comments(2)).toEqual([expect.stringContaining("was not tested as such")]);
    expect(comments(3)).toEqual([expect.stringContaining("tested again on the new head")]);
    expect(statusesOf("foreign", 2).at(-1)).toMatchObject({ state: "success", description: REASONS.merged_after_target_moved });

    await runUntilDrained("foreign");
    expect((await github.submitted("foreign", 3)).state).toBe("merged");
    expect(Object.keys(gh.files(full("foreign"), "main")).sort()).toEqual(["README.md", "docs/foreign.md", "src/1.ts", "src/2.ts", "src/3.ts"]);
    expect(await failingEffects("foreign")).toEqual([]);
  });
});
