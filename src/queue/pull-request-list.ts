import type { Principal } from "../auth/tokens.js";
import type { PrState } from "../domain/states.js";
import { entriesPage } from "../store/entries.js";
import { invalidArgument } from "../app/errors.js";
import { findQueue, type QueueAddress } from "./queues.js";
import { toMergeItemRecord, type MergeItemRecord } from "./records.js";
import type { Services } from "../app/services.js";

export type ListPullRequestsInput = QueueAddress & { state?: PrState; since?: Date; until?: Date; cursor?: string; take: number };

/**
 * Trunk's listPullRequests: the queue's PRs, most recently submitted first, paged by cursor (the
 * last entry's id). `state` filters on where a PR is now; `since`/`until` keep the PRs that
 * concluded (merged, failed, cancelled) in that window, both bounds inclusive.
 */
export async function listPullRequests(services: Services, principal: Principal, input: ListPullRequestsInput): Promise<{ pullRequests: MergeItemRecord[]; nextCursor?: string }> {
  return services.db.read(async (tx) => {
    const queue = await findQueue(tx, principal, input);
    const page = await entriesPage(tx, queue.id, { state: input.state, concludedSince: input.since, concludedUntil: input.until }, input.cursor, input.take);
    if (!page) throw invalidArgument("cursor", "is not a cursor of this queue (use an earlier answer's nextCursor)");
    const last = page.entries.at(-1);
    return { pullRequests: page.entries.map(toMergeItemRecord), ...(page.more && last ? { nextCursor: last.id } : {}) };
  });
}
