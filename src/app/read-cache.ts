/**
 * Serialized answers of read operations, each valid for one version of its queue. Every write
 * to a queue or its entries bumps the queue's version in the same transaction (lockQueue), so
 * an answer cached for the version a reader sees is exactly what a fresh read would produce.
 * A process holds its own cache; replicas agree because the version lives in the database.
 */
export class ReadCache {
  readonly #entries = new Map<string, { version: number; json: string }>();

  constructor(private readonly capacity = 2000) {}

  get(key: string, version: number): string | undefined {
    const hit = this.#entries.get(key);
    if (!hit || hit.version !== version) return undefined;
    // Refresh its place: the map's order is the eviction order.
    this.#entries.delete(key);
    this.#entries.set(key, hit);
    return hit.json;
  }

  set(key: string, version: number, json: string): void {
    this.#entries.delete(key);
    this.#entries.set(key, { version, json });
    if (this.#entries.size > this.capacity) this.#entries.delete(this.#entries.keys().next().value!);
  }
}
