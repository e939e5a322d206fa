import { transitionDurations } from "../../src/domain/durations.js";
import type { PrState } from "../../src/domain/states.js";

const at = (minute: number) => new Date(Date.UTC(2026, 10, 29, 9, minute));
const step = (minute: number, previousState: PrState | null, state: PrState) => ({ at: at(minute), previousState, state });
const clock = (stateStartedAt: number, submittedAt: number, notReadyMs = 0) => ({ stateStartedAt: at(stateStartedAt).getTime(), submittedAt: at(submittedAt).getTime(), notReadyMs });

describe("transitionDurations", () => {
  test("each transition records the time in the state it leaves; the conclusion, the time since the submission", () => {
    const { durations, clock: after } = transitionDurations([step(3, "pending", "testing"), step(13, "testing", "tests_passed"), step(14, "tests_passed", "merged")], clock(0, 0));
    expect(durations).toEqual([
      { stateMs: 3 * 60_000, queuedMs: null },
      { stateMs: 10 * 60_000, queuedMs: null },
      { stateMs: 60_000, queuedMs: 14 * 60_000 },
    ]);
    expect(after).toEqual(clock(14, 0));
  });

  test("time not ready is left out of the time in queue, and carried to the next decision", () => {
    const first = transitionDurations([step(5, "not_ready", "pending")], clock(0, 0));
    expect(first.durations).toEqual([{ stateMs: 5 * 60_000, queuedMs: null }]);
    expect(first.clock.notReadyMs).toBe(5 * 60_000);
    const second = transitionDurations([step(7, "pending", "testing"), step(20, "testing", "failed")], first.clock);
    expect(second.durations[1]).toEqual({ stateMs: 13 * 60_000, queuedMs: 15 * 60_000 });
  });

  test("an entry into the queue records nothing and starts the state's clock", () => {
    const { durations, clock: after } = transitionDurations([step(30, null, "pending"), step(32, "pending", "cancelled")], clock(0, 30));
    expect(durations).toEqual([
      { stateMs: null, queuedMs: null },
      { stateMs: 2 * 60_000, queuedMs: 2 * 60_000 },
    ]);
    expect(after.stateStartedAt).toBe(at(32).getTime());
  });

  test("a clock that went backwards records 0, never a negative time", () => {
    expect(transitionDurations([step(1, "testing", "merged")], clock(5, 10)).durations).toEqual([{ stateMs: 0, queuedMs: 0 }]);
  });
});
