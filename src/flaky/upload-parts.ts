import { createHash } from "node:crypto";
import { AppError, invalidArgument, permissionDenied } from "../app/errors.js";
import { checkRepositoryClaimable } from "../app/repositories.js";
import type { Services } from "../app/services.js";
import { authenticateTokenId, type Principal } from "../auth/tokens.js";
import { repositoryKey } from "../ports/code-host.js";
import { completePartSet, findDuePartSets, findPartSet, insertPart, listParts, loadParts, lockPartSet, type PartSet, type PartSetKey, pruneCompletedPartSets, uploadExists, uploadTotals } from "../store/flaky-store.js";
import { checkReports, type UploadInput, uploadTestResults } from "./ingest.js";
import { repositoryInScope } from "./queries.js";

/**
 * An upload sent in parts (issue 25, part 5): a CI job whose reports are larger than one request
 * may be (20 MiB) sends them in several, each naming the set (`part.id`, the client's), its
 * place (`part.index`) and how many there are (`part.count`). Each part is checked when it comes
 * (well-formed reports, the same fields as the set's other parts) and kept; when the last one is
 * in, the set is stored as one upload — one id, one judgment of its tests — exactly as if it had
 * come whole. A part sent again (a retry) is received once; other reports under a part's index
 * are refused. A set whose parts stop coming is stored with the parts it has PART_SET_TIMEOUT_MS
 * after its first (the worker's sweep), so nothing waits for ever and no part is lost.
 */

export type UploadPart = { id: string; index: number; count: number };
export type PartUploadInput = UploadInput & { part: UploadPart };

/** How long a set waits for its missing parts before it is stored without them. */
export const PART_SET_TIMEOUT_MS = 30 * 60_000;
/** How long a stored set's answer is kept for a part sent again. */
const PART_SET_KEPT_MS = 7 * 24 * 3600_000;

