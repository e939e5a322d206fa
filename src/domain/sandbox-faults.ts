/**
 * A fault of the sandbox code host for one owner (a testing aid: benchmarks and tests show what
 * one installation's slow or failing code host does to the other queues). `slow`: every call
 * for the owner's repositories answers after `ms`; `fail`: every call answers a 500, as GitHub
 * does in an outage (classified by GitHub's own rules: a transient refusal); `fail-writes`: the
 * writes answer 500 (starting, cancelling and re-running runs, merges, statuses, comments) and
 * the reads answer (so PRs reach the queue, and its effects fail); `hold` (tests, in process
 * only): every call waits until `until` settles (a code host that does not answer).
 */
export type SandboxFault = { kind: "slow"; ms: number } | { kind: "fail" } | { kind: "fail-writes" } | { kind: "hold"; until: Promise<void> };
/** Faults by lower-case owner. */
export type SandboxFaults = ReadonlyMap<string, SandboxFault>;

/**
 * Reads GREENLINE_SANDBOX_FAULTS: comma-separated `owner=slow:MS`, `owner=fail` or
 * `owner=fail-writes` (e.g. `inst-000=slow:5000,inst-001=fail`). Throws a message naming the
 * rule an entry breaks.
 */
export function parseSandboxFaults(text: string): SandboxFaults {
  const faults = new Map<string, SandboxFault>();
  for (const entry of text
    .split(",")
    .map((e) => e.trim())
    .filter(Boolean)) {
    const match = /^([A-Za-z0-9][A-Za-z0-9._-]*)=(slow:(\d+)|fail|fail-writes)$/.exec(entry);
    if (!match) throw new Error(`"${entry}" must be owner=slow:MS, owner=fail or owner=fail-writes`);
    const owner = match[1]!.toLowerCase();
    if (faults.has(owner)) throw new Error(`owner "${owner}" is named twice`);
    const ms = match[3] === undefined ? null : Number(match[3]);
    if (ms !== null && ms > 600_000) throw new Error(`"${entry}": a slow call takes at most 600000 ms`);
    faults.set(owner, ms !== null ? { kind: "slow", ms } : { kind: match[2] as "fail" | "fail-writes" });
  }
  return faults;
}
