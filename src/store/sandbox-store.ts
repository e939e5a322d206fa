import { sqlOf, type Tx } from "./database.js";
import { oneOf } from "./columns.js";

/**
 * The sandbox code host's simulated GitHub (src/adapters/sandbox): commits with whole trees,
 * refs, pull requests and CI jobs, in tables of their own.
 */

/** A commit's files, path → content. */
export type SandboxTree = Record<string, string>;

export type SandboxPullRequest = {
  repoKey: string;
  number: number;
  title: string;
  author: string;
  baseBranch: string;
  baseSha: string;
  headSha: string;
  /** The files the PR changes, against the tree of baseSha. */
  patch: SandboxTree;
  state: "open" | "closed" | "merged";
  /** Every run that holds it fails. */
  broken: boolean;
};

export type SandboxCiJob = { id: string; queueId: string; runId: string; outcome: "passed" | "failed" };

const PR_STATES = ["open", "closed", "merged"] as const;

function toTree(text: string, column: string): SandboxTree {
  const value: unknown = JSON.parse(text);
  if (typeof value === "object" && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === "string")) return value as SandboxTree;
  throw new Error(`store: ${column} is not a JSON object of file contents`);
}

function toPullRequest(row: { repoKey: string; number: number; title: string; author: string; baseBranch: string; baseSha: string; headSha: string; patch: string; state: string; broken: boolean }): SandboxPullRequest {
  const state = PR_STATES.find((s) => s === row.state);
  if (!state) throw new Error(`store: SandboxPullRequest.state holds ${JSON.stringify(row.state)}`);
  return { ...row, patch: toTree(row.patch, "SandboxPullRequest.patch"), state };
}

/** The commit a ref (branch) points at, or null. */
export async function sandboxRefSha(tx: Tx, repoKey: string, name: string): Promise<string | null> {
  const ref = await tx.sandboxRef.findUnique({ where: { repoKey_name: { repoKey, name } }, select: { sha: true } });
  return ref?.sha ?? null;
}

/** Creates a ref unless it exists (a concurrent writer may have created it), and answers where it points. */
export async function insertSandboxRef(tx: Tx, repoKey: string, name: string, sha: string): Promise<string> {
  await tx.$executeRaw`INSERT INTO "SandboxRef" ("repoKey", "name", "sha") VALUES (${repoKey}, ${name}, ${sha}) ON CONFLICT DO NOTHING`;
  return (await tx.sandboxRef.findUniqueOrThrow({ where: { repoKey_name: { repoKey, name } } })).sha;
}

/** Creates a ref that must not exist yet. */
export async function createSandboxRef(tx: Tx, repoKey: string, name: string, sha: string): Promise<void> {
  await tx.sandboxRef.create({ data: { repoKey, name, sha } });
}

export async function moveSandboxRef(tx: Tx, repoKey: string, name: string, sha: string): Promise<void> {
  await tx.sandboxRef.update({ where: { repoKey_name: { repoKey, name } }, data: { sha } });
}

export async function deleteSandboxRef(tx: Tx, repoKey: string, name: string): Promise<void> {
  await tx.sandboxRef.delete({ where: { repoKey_name: { repoKey, name } } });
}

/** Stores a commit (a no-op when it exists: its sha names its content). */
export async function insertSandboxCommit(tx: Tx, commit: { sha: string; repoKey: string; parentSha: string | null; tree: string; message: string; createdAt: Date }): Promise<void> {
  const { sha, repoKey, parentSha, tree, message, createdAt } = commit;
  await tx.$executeRaw`INSERT INTO "SandboxCommit" ("sha", "repoKey", "parentSha", "tree", "message", "createdAt")
      VALUES (${sha}, ${repoKey}, ${parentSha}, ${tree}, ${message}, ${createdAt}) ON CONFLICT DO NOTHING`;
}

/** A commit's repository and files, or null when there is no such commit. */
export async function findSandboxCommit(tx: Tx, sha: string): Promise<{ repoKey: string; tree: SandboxTree } | null> {
  const commit = await tx.sandboxCommit.findUnique({ where: { sha }, select: { tree: true, repoKey: true } });
  return commit && { repoKey: commit.repoKey, tree: toTree(commit.tree, "SandboxCommit.tree") };
}

