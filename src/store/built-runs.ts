import { jsonNumbers } from "./columns.js";
import { sqlOf, type Tx } from "./database.js";

export type RunDescription = { baseSha: string; stack: readonly number[] };
export type BuiltPrefix = { length: number; sha: string };

/**
 * The longest proper prefix of a run's stack, on the same base, that an earlier run of the
 * queue already built (its testing branch's commit), trying each description of the run in
 * turn (as decided, as re-described after merges landed): a new testing branch starts from
 * that commit and merges only the PRs after it, one GitHub call per new PR instead of one per
 * PR of the stack. Answers the description it matched, or the first with no prefix.
 */
export async function builtPrefixOf(tx: Tx, queueId: string, descriptions: readonly RunDescription[]): Promise<{ description: RunDescription; prefix: BuiltPrefix | null }> {
  // The run and its start effect usually describe it on one base: the runs built there are read once.
  const builtOn = new Map<string, { stack: string; testBranchSha: string | null }[]>();
  for (const description of descriptions) {
    let rows = builtOn.get(description.baseSha);
    if (!rows) {
      // Plain SQL (sqlOf): every run started asks.
      rows = await sqlOf(tx).all<{ stack: string; testBranchSha: string | null }>(`SELECT "stack", "testBranchSha" FROM "TestRun" WHERE "queueId" = ? AND "baseSha" = ? AND "testBranchSha" IS NOT NULL`, [
        queueId,
        description.baseSha,
      ]);
      builtOn.set(description.baseSha, rows);
    }
    let best: BuiltPrefix | null = null;
    for (const row of rows) {
      const built = jsonNumbers(row.stack, "TestRun.stack");
      if (built.length === 0 || built.length >= description.stack.length || (best && built.length <= best.length)) continue;
      if (built.every((pr, i) => description.stack[i] === pr)) best = { length: built.length, sha: row.testBranchSha! };
    }
    if (best) return { description, prefix: best };
  }
  return { description: descriptions[0]!, prefix: null };
}
