import type { ApiResponse } from "../support/harness.js";
import { BACKENDS } from "../support/backends.js";
import { expectQueueInvariants } from "../support/invariants.js";
import { prOf, queueOf, startTestServer, TestClock, type TestServer } from "../support/harness.js";
import { callOnce, countStatuses, expectOnly, times } from "./parallel.js";

const CI_MS = 60_000;

describe.each(BACKENDS)("concurrent queue writes on $name", (backend) => {
  let server: TestServer;
  const clock = new TestClock();

  beforeAll(async () => {
    server = await startTestServer(backend, { now: clock.now, sandbox: { ciMs: CI_MS } });
  });
  afterAll(() => server?.close());

  const db = () => server.greenline.services.db;
  const worker = () => server.greenline.worker;
  const call = (operation: string, body: unknown) => callOnce(server.api, operation, body);
  const queuesOf = (name: string) => db().read((tx) => tx.queue.findMany({ where: { repository: { name } } }));

  test("createQueue of one branch fired 20 times: one 200, the rest 409 conflict; one queue stored", async () => {
    const answers = await times(20, () => call("createQueue", queueOf("created-once")));
    expectOnly(answers, { 409: "conflict" });
    expect(countStatuses(answers)).toEqual({ 200: 1, 409: 19 });
    for (const r of answers.filter((a) => a.status === 409)) expect(r.body.error.message).toContain('already exists for branch "main"');
    expect(await queuesOf("created-once")).toHaveLength(1);
  });

  test("queues of 10 branches of a new repository created together: all 200, one repository claimed", async () => {
    const answers = await times(10, (i) => call("createQueue", queueOf("claimed", `branch-${i}`)));
    expect(countStatuses(answers)).toEqual({ 200: 10 });
    expect(await db().read((tx) => tx.repository.count({ where: { name: "claimed" } }))).toBe(1);
    expect(await queuesOf("claimed")).toHaveLength(10);
  });

  test("two organizations claiming one new repository together: one owns it, the other is answered 404", async () => {
    const clients = [server.api, await server.clientFor("rival")];
    const answers = await times(20, (i) => callOnce(clients[i % 2]!, "createQueue", queueOf("contested", `branch-${i}`)).then((r) => ({ org: i % 2, r })));
    expectOnly(
      answers.map((a) => a.r),
      { 404: "not_found" },
    );
    const winners = new Set(answers.filter((a) => a.r.status === 200).map((a) => a.org));
    expect(winners.size).toBe(1);
    // The owner's requests all succeeded, the other organization's all failed.
    expect(answers.filter((a) => winners.has(a.org)).map((a) => a.r.status)).toEqual(Array(10).fill(200));
    const repositories = await db().read((tx) => tx.repository.findMany({ where: { name: "contested" }, include: { queues: true } }));
    expect(repositories).toHaveLength(1);
    expect(repositories[0]!.queues).toHaveLength(10);
  });

  test("deleteQueue of one queue fired 20 times: one 200, the rest 404 not_found; the queue is gone", async () => {
    await server.api.ok("createQueue", queueOf("deleted-once"));
    const answers = await times(20, () => call("deleteQueue", queueOf("deleted-once")));
    expectOnly(answers, { 404: "not_found" });
    expect(countStatuses(answers)).toEqual({ 200: 1, 404: 19 });
    expect(await queuesOf("deleted-once")).toEqual([]);
    expect(server.logs.filter((line) => line.includes("unhandled error"))).toEqual([]);
  });

  test("deleteQueue against submitPullRequest: either no queue and no PR accepted, or the queue holding every accepted PR", async () => {
    for (let round = 0; round < 2; round++) {
      const name = `delete-vs-submit-${round}`;
      await server.api.ok("createQueue", queueOf(name));
      // Rounds alternate who goes first, so both outcomes happen.
      const answers = await times(16, (i) =>
        (i + round) % 2 === 0 ? call("deleteQueue", queueOf(name)).then((r) => ({ op: "delete", r, pr: 0 })) : call("submitPullRequest", prOf(i + 1, name)).then((r) => ({ op: "submit", r, pr: i + 1 })),
      );
      const deletes = answers.filter((a) => a.op === "delete").map((a) => a.r);
      const submits = answers.filter((a) => a.op === "submit");
      expectOnly(deletes, { 404: "not_found", 409: "failed_precondition" });
      expectOnly(
        submits.map((s) => s.r),
        { 404: "not_found" },
      );
      const accepted = submits.filter((s) => s.r.status === 200).map((s) => s.pr);
      const queues = await queuesOf(name);
      if (deletes.some((d) => d.status === 200)) {
        expect(queues).toEqual([]);
        expect(accepted).toEqual([]);
      } else {
        expect(queues).toHaveLength(1);
        const entries = await db().read((tx) => tx.queueEntry.findMany({ where: { queueId: queues[0]!.id } }));
        expect(entries.map((e) => e.prNumber).sort((a, b) => a - b)).toEqual(accepted.sort((a, b) => a - b));
      }
      // No entry outlives its queue.
      const queueIds = (await db().read((tx) => tx.queue.findMany({ select: { id: true } }))).map((q) => q.id);
      expect(await db().read((tx) => tx.queueEntry.count({ where: { queueId: { notIn: queueIds } } }))).toBe(0);
    }
  });

  test("50 submits of one PR around its merge: the merged PR stays merged, merged exactly once", async () => {
    const name = "merge-race";
    await server.api.ok("createQueue", queueOf(name));
    const rounds = 2;
    for (let pr = 1; pr <= rounds; pr++) {
      await server.api.ok("submitPullRequest", prOf(pr, name));
      await worker().drain();
      clock.advance(CI_MS);
      // CI has passed: the worker delivers it, the engine decides the merge, the merge lands —
      // while the same PR is submitted again and again.
      const [answers] = await Promise.all([times(50, () => call("submitPullRequest", prOf(pr, name))), worker().drain()]);
      await worker().drain();
      expectOnly(answers, { 409: "failed_precondition" });
      for (const r of answers.filter((a) => a.status === 409)) expect(r.body.error.message).toMatch(new RegExp(`#${pr} is (already |being )?merged`));
      expect((await server.api.ok("getSubmittedPullRequest", prOf(pr, name))).state).toBe("merged");
    }
    const transitions = await db().read((tx) => tx.transition.findMany({ where: { entry: { queue: { repository: { name } } } }, include: { entry: true } }));
    expect(transitions.filter((t) => t.fromState === "merged")).toEqual([]);
    await expectQueueInvariants(db(), name, rounds);
  });

  test("overlapping submits of 6 PRs while CI results arrive: every PR merged once, the target holds each change once", async () => {
    const name = "overlapping";
    await server.api.ok("createQueue", { ...queueOf(name), concurrency: 3 });
    const answers: ApiResponse[] = [];
    for (let wave = 0; wave < 2; wave++) {
      const [submitted] = await Promise.all([times(18, (i) => call("submitPullRequest", prOf((i % 6) + 1, name))), worker().tick(), worker().tick()]);
      answers.push(...submitted);
      clock.advance(CI_MS);
    }
    for (let i = 0; i < 8; i++) {
      await worker().drain();
      clock.advance(CI_MS);
    }
    expectOnly(answers, { 409: "failed_precondition" });
    await expectQueueInvariants(db(), name, 6);
    expect(await db().read((tx) => tx.queueEntry.count({ where: { queue: { repository: { name } }, state: "merged" } }))).toBe(6);
  });

  test("cancelPullRequest of one PR fired 20 times against a worker tick: all 200, cancelled once", async () => {
    const name = "cancelled-once";
    await server.api.ok("createQueue", queueOf(name));
    await server.api.ok("submitPullRequest", prOf(1, name));
    await worker().drain();
    const [answers] = await Promise.all([times(20, () => call("cancelPullRequest", prOf(1, name))), worker().drain()]);
    expectOnly(answers);
    const entry = await db().read((tx) => tx.queueEntry.findFirstOrThrow({ where: { queue: { repository: { name } } }, include: { transitions: true } }));
    expect(entry.state).toBe("cancelled");
    expect(entry.transitions.filter((t) => t.toState === "cancelled")).toHaveLength(1);
  });

  test("setImpactedTargets fired for 10 PRs while they are submitted: all 200, each PR's targets stored once", async () => {
    const name = "targets";
    await server.api.ok("createQueue", { ...queueOf(name), mode: "parallel", concurrency: 5 });
    const [targets, submits] = await Promise.all([
      times(10, (i) => call("setImpactedTargets", { ...prOf(i + 1, name), impactedTargets: [`target-${i + 1}`] })),
      times(10, (i) => call("submitPullRequest", prOf(i + 1, name))),
      worker().drain(),
    ]);
    expectOnly([...targets, ...submits]);
    const stored = await db().read((tx) => tx.impactedTargets.findMany({ where: { queue: { repository: { name } } } }));
    expect(stored.map((t) => [t.prNumber, JSON.parse(t.targets)]).sort((a, b) => (a[0] as number) - (b[0] as number))).toEqual(Array.from({ length: 10 }, (_, i) => [i + 1, [`target-${i + 1}`]]));
    const pulls = await db().read((tx) => tx.sandboxPullRequest.findMany({ where: { repoKey: { contains: name } } }));
    for (const t of stored) expect(t.sha).toBe(pulls.find((p) => p.number === t.prNumber)!.headSha);
  });

  test("no request of this suite was answered 5xx or logged as unhandled", () => {
    expect(server.logs.filter((line) => line.includes("unhandled error"))).toEqual([]);
  });
});
