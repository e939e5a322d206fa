import { isTerminal, type PrState } from "./states.js";

/** Where a PR's clock stood before a decision's transitions: when its current state began, when it was submitted, and how long it was not ready since. */
export type DurationClock = { stateStartedAt: number; submittedAt: number; notReadyMs: number };

/** What a transition records of time: how long the PR was in the state it leaves, and, on a conclusion, its time in queue. */
export type TransitionDurations = { stateMs: number | null; queuedMs: number | null };

/**
 * The durations a PR's transitions record when they are written (Transition.stateMs and
 * queuedMs), so the metrics sum them over an index range of the window instead of replaying each
 * PR's history: `stateMs` is the time since the PR's previous transition (the state it leaves; a
 * note that changes no state is no transition here), `queuedMs` on a conclusion the time since
 * the submission not counting time not ready. Also answers the clock after them.
 */
export function transitionDurations(transitions: readonly { at: Date; previousState: PrState | null; state: PrState }[], clock: DurationClock): { durations: TransitionDurations[]; clock: DurationClock } {
  let { stateStartedAt, notReadyMs } = clock;
  const durations = transitions.map((t) => {
    const at = t.at.getTime();
    if (t.previousState === null) {
      stateStartedAt = at;
      return { stateMs: null, queuedMs: null };
    }
    const stateMs = Math.max(0, at - stateStartedAt);
    if (t.previousState === "not_ready") notReadyMs += stateMs;
    stateStartedAt = at;
    return { stateMs, queuedMs: isTerminal(t.state) ? Math.max(0, at - clock.submittedAt - notReadyMs) : null };
  });
  return { durations, clock: { stateStartedAt, submittedAt: clock.submittedAt, notReadyMs } };
}
