import { repositoryKey, type RepoRef } from "../ports/code-host.js";
import type { EngineEvent } from "../domain/engine/types.js";
import { verdictOf, type CheckState } from "../domain/status-checks.js";
import { applyQueueEvent } from "./queue-events.js";
import type { Services } from "./services.js";

/**
 * A status (or check run) reported on a commit. When the commit is the head of a running
 * testing branch, the status is recorded on its run and, under the queue's lock, the run is
 * decided as soon as the required statuses say so. Reports on other commits are ignored; a
 * repeated or late report changes nothing. Answers how many runs it decided.
 */
export async function reportStatus(services: Services, repo: RepoRef, sha: string, context: string, state: CheckState): Promise<number> {
  const key = repositoryKey(repo);
  const runs = await services.db.read((tx) =>
    tx.testRun.findMany({ where: { testBranchSha: sha, status: "running", queue: { repository: { key } } }, include: { queue: true } }),
  );
  let decided = 0;
  for (const run of runs) {
    const required = run.queue.requiredStatuses ? (JSON.parse(run.queue.requiredStatuses) as string[]) : await services.codeHost.requiredStatuses(repo, run.queue.branch);
    const event: Extract<EngineEvent, { kind: "run_finished" }> = { kind: "run_finished", runId: run.runId, outcome: "passed" };
    const applied = await applyQueueEvent(services, run.queueId, event, async (tx) => {
      const fresh = await tx.testRun.findUnique({ where: { id: run.id } });
      if (!fresh || fresh.status !== "running") return false;
      const checks = { ...(JSON.parse(fresh.statusChecks) as Record<string, CheckState>), [context]: state };
      await tx.testRun.update({ where: { id: run.id }, data: { statusChecks: JSON.stringify(checks) } });
      const verdict = verdictOf(required, checks);
      if (verdict === null) return false;
      event.outcome = verdict;
      return true;
    });
    if (applied) decided++;
  }
  return decided;
}
