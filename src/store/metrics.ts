import type { Transition as TransitionRow } from "../generated/sqlite/client.js";
import { LIVE_PR_STATES, PR_STATES, type PrState } from "../domain/states.js";
import { oneOf, oneOfOrNull } from "./columns.js";
import type { Tx } from "./database.js";

/** A PR's change of state in a queue, with its reason. */
export type StoredTransition = { id: string; entryId: string; queueId: string; fromState: PrState | null; toState: PrState; reason: string; at: Date };

/** What the metrics of an organization's queues are computed from. */
export type MetricsData = {
  queues: { id: string; branch: string; state: string; repository: { host: string; owner: string; name: string } }[];
  /** How many PRs each queue has in each live state. */
  counts: { queueId: string; state: PrState; count: number }[];
  /** The transitions since the window started. */
  recent: StoredTransition[];
  /** The whole history of every PR with a transition in the window, in order. */
  histories: StoredTransition[];
};

function toTransition(row: TransitionRow): StoredTransition {
  return {
    id: row.id,
    entryId: row.entryId,
    queueId: row.queueId,
    fromState: oneOfOrNull(PR_STATES, row.fromState, "Transition.fromState"),
    toState: oneOf(PR_STATES, row.toState, "Transition.toState"),
    reason: row.reason,
    at: row.at,
  };
}

/** The organization's queues (of the repository `repositoryKey` only, when given), their PRs and their transitions since `windowStart`. */
export async function loadMetricsData(tx: Tx, organizationId: string, repositoryKey: string | undefined, windowStart: Date): Promise<MetricsData> {
  const queues = await tx.queue.findMany({
    where: { repository: { organizationId, ...(repositoryKey ? { key: repositoryKey } : {}) } },
    select: { id: true, branch: true, state: true, repository: { select: { host: true, owner: true, name: true } } },
  });
  const ids = queues.map((q) => q.id);
  const counts = await tx.queueEntry.groupBy({
    by: ["queueId", "state"],
    where: { queueId: { in: ids }, state: { in: LIVE_PR_STATES } },
    _count: { _all: true },
  });
  const recent = (await tx.transition.findMany({ where: { queueId: { in: ids }, at: { gte: windowStart } } })).map(toTransition);
  const entryIds = [...new Set(recent.map((t) => t.entryId))];
  const histories = (await tx.transition.findMany({ where: { entryId: { in: entryIds } }, orderBy: [{ at: "asc" }, { id: "asc" }] })).map(toTransition);
  return {
    queues,
    counts: counts.map((row) => ({ queueId: row.queueId, state: oneOf(PR_STATES, row.state, "QueueEntry.state"), count: row._count._all })),
    recent,
    histories,
  };
}
