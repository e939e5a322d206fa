import { REASONS } from "../../src/domain/reasons.js";
import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * Merge freezes against the simulated GitHub (real server, real Octokit over HTTP): the PRs'
 * statuses say "frozen until …", comment commands freeze and unfreeze for people with write,
 * and only admins and maintainers merge a hotfix through a freeze (docs/freezes.md).
 */
describe.each(BACKENDS)("merge freezes on GitHub, $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const clock = new TestClock();
  const OWNER = "octo-freeze";
  const full = (name: string) => `${OWNER}/${name}`;

  const descriptionOf = (name: string, n: number) => gh.statuses.filter((st) => st.repo === full(name) && st.sha === gh.pr(full(name), n)!.headSha && st.context === "greenline/merge-queue").at(-1)?.description;
  const replies = (name: string, n: number) => gh.comments.filter((c) => c.repo === full(name) && c.number === n).map((c) => c.body);
  const comment = (name: string, n: number, user: string, body: string) => ({
    action: "created",
    issue: { number: n, pull_request: { url: `https://api.github.com/repos/${OWNER}/${name}/pulls/${n}` } },
    comment: { id: n * 100 + Math.floor(Math.random() * 99), body, user: { login: user, id: 7, type: "User" } },
    repository: github.repository(name),
    installation: { id: 83 },
    sender: { login: user, id: 7, type: "User" },
  });
  async function ciReports(name: string) {
    clock.advance(10 * 60_000);
    await github.ciPasses(name);
    await server.greenline.worker.drain();
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    gh.useClock(() => clock.ms);
    server = await startTestServer(backend, { githubApp: githubAppOf(gh), now: clock.now });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 83 });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("frozen by a comment: statuses say until when, a writer's hotfix is refused, a maintainer's merges, unfreezing merges the rest", async () => {
    const name = "app";
    gh.grant(full(name), "dev", "write");
    gh.grant(full(name), "lead", "maintain");
    await api.ok("createQueue", { ...github.queue(name), requiredStatuses: ["ci/test"], mergeMethod: "squash", concurrency: 2 });
    for (const n of [1, 2, 3]) gh.openPr(full(name), { number: n, files: { [`src/${n}.ts`]: `${n}` } });

    await github.deliverThenDrain("issue_comment", comment(name, 1, "dev", '/greenline freeze "release 4.2" --until 2026-11-22T18:00Z'));
    expect(replies(name, 1).at(-1)).toContain("froze the queue for `main` until 2026-11-22 18:00 UTC: release 4.2");
    for (const n of [1, 2]) await api.ok("submitPullRequest", github.pr(name, n));
    await server.greenline.worker.drain();
    expect(descriptionOf(name, 1)).toBe(`${REASONS.testing.replace(/\.$/, "")} (frozen until 2026-11-22 18:00 UTC).`);
    await ciReports(name);
    // Tested green and held: the status says why it does not merge.
    expect(gh.pr(full(name), 1)!.merged).toBe(false);
    expect(descriptionOf(name, 1)).toMatch(/\(frozen until 2026-11-22 18:00 UTC\)\.$/);

    // A writer may not merge through the freeze; a maintainer may.
    await github.deliverThenDrain("issue_comment", comment(name, 3, "dev", '/greenline merge --hotfix "fix login"'));
    expect(replies(name, 3).at(-1)).toContain("only admins and maintainers of octo-freeze/app can declare an emergency merge");
    expect((await api.call("getSubmittedPullRequest", github.pr(name, 3))).status).toBe(404);
    await github.deliverThenDrain("issue_comment", comment(name, 3, "lead", '/greenline merge --hotfix "fix login"'));
    expect(replies(name, 3).at(-1)).toContain("as an emergency (fix login)");
    await ciReports(name);
    await ciReports(name);
    expect(gh.pr(full(name), 3)!.merged).toBe(true);
    expect(gh.pr(full(name), 1)!.merged).toBe(false);

    await github.deliverThenDrain("issue_comment", comment(name, 2, "dev", "/greenline unfreeze"));
    expect(replies(name, 2).at(-1)).toContain('ended the freeze "release 4.2" on the queue for `main`: it merges again');
    for (let i = 0; i < 3 && !(gh.pr(full(name), 1)!.merged && gh.pr(full(name), 2)!.merged); i++) await ciReports(name);
    expect([gh.pr(full(name), 1)!.merged, gh.pr(full(name), 2)!.merged]).toEqual([true, true]);
    const kinds = ((await api.ok("getQueueEvents", { ...github.queue(name), limit: 20 })).events as { kind: string; actor: { name: string }; details: { command?: string } }[]).reverse();
    expect(kinds.filter((e) => e.kind.startsWith("freeze") || e.kind === "emergency_submission").map((e) => [e.kind, e.actor.name, e.details.command])).toEqual([
      ["freeze_added", "dev", "/greenline freeze"],
      ["freeze_started", "dev", "/greenline freeze"],
      ["emergency_submission", "lead", "/greenline merge"],
      ["freeze_removed", "dev", "/greenline unfreeze"],
      ["freeze_ended", "dev", "/greenline unfreeze"],
    ]);
    // The audit log names the way in: comments, with the commenters as GitHub users.
    const audit = (await api.ok("getAuditLog", { page_query: { page_size: 50, page_token: "" }, repo: { host: "github.com", owner: OWNER, name } })).entries as {
      action: string;
      channel: string;
      actor: { kind: string; name: string };
      reason: string | null;
    }[];
    expect(audit.filter((e) => e.action !== "queue.created").map((e) => [e.action, e.channel, e.actor.kind, e.actor.name, e.reason])).toEqual([
      ["queue.freeze_removed", "comment", "user", "dev", "release 4.2"],
      ["pull_request.emergency", "comment", "user", "lead", "fix login"],
      ["queue.freeze_added", "comment", "user", "dev", "release 4.2"],
    ]);
  });

  test("a merge decided just before a freeze is held by it, and carried out at the thaw without testing again", async () => {
    const name = "held";
    await api.ok("createQueue", { ...github.queue(name), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(full(name), { number: 1, files: { "src/1.ts": "1" } });
    await api.ok("submitPullRequest", github.pr(name, 1));
    await server.greenline.worker.drain();
    clock.advance(10 * 60_000);
    // CI reports: the queue decides the merge, and the worker has not carried it out yet.
    await github.ciPasses(name);
    expect((await api.ok("getSubmittedPullRequest", github.pr(name, 1))).stateReason).toBe("merging");
    await api.ok("freezeQueue", { ...github.queue(name), reason: "incident" });
    await server.greenline.worker.drain();
    expect(gh.pr(full(name), 1)!.merged).toBe(false);
    expect(await api.ok("getSubmittedPullRequest", github.pr(name, 1))).toMatchObject({ state: "tests_passed", stateReason: "tests_passed" });
    const runsBefore = (await api.ok("getMergeQueueTestingDetails", github.pr(name, 1))).testRunId;
    await api.ok("unfreezeQueue", github.queue(name));
    await server.greenline.worker.drain();
    expect(gh.pr(full(name), 1)!.merged).toBe(true);
    expect((await api.ok("getMergeQueueTestingDetails", github.pr(name, 1))).testRunId).toBe(runsBefore);
  });

  test("a reader cannot freeze; a freeze's end on its own clock thaws the queue and updates the statuses", async () => {
    const name = "timed";
    gh.grant(full(name), "viewer", "triage");
    gh.grant(full(name), "dev", "write");
    await api.ok("createQueue", { ...github.queue(name), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    gh.openPr(full(name), { number: 1, files: { "src/1.ts": "1" } });
    await github.deliverThenDrain("issue_comment", comment(name, 1, "viewer", '/greenline freeze "nope"'));
    expect(replies(name, 1).at(-1)).toContain("only people who can push");
    expect((await api.ok("listQueueFreezes", github.queue(name))).freezes).toEqual([]);

    const until = new Date(clock.ms + 30 * 60_000).toISOString();
    await api.ok("freezeQueue", { ...github.queue(name), reason: "audit", until });
    await api.ok("submitPullRequest", github.pr(name, 1));
    await server.greenline.worker.drain();
    await ciReports(name);
    expect(gh.pr(full(name), 1)!.merged).toBe(false);
    expect(descriptionOf(name, 1)).toBe(`${REASONS.tests_passed.replace(/\.$/, "")} (frozen until ${until.slice(0, 16).replace("T", " ")} UTC).`);
    clock.advance(30 * 60_000);
    await server.greenline.worker.drain();
    await server.greenline.worker.drain();
    expect(gh.pr(full(name), 1)!.merged).toBe(true);
    expect(descriptionOf(name, 1)).toBe(REASONS.merged);
    const events = ((await api.ok("getQueueEvents", { ...github.queue(name), limit: 20 })).events as { kind: string; actor: { kind: string } }[]).reverse();
    expect(events.filter((e) => e.kind.startsWith("freeze")).map((e) => [e.kind, e.actor.kind])).toEqual([
      ["freeze_added", "token"],
      ["freeze_started", "token"],
      ["freeze_ended", "engine"],
    ]);
  });
});
