import { Line } from "../../src/domain/engine/line.js";
import type { EngineEntry, EngineQueue } from "../../src/domain/engine/types.js";
import { engineEntry } from "./engine-driver.js";

/** Who depends on whom in one line while PRs are bisected (src/domain/engine/line.ts). */
describe("one line's dependencies", () => {
  const entry = (prNumber: number, state: EngineEntry["state"], bisecting = false): EngineEntry =>
    engineEntry(prNumber, state, { bisectionGroupLimit: bisecting ? 1 : null, position: state === "testing" ? prNumber : null });
  const queue = (entries: EngineEntry[]): EngineQueue =>
    ({ state: "running", mode: "single", pendingMode: null, settings: {} as EngineQueue["settings"], baseSha: "b", merged: [], entries, runs: [], nextRunNumber: 1 }) as EngineQueue;

  test("a PR depends on every PR ahead of it; while PRs are bisected, on those not bisected, and a PR bisected on none", () => {
    const plain = new Line(queue([entry(1, "testing"), entry(2, "testing"), entry(3, "pending")]));
    expect(plain.depsOf(3).map((e) => e.prNumber)).toEqual([1, 2]);
    expect(plain.lane([2])).toEqual([1, 2]);

    // 1 in flight, 2 and 3 bisected (pending, older than 4), 4 and 5 waiting.
    const line = new Line(queue([entry(1, "testing"), entry(2, "pending", true), entry(3, "pending", true), entry(4, "pending"), entry(5, "pending")]));
    expect(line.entries.map((e) => e.prNumber)).toEqual([1, 2, 3, 4, 5]);
    expect(line.depsOf(5).map((e) => e.prNumber)).toEqual([1, 4]);
    expect(line.depsOf(3)).toEqual([]);
    expect(line.dependsOn(4, 1)).toBe(true);
    expect(line.dependsOn(4, 2)).toBe(false);
    expect(line.dependsOn(3, 1)).toBe(false);
    expect(line.lane([4])).toEqual([1, 4]);
    expect(line.lane([2, 3])).toEqual([2, 3]);
    expect(line.lane([3, 5])).toEqual([1, 3, 4, 5]);
    // 4 waits for nothing but 1, in flight; 5 for 4 (or 4 starting with it); 2 for nothing.
    expect(line.depsInFlight(4)).toBe(true);
    expect(line.depsInFlight(5)).toBe(false);
    expect(line.depsInFlight(5, new Set([4]))).toBe(true);
    expect(line.depsInFlight(2)).toBe(true);
  });
});
