import { repositoryKey, type RepoRef } from "../ports/code-host.js";
import type { EngineEvent } from "../domain/engine/types.js";
import { verdictOf, type CheckState } from "../domain/status-checks.js";
import { findRun, recordStatusChecks, runningRunsAt } from "../store/runs.js";
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
  const runs = await services.db.read((tx) => runningRunsAt(tx, key, sha));
  let decided = 0;
  for (const run of runs) {
    const required = run.queue.requiredStatuses ?? (await services.codeHost.requiredStatuses(repo, run.queue.branch));
    const event: Extract<EngineEvent, { kind: "run_finished" }> = { kind: "run_finished", runId: run.runId, outcome: "passed" };
    const applied = await applyQueueEvent(services, run.queueId, event, async (tx) => {
      const fresh = await findRun(tx, run.id);
      if (!fresh || fresh.status !== "running") return false;
      const checks = { ...fresh.statusChecks, [context]: state };
      await recordStatusChecks(tx, run.id, checks);
      const verdict = verdictOf(required, checks);
      if (verdict === null) return false;
      event.outcome = verdict;
      return true;
    });
    if (applied) decided++;
  }
  return decided;
}