export async function findSandboxPullRequest(tx: Tx, repoKey: string, number: number): Promise<SandboxPullRequest | null> {
  const row = await tx.sandboxPullRequest.findUnique({ where: { repoKey_number: { repoKey, number } } });
  return row && toPullRequest(row);
}

export async function getSandboxPullRequest(tx: Tx, repoKey: string, number: number): Promise<SandboxPullRequest> {
  return toPullRequest(await tx.sandboxPullRequest.findUniqueOrThrow({ where: { repoKey_number: { repoKey, number } } }));
}

/**
 * Stores a pull request: `replace` overwrites one with its number, otherwise the one stored
 * first (two replicas may reference a new PR at once) is kept. Answers the stored one.
 */
export async function saveSandboxPullRequest(tx: Tx, pr: SandboxPullRequest, replace: boolean): Promise<SandboxPullRequest> {
  const { repoKey, number, ...fields } = pr;
  const data = { ...fields, patch: JSON.stringify(pr.patch) };
  const row = await tx.sandboxPullRequest.upsert({ where: { repoKey_number: { repoKey, number } }, create: { repoKey, number, ...data }, update: replace ? data : {} });
  return toPullRequest(row);
}

export async function markSandboxPullRequestsMerged(tx: Tx, repoKey: string, numbers: number[]): Promise<void> {
  await tx.sandboxPullRequest.updateMany({ where: { repoKey, number: { in: numbers } }, data: { state: "merged" } });
}

/**
 * Why a CI job fails, as stored: `failed` when a PR it holds is broken (it fails every time),
 * `flaked` when nothing in it is (a re-run may pass). Both report `failed`.
 */
export type SandboxCiOutcome = "passed" | "failed" | "flaked";

/** Schedules a CI result (a no-op when the job exists: a retried start). */
export async function insertSandboxCiJob(tx: Tx, job: { id: string; queueId: string; runId: string; sha: string; dueAt: Date; outcome: SandboxCiOutcome }): Promise<void> {
  await tx.sandboxCiJob.upsert({ where: { id: job.id }, create: job, update: {} });
}

/** The CI jobs of a testing run on the commit `sha` (its first job, then its re-runs), oldest first. */
export async function sandboxCiJobsOf(tx: Tx, run: { queueId: string; runId: string; sha: string }): Promise<{ id: string; outcome: SandboxCiOutcome | "cancelled"; delivered: boolean }[]> {
  const jobs = await tx.sandboxCiJob.findMany({ where: { queueId: run.queueId, runId: run.runId, sha: run.sha }, orderBy: [{ dueAt: "asc" }, { id: "asc" }] });
  return jobs.map((j) => ({ id: j.id, outcome: oneOf(["passed", "failed", "flaked", "cancelled"] as const, j.outcome, "SandboxCiJob.outcome"), delivered: j.deliveredAt !== null }));
}

/** Cancels the undelivered CI jobs on the commit `sha`. */
export async function cancelSandboxCiJobs(tx: Tx, sha: string, at: Date): Promise<void> {
  await tx.sandboxCiJob.updateMany({ where: { sha, deliveredAt: null }, data: { deliveredAt: at, outcome: "cancelled" } });
}

/** CI results due at `now` and not yet delivered, oldest first (at most 100). */
export async function dueSandboxCiJobs(tx: Tx, now: Date): Promise<SandboxCiJob[]> {
  // Plain SQL: every worker tick of every replica asks (issue 23 goal 3).
  const jobs = await sqlOf(tx).all<{ id: string; queueId: string; runId: string; outcome: string }>(
    `SELECT "id", "queueId", "runId", "outcome" FROM "SandboxCiJob" WHERE "deliveredAt" IS NULL AND "dueAt" <= ? ORDER BY "dueAt" LIMIT 100`,
    [now],
  );
  return jobs.map((j) => {
    const outcome = oneOf(["passed", "failed", "flaked"] as const, j.outcome, "SandboxCiJob.outcome");
    return { id: j.id, queueId: j.queueId, runId: j.runId, outcome: outcome === "flaked" ? "failed" : outcome };
  });
}

/** Marks a CI result delivered; false when it already was. */
export async function markSandboxCiJobDelivered(tx: Tx, id: string, at: Date): Promise<boolean> {
  const result = await tx.sandboxCiJob.updateMany({ where: { id, deliveredAt: null }, data: { deliveredAt: at } });
  return result.count > 0;
}
