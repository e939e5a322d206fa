/**
 * The wait before attempt n+1 after n failed ones (n ≥ 1): base, 2·base, 4·base, … at most cap.
 * The one exponential backoff every retry of Greenline's uses (effects, deliveries in and out,
 * re-reads); callers add their own jitter where many would retry at once. The exponent is
 * bounded, so any count of failures gives a finite wait.
 */
export function exponentialBackoffMs(failures: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** Math.min(Math.max(0, failures - 1), 40));
}
