import { EngineDriver } from "./engine-driver.js";

/**
 * The engine decides which runs it is done with (archived, never loaded again) and which of
 * their testing branches to delete; the store only writes what it decided.
 */
describe("archiving runs", () => {
  /** Marks every run made so far as having a testing branch (the executor's record of it). */
  const branched = (q: EngineDriver) => q.q.runs.forEach((run) => (run.hasTestBranch = true));

  test("a failed run is archived and its branch cleaned up; a run the decision cancels is archived without a second clean-up", () => {
    const q = new EngineDriver({ concurrency: 2 });
    q.submit(1);
    q.submit(2);
    branched(q);
    const first = q.runOf(1).id;
    const stacked = q.runOf(2).id;
    q.fail(1);
    const decision = q.decision!;
    expect(q.state(1)).toBe("failed");
    expect(decision.effects).toContainEqual({ kind: "cancel_run", runId: stacked });
    expect(decision.archived).toEqual(expect.arrayContaining([first, stacked]));
    expect(decision.cleanups).toEqual([{ kind: "cancel_run", runId: first }]);
    // PR 2 is tested again on its own: that run is not archived.
    expect(decision.archived).not.toContain(q.runOf(2).id);
  });

  test("a run without a testing branch is archived with nothing to clean up", () => {
    const q = new EngineDriver();
    q.submit(1);
    const runs = new Set<string>();
    // A lone PR's failure may be retried once before it fails.
    for (let attempt = 0; attempt < 3 && q.state(1) !== "failed"; attempt++) {
      runs.add(q.runOf(1).id);
      q.fail(1);
    }
    expect(q.state(1)).toBe("failed");
    expect(q.decision!.archived).toEqual([...runs]);
    expect(q.decision!.cleanups).toEqual([]);
  });

  test("a passed run stays until its PR has left the line", () => {
    const q = new EngineDriver();
    q.submit(1);
    branched(q);
    const run = q.runOf(1).id;
    q.pass(1);
    expect(q.state(1)).toBe("tests_passed");
    expect(q.decision!.archived).not.toContain(run);
    q.confirm([1]);
    expect(q.state(1)).toBe("merged");
    expect(q.decision!.archived).toContain(run);
    expect(q.decision!.cleanups).toEqual([{ kind: "cancel_run", runId: run }]);
  });
});
