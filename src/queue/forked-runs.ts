import type { Principal } from "../auth/tokens.js";
import { CodeHostRefusal, repositoryKey, type RepoRef } from "../ports/code-host.js";
import { repositoryOwnerByKey } from "../store/repositories.js";
import { AppError, invalidArgument } from "../app/errors.js";
import type { Services } from "../app/services.js";

/** The header a fork PR's CI sends in place of x-api-token (Trunk's merge-action: `github.run_id`). */
export const FORKED_RUN_HEADER = "x-forked-workflow-run-id";

/** What a fork PR's upload says of itself: the run's id is checked against it. */
export type ForkedRunUpload = { repo: RepoRef; targetBranch: string; prNumber: number; sha: string | undefined };

/**
 * A run still going: its jobs (the one uploading included) are queued or running. A completed
 * run, or one waiting for approval, authorises nothing.
 */
const LIVE_STATUSES = ["queued", "in_progress"];

const refused = (message: string) => new AppError("unauthenticated", `${FORKED_RUN_HEADER}: ${message}`);

/**
 * Authorises an upload of impacted targets by a fork PR's CI, which has no token (GitHub gives
 * fork PRs' workflows no secrets): the run it names must be a run of the repository, still
 * going, started from a fork, for the commit the request names, which must be the PR's head.
 * The repository must be one a Greenline organization owns through the App's installation;
 * the upload then acts for that organization. Every refusal is a 401 naming the rule failed; a
 * repository Greenline does not know answers exactly as a run that does not exist. The rules
 * and their sources: docs/github.md, "Fork PRs' impacted targets".
 */
export async function authenticateForkedRun(services: Services, runId: string, upload: ForkedRunUpload): Promise<Principal> {
  const { repo } = upload;
  const runs = services.codeHost.workflowRuns;
  if (!runs) throw refused(`accepted only when Greenline runs as a GitHub App (this server's code host, ${services.codeHost.name}, runs no workflows); send x-api-token`);
  if (!/^\d{1,19}$/.test(runId)) throw refused("must be a GitHub Actions run id (the digits of github.run_id)");
  if (upload.sha === undefined) throw invalidArgument("pr.sha", `required with ${FORKED_RUN_HEADER} (the head commit the workflow run tests)`);
  const sha = upload.sha.toLowerCase();
  const unknownRun = refused(`no workflow run ${runId} in ${repo.owner}/${repo.name} that Greenline can read`);
  const owner = await services.db.read(async (tx) => {
    const row = await repositoryOwnerByKey(tx, repositoryKey(repo));
    // The App must still be installed for the owning organization on the repository's account.
    return row && (await services.codeHost.mayOwnRepository(tx, row.organizationId, repo)) ? row : null;
  });
  if (!owner) throw unknownRun;
  let run: Awaited<ReturnType<typeof runs.workflowRun>>;
  try {
    run = await runs.workflowRun(repo, runId);
  } catch (error) {
    if (error instanceof CodeHostRefusal && error.kind === "permission_missing") {
      throw refused(`cannot be checked: the GitHub App may not read workflow runs in ${repo.owner}/${repo.name} (grant it "actions: read"; GitHub answered: ${error.message})`);
    }
    // GitHub down or rate limiting the App: 503 or 429 (api/errors.ts), to retry.
    throw error;
  }
  if (!run) throw unknownRun;
  if (run.status === null || !LIVE_STATUSES.includes(run.status)) {
    throw refused(`workflow run ${runId} is ${run.status ?? "in no state"}: only a queued or in-progress run may upload (the upload must come from the run itself)`);
  }
  const head = run.headRepository;
  if (head === null || repositoryKey({ host: repo.host, ...head }) === repositoryKey(repo)) {
    const from = head === null ? "an unknown repository" : `${head.owner}/${head.name} itself`;
    throw refused(`workflow run ${runId} does not come from a fork (its head is in ${from}); a pull request from the repository itself uploads with x-api-token`);
  }
  if (run.headSha.toLowerCase() !== sha) throw refused(`workflow run ${runId} runs for commit ${run.headSha}, not for pr.sha ${upload.sha}`);
  // The run's pull_requests list is empty for a fork's run (GitHub), so the PR is read itself.
  const pr = await services.codeHost.getPullRequest(repo, upload.prNumber, { targetBranch: upload.targetBranch, directMerge: false });
  if (!pr) throw refused(`pull request #${upload.prNumber} not found in ${repo.owner}/${repo.name}`);
  if (pr.headSha.toLowerCase() !== sha) throw refused(`pr.sha ${upload.sha} is not the head of pull request #${upload.prNumber} (its head is ${pr.headSha})`);
  return { organizationId: owner.organizationId, organizationSlug: owner.organizationSlug, tokenId: "", role: "write", actor: { kind: "fork_run", name: runId } };
}
