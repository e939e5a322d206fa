/** A FIFO async mutex: one holder at a time, waiters served in arrival order. */
export class Mutex {
  #tail: Promise<void> = Promise.resolve();
  /** Callers holding it or waiting for it (service metrics). */
  #queued = 0;

  /** Whether someone holds it now. */
  get busy(): boolean {
    return this.#queued > 0;
  }

  /** How many wait for it behind the holder. */
  get waiting(): number {
    return Math.max(0, this.#queued - 1);
  }

  /**
   * Runs `fn` once the holders before it are done. With `timeoutMs`, gives up waiting after that
   * long and rejects with MutexTimeoutError; its turn then passes straight to the next waiter.
   */
  async run<T>(fn: () => Promise<T>, timeoutMs?: number): Promise<T> {
    this.#queued++;
    try {
      return await this.#run(fn, timeoutMs);
    } finally {
      this.#queued--;
    }
  }

  async #run<T>(fn: () => Promise<T>, timeoutMs?: number): Promise<T> {
    let release!: () => void;
    const previous = this.#tail;
    this.#tail = new Promise<void>((resolve) => (release = resolve));
    if (timeoutMs === undefined) await previous;
    else {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
      const turn = await Promise.race([previous.then(() => true as const), late]);
      clearTimeout(timer);
      if (!turn) {
        void previous.then(release);
        throw new MutexTimeoutError(timeoutMs);
      }
    }
    try {
      return await fn();
    } finally {
      release();
    }
  }
}

/** A wait for a Mutex that outlasted its bound. */
export class MutexTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`waited ${timeoutMs} ms for the lock`);
    this.name = "MutexTimeoutError";
  }
}
