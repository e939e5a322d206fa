import { ReadCache } from "../../src/app/read-cache.js";

/**
 * A fresh cache whose builds end when the test says: `read` asks the cache for a key at a
 * version; `runs` counts the builds started; `finish(n, …)` and `fail(n, …)` end the n-th build
 * (from 0) with an answer at a version, or with an error.
 */
function cacheWithBuilds() {
  const cache = new ReadCache();
  const pending: { resolve: (v: { version: number; value: string }) => void; reject: (e: Error) => void }[] = [];
  const build = () => new Promise<{ version: number; value: string }>((resolve, reject) => pending.push({ resolve, reject }));
  return {
    cache,
    read: (key: string, version: number) => cache.shared(key, version, build),
    runs: () => pending.length,
    finish: (n: number, version: number, value: string) => pending[n]!.resolve({ version, value }),
    fail: (n: number, message: string) => pending[n]!.reject(new Error(message)),
  };
}

describe("ReadCache.shared", () => {
  test("readers of one version asking at once share one build", async () => {
    const { read, runs, finish } = cacheWithBuilds();
    const readers = [1, 2, 3, 4].map(() => read("line:q", 7));
    expect(runs()).toBe(1);
    finish(0, 7, "at 7");
    await expect(Promise.all(readers)).resolves.toEqual(["at 7", "at 7", "at 7", "at 7"]);
    // Kept for the next readers of that version.
    await expect(read("line:q", 7)).resolves.toBe("at 7");
    expect(runs()).toBe(1);
  });

  test("a reader of a newer version than the build under way builds its own, and never gets the older answer", async () => {
    const { read, runs, finish } = cacheWithBuilds();
    const old = read("line:q", 7);
    const newer = read("line:q", 8);
    expect(runs()).toBe(2);
    finish(1, 8, "at 8");
    finish(0, 7, "at 7");
    await expect(newer).resolves.toBe("at 8");
    await expect(old).resolves.toBe("at 7");
    // The older build, finished last, does not replace the newer answer.
    await expect(read("line:q", 8)).resolves.toBe("at 8");
    expect(runs()).toBe(2);
  });

  test("an answer built at a later version than asked (the row read was newer) serves that version, not an older one for a newer", async () => {
    const { read, runs, finish } = cacheWithBuilds();
    const first = read("line:q", 3);
    finish(0, 5, "at 5");
    await expect(first).resolves.toBe("at 5");
    await expect(read("line:q", 5)).resolves.toBe("at 5");
    expect(runs()).toBe(1);
    const later = read("line:q", 6);
    expect(runs()).toBe(2);
    finish(1, 6, "at 6");
    await expect(later).resolves.toBe("at 6");
  });

  test("a failed build fails its readers and is not kept: the next reader builds again", async () => {
    const { read, runs, finish, fail } = cacheWithBuilds();
    const readers = [read("pr:q:1", 2), read("pr:q:1", 2)];
    fail(0, "not submitted");
    for (const reader of readers) await expect(reader).rejects.toThrow("not submitted");
    const again = read("pr:q:1", 2);
    expect(runs()).toBe(2);
    finish(1, 2, "found");
    await expect(again).resolves.toBe("found");
  });

  test("get answers a string kept by set for its exact version only", () => {
    const { cache } = cacheWithBuilds();
    cache.set("queue:q", 4, "{}");
    expect(cache.get("queue:q", 4)).toBe("{}");
    expect(cache.get("queue:q", 5)).toBeUndefined();
  });
});
