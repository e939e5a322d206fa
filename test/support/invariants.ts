import type { Database } from "../../src/store/database.js";

const TERMINAL = ["merged", "failed", "cancelled"];

/**
 * The queue's invariants, checked on what was stored, for a queue that has drained:
 * every PR terminal with a reason, none merged twice, no broken PR merged, and the target
 * branch holding exactly the merged PRs' changes, each landed by exactly one commit.
 */
export async function expectQueueInvariants(db: Database, repositoryName: string, expectedPrs: number): Promise<{ merged: number[] }> {
  const repository = await db.read((tx) => tx.repository.findFirstOrThrow({ where: { name: repositoryName } }));
  const queue = await db.read((tx) => tx.queue.findFirstOrThrow({ where: { repositoryId: repository.id } }));
  const entries = await db.read((tx) => tx.queueEntry.findMany({ where: { queueId: queue.id }, include: { transitions: true } }));
  expect(entries).toHaveLength(expectedPrs);
  const pulls = await db.read((tx) => tx.sandboxPullRequest.findMany({ where: { repoKey: repository.key } }));
  const broken = new Set(pulls.filter((p) => p.broken).map((p) => p.number));
  for (const entry of entries) {
    expect(TERMINAL).toContain(entry.state);
    expect(entry.stateReason).not.toBe("");
    expect(entry.transitions.filter((t) => t.toState === "merged").length).toBeLessThanOrEqual(1);
    if (broken.has(entry.prNumber)) expect([entry.prNumber, entry.state]).not.toEqual([entry.prNumber, "merged"]);
  }
  const merged = entries
    .filter((e) => e.state === "merged")
    .map((e) => e.prNumber)
    .sort((a, b) => a - b);
  // Most PRs are good: a run that merged nothing would pass the checks above vacuously.
  expect(merged.length).toBeGreaterThan(expectedPrs / 2);
  const ref = await db.read((tx) => tx.sandboxRef.findUniqueOrThrow({ where: { repoKey_name: { repoKey: repository.key, name: queue.branch } } }));
  const head = await db.read((tx) => tx.sandboxCommit.findUniqueOrThrow({ where: { sha: ref.sha } }));
  const files = Object.keys(JSON.parse(head.tree) as Record<string, string>).filter((f) => f.startsWith("changes/"));
  expect(files.map((f) => Number(/pr-(\d+)/.exec(f)![1])).sort((a, b) => a - b)).toEqual(merged);
  let commits = 0;
  for (let sha: string | null = ref.sha; sha; commits++) {
    sha = (await db.read((tx) => tx.sandboxCommit.findUniqueOrThrow({ where: { sha: sha! } }))).parentSha;
  }
  expect(commits).toBe(merged.length + 1);
  const violations = await db.read((tx) => tx.effect.findMany({ where: { queueId: queue.id, lastError: { contains: "sandbox:" } } }));
  expect(violations).toEqual([]);
  return { merged };
}
