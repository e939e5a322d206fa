import { parseDocument } from "yaml";
import type { Principal } from "../auth/tokens.js";
import { checkRepositoryClaimable } from "../app/repositories.js";
import type { Services } from "../app/services.js";
import { checkQueueSetup as judgeSetup, SATISFIED_VERDICTS, type CheckReporter, type SetupReport } from "../domain/preflight/checks.js";
import type { TestingMode, WorkflowFile } from "../domain/preflight/workflows.js";
import { CodeHostRefusal, repositoryKey, type RepoRef } from "../ports/code-host.js";
import { AppError, notFound } from "../app/errors.js";
import * as queueStore from "../store/queues.js";
import { requiredChecksOf } from "./status-checks.js";

export type SetupInput = { repo: RepoRef; targetBranch: string; mode?: TestingMode };

export type QueueSetupRecord = SetupReport & {
  /** Whether the queue exists (its mode and requiredStatuses were used) or defaults were. */
  queueExists: boolean;
  /** Workflow files not read (more than the host's limit). */
  workflowsNotRead: string[];
  /** Why the workflows were not read at all (a host that runs no workflow files, a refusal). */
  workflowsUnavailable: string | null;
};

/** Workflow files are YAML: read as GitHub does (YAML 1.2), with aliases bounded. */
export function parseWorkflow(text: string): { document: unknown; error: string | null } {
  const document = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  if (document.errors.length > 0) return { document: null, error: `not valid YAML (${document.errors[0]!.message.split("\n")[0]})` };
  try {
    return { document: document.toJS({ maxAliasCount: 100 }), error: null };
  } catch (error) {
    return { document: null, error: `not readable (${(error as Error).message.split("\n")[0]})` };
  }
}

/**
 * "Will this queue ever merge anything?" — the required checks of the queue (its
 * requiredStatuses, or the branch's rules), the repository's workflow files on the target
 * branch and who reported checks on recent pull requests, judged for the queue's testing mode
 * (the queue's, or `mode`, or pushed branches for a queue not created yet). Reads only.
 */
export async function checkQueueSetup(services: Services, principal: Principal, input: SetupInput): Promise<QueueSetupRecord> {
  // Another organization's repository answers as one that does not exist, before any code host call.
  const queue = await services.db.read(async (tx) => {
    await checkRepositoryClaimable(services, tx, principal, input.repo);
    return queueStore.findQueue(tx, principal.organizationId, repositoryKey(input.repo), input.targetBranch);
  });
  const mode: TestingMode = input.mode ?? (queue?.createPrsForTestingBranches ? "draft_pr" : "push");
  // Some sixty reads a time: not while the installation is down to the reserve kept for the queues' progress.
  const reserved = services.codeHost.rateBudget?.reserveReachedUntil(input.repo) ?? null;
  if (reserved !== null)
    throw new AppError("rate_limited", `the code host's rate limit for this installation is down to the reserve kept for the queues until ${new Date(reserved).toISOString()}: check the setup again then`);
  try {
    return await setupOf(
      services,
      input,
      mode,
      queue ? { branch: queue.branch, requiredStatuses: queue.requiredStatuses, pullRequestChecks: queue.pullRequestChecks } : { branch: input.targetBranch, requiredStatuses: null, pullRequestChecks: [] },
      queue !== null,
    );
  } catch (error) {
    // No such branch (or repository): what the person asked about does not exist.
    if (error instanceof CodeHostRefusal && error.kind === "not_found") throw notFound(error.message);
    throw error;
  }
}

/**
 * The preflight of a queue's settings as just stored (createQueue, updateQueue): its warnings,
 * one line each; none when every required check reports. Who reported checks on recent pull
 * requests is not asked (a dozen calls): checkQueueSetup asks it.
 */
