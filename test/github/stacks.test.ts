import { REASONS } from "../../src/domain/reasons.js";
import { BACKENDS } from "../support/backends.js";
import type { SimulatedCi } from "../support/github-ci.js";
import type { GitHubDriver } from "../support/github-driver.js";
import type { GitHubSimulator } from "../support/github-simulator.js";
import type { WebhookDeliverer } from "../support/github-webhooks.js";
import { ApiClient, TestClock, type TestServer } from "../support/harness.js";
import { createToken } from "../../src/auth/tokens.js";
import { type GitHubWorld, startGitHubWorld } from "../support/github-world.js";

/**
 * Stacked pull requests end to end (docs/stacks.md): a PR based on another PR's branch. Submitting
 * the top enters the stack in order; it is tested as one unit on top of the line, merged
 * bottom-up through GitHub's PR merge with the queue's merge method, each PR moved to the
 * queue's branch just before it merges; a failure names the PR of the stack that failed; a PR
 * leaving takes the PRs above it out, saying so. Real server, real Octokit, the GitHub simulator
 * over HTTP with every webhook delivered as GitHub delivers them; CI fails a commit holding a
 * file that says BROKEN.
 */
describe.each(BACKENDS)("stacked pull requests, $name", (backend) => {
  const OWNER = "octo-stacks";
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  let ci: SimulatedCi;
  let webhooks: WebhookDeliverer;
  const clock = new TestClock();
  const full = (name: string) => `${OWNER}/${name}`;

  let world: GitHubWorld;
  beforeAll(async () => {
    const fails = (files: Record<string, string>) => Object.values(files).some((content) => content.includes("BROKEN"));
    world = await startGitHubWorld(backend, clock, [{ owner: OWNER, installation: 91 }], [{ name: "ci/test", on: ["push"], branches: "greenline/", report: "status", fails }]);
    ({ gh, server, ci, webhooks } = world);
    github = world.accounts[0]!;
    api = github.api;
  });
  afterAll(() => world?.close());

  /** Deliveries, CI and the worker until nothing moves (GitHubWorld.settle). */
  const settle = (rounds = 10) => world.settle(rounds);

  /** A stack on main: `numbers[0]` based on main, each next one on the branch of the one before. */
  function openStack(name: string, numbers: number[], broken: number[] = []) {
    numbers.forEach((n, i) => {
      const content = broken.includes(n) ? `BROKEN ${n}\n` : `${n}\n`;
      gh.openPr(full(name), { number: n, ...(i > 0 ? { base: `feature-${numbers[i - 1]}` } : {}), files: { [`src/${n}.ts`]: content } });
    });
  }

  async function queueOf(name: string, settings: Record<string, unknown> = {}) {
    await api.ok("createQueue", { ...github.queue(name), requiredStatuses: ["ci/test"], ...settings });
  }

  const state = async (name: string, n: number) => {
    const pr = await github.submitted(name, n);
    return [pr.state, pr.stateReason];
  };
  const mergeOrder = (name: string) => gh.requests.filter((r) => r.method === "PUT" && r.path.startsWith(`/repos/${full(name)}/pulls/`) && r.status === 200).map((r) => Number(/pulls\/(\d+)\/merge/.exec(r.path)![1]));

  test.each([1, 2, 3, 4, 5].flatMap((size) => (["squash", "merge_commit"] as const).map((method) => ({ size, method }))))(
    "a stack of $size submitted by its top is tested in one run and merged bottom-up ($method), each PR moved to main as it merges",
    async ({ size, method }) => {
      const name = `stack-${size}-${method}`;
      await queueOf(name, { mergeMethod: method });
      const numbers = Array.from({ length: size }, (_, i) => i + 1);
      openStack(name, numbers);
      await api.ok("submitPullRequest", github.pr(name, size));
      await webhooks.flush();
      await server.greenline.worker.drain();
      // Every PR of the stack entered, in one run testing them all.
      for (const n of numbers) expect(await state(name, n)).toEqual(["testing", "testing"]);
      for (const n of numbers) expect((await github.submitted(name, n)).stackedOn).toBe(n > 1 ? n - 1 : undefined);
      const runs = ci.runs.filter((r) => r.repo === full(name));
      expect(runs.length).toBe(1);
      const tested = gh.filesAt(runs[0]!.sha);
      await settle();
      for (const n of numbers) expect([n, gh.pr(full(name), n)!.merged, gh.pr(full(name), n)!.base]).toEqual([n, true, "main"]);
      // A PR alone on main is fast-forwarded with merge commits; a stack always goes through GitHub's PR merge.
      if (size > 1 || method === "squash") expect(mergeOrder(name)).toEqual(numbers);
      // main holds exactly the tree that was tested.
      expect(gh.files(full(name), "main")).toEqual(tested);
      // One status per PR says it merged; nothing was said to leave.
      for (const n of numbers) expect((await github.submitted(name, n)).state).toBe("merged");
    },
  );

  test("a stack whose third PR breaks the build: bisection names it, the two under it merge, the one above leaves and is told why", async () => {
    const name = "broken-middle";
    await queueOf(name);
    openStack(name, [1, 2, 3, 4], [3]);
    await api.ok("submitPullRequest", github.pr(name, 4));
    await settle(20);
    expect([gh.pr(full(name), 1)!.merged, gh.pr(full(name), 2)!.merged, gh.pr(full(name), 3)!.merged, gh.pr(full(name), 4)!.merged]).toEqual([true, true, false, false]);
    expect(await state(name, 3)).toEqual(["failed", "tests_failed"]);
    expect(await state(name, 4)).toEqual(["cancelled", "stack_below_left"]);
    const timeline = await github.timelineOf(name, 4);
    expect(timeline.at(-1)).toMatchObject({ reason: "stack_below_left", evidence: expect.objectContaining({ blamedPr: 3 }) });
    // #4 is told on GitHub why it left; #3 is named the culprit of the bisection.
    const told = gh.comments.filter((c) => c.repo === full(name).toLowerCase() && c.number === 4).map((c) => c.body);
    expect(told.join("\n")).toContain(REASONS.stack_below_left);
    const culprit = (await github.timelineOf(name, 3)).findLast((e) => e.reason === "tests_failed");
    expect(culprit?.evidence).toMatchObject({ bisection: expect.objectContaining({ culprit: 3 }) });
  });

  test("a force-push to the middle of a stack while it is tested: that PR and the ones above leave, the one under merges; submitted again, they merge", async () => {
    const name = "force-push";
    await queueOf(name, { mergeMethod: "squash" });
    openStack(name, [1, 2, 3]);
    await api.ok("submitPullRequest", github.pr(name, 3));
    await webhooks.flush();
    await server.greenline.worker.drain();
    expect(await state(name, 2)).toEqual(["testing", "testing"]);
    // A new commit on #2 (a force-push: one commit with all its changes); #3's branch still holds #2's old one.
    gh.pushToPr(full(name), 2, { "src/2-more.ts": "more of 2\n" });
    await settle();
    expect(await state(name, 2)).toEqual(["cancelled", "pr_updated"]);
    expect(await state(name, 3)).toEqual(["cancelled", "stack_below_left"]);
    expect(gh.pr(full(name), 1)!.merged).toBe(true);
    expect([gh.pr(full(name), 2)!.state, gh.pr(full(name), 3)!.state]).toEqual(["open", "open"]);
    // Submitted again by its top: #2 (still based on #1's branch, #1 merged) and #3 enter and merge.
    await api.ok("submitPullRequest", github.pr(name, 3));
    await settle();
    expect([gh.pr(full(name), 2)!.merged, gh.pr(full(name), 3)!.merged]).toEqual([true, true]);
    expect(gh.files(full(name), "main")["src/2-more.ts"]).toBe("more of 2\n");
    expect(gh.files(full(name), "main")["src/3.ts"]).toBe("3\n");
  });

  test("cancelling a PR of a stack takes the PRs above it out and says so; the one under it goes on alone", async () => {
    const name = "cancel-middle";
    await queueOf(name);
    openStack(name, [1, 2, 3]);
    await api.ok("submitPullRequest", github.pr(name, 3));
    await webhooks.flush();
    await server.greenline.worker.drain();
    await api.ok("cancelPullRequest", github.pr(name, 2));
    expect(await state(name, 3)).toEqual(["cancelled", "stack_below_left"]);
    await settle();
    expect(gh.pr(full(name), 1)!.merged).toBe(true);
    expect([gh.pr(full(name), 2)!.merged, gh.pr(full(name), 3)!.merged]).toEqual([false, false]);
    const told = gh.comments.filter((c) => c.repo === full(name).toLowerCase() && c.number === 3).map((c) => c.body);
    expect(told.join("\n")).toContain(REASONS.stack_below_left);
  });

  test("submitting the middle of a stack enters it and the PRs under it, not those above; GitHub moving a PR to main as its base branch is deleted is no base change", async () => {
    const name = "middle";
    await queueOf(name, { mergeMethod: "squash" });
    gh.setRepository(full(name), { deleteBranchOnMerge: true });
    openStack(name, [1, 2, 3]);
    await api.ok("submitPullRequest", github.pr(name, 2));
    expect((await api.call("getSubmittedPullRequest", github.pr(name, 3))).status).toBe(404);
    await settle();
    expect([gh.pr(full(name), 1)!.merged, gh.pr(full(name), 2)!.merged]).toEqual([true, true]);
    // GitHub deleted #2's branch as it merged and moved #3 to main.
    expect(gh.pr(full(name), 3)!.base).toBe("main");
    // #3 alone is a plain PR now.
    await api.ok("submitPullRequest", github.pr(name, 3));
    await settle();
    expect(gh.pr(full(name), 3)!.merged).toBe(true);
  });

  test("a PR submitted on top of one already testing is tested on it; GitHub's retargeting of it (the branch under it deleted) keeps it in the queue", async () => {
    const name = "late-top";
    await queueOf(name, { mergeMethod: "squash", concurrency: 2 });
    gh.setRepository(full(name), { deleteBranchOnMerge: true });
    openStack(name, [1, 2]);
    await api.ok("submitPullRequest", github.pr(name, 1));
    await webhooks.flush();
    await server.greenline.worker.drain();
    await api.ok("submitPullRequest", github.pr(name, 2));
    await webhooks.flush();
    await server.greenline.worker.drain();
    expect(await state(name, 2)).toEqual(["testing", "testing"]);
    await settle();
    expect([gh.pr(full(name), 1)!.merged, gh.pr(full(name), 2)!.merged]).toEqual([true, true]);
    expect(mergeOrder(name)).toEqual([1, 2]);
  });

  test("by comment: `/greenline merge` on the top of a stack queues the stack for the branch it is based on; `/greenline cancel` on its bottom takes it all out", async () => {
    const name = "by-comment";
    await queueOf(name);
    gh.grant(full(name), "dev", "write");
    openStack(name, [1, 2, 3]);
    gh.comment(full(name), 3, "dev", "/greenline merge");
    await webhooks.flush();
    await server.greenline.worker.drain();
    for (const n of [1, 2, 3]) expect(await state(name, n)).toEqual(["testing", "testing"]);
    // The decision's log line names the GitHub delivery that caused it (docs/operations.md, "Logs").
    const decided = server.logs.filter((line) => line.includes('"queue decision"') && line.includes('"requestId":"github-delivery:'));
    expect(decided.length).toBeGreaterThan(0);
    gh.comment(full(name), 1, "dev", "/greenline cancel");
    await settle();
    expect(await state(name, 1)).toEqual(["cancelled", "cancelled_by_user"]);
    expect(await state(name, 2)).toEqual(["cancelled", "stack_below_left"]);
    expect(await state(name, 3)).toEqual(["cancelled", "stack_below_left"]);
    // Submitted again by comment on its middle: the bottom two enter and merge.
    gh.comment(full(name), 2, "dev", "/greenline merge");
    await settle();
    expect([gh.pr(full(name), 1)!.merged, gh.pr(full(name), 2)!.merged, gh.pr(full(name), 3)!.merged]).toEqual([true, true, false]);
  });

  test("submissions of a stack raced with each other and with the engine: each PR enters once, in order, and the stack merges once", async () => {
    const name = "raced";
    await queueOf(name, { mergeMethod: "squash" });
    openStack(name, [1, 2, 3]);
    const [answers] = await Promise.all([Promise.all([3, 3, 2, 3, 1].map((n) => api.call("submitPullRequest", github.pr(name, n)))), server.greenline.worker.drain(), webhooks.flush()]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    for (const n of [1, 2, 3]) {
      const submitted = (await github.timelineOf(name, n)).filter((e) => e.reason === "submitted");
      expect([n, submitted.length]).toEqual([n, 1]);
    }
    await settle();
    expect(mergeOrder(name)).toEqual([1, 2, 3]);
    expect(await state(name, 3)).toEqual(["merged", "merged"]);
  });

  test("GitHub refusing the merge of a PR just moved to main ('Base branch was modified') is asked again, not taken for a failure: one run, every PR merged (review finding)", async () => {
    const name = "refused-after-move";
    await queueOf(name, { mergeMethod: "squash" });
    openStack(name, [1, 2, 3]);
    gh.mergeRefusalsAfterRetarget = 1;
    try {
      await api.ok("submitPullRequest", github.pr(name, 3));
      for (let i = 0; i < 6 && !gh.pr(full(name), 3)!.merged; i++) {
        await settle();
        clock.advance(60_000);
      }
    } finally {
      gh.mergeRefusalsAfterRetarget = 0;
    }
    expect([1, 2, 3].map((n) => gh.pr(full(name), n)!.merged)).toEqual([true, true, true]);
    expect(ci.runs.filter((r) => r.repo === full(name)).length).toBe(1);
    expect(mergeOrder(name)).toEqual([1, 2, 3]);
  });

  test("another author's PR under it, or a protected branch, is no stack: nothing of theirs enters (review finding)", async () => {
    const name = "long-lived";
    await queueOf(name);
    gh.createBranch(full(name), "develop", "main");
    // A release PR develop → main, by someone else; a feature PR into develop.
    gh.openPr(full(name), { number: 1, headRef: "develop", base: "main", author: "releaser", files: { "release.txt": "r\n" } });
    gh.openPr(full(name), { number: 2, base: "develop", files: { "src/2.ts": "2\n" } });
    await api.ok("submitPullRequest", github.pr(name, 2));
    expect(await github.submitted(name, 2)).toMatchObject({ state: "not_ready", readiness: { doesBaseBranchMatch: false } });
    expect((await api.call("getSubmittedPullRequest", github.pr(name, 1))).status).toBe(404);
    // The same author's, but develop is protected: still no stack.
    gh.openPr(full(name), { number: 3, headRef: "staging", base: "main", files: { "staging.txt": "s\n" } });
    gh.protect(full(name), "staging", []);
    gh.openPr(full(name), { number: 4, base: "staging", files: { "src/4.ts": "4\n" } });
    await api.ok("submitPullRequest", github.pr(name, 4));
    expect(await github.submitted(name, 4)).toMatchObject({ state: "not_ready" });
    expect((await api.call("getSubmittedPullRequest", github.pr(name, 3))).status).toBe(404);
  });

  test("a queue merging by rebase refuses a stack (409 saying why); a comment on a stack's top names the PRs that entered with it", async () => {
    const name = "rebase";
    await queueOf(name, { mergeMethod: "rebase" });
    openStack(name, [1, 2]);
    const refused = await api.call("submitPullRequest", github.pr(name, 2));
    expect([refused.status, refused.body.error.message]).toEqual([409, expect.stringContaining("merges by rebase")]);
    const other = "named";
    await queueOf(other);
    gh.grant(full(other), "dev", "write");
    openStack(other, [1, 2, 3]);
    gh.comment(full(other), 3, "dev", "/greenline merge");
    await settle(2);
    const told = gh.comments.filter((c) => c.repo === full(other).toLowerCase() && c.number === 3).map((c) => c.body);
    expect(told.join("\n")).toContain("stacked on (#1, #2)");
  });

  test("an emergency submitted on top of a queued PR makes the PR under it an emergency too, recorded for each", async () => {
    const name = "emergency";
    await queueOf(name);
    openStack(name, [1, 2]);
    await api.ok("submitPullRequest", github.pr(name, 1));
    const admin = new ApiClient(server.url, (await createToken(server.greenline.services.db, OWNER, "release-manager", "admin")).token);
    await admin.ok("submitPullRequest", { ...github.pr(name, 2), priority: "emergency", emergencyReason: "login is down" });
    expect((await github.submitted(name, 1)).priorityName).toBe("emergency");
    const audit = await admin.ok("getAuditLog", { page_query: { page_size: 50, page_token: "" } });
    const prs = (audit.entries as { action: string; details: { prNumber?: number } }[]).filter((e) => e.action === "pull_request.emergency").map((e) => e.details.prNumber);
    expect(prs.sort()).toEqual([1, 2]);
  });

  test("a PR based on a branch that is no PR's head is not a stack: it waits, not ready, its base named", async () => {
    const name = "no-stack";
    await queueOf(name);
    gh.createBranch(full(name), "release", "main");
    gh.openPr(full(name), { number: 1, base: "release" });
    await api.ok("submitPullRequest", github.pr(name, 1));
    const pr = await github.submitted(name, 1);
    expect(pr).toMatchObject({ state: "not_ready", readiness: { doesBaseBranchMatch: false } });
  });
});
