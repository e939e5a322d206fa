/**
 * What the upload did to each test so far, its testcases merged (attempts.ts: retries and
 * variants; two ids attributes can name one test): a slot per test, in typed arrays, so that holding an
 * upload's 100,000 tests costs a megabyte or two and no objects.
 */
export class Runs {
  keys = new Float64Array(1024);
  at = new Float64Array(1024);
  flags = new Uint8Array(1024);
  size = 0;
  /** Slot + 1 by key, open addressing (0 is empty): test case keys are 32-bit integers. */
  #table = new Int32Array(2048);

  /** The test's slot, or -1 if this upload has not seen it. */
  find(key: number): number {
    const table = this.#table;
    const mask = table.length - 1;
    for (let i = Math.imul(key, 0x9e3779b1) & mask; table[i] !== 0; i = (i + 1) & mask) {
      if (this.keys[table[i]! - 1] === key) return table[i]! - 1;
    }
    return -1;
  }

  /** The test's slot (a new one, the next, if the test is new to this upload). */
  slotOf(key: number, at: number): number {
    const found = this.find(key);
    if (found !== -1) return found;
    const added = this.size++;
    if (added === this.keys.length) this.#grow();
    this.keys[added] = key;
    this.at[added] = at;
    this.#place(added);
    return added;
  }

  #place(slot: number): void {
    const table = this.#table;
    const mask = table.length - 1;
    let i = Math.imul(this.keys[slot]!, 0x9e3779b1) & mask;
    while (table[i] !== 0) i = (i + 1) & mask;
    table[i] = slot + 1;
  }

  /** Twice the room; the table stays at most half full. */
  #grow(): void {
    const grow = <T extends Float64Array | Uint8Array>(a: T): T => {
      const bigger = new (a.constructor as new (n: number) => T)(a.length * 2);
      bigger.set(a);
      return bigger;
    };
    this.keys = grow(this.keys);
    this.at = grow(this.at);
    this.flags = grow(this.flags);
    this.#table = new Int32Array(this.keys.length * 2);
    for (let slot = 0; slot < this.size - 1; slot++) this.#place(slot);
  }
}
