import { REASONS } from "../../src/domain/reasons.js";
import { inFlightRecheckDelayMs } from "../../src/domain/readiness.js";
import { BACKENDS } from "../support/backends.js";
import type { GitHubDriver } from "../support/github-driver.js";
import type { GitHubSimulator } from "../support/github-simulator.js";
import type { Delivery, WebhookDeliverer } from "../support/github-webhooks.js";
import { type ApiClient, TestClock, type TestServer } from "../support/harness.js";
import { type GitHubWorld, startGitHubWorld } from "../support/github-world.js";

/**
 * A PR is merged only into the queue's branch, whatever webhooks were lost (issue 22, item 0).
 * GitHub merges a PR into its base as it is when it merges: a PR moved to `release` while it
 * was tested, its `pull_request.edited` delivery lost, must not be merged (it went to `release`,
 * and Greenline called it merged into main), and a PR closed while tested, its `closed` lost,
 * leaves as closed (it failed on GitHub's "not mergeable"). End to end: every webhook Greenline
 * sees is one the simulator delivered, but for the ones each test loses on purpose.
 */
const lostEdits = (d: Delivery) => d.event === "pull_request" && d.action === "edited";
const lostCloses = (d: Delivery) => d.event === "pull_request" && d.action === "closed";

describe.each(BACKENDS)("merging only into the queue's branch, webhooks lost, $name", (backend) => {
  const OWNER = "octo-target";
  const INSTALLATION = 83;
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  let webhooks: WebhookDeliverer;
  const clock = new TestClock();

  const full = (name: string) => `${OWNER}/${name}`;
  const stateOf = async (name: string, number: number) => {
    const { state, stateReason } = await github.submitted(name, number);
    return { state, stateReason };
  };
  const mergeCalls = (name: string) => gh.requests.filter((r) => r.method === "PUT" && r.path.startsWith(`/repos/${full(name)}/pulls/`)).length;
  const refUpdates = (name: string, branch: string) => gh.requests.filter((r) => r.method === "PATCH" && r.path === `/repos/${full(name)}/git/refs/heads/${branch}`).length;

  /** Deliveries, CI and the worker until nothing moves (GitHubWorld.settle). */
  const settle = (rounds?: number, stepMs?: number) => world.settle(rounds, stepMs);

  /** A queue on main of repository `name`, a `release` branch, and PRs opened and submitted, tested (CI not finished). */
  async function queueTesting(name: string, settings: Record<string, unknown>, numbers: number[], release: "at_main" | "older" = "at_main") {
    const REPO = full(name);
    const initial = gh.branchHead(REPO, "main");
    if (release === "older") gh.push(REPO, "main", { "docs/main-only.md": "main moved on\n" });
    gh.createBranch(REPO, "release", release === "older" ? initial : undefined);
    await api.ok("createQueue", { ...github.queue(name), requiredStatuses: ["ci/test"], ...settings });
    for (const n of numbers) gh.openPr(REPO, { number: n, files: { [`src/${n}.ts`]: `${n}\n` } });
    for (const n of numbers) await api.ok("submitPullRequest", github.pr(name, n));
    await webhooks.flush();
    await server.greenline.worker.drain();
  }

  let world: GitHubWorld;
  beforeAll(async () => {
    world = await startGitHubWorld(backend, clock, [{ owner: OWNER, installation: INSTALLATION }]);
    ({ gh, server, webhooks } = world);
    github = world.accounts[0]!;
    api = github.api;
  });
  afterEach(() => webhooks.setFaults({}));
  afterAll(() => world?.close());

  test.each([
    { method: "squash", path: "each PR merged through GitHub" },
    { method: "merge_commit", path: "the target fast-forwarded" },
  ] as const)("a PR moved to release while tested, its `edited` lost, is not merged ($method: $path): it leaves the queue, base_branch_changed", async ({ method }) => {
    const name = `moved-${method}`;
    const REPO = full(name);
    await queueTesting(name, { mergeMethod: method }, [1]);
    expect((await stateOf(name, 1)).state).toBe("testing");
    const main = gh.branchHead(REPO, "main");
    const release = gh.branchHead(REPO, "release");
    const logged = webhooks.log.length;
    webhooks.setFaults({ lost: lostEdits });
    gh.retargetPr(REPO, 1, "release");
    await settle();

    expect(
      webhooks.log
        .slice(logged)
        .filter((a) => lostEdits(a.delivery))
        .map((a) => a.status),
    ).toEqual(["dropped"]);
    // Read before the merge: nothing merged anywhere, and Greenline says why it left.
    expect(await stateOf(name, 1)).toMatchObject({ state: "cancelled", stateReason: "base_branch_changed" });
    expect(gh.pr(REPO, 1)).toMatchObject({ state: "open", merged: false, base: "release" });
    expect([gh.branchHead(REPO, "main"), gh.branchHead(REPO, "release")]).toEqual([main, release]);
    expect(mergeCalls(name)).toBe(0);
    expect(refUpdates(name, "main")).toBe(0);
    expect(gh.comments.filter((c) => c.repo === REPO && c.number === 1).map((c) => c.body)).toEqual([expect.stringContaining(`**cancelled** (\`base_branch_changed\`). ${REASONS.base_branch_changed}`)]);
  });

  test.each(["squash", "merge_commit"] as const)("a PR closed while tested, its `closed` lost, leaves the queue as closed (%s): pr_closed, not a failure, nothing merged", async (method) => {
    const name = `closed-${method}`;
    const REPO = full(name);
    await queueTesting(name, { mergeMethod: method }, [1]);
    expect((await stateOf(name, 1)).state).toBe("testing");
    const main = gh.branchHead(REPO, "main");
    const logged = webhooks.log.length;
    webhooks.setFaults({ lost: lostCloses });
    gh.closePr(REPO, 1);
    await settle();

    expect(
      webhooks.log
        .slice(logged)
        .filter((a) => lostCloses(a.delivery))
        .map((a) => a.status),
    ).toEqual(["dropped"]);
    expect(await stateOf(name, 1)).toEqual({ state: "cancelled", stateReason: "pr_closed" });
    expect(gh.pr(REPO, 1)).toMatchObject({ state: "closed", merged: false });
    expect(gh.branchHead(REPO, "main")).toBe(main);
    expect(mergeCalls(name)).toBe(0);
    expect(refUpdates(name, "main")).toBe(0);
  });

  test.each([
    { change: "moved to release", expected: "base_branch_changed", lost: lostEdits },
    { change: "closed", expected: "pr_closed", lost: lostCloses },
  ])("a PR under test $change, its webhook lost, is re-read while CI still runs and leaves: $expected, its run stopped", async ({ change, expected, lost }) => {
    const name = `reread-${expected}`;
    const REPO = full(name);
    await queueTesting(name, { mergeMethod: "squash", concurrency: 2 }, [1, 2]);
    expect([(await stateOf(name, 1)).state, (await stateOf(name, 2)).state]).toEqual(["testing", "testing"]);
    const testing = gh.branches(REPO, "greenline/").length;
    webhooks.setFaults({ lost });
    if (change === "closed") gh.closePr(REPO, 1);
    else gh.retargetPr(REPO, 1, "release");
    await webhooks.flush();
    // Nothing tells Greenline; CI has not reported. Short of the first re-read, it still tests.
    clock.advance(inFlightRecheckDelayMs(1) - 1_000);
    await server.greenline.worker.drain();
    expect((await stateOf(name, 1)).state).toBe("testing");
    clock.advance(1_000);
    await server.greenline.worker.drain();
    expect(await stateOf(name, 1)).toEqual({ state: "cancelled", stateReason: expected });
    // #2 was tested on top of #1: it is tested again without it.
    const details = await api.ok("getMergeQueueTestingDetails", github.pr(name, 2));
    expect(Object.keys(gh.files(REPO, details.testBranch)).sort()).toEqual(["README.md", "src/2.ts"]);
    expect(gh.branches(REPO, "greenline/").length).toBeLessThanOrEqual(testing);
    await settle();
    expect((await stateOf(name, 2)).state).toBe("merged");
    expect(Object.keys(gh.files(REPO, "main")).sort()).toEqual(["README.md", "src/2.ts"]);
    expect(Object.keys(gh.files(REPO, "release")).sort()).toEqual(["README.md"]);
  });

  test("a PR in flight whose base and state did not change is re-read more and more rarely: 1, 2, 4 minutes…", async () => {
    const name = "reread-calm";
    const REPO = full(name);
    await queueTesting(name, { mergeMethod: "squash" }, [1]);
    const reads = () => gh.requests.filter((r) => r.method === "GET" && r.path === `/repos/${REPO}/pulls/1`).length;
    const before = reads();
    const seen: number[] = [];
    for (let minute = 1; minute <= 7; minute++) {
      clock.advance(60_000);
      await server.greenline.worker.drain();
      seen.push(reads() - before);
    }
    // Read at 1, 2 and 4 minutes after it started testing (the next at 8).
    expect(seen).toEqual([1, 2, 2, 3, 3, 3, 3]);
    expect((await stateOf(name, 1)).state).toBe("testing");
  });

  test.each([
    { release: "at_main" as const, moved: 1, why: "release at main's very head: the merge sits on the commit main is at, yet is not on main" },
    { release: "older" as const, moved: 2, why: "release behind main: the merge's parent is not the merge before (it was reported merged_after_target_moved)" },
  ])("a PR moved to release between the queue's read and GitHub's merge is merged there: never reported merged into main ($why)", async ({ release, moved }) => {
    const name = `elsewhere-${release}`;
    const REPO = full(name);
    await queueTesting(name, { mergeMethod: "squash", batch: true, batchingMinSize: 3 }, [1, 2, 3], release);
    webhooks.setFaults({ lost: lostEdits });
    // Someone moves the PR to release as GitHub is about to merge it (after Greenline read it).
    gh.beforeMerge(REPO, moved, () => {
      gh.retargetPr(REPO, moved, "release");
      return undefined;
    });
    const releaseBefore = gh.branchHead(REPO, "release");
    await settle(3);

    // GitHub merged it into release; Greenline says so, and that it left the queue for main.
    expect(gh.pr(REPO, moved)).toMatchObject({ merged: true, base: "release" });
    expect(gh.parentsOf(gh.branchHead(REPO, "release"))[0]).toBe(releaseBefore);
    expect(await stateOf(name, moved)).toEqual({ state: "cancelled", stateReason: "merged_into_other_branch" });
    const timeline = await github.timelineOf(name, moved);
    expect(timeline.map((e: { state: string }) => e.state)).not.toContain("merged");
    expect(timeline.at(-1)).toMatchObject({ reason: "merged_into_other_branch", actor: { kind: "code_host" } });
    expect(timeline.at(-1)!.message).toContain(`GitHub merged it into release (${gh.branchHead(REPO, "release").slice(0, 7)})`);
    expect(gh.comments.filter((c) => c.repo === REPO && c.number === moved).map((c) => c.body)).toEqual([expect.stringContaining(`**cancelled** (\`merged_into_other_branch\`). ${REASONS.merged_into_other_branch}`)]);

    // The others land on main, those after it tested again without it (one by one now: no batch to wait for).
    await api.ok("updateQueue", { ...github.queue(name), batch: false });
    await settle(10);
    const others = [1, 2, 3].filter((n) => n !== moved);
    for (const n of others) expect([n, (await stateOf(name, n)).state]).toEqual([n, "merged"]);
    expect(Object.keys(gh.files(REPO, "main")).filter((f) => f.startsWith("src/"))).toEqual(others.map((n) => `src/${n}.ts`));
    expect(Object.keys(gh.files(REPO, "release")).filter((f) => f.startsWith("src/"))).toEqual([`src/${moved}.ts`]);
    expect(await server.greenline.services.db.read((tx) => tx.effect.count({ where: { doneAt: null, queue: { repository: { name } } } }))).toBe(0);
  });

  test("the simulator moves a PR's base through the API as GitHub does: 422 for a missing branch or a closed PR, then merges into the new base", async () => {
    const name = "patch-base";
    const REPO = full(name);
    gh.createBranch(REPO, "release");
    gh.openPr(REPO, { number: 1 });
    gh.openPr(REPO, { number: 2 });
    gh.closePr(REPO, 2);
    const patch = (n: number, body: object) =>
      fetch(`${gh.url}/repos/${REPO}/pulls/${n}`, { method: "PATCH", headers: { authorization: `token ghs_installation_${INSTALLATION}`, "content-type": "application/json" }, body: JSON.stringify(body) }).then(
        async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }),
      );
    expect(await patch(1, { base: "nope" })).toMatchObject({ status: 422, body: { message: "Validation Failed", errors: [{ resource: "PullRequest", field: "base", code: "invalid" }] } });
    expect(await patch(2, { base: "release" })).toMatchObject({ status: 422, body: { errors: [{ message: "Cannot change the base branch of a closed pull request.", field: "base" }] } });
    expect(gh.pr(REPO, 1)!.base).toBe("main");
    const moved = await patch(1, { base: "release" });
    expect(moved).toMatchObject({ status: 200, body: { base: { ref: "release" } } });
    const edited = webhooks.deliveries("pull_request", "edited").at(-1)!;
    expect(edited.payload).toMatchObject({ number: 1, changes: { base: { ref: { from: "main" } } }, pull_request: { base: { ref: "release" } } });
    expect(webhooks.schemaViolations).toEqual([]);
  });
});
