import { ReadCache } from "../../src/app/read-cache.js";

/** A build whose end the test decides: how many times it ran, and a way to finish it. */
function controlledBuild<T>() {
  let runs = 0;
  const pending: { resolve: (v: { version: number; value: T }) => void; reject: (e: Error) => void }[] = [];
  const build = () => {
    runs++;
    return new Promise<{ version: number; value: T }>((resolve, reject) => pending.push({ resolve, reject }));
  };
  return { build, runs: () => runs, pending };
}

describe("ReadCache.shared", () => {
  test("readers of one version asking at once share one build", async () => {
    const cache = new ReadCache();
    const { build, runs, pending } = controlledBuild<string>();
    const readers = [1, 2, 3, 4].map(() => cache.shared("line:q", 7, build));
    expect(runs()).toBe(1);
    pending[0]!.resolve({ version: 7, value: "at 7" });
    await expect(Promise.all(readers)).resolves.toEqual(["at 7", "at 7", "at 7", "at 7"]);
    // Kept for the next readers of that version.
    await expect(cache.shared("line:q", 7, build)).resolves.toBe("at 7");
    expect(runs()).toBe(1);
  });

  test("a reader of a newer version than the build under way builds its own, and never gets the older answer", async () => {
    const cache = new ReadCache();
    const { build, runs, pending } = controlledBuild<string>();
    const old = cache.shared("line:q", 7, build);
    const newer = cache.shared("line:q", 8, build);
    expect(runs()).toBe(2);
    pending[1]!.resolve({ version: 8, value: "at 8" });
    pending[0]!.resolve({ version: 7, value: "at 7" });
    await expect(newer).resolves.toBe("at 8");
    await expect(old).resolves.toBe("at 7");
    // The older build, finished last, does not replace the newer answer.
    await expect(cache.shared("line:q", 8, build)).resolves.toBe("at 8");
    expect(runs()).toBe(2);
  });

  test("an answer built at a later version than asked (the row read was newer) serves that version, not an older one for a newer", async () => {
    const cache = new ReadCache();
    const { build, runs, pending } = controlledBuild<string>();
    const first = cache.shared("line:q", 3, build);
    pending[0]!.resolve({ version: 5, value: "at 5" });
    await expect(first).resolves.toBe("at 5");
    await expect(cache.shared("line:q", 5, build)).resolves.toBe("at 5");
    expect(runs()).toBe(1);
    const later = cache.shared("line:q", 6, build);
    expect(runs()).toBe(2);
    pending[1]!.resolve({ version: 6, value: "at 6" });
    await expect(later).resolves.toBe("at 6");
  });

  test("a failed build fails its readers and is not kept: the next reader builds again", async () => {
    const cache = new ReadCache();
    const { build, runs, pending } = controlledBuild<string>();
    const readers = [cache.shared("pr:q:1", 2, build), cache.shared("pr:q:1", 2, build)];
    pending[0]!.reject(new Error("not submitted"));
    for (const reader of readers) await expect(reader).rejects.toThrow("not submitted");
    const again = cache.shared("pr:q:1", 2, build);
    expect(runs()).toBe(2);
    pending[1]!.resolve({ version: 2, value: "found" });
    await expect(again).resolves.toBe("found");
  });

  test("get answers a string kept by set for its exact version only", () => {
    const cache = new ReadCache();
    cache.set("queue:q", 4, "{}");
    expect(cache.get("queue:q", 4)).toBe("{}");
    expect(cache.get("queue:q", 5)).toBeUndefined();
  });
});
