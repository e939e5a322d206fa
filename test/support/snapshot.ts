import type { Database } from "../../src/store/database.js";

/** Every stored row that an API operation can change, in a stable order, as JSON. */
export async function snapshotState(db: Database): Promise<string> {
  const state = await db.read(async (tx) => ({
    organizations: await tx.organization.findMany({ orderBy: { id: "asc" } }),
    tokens: await tx.apiToken.findMany({ orderBy: { id: "asc" } }),
    repositories: await tx.repository.findMany({ orderBy: { id: "asc" } }),
    queues: await tx.queue.findMany({ orderBy: { id: "asc" } }),
    entries: await tx.queueEntry.findMany({ orderBy: { id: "asc" } }),
    targets: await tx.impactedTargets.findMany({ orderBy: [{ queueId: "asc" }, { prNumber: "asc" }] }),
    transitions: await tx.transition.findMany({ orderBy: { id: "asc" } }),
    flakySettings: await tx.flakySettings.findMany({ orderBy: { repositoryId: "asc" } }),
    uploads: await tx.testUpload.findMany({ orderBy: { key: "asc" } }),
    testCases: await tx.testCase.findMany({ orderBy: { key: "asc" } }),
    results: await tx.testResult.findMany({ orderBy: [{ testCaseKey: "asc" }, { at: "asc" }, { uploadKey: "asc" }] }),
    failures: await tx.testFailure.findMany({ orderBy: [{ repositoryId: "asc" }, { at: "asc" }, { testCaseKey: "asc" }, { uploadKey: "asc" }] }),
    signatures: await tx.failureSignature.findMany({ orderBy: [{ testCaseKey: "asc" }, { signature: "asc" }] }),
  }));
  return JSON.stringify(state, (_key, value) => (typeof value === "bigint" ? value.toString() : value));
}
