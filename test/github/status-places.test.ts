import { REASONS, STATUS_DESCRIPTION_MAX } from "../../src/domain/reasons.js";
import { STATUS_PLACES_SHOWN } from "../../src/domain/status-places.js";
import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, TestClock, type TestServer } from "../support/harness.js";

/**
 * A waiting PR's status keeps its place in line current (real server, real Octokit, the
 * simulated GitHub over HTTP): when PRs ahead leave, the PRs behind are told their new place,
 * once per decision at most, with one pending status per PR in the outbox, and only the first
 * STATUS_PLACES_SHOWN of them (issue 14).
 */
describe.each(BACKENDS)("places in line on PR statuses, $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const clock = new TestClock();
  const OWNER = "octo-p";
  const full = (name: string) => `${OWNER}/${name}`;

  /** Simulated CI: green on every testing branch not yet reported; the clock moves 10 minutes first (a run's duration). */
  async function ciReports(name: string) {
    clock.advance(10 * 60_000);
    await github.ciPasses(name);
  }

  const statusesOf = (name: string, n: number) => gh.statuses.filter((st) => st.repo === full(name) && st.sha === gh.pr(full(name), n)!.headSha && st.context === "greenline/merge-queue");
  const descriptionOf = (name: string, n: number) => statusesOf(name, n).at(-1)?.description;
  const waiting = (place: string) => `${REASONS.submitted.replace(/\.$/, "")} (${place}).`;
  /** How many statuses of each PR wait in the queue's outbox. */
  async function pendingStatuses(name: string): Promise<Map<number, number>> {
    const rows = await server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { doneAt: null, kind: "pr_status", queue: { repository: { name } } } }));
    const out = new Map<number, number>();
    for (const row of rows) {
      const pr = (JSON.parse(row.payload) as { prNumber: number }).prNumber;
      out.set(pr, (out.get(pr) ?? 0) + 1);
    }
    return out;
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    gh.useClock(() => clock.ms);
    server = await startTestServer(backend, { githubApp: githubAppOf(gh), now: clock.now });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 79 });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("3 PRs wait; the first merges: the others' statuses move up, with the estimate the finished run gives", async () => {
    await api.ok("createQueue", { ...github.queue("three"), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    for (const n of [1, 2, 3]) gh.openPr(full("three"), { number: n, files: { [`src/${n}.ts`]: `${n}` } });
    for (const n of [1, 2, 3]) await api.ok("submitPullRequest", github.pr("three", n));
    await server.greenline.worker.drain();
    expect([descriptionOf("three", 2), descriptionOf("three", 3)]).toEqual([waiting("2nd in line"), waiting("3rd in line")]);

    await ciReports("three");
    await server.greenline.worker.drain();
    expect(gh.pr(full("three"), 1)!.merged).toBe(true);
    // PR 2 is tested now (its own transition); PR 3 did not move state, only place: its status says so.
    expect(descriptionOf("three", 2)).toBe(`${REASONS.testing.replace(/\.$/, "")} (1st in line, ~10 min).`);
    expect(descriptionOf("three", 3)).toBe(waiting("2nd in line, ~20 min"));
    expect(statusesOf("three", 3).map((st) => st.state)).toEqual(["pending", "pending"]);
  });

  test("a burst of 20 merges: one status per PR per decision, one pending status per PR, only the first 10 places kept, within 140 characters", async () => {
    const name = "burst";
    const prs = Array.from({ length: 30 }, (_, i) => i + 1);
    await api.ok("createQueue", { ...github.queue(name), requiredStatuses: ["ci/test"], mergeMethod: "squash", concurrency: 20 });
    for (const n of prs) gh.openPr(full(name), { number: n, files: { [`src/${n}.ts`]: `${n}` } });
    for (const n of prs) await api.ok("submitPullRequest", github.pr(name, n));
    await server.greenline.worker.drain();
    expect(descriptionOf(name, 10)).toBe(`${REASONS.testing.replace(/\.$/, "")} (10th in line).`);
    // Beyond the first 10 a status says only that: every move of theirs was a write (it was 20).
    expect(descriptionOf(name, 11)).toBe(`${REASONS.testing.replace(/\.$/, "")} (behind the first 10 in line).`);
    expect(descriptionOf(name, 25)).toBe(waiting(`behind the first ${STATUS_PLACES_SHOWN} in line`));

    // CI reports the 20 runs green, one by one: 20 decisions, effects not carried out in between.
    // Each decision adds at most one status per PR.
    clock.advance(10 * 60_000);
    const { db } = server.greenline.services;
    let seq = (await db.read((tx) => tx.effect.aggregate({ _max: { seq: true } })))._max.seq ?? 0;
    for (const branch of gh.branches(full(name), "greenline/")) {
      await github.ciPassesOn(name, branch.sha);
      const added = await db.read((tx) => tx.effect.findMany({ where: { kind: "pr_status", seq: { gt: seq }, queue: { repository: { name } } } }));
      const perPr = new Map<number, number>();
      for (const row of added) {
        const pr = (JSON.parse(row.payload) as { prNumber: number }).prNumber;
        perPr.set(pr, (perPr.get(pr) ?? 0) + 1);
      }
      expect(Math.max(0, ...perPr.values())).toBeLessThanOrEqual(1);
      seq = Math.max(seq, ...added.map((row) => row.seq));
    }
    // PR 20 moved up 19 places, and PRs 21–30 started testing and moved up: each has one status waiting, the newest.
    const pending = await pendingStatuses(name);
    expect(pending.size).toBe(30);
    expect(Math.max(...pending.values())).toBe(1);

    const writesBefore = new Map(prs.map((n) => [n, statusesOf(name, n).length]));
    await server.greenline.worker.drain();
    // The 20 PRs merged; each of the 30 got one status written for the burst, its newest, not one per place it moved.
    for (const n of prs.slice(0, 20)) expect([n, descriptionOf(name, n)]).toEqual([n, REASONS.merged]);
    expect(prs.map((n) => statusesOf(name, n).length - writesBefore.get(n)!)).toEqual(prs.map(() => 1));
    // PRs 21–30 are tested now, 1st to 10th in line.
    expect(descriptionOf(name, 30)).toMatch(/^Testing on top of the pull requests ahead of it \(10th in line, ~\d+ (min|h)\)\.$/);
    for (const st of gh.statuses) expect(st.description.length).toBeLessThanOrEqual(STATUS_DESCRIPTION_MAX);
  });
});
