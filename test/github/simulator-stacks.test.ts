import { ProbotOctokit } from "probot";
import { APP_BOT, GitHubSimulator, type SimulatorEvent } from "../support/github-simulator.js";

/**
 * Stacked pull requests in the simulated GitHub, asked through the real Octokit: PR #2's base is
 * PR #1's head branch `feature-1`. Merges are three-way against the merge base, as git merges
 * (merging #2's head brings #1's changes too); deleting a merged PR's head branch moves the PRs
 * based on it to that PR's base, deleting any other branch closes them; "Automatically delete
 * head branches" (`delete_branch_on_merge`) deletes a merged PR's head branch. Sources:
 * docs/github.md, "Stacked pull requests".
 */
describe("stacked pull requests in the GitHub simulator", () => {
  let gh: GitHubSimulator;
  let octokit: InstanceType<typeof ProbotOctokit>;
  let repoCount = 0;
  const OWNER = "octo-stack";
  const INSTALLATION = 502;
  let events: SimulatorEvent[] = [];

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    gh.installApp(INSTALLATION, OWNER);
    gh.onEvent = (event) => events.push(event);
    octokit = new ProbotOctokit({ auth: { token: `ghs_installation_${INSTALLATION}` }, baseUrl: gh.url, retry: { enabled: false }, throttle: { enabled: false } });
  });
  afterAll(async () => {
    await gh?.stop();
  });
  beforeEach(() => {
    events = [];
  });

  /** A fresh repository whose main holds `shared.txt`, with PR #1 (`feature-1` → main) and PR #2 stacked on it (`feature-2` → `feature-1`). */
  function stack(files: { one?: Record<string, string>; two?: Record<string, string> } = {}) {
    const name = `repo${++repoCount}`;
    const full = `${OWNER}/${name}`;
    gh.createBranch(full, "main");
    const root = gh.push(full, "main", { "shared.txt": "base\n" });
    const one = gh.openPr(full, { number: 1, files: files.one ?? { "one.txt": "one\n" } });
    const two = gh.openPr(full, { number: 2, base: "feature-1", files: files.two ?? { "two.txt": "two\n" } });
    events = [];
    return { owner: OWNER, repo: name, full, root, one, two };
  }

  /** The status and message GitHub answered. */
  async function refusal(call: Promise<unknown>): Promise<{ status: number; message: string }> {
    try {
      await call;
    } catch (e) {
      const error = e as { status: number; response?: { data?: { message?: string } } };
      return { status: error.status, message: error.response?.data?.message ?? "" };
    }
    throw new Error("the call was not refused");
  }

  /** The pull request events, in order: action, number, and the base they moved from. */
  function prEvents(): [string, number, string | undefined][] {
    return events.flatMap((e) => (e.kind === "pull_request" ? [[e.action, e.pr.number, e.changes?.base?.ref.from] as [string, number, string | undefined]] : []));
  }

  describe("three-way merges", () => {
    test("a stacked PR moved to main merges cleanly after #1's squash merge: main has both changes", async () => {
      const r = stack();
      expect((await octokit.rest.pulls.get({ ...r, pull_number: 2 })).data).toMatchObject({ base: { ref: "feature-1" }, mergeable: true, mergeable_state: "clean" });
      const squash = await octokit.rest.pulls.merge({ ...r, pull_number: 1, merge_method: "squash" });
      expect(gh.parentsOf(squash.data.sha)).toEqual([r.root]);
      expect((await octokit.rest.pulls.update({ ...r, pull_number: 2, base: "main" })).data.base.ref).toBe("main");
      // #1's change is in main already (by its squash commit) and in #2's head: the same content on both sides.
      expect((await octokit.rest.pulls.get({ ...r, pull_number: 2 })).data).toMatchObject({ mergeable: true, mergeable_state: "clean" });
      // The merge base of main and #2's head is where #1 was opened, not #2's parent.
      expect((await octokit.rest.repos.compareCommitsWithBasehead({ ...r, basehead: "main...feature-2" })).data.merge_base_commit.sha).toBe(r.root);
      const merged = await octokit.rest.pulls.merge({ ...r, pull_number: 2, merge_method: "squash" });
      expect(merged.data.merged).toBe(true);
      expect(gh.files(r.full, "main")).toEqual({ "README.md": `# ${r.full}\n`, "shared.txt": "base\n", "one.txt": "one\n", "two.txt": "two\n" });
      expect(gh.parentsOf(merged.data.sha)).toEqual([squash.data.sha]);
    });

    test("merging #2's head into main without #1 brings #1's change too, and marks #1 merged", async () => {
      const r = stack();
      await octokit.rest.pulls.update({ ...r, pull_number: 2, base: "main" });
      expect((await octokit.rest.pulls.get({ ...r, pull_number: 2 })).data).toMatchObject({ mergeable: true, mergeable_state: "clean" });
      const merged = await octokit.rest.pulls.merge({ ...r, pull_number: 2, merge_method: "merge" });
      expect(gh.files(r.full, "main")).toMatchObject({ "one.txt": "one\n", "two.txt": "two\n" });
      expect(gh.parentsOf(merged.data.sha)).toEqual([r.root, r.two.headSha]);
      // #1's head is now in main: GitHub marks #1 merged (as main moves, before #2's `closed`).
      expect(gh.pr(r.full, 1)).toMatchObject({ merged: true, state: "closed" });
      expect(prEvents()).toEqual([
        ["edited", 2, "feature-1"],
        ["closed", 1, undefined],
        ["closed", 2, undefined],
      ]);
    });

    test("the merges API merges a branch with all its commits against the merge base", async () => {
      const r = stack();
      gh.createBranch(r.full, "release", "main");
      gh.push(r.full, "release", { "release.txt": "1.0\n" });
      const merge = await octokit.rest.repos.merge({ ...r, base: "release", head: "feature-2" });
      expect(merge.status).toBe(201);
      expect(gh.files(r.full, "release")).toEqual({ "README.md": `# ${r.full}\n`, "shared.txt": "base\n", "release.txt": "1.0\n", "one.txt": "one\n", "two.txt": "two\n" });
      // Merging it again changes nothing: its head is in the branch.
      expect((await octokit.rest.repos.merge({ ...r, base: "release", head: "feature-2" })).status).toBe(204);
    });

    test("a file both sides changed to different contents still conflicts", async () => {
      const r = stack({ one: { "shared.txt": "one\n" }, two: { "shared.txt": "two\n" } });
      // #2 against its own base is fine: feature-1 is its merge base.
      expect((await octokit.rest.pulls.get({ ...r, pull_number: 2 })).data).toMatchObject({ mergeable: true, mergeable_state: "clean" });
      gh.push(r.full, "main", { "shared.txt": "main\n" });
      await octokit.rest.pulls.update({ ...r, pull_number: 2, base: "main" });
      expect((await octokit.rest.pulls.get({ ...r, pull_number: 2 })).data).toMatchObject({ mergeable: false, mergeable_state: "dirty" });
      expect(await refusal(octokit.rest.pulls.merge({ ...r, pull_number: 2, merge_method: "squash" }))).toEqual({ status: 405, message: "Pull Request is not mergeable" });
      expect(await refusal(octokit.rest.pulls.merge({ ...r, pull_number: 1, merge_method: "merge" }))).toEqual({ status: 405, message: "Pull Request is not mergeable" });
      expect(await refusal(octokit.rest.repos.merge({ ...r, base: "main", head: "feature-2" }))).toEqual({ status: 409, message: "Merge conflict" });
      expect(gh.files(r.full, "main")["shared.txt"]).toBe("main\n");
    });

    test("a change main made to another file does not conflict, and main keeps it", async () => {
      const r = stack({ one: { "shared.txt": "one\n" } });
      gh.push(r.full, "main", { "other.txt": "main\n" });
      await octokit.rest.pulls.update({ ...r, pull_number: 2, base: "main" });
      await octokit.rest.pulls.merge({ ...r, pull_number: 2, merge_method: "merge" });
      expect(gh.files(r.full, "main")).toMatchObject({ "shared.txt": "one\n", "other.txt": "main\n", "two.txt": "two\n" });
    });
  });

  describe("deleting a branch that pull requests are based on", () => {
    test("after #1 merged, deleting its head branch moves #2 to main (edited, changes.base), and #2 then merges", async () => {
      const r = stack();
      await octokit.rest.pulls.merge({ ...r, pull_number: 1, merge_method: "squash" });
      events = [];
      expect((await octokit.rest.git.deleteRef({ ...r, ref: "heads/feature-1" })).status).toBe(204);
      expect(events.map((e) => e.kind)).toEqual(["push", "pull_request"]);
      expect(events[0]).toMatchObject({ kind: "push", branch: "feature-1", deleted: true, sender: APP_BOT });
      expect(events[1]).toMatchObject({ kind: "pull_request", action: "edited", sender: APP_BOT, changes: { base: { ref: { from: "feature-1" } } }, pr: { number: 2, base: "main", state: "open" } });
      expect((await octokit.rest.pulls.get({ ...r, pull_number: 2 })).data).toMatchObject({ state: "open", base: { ref: "main" }, mergeable: true });
      await octokit.rest.pulls.merge({ ...r, pull_number: 2, merge_method: "squash" });
      expect(gh.files(r.full, "main")).toMatchObject({ "one.txt": "one\n", "two.txt": "two\n" });
    });

    test("GraphQL's updateRefs deleting the branch moves the stacked PR the same way", async () => {
      const r = stack();
      await octokit.rest.pulls.merge({ ...r, pull_number: 1, merge_method: "merge" });
      events = [];
      const { node_id } = (await octokit.rest.repos.get(r)).data;
      const input = { repositoryId: node_id, refUpdates: [{ name: "refs/heads/feature-1", beforeOid: r.one.headSha, afterOid: "0".repeat(40) }] };
      await octokit.graphql("mutation($input: UpdateRefsInput!) { updateRefs(input: $input) { clientMutationId } }", { input });
      expect(gh.hasBranch(r.full, "feature-1")).toBe(false);
      expect(prEvents()).toEqual([["edited", 2, "feature-1"]]);
      expect(gh.pr(r.full, 2)).toMatchObject({ state: "open", base: "main" });
    });

    test("deleting an unmerged PR's head branch closes it and the PRs based on it", async () => {
      const r = stack();
      expect((await octokit.rest.git.deleteRef({ ...r, ref: "heads/feature-1" })).status).toBe(204);
      expect(events[0]).toMatchObject({ kind: "push", branch: "feature-1", deleted: true });
      expect(prEvents()).toEqual([
        ["closed", 1, undefined],
        ["closed", 2, undefined],
      ]);
      expect((await octokit.rest.pulls.get({ ...r, pull_number: 2 })).data).toMatchObject({ state: "closed", merged: false, base: { ref: "feature-1" } });
      expect((await refusal(octokit.rest.pulls.update({ ...r, pull_number: 2, base: "main" }))).status).toBe(422);
    });

    test("a PR closed without merging does not count: the PRs based on its head branch are closed", async () => {
      const r = stack();
      await octokit.rest.pulls.update({ ...r, pull_number: 1, state: "closed" });
      events = [];
      await octokit.rest.git.deleteRef({ ...r, ref: "heads/feature-1" });
      expect(prEvents()).toEqual([["closed", 2, undefined]]);
      expect(gh.pr(r.full, 2)).toMatchObject({ state: "closed", merged: false });
    });

    test("a branch no PR came from: the PRs based on it are closed", async () => {
      const r = stack();
      gh.createBranch(r.full, "develop", "main");
      gh.openPr(r.full, { number: 3, base: "develop" });
      events = [];
      await octokit.rest.git.deleteRef({ ...r, ref: "heads/develop" });
      expect(prEvents()).toEqual([["closed", 3, undefined]]);
      expect(gh.pr(r.full, 1)!.state).toBe("open");
    });
  });

  describe("Automatically delete head branches (delete_branch_on_merge)", () => {
    test("off by default; the repository answer reports it as set", async () => {
      const r = stack();
      expect((await octokit.rest.repos.get(r)).data.delete_branch_on_merge).toBe(false);
      gh.setRepository(r.full, { deleteBranchOnMerge: true });
      expect((await octokit.rest.repos.get(r)).data).toMatchObject({ delete_branch_on_merge: true, allow_squash_merge: true });
      await octokit.rest.pulls.merge({ ...r, pull_number: 1 });
      expect(gh.hasBranch(r.full, "feature-1")).toBe(false);
    });

    test("merging #1 deletes feature-1 and moves #2 to main: closed, then the push, then edited", async () => {
      const r = stack();
      gh.setRepository(r.full, { deleteBranchOnMerge: true });
      const merged = await octokit.rest.pulls.merge({ ...r, pull_number: 1, merge_method: "squash" });
      expect(events.map((e) => [e.kind, "action" in e ? e.action : "branch" in e ? e.branch : undefined])).toEqual([
        ["push", "main"],
        ["pull_request", "closed"],
        ["push", "feature-1"],
        ["pull_request", "edited"],
      ]);
      expect(events[1]).toMatchObject({ pr: { number: 1, merged: true, mergeCommitSha: merged.data.sha } });
      expect(events[2]).toMatchObject({ kind: "push", branch: "feature-1", before: r.one.headSha, after: "0".repeat(40), deleted: true, sender: APP_BOT });
      expect(events[3]).toMatchObject({ pr: { number: 2, base: "main" }, changes: { base: { ref: { from: "feature-1" } } }, sender: APP_BOT });
      expect(gh.hasBranch(r.full, "feature-1")).toBe(false);
      expect((await octokit.rest.pulls.get({ ...r, pull_number: 2 })).data).toMatchObject({ state: "open", base: { ref: "main" }, mergeable: true, mergeable_state: "clean" });
      await octokit.rest.pulls.merge({ ...r, pull_number: 2, merge_method: "squash" });
      expect(gh.hasBranch(r.full, "feature-2")).toBe(false);
      expect(gh.files(r.full, "main")).toMatchObject({ "one.txt": "one\n", "two.txt": "two\n" });
    });

    test("a fork's head branch and a protected head branch are kept", async () => {
      const r = stack();
      gh.setRepository(r.full, { deleteBranchOnMerge: true });
      gh.protect(r.full, "feature-1", []);
      await octokit.rest.pulls.merge({ ...r, pull_number: 1 });
      expect(gh.hasBranch(r.full, "feature-1")).toBe(true);
      expect(gh.pr(r.full, 2)).toMatchObject({ state: "open", base: "feature-1" });
      gh.openPr(r.full, { number: 3, headRepo: "alice/fork", headRef: "patch" });
      events = [];
      await octokit.rest.pulls.merge({ ...r, pull_number: 3 });
      expect(events.filter((e) => e.kind === "push" && e.deleted)).toEqual([]);
    });
  });
});