/** The upload a set becomes: an id derived from the set's key, so every replica, retry and crash names the same upload. */
function uploadIdOf(key: PartSetKey): string {
  const hex = createHash("sha256").update(`greenline-upload-parts\0${key.organizationId}\0${key.repositoryKey}\0${key.setId}`).digest("hex");
  // A UUID's shape, version 8 (custom), RFC 9562 variant.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The request's fields other than its reports and its part, in one order: every part of a set must give the same. */
function metaOf(input: PartUploadInput): string {
  const { repo, org_url_slug, commit_sha, branch, pr_number, job_url, check_name, check_run_id, variant, codeowners } = input;
  return JSON.stringify({
    repo: { host: repo.host.toLowerCase(), owner: repo.owner.toLowerCase(), name: repo.name.toLowerCase() },
    org_url_slug: org_url_slug.toLowerCase(),
    commit_sha,
    branch,
    pr_number,
    job_url,
    check_name,
    check_run_id,
    variant,
    codeowners,
  });
}

const FIELDS = ["commit_sha", "branch", "pr_number", "job_url", "check_name", "check_run_id", "variant", "codeowners"] as const;

/** The first field in which a part's request differs from the set's (`repo` and `org_url_slug` name the set, so never differ). */
function differingField(mine: string, theirs: string): string {
  const a = JSON.parse(mine) as Record<string, unknown>;
  const b = JSON.parse(theirs) as Record<string, unknown>;
  return FIELDS.find((f) => JSON.stringify(a[f]) !== JSON.stringify(b[f])) ?? "(the request)";
}

/** Receives one part; answers it, or the whole upload's answer once this part completes the set. */
export async function uploadTestResultsPart(services: Services, principal: Principal, input: PartUploadInput) {
  const { part } = input;
  if (part.index >= part.count) throw invalidArgument("part.index", `must be less than part.count (${part.count}): parts are numbered from 0`);
  // Another organization's repository is not found, exactly like a missing one (as a whole upload's).
  if (!(await repositoryInScope(services, principal, input))) await services.db.transaction((tx) => checkRepositoryClaimable(services, tx, principal, input.repo));
  // The part's reports are read before it is kept: a malformed one is refused now, naming it.
  const counted = await checkReports(input);
  const key: PartSetKey = { organizationId: principal.organizationId, repositoryKey: repositoryKey(input.repo), setId: part.id };
  const meta = metaOf(input);
  const reports = JSON.stringify(input.junit_xml);
  const digest = createHash("sha256").update(reports).digest("hex");
  const now = services.now();
  const held = await services.db.sqlTransaction(
    async (sql) => {
      const set = await lockPartSet(sql, key, { count: part.count, tokenId: principal.tokenId, uploadId: uploadIdOf(key), now });
      if (set.count !== part.count) throw invalidArgument("part.count", `is ${part.count}, but part set "${part.id}" was begun with ${set.count} parts`);
      const parts = await listParts(sql, key);
      const same = parts.find((p) => p.index === part.index);
      const other = parts.find((p) => p.meta !== meta);
      if (other) {
        const field = differingField(meta, other.meta);
        throw invalidArgument(field, `differs from part ${other.index} of part set "${part.id}": every part of an upload gives the same ${field}`);
      }
      if (same && same.digest !== digest) throw invalidArgument("part.index", `part ${part.index} of part set "${part.id}" was received already, with other reports: a part is sent again only as it was`);
      // Stored already: a part sent again (or one that came too late) gets the upload's answer.
      if (set.answer !== null) return { set, received: set.count, again: true };
      if (!same) await insertPart(sql, key, { index: part.index, meta, digest, reports, now });
      return { set, received: parts.length + (same ? 0 : 1), again: Boolean(same) };
    },
    { boundedLockWait: true },
  );
  if (held.set.answer !== null) {
    const answer = JSON.parse(held.set.answer) as Record<string, unknown>;
    if (answer.upload_id === null) throw permissionDenied(`the parts of part set "${part.id}" were dropped unstored: ${String(answer.dropped)}; send the upload again under a new part.id`);
    return { ...(answer as { upload_id: string }), part: { ...part, received: held.set.count, complete: true } };
  }
  if (held.received < part.count) {
    return {
      upload_id: held.set.uploadId,
      test_cases: counted.testCases,
      failures: counted.failures,
      unnamed_test_cases: 0,
      infrastructure_failure: false,
      part: { ...part, received: held.received, complete: false },
    };
  }
  const answer = await storePartSet(services, held.set, principal);
  return { ...answer, part: { ...part, received: held.received, complete: true } };
}

/**
 * Stores a set's parts as one upload, with its id; keeps the answer and drops the parts. Safe to
 * run again and at once on two replicas: the upload's id is unique, and one stored meanwhile is
 * answered from what it holds.
 */
async function storePartSet(services: Services, set: PartSet, principal: Principal): Promise<Record<string, unknown>> {
  const key: PartSetKey = set;
  const parts = await services.db.sqlRead((sql) => loadParts(sql, key));
  let answer: Record<string, unknown>;
  const stored = async () => {
    const totals = await services.db.sqlRead((sql) => uploadTotals(sql, set.uploadId));
    return (
      totals && {
        upload_id: set.uploadId,
        test_cases: totals.testCases,
        failures: totals.failures,
        unnamed_test_cases: 0,
        infrastructure_failure: totals.infrastructureFailure !== null,
        ...(totals.infrastructureFailure !== null && { infrastructure_failure_reason: totals.infrastructureFailure }),
      }
    );
  };
  if (await services.db.sqlRead((sql) => uploadExists(sql, set.uploadId))) answer = (await stored())!;
  else if (parts.length === 0) throw new Error(`part set ${set.setId} has no part to store`);
  else {
    const meta = JSON.parse(parts[0]!.meta) as Omit<UploadInput, "junit_xml">;
    const input: UploadInput = { ...meta, junit_xml: parts.flatMap((p) => JSON.parse(p.reports) as string[]) };
    try {
      answer = await uploadTestResults(services, principal, input, { uploadId: set.uploadId });
    } catch (error) {
      const meanwhile = !(error instanceof AppError) && (await stored());
      if (!meanwhile) throw error;
      answer = meanwhile;
    }
  }
  const missing = set.count - parts.length;
  const kept = { ...answer, ...(missing > 0 ? { parts_missing: missing } : {}) };
  await services.db.sqlTransaction((sql) => completePartSet(sql, key, JSON.stringify(kept), services.now()));
  return kept;
}

/**
 * The worker's sweep: sets whose parts stopped coming PART_SET_TIMEOUT_MS ago are stored with
 * what they have (their answer says how many parts were missing), sets a crash left complete but
 * unstored are stored, and answers kept past PART_SET_KEPT_MS are forgotten. A set whose token
 * was revoked since is dropped unstored (its parts acted for that token). Answers how many sets
 * were stored.
 */
export async function storeDuePartSets(services: Services): Promise<number> {
  const now = services.now();
  let stored = 0;
  for (const set of await services.db.sqlRead((sql) => findDuePartSets(sql, new Date(now.getTime() - PART_SET_TIMEOUT_MS), 20))) {
    try {
      const principal = await authenticateTokenId(services.db, set.tokenId);
      if (!principal || principal.organizationId !== set.organizationId) {
        await services.db.sqlTransaction((sql) => completePartSet(sql, set, JSON.stringify({ upload_id: null, dropped: "the API token that sent its parts was revoked" }), now));
        services.log?.warn({ setId: set.setId, repository: set.repositoryKey }, "an upload's parts were dropped: the token that sent them was revoked");
        continue;
      }
      const current = await services.db.sqlRead((sql) => findPartSet(sql, set));
      if (!current || current.answer !== null) continue;
      await storePartSet(services, current, principal);
      stored++;
    } catch (error) {
      // One set's failure (a report the database refused, say) must not hold the others.
      services.log?.error({ err: error, setId: set.setId, repository: set.repositoryKey }, "storing an upload's parts failed; it is tried again at the next sweep");
    }
  }
  await services.db.sqlTransaction((sql) => pruneCompletedPartSets(sql, new Date(now.getTime() - PART_SET_KEPT_MS)));
  return stored;
}
