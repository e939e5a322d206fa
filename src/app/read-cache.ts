/**
 * Answers of read operations (and what they are built from), each valid for one version of its
 * queue. Every write to a queue or its entries bumps the queue's version in the same transaction
 * (lockQueue), so an answer cached for the version a reader sees is exactly what a fresh read
 * would produce. A process holds its own cache; replicas agree because the version lives in the
 * database.
 *
 * An answer is built once per version however many readers ask for it at once (`shared`): under
 * a writer, every version bump used to make each waiting reader rebuild the same answer.
 */
export class ReadCache {
  readonly #entries = new Map<string, { version: number; value: unknown }>();
  /** Builds under way, by key: the readers of a version that is being built wait for it. */
  readonly #building = new Map<string, { version: number; value: Promise<{ version: number; value: unknown }> }>();

  constructor(private readonly capacity = 2000) {}

  get(key: string, version: number): string | undefined {
    const value = this.#lookup(key, version);
    return typeof value === "string" ? value : undefined;
  }

  set(key: string, version: number, json: string): void {
    this.#store(key, version, json);
  }

  /** Keeps `value` under `key` for `version`, in place of what was there (a value read again). */
  replace(key: string, version: number, value: unknown): void {
    this.#store(key, version, value);
  }

  /**
   * The value cached under `key` for `version`, or for a later version; else the one `build`
   * makes, shared with every reader asking while it is built. `build` answers the version it
   * read (never older than the one asked: the version only grows), under which it is cached.
   */
  async shared<T>(key: string, version: number, build: () => Promise<{ version: number; value: T }>): Promise<T> {
    const hit = this.#entries.get(key);
    if (hit && hit.version >= version) {
      this.#touch(key, hit);
      return hit.value as T;
    }
    const building = this.#building.get(key);
    // A build that read `version` or later answers this reader too; an older one does not.
    if (building && building.version >= version) {
      const built = await building.value;
      if (built.version >= version) return built.value as T;
    }
    const value = build();
    const entry = { version, value };
    this.#building.set(key, entry);
    try {
      const built = await value;
      const current = this.#entries.get(key);
      if (!current || current.version <= built.version) this.#store(key, built.version, built.value);
      return built.value;
    } finally {
      if (this.#building.get(key) === entry) this.#building.delete(key);
    }
  }

  #lookup(key: string, version: number): unknown {
    const hit = this.#entries.get(key);
    if (!hit || hit.version !== version) return undefined;
    this.#touch(key, hit);
    return hit.value;
  }

  /** Refreshes the entry's place: the map's order is the eviction order. */
  #touch(key: string, hit: { version: number; value: unknown }): void {
    this.#entries.delete(key);
    this.#entries.set(key, hit);
  }

  #store(key: string, version: number, value: unknown): void {
    this.#entries.delete(key);
    this.#entries.set(key, { version, value });
    if (this.#entries.size > this.capacity) this.#entries.delete(this.#entries.keys().next().value!);
  }
}
