import type { Principal } from "../auth/tokens.js";
import { freezeStatusAt, intervalsOf, isCurrentOrFuture, type Freeze, type FreezeStatus, type FreezeWindow, type Weekday } from "../domain/freezes.js";
import type { Tx } from "../store/database.js";
import { getQueue, writeQueueFreezes, type Queue } from "../store/queues.js";
import { failedPrecondition, invalidArgument, notFound } from "../app/errors.js";
import type { Services } from "../app/services.js";
import { causeOf, recordOperatorEvent } from "./causes.js";
import { applyEvent } from "./queue-events.js";
import { publishBlockedReasonChange } from "./diagnoses.js";
import { findQueue, lockQueue, type QueueAddress } from "./queues.js";
import type { Actor } from "../domain/timeline.js";

/** A queue holds at most this many freezes (current and scheduled; past ones are dropped). */
export const MAX_FREEZES = 50;

export type FreezeInput = QueueAddress & {
  reason: string;
  /** Without `from`: the freeze starts now and ends then (absent: when someone unfreezes it). With `from`: a one-off window. */
  until?: Date;
  from?: Date;
  weekly?: { timeZone: string; days: Weekday[]; from: string; until: string };
  /** Whether PRs are tested while it holds (default true). */
  testing?: boolean;
};

export type FreezeRecord = {
  id: string;
  reason: string;
  testing: boolean;
  kind: FreezeWindow["kind"];
  from: string | null;
  until: string | null;
  weekly: { timeZone: string; days: Weekday[]; from: string; until: string } | null;
  createdAt: string;
  createdBy: Actor;
  holdingNow: boolean;
  nextStart: string | null;
};

export type FreezeStatusRecord = { frozen: boolean; since: string | null; until: string | null; testing: boolean; reasons: string[]; nextChangeAt: string | null };

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function toFreezeRecord(freeze: Freeze, now: number): FreezeRecord {
  const w = freeze.window;
  const ahead = intervalsOf(freeze, now, now + 8 * 24 * 3_600_000);
  const holdingNow = ahead.some(([s, e]) => s <= now && now < e);
  const next = ahead.find(([s]) => s > now)?.[0] ?? (w.kind === "once" && Date.parse(w.from) > now ? Date.parse(w.from) : null);
  return {
    id: freeze.id,
    reason: freeze.reason,
    testing: freeze.testing,
    kind: w.kind,
    from: w.kind === "once" ? w.from : w.kind === "now" ? freeze.createdAt : null,
    until: w.kind === "weekly" ? null : w.until,
    weekly: w.kind === "weekly" ? { timeZone: w.timeZone, days: w.days, from: w.from, until: w.until } : null,
    createdAt: freeze.createdAt,
    createdBy: freeze.createdBy,
    holdingNow,
    nextStart: iso(next),
  };
}

export function toFreezeStatusRecord(queue: Pick<Queue, "frozen">, status: FreezeStatus): FreezeStatusRecord {
  return {
    frozen: status.frozen,
    since: status.frozen ? (queue.frozen?.since ?? null) : null,
    until: iso(status.until),
    testing: status.testing,
    reasons: status.holding.map((f) => f.reason),
    nextChangeAt: iso(status.nextChangeAt),
  };
}

/** The window a request asks for, checked against the clock: a field and its rule when it cannot be. */
function windowOf(input: FreezeInput, now: number): FreezeWindow {
  if (input.weekly) {
    if (input.from !== undefined || input.until !== undefined) throw invalidArgument(input.from !== undefined ? "from" : "until", "cannot be given with weekly (a weekly window has its own from and until)");
    const { timeZone, days, from, until } = input.weekly;
    return { kind: "weekly", timeZone, days: [...new Set(days)], from, until };
  }
  if (input.from !== undefined) {
    if (!Number.isFinite(input.from.getTime())) throw invalidArgument("from", "must be a real date and time");
    if (input.until === undefined) throw invalidArgument("until", "is required with from (a one-off window has an end)");
    if (input.until.getTime() <= input.from.getTime()) throw invalidArgument("until", "must be after from");
    if (input.until.getTime() <= now) throw invalidArgument("until", "must be in the future");
    return { kind: "once", from: input.from.toISOString(), until: input.until.toISOString() };
  }
  if (input.until !== undefined && !Number.isFinite(input.until.getTime())) throw invalidArgument("until", "must be a real date and time");
  if (input.until !== undefined && input.until.getTime() <= now) throw invalidArgument("until", "must be in the future");
  return { kind: "now", until: input.until?.toISOString() ?? null };
}

