import { AsyncLocalStorage } from "node:async_hooks";

/**
 * GitHub asks integrations making many POST, PATCH, PUT or DELETE requests to wait at least a
 * second between them (secondary rate limits; docs/github.md, "Write order"). Octokit's
 * throttle spaces writes so; the write gate keeps that spacing and chooses which write goes next.
 */
export const WRITE_SPACING_MS = 1_000;

/**
 * Which write goes first when several wait for their turn: the queue's work (testing branches,
 * merges, re-runs), then clean-ups (deleting a testing branch), then notifications (statuses,
 * comments), each kind first come, first served.
 */
export const WRITE_PRIORITY = { work: 0, cleanup: 1, notification: 2 } as const;
export type WritePriority = (typeof WRITE_PRIORITY)[keyof typeof WRITE_PRIORITY];

const current = new AsyncLocalStorage<WritePriority>();

/** Runs `call` with its GitHub writes at `priority` (a call made outside any is work). */
export function withWritePriority<T>(priority: WritePriority, call: () => Promise<T>): Promise<T> {
  return current.run(priority, call);
}

/** The priority of the writes of the call running now. */
export function writePriority(): WritePriority {
  return current.getStore() ?? WRITE_PRIORITY.work;
}

/** Whether a request is a write GitHub asks to space (as Octokit's throttle tells them: any method but GET and HEAD, token requests aside). */
export function isSpacedWrite(method: string, url: string): boolean {
  if (method === "GET" || method === "HEAD") return false;
  return !/\/app\/installations\/[^/]+\/access_tokens$/.test(url.split("?")[0] ?? "");
}

/**
 * The order of one process's GitHub writes: a write waits for its turn, and turns start at
 * least `spacingMs` apart, the waiting write of the best priority first (then the longest
 * waiting). The spacing is the same as without priorities; only the order changes, so a merge
 * decided while twenty statuses wait goes after the write in progress, not after them.
 * `spacingMs` 0 (Octokit's throttle turned off, as in tests): every write goes at once.
 */
export class WriteGate {
  readonly #waiting: { priority: WritePriority; seq: number; go: () => void }[] = [];
  #seq = 0;
  #nextTurnAt = Number.NEGATIVE_INFINITY;
  #timer: NodeJS.Timeout | null = null;

  constructor(
    readonly spacingMs: number,
    /** Monotonic ms now (tests inject their clock). */
    readonly now: () => number = () => performance.now(),
  ) {}

  /** Resolves when a write of `priority` may start. */
  turn(priority: WritePriority): Promise<void> {
    if (this.spacingMs <= 0) return Promise.resolve();
    return new Promise((go) => {
      this.#waiting.push({ priority, seq: this.#seq++, go });
      this.#next();
    });
  }

  /** How many writes wait for their turn. */
  get waiting(): number {
    return this.#waiting.length;
  }

  #next(): void {
    if (this.#timer !== null || this.#waiting.length === 0) return;
    const wait = this.#nextTurnAt - this.now();
    if (wait > 0) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.#next();
      }, wait);
      return;
    }
    let best = 0;
    for (let i = 1; i < this.#waiting.length; i++) {
      const a = this.#waiting[i]!;
      const b = this.#waiting[best]!;
      if (a.priority < b.priority || (a.priority === b.priority && a.seq < b.seq)) best = i;
    }
    const [write] = this.#waiting.splice(best, 1);
    this.#nextTurnAt = this.now() + this.spacingMs;
    write!.go();
    this.#next();
  }
}
