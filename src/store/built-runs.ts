import { jsonNumbers } from "./columns.js";
import type { Tx } from "./database.js";

/**
 * The longest proper prefix of `stack`, on the same base, that an earlier run of the queue
 * already built (its testing branch's commit): a new testing branch starts from that commit and
 * merges only the PRs after it, one GitHub call per new PR instead of one per PR of the stack.
 */
export async function builtPrefixOf(tx: Tx, queueId: string, baseSha: string, stack: readonly number[]): Promise<{ length: number; sha: string } | null> {
  const rows = await tx.testRun.findMany({ where: { queueId, baseSha, archived: false, testBranchSha: { not: null } }, select: { stack: true, testBranchSha: true } });
  let best: { length: number; sha: string } | null = null;
  for (const row of rows) {
    const built = jsonNumbers(row.stack, "TestRun.stack");
    if (built.length === 0 || built.length >= stack.length || (best && built.length <= best.length)) continue;
    if (built.every((pr, i) => stack[i] === pr)) best = { length: built.length, sha: row.testBranchSha! };
  }
  return best;
}
