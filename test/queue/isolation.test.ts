import type { SandboxFault } from "../../src/domain/sandbox-faults.js";
import { DUE_QUEUES } from "../../src/worker/worker.js";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";

/**
 * Isolation (issue 23, goal 4): the worker's own loop works on each claimed queue in a slot of
 * its own. A queue whose code host call does not answer holds its slot, and nothing else: the
 * same worker process goes on claiming the other due queues, delivering their CI results and
 * merging their PRs; once the call answers, the held queue goes on too.
 */
describe.each(BACKENDS)("isolation, $name", (backend) => {
  let server: TestServer;
  const faults = new Map<string, SandboxFault>();
  const { concurrency, perInstallation } = DUE_QUEUES;
  /** Opens the gate the held calls wait for (also when the test failed: the server can close). */
  let open = () => {};

  beforeAll(async () => {
    // Two slots, one per installation: the held installation's queues take one, the other
    // queues share the other.
    DUE_QUEUES.concurrency = 2;
    DUE_QUEUES.perInstallation = 1;
    server = await startTestServer(backend, { sandbox: { ciMs: 50, faults } });
  });
  afterAll(async () => {
    open();
    DUE_QUEUES.concurrency = concurrency;
    DUE_QUEUES.perInstallation = perInstallation;
    await server?.close();
  });

  const state = async (pr: ReturnType<typeof prOf>) => (await server.api.ok("getSubmittedPullRequest", pr)).state as string;
  /** Polls until `done` (no wall-clock assertion: the bound only ends a test that went wrong). */
  async function until(done: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 600; i++) {
      if (await done()) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`never: ${what}`);
  }

  test("a queue whose code host never answers holds neither the worker's loop nor the other queues", async () => {
    const stuck = { ...queueOf("slow", "main", "stuck-co") };
    const stuckPr = { ...stuck, pr: { number: 1 } };
    // A second queue of the same installation: without the installation's share of the slots,
    // the two held queues would take both.
    const stuck2 = { ...queueOf("slow-2", "main", "stuck-co") };
    const stuck2Pr = { ...stuck2, pr: { number: 1 } };
    await server.api.ok("createQueue", stuck);
    await server.api.ok("createQueue", stuck2);
    for (const name of ["a", "b", "c"]) await server.api.ok("createQueue", queueOf(name));
    // The held queue's PR is submitted first (its queue is due first), while its code host answers.
    await server.api.ok("submitPullRequest", stuckPr);
    await server.api.ok("submitPullRequest", stuck2Pr);
    // From now on every call for stuck-co waits for the gate: its run's start never answers.
    const gate = new Promise<void>((resolve) => (open = resolve));
    faults.set("stuck-co", { kind: "hold", until: gate });
    for (const name of ["a", "b", "c"]) await server.api.ok("submitPullRequest", prOf(1, name));
    server.greenline.worker.start();
    // The other queues' PRs are tested and merged, each claim after another, by the same worker.
    for (const name of ["a", "b", "c"]) await until(async () => (await state(prOf(1, name))) === "merged", `${name}#1 merged`);
    for (const name of ["a", "b", "c"]) await server.api.ok("submitPullRequest", prOf(2, name));
    for (const name of ["a", "b", "c"]) await until(async () => (await state(prOf(2, name))) === "merged", `${name}#2 merged`);
    // Meanwhile the held queue's run never started: its start is still the call in flight.
    const startRuns = await server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { queue: { repository: { owner: "stuck-co" } }, kind: "start_run" }, select: { doneAt: true, attempts: true } }));
    expect(startRuns).toEqual([
      { doneAt: null, attempts: 0 },
      { doneAt: null, attempts: 0 },
    ]);
    expect(await state(stuckPr)).not.toBe("merged");
    // The code host answers: the held queue goes on (its claim was kept, then released) and merges.
    faults.delete("stuck-co");
    open();
    await until(async () => (await state(stuckPr)) === "merged" && (await state(stuck2Pr)) === "merged", "stuck-co's PRs merged once its code host answers");
    await server.greenline.worker.stop();
  }, 180_000);

  test("a code host answering 500 for one owner: its effects are refused as GitHub's 500s are (transient: tried again after a backoff), the other queues go on", async () => {
    const failing = queueOf("down", "main", "down-co");
    await server.api.ok("createQueue", failing);
    faults.set("down-co", { kind: "fail-writes" });
    await server.api.ok("submitPullRequest", { ...failing, pr: { number: 1 } });
    await server.api.ok("createQueue", queueOf("e"));
    await server.api.ok("submitPullRequest", prOf(1, "e"));
    const startRunOf = () =>
      server.greenline.services.db.read((tx) =>
        tx.effect.findFirst({ where: { queue: { repository: { owner: "down-co" } }, kind: "start_run" }, select: { doneAt: true, attempts: true, gaveUp: true, lastError: true, nextAttemptAt: true } }),
      );
    await until(async () => {
      await server.greenline.worker.tick();
      return ((await startRunOf())?.attempts ?? 0) > 0;
    }, "down-co's run tried");
    const startRun = (await startRunOf())!;
    expect(startRun).toMatchObject({ doneAt: null, attempts: 1, gaveUp: false, lastError: "sandbox: the code host of down-co answered 500 (GREENLINE_SANDBOX_FAULTS)" });
    expect(startRun.nextAttemptAt).not.toBeNull();
    await until(async () => {
      await server.greenline.worker.tick();
      return (await state(prOf(1, "e"))) === "merged";
    }, "e#1 merged beside the failing queue");
    faults.delete("down-co");
  }, 180_000);
});