/** Records an operator's freeze action as a queue event (getQueueEvents). */
async function recordFreezeAction(services: Services, tx: Tx, queue: Queue, repo: QueueAddress["repo"], kind: "freeze_added" | "freeze_removed", principal: Principal, freeze: FreezeRecord) {
  await recordOperatorEvent(services, tx, principal, { queueId: queue.id, repo, branch: queue.branch }, kind, { freeze }, freeze.reason);
}

/**
 * After the queue's freezes changed: the engine decides with them at once (a thaw merges what
 * passed; a freeze that holds now is recorded as started), and the blocked reason is published.
 */
async function decideWithFreezes(services: Services, tx: Tx, queue: Queue, freezes: Freeze[], principal: Principal, repo: QueueAddress["repo"]): Promise<FreezeStatusRecord> {
  await writeQueueFreezes(tx, queue.id, freezes);
  await applyEvent(services, tx, { ...queue, freezes }, { kind: "config_changed" }, causeOf(principal), { freezesChangedBy: causeOf(principal) });
  const after = await getQueue(tx, queue.id);
  await publishBlockedReasonChange(services, tx, after, repo);
  return toFreezeStatusRecord(after, freezeStatusAt(freezes, services.now().getTime()));
}

/** freezeQueue: adds a freeze (now, a one-off window, or weekly); answers it and the queue's freeze now. */
export async function freezeQueue(services: Services, principal: Principal, input: FreezeInput): Promise<{ freeze: FreezeRecord; status: FreezeStatusRecord }> {
  return services.db.transaction(async (tx) => {
    const queue = await lockQueue(services, tx, principal, input);
    const now = services.now().getTime();
    const window = windowOf(input, now);
    const current = queue.freezes.filter((f) => isCurrentOrFuture(f, now));
    if (current.length >= MAX_FREEZES) throw failedPrecondition(`the queue has ${current.length} freezes, the most it keeps: remove one (unfreezeQueue with its freezeId) first`);
    const freeze: Freeze = { id: services.newId(), reason: input.reason, testing: input.testing ?? true, window, createdAt: new Date(now).toISOString(), createdBy: causeOf(principal).actor };
    const record = toFreezeRecord(freeze, now);
    await recordFreezeAction(services, tx, queue, input.repo, "freeze_added", principal, record);
    const status = await decideWithFreezes(services, tx, queue, [...current, freeze], principal, input.repo);
    return { freeze: record, status };
  });
}

/**
 * unfreezeQueue: removes the freeze `freezeId`, or, without it, ends every freeze holding now (a
 * weekly one only for the occurrence under way: its next window freezes again). Answers what it
 * ended and the queue's freeze now; a queue that is not frozen answers nothing ended.
 */
export async function unfreezeQueue(services: Services, principal: Principal, input: QueueAddress & { freezeId?: string }): Promise<{ ended: FreezeRecord[]; status: FreezeStatusRecord }> {
  return services.db.transaction(async (tx) => {
    const queue = await lockQueue(services, tx, principal, input);
    const now = services.now().getTime();
    const current = queue.freezes.filter((f) => isCurrentOrFuture(f, now));
    let kept: Freeze[];
    let ended: Freeze[];
    if (input.freezeId !== undefined) {
      const target = current.find((f) => f.id === input.freezeId);
      if (!target) throw notFound(`no freeze "${input.freezeId}" on the queue for "${queue.branch}" (listQueueFreezes lists them)`);
      kept = current.filter((f) => f !== target);
      ended = [target];
    } else {
      const holding = new Set(freezeStatusAt(current, now).holding.map((f) => f.id));
      ended = current.filter((f) => holding.has(f.id));
      kept = current.flatMap((f) => (!holding.has(f.id) ? [f] : f.window.kind === "weekly" ? [{ ...f, skipBefore: new Date(now + 1).toISOString() }] : []));
    }
    const records = ended.map((f) => toFreezeRecord(f, now));
    for (const record of records) await recordFreezeAction(services, tx, queue, input.repo, "freeze_removed", principal, record);
    const status = await decideWithFreezes(services, tx, queue, kept, principal, input.repo);
    return { ended: records, status };
  });
}

/** listQueueFreezes: the queue's freeze now and its freezes, current and scheduled. */
export async function listQueueFreezes(services: Services, principal: Principal, input: QueueAddress): Promise<{ status: FreezeStatusRecord; freezes: FreezeRecord[] }> {
  const queue = await services.db.read((tx) => findQueue(tx, principal, input));
  const now = services.now().getTime();
  const current = queue.freezes.filter((f) => isCurrentOrFuture(f, now));
  return { status: toFreezeStatusRecord(queue, freezeStatusAt(current, now)), freezes: current.map((f) => toFreezeRecord(f, now)) };
}