export async function setupWarnings(
  services: Services,
  record: { repo: RepoRef; targetBranch: string; createPrsForTestingBranches: boolean; requiredStatuses: string[] | null; pullRequestChecks: string[] },
): Promise<string[]> {
  const reserved = services.codeHost.rateBudget?.reserveReachedUntil(record.repo) ?? null;
  if (reserved !== null)
    return [`The queue's setup was not checked: the code host's rate limit is down to the reserve kept for the queues until ${new Date(reserved).toISOString()}. Run checkQueueSetup (greenline doctor) after that.`];
  try {
    const report = await setupOf(
      services,
      record,
      record.createPrsForTestingBranches ? "draft_pr" : "push",
      { branch: record.targetBranch, requiredStatuses: record.requiredStatuses, pullRequestChecks: record.pullRequestChecks },
      true,
      false,
    );
    return warningsOf(report);
  } catch (error) {
    services.log?.warn({ err: error, repo: record.repo, branch: record.targetBranch }, "the queue's setup could not be checked");
    return [`The queue's setup could not be checked (${(error as Error).message}): run checkQueueSetup to see whether its required checks will report.`];
  }
}

/** One line per problem, as createQueue and updateQueue answer them. */
function warningsOf(report: QueueSetupRecord): string[] {
  const lines = report.checks.filter((c) => !SATISFIED_VERDICTS.has(c.verdict)).map((c) => `${c.why}.${c.fix ? ` Fix: ${c.fix}.` : ""}`);
  return [...lines, ...report.warnings];
}

async function setupOf(
  services: Services,
  input: { repo: RepoRef; targetBranch: string },
  mode: TestingMode,
  queue: { branch: string; requiredStatuses: string[] | null; pullRequestChecks: readonly string[] },
  queueExists: boolean,
  askReporters = true,
): Promise<QueueSetupRecord> {
  const host = services.codeHost;
  const [required, read, reporters] = await Promise.all([
    // Every required check, those taken from each PR's head too: the report says which they are.
    requiredChecksOf(services, input.repo, { branch: queue.branch, requiredStatuses: queue.requiredStatuses }),
    host.workflowFiles
      ? host.workflowFiles(input.repo, input.targetBranch).then((files) => ({ files, error: null as string | null }))
      : Promise.resolve({ files: null, error: `The ${host.name} code host runs no workflow files: its CI reports on every testing branch.` }),
    host.recentCheckReporters && askReporters ? host.recentCheckReporters(input.repo, input.targetBranch).catch((): CheckReporter[] => []) : Promise.resolve([] as CheckReporter[]),
  ]);
  const workflows: WorkflowFile[] = [];
  const unreadable: { path: string; error: string }[] = [];
  for (const file of read.files?.files ?? []) {
    if (file.text === null) {
      unreadable.push({ path: file.path, error: file.error ?? "not readable" });
      continue;
    }
    const parsed = parseWorkflow(file.text);
    if (parsed.error !== null) unreadable.push({ path: file.path, error: parsed.error });
    else workflows.push({ path: file.path, document: parsed.document });
  }
  const context = { targetBranch: input.targetBranch, mode, repository: `${input.repo.owner}/${input.repo.name}` };
  if (read.files === null) {
    // A host without workflow files (the sandbox): its own CI reports on every testing branch.
    const checks = required.contexts.map((c) => ({
      context: c,
      verdict: queue.pullRequestChecks.includes(c) ? ("pull_request_head" as const) : ("reports" as const),
      sources: [],
      reportedBy: host.name,
      why: `\`${c}\` is reported by the ${host.name} code host's CI on every testing branch`,
      fix: null,
    }));
    return { mode, requiredSource: required.source, ok: required.source !== "unknown", checks, warnings: [], workflows: [], queueExists, workflowsNotRead: [], workflowsUnavailable: read.error };
  }
  const report = judgeSetup({ context, required, workflows, reporters, unreadable, pullRequestChecks: queue.pullRequestChecks });
  return { ...report, queueExists, workflowsNotRead: read.files.left, workflowsUnavailable: null };
}
