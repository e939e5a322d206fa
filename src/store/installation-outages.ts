import { prismaShaped } from "./columns.js";
import { sqlOf, type Tx } from "./database.js";
import { markAccountQueuesDue } from "./due-queues.js";

/** Why the App cannot work on an account: its installation is suspended, or the App was uninstalled. */
export type OutageState = "suspended" | "uninstalled";

/** An account where the App cannot work now (docs/decisions.md, "A suspended or uninstalled installation"). */
export type InstallationOutage = {
  /** lower-case "host/owner". */
  accountKey: string;
  installationId: number | null;
  state: OutageState;
  message: string;
  since: Date;
  nextProbeAt: Date;
  probes: number;
};

/** The account key of a repository: its lower-case "host/owner". */
export function accountKeyOf(repo: { host: string; owner: string }): string {
  return `${repo.host}/${repo.owner}`.toLowerCase();
}

type Row = { accountKey: string; installationId: bigint | null; state: string; message: string; since: Date; nextProbeAt: Date; probes: bigint };

function toOutage(row: Row): InstallationOutage {
  return {
    accountKey: row.accountKey,
    installationId: row.installationId === null ? null : Number(row.installationId),
    state: row.state === "uninstalled" ? "uninstalled" : "suspended",
    message: row.message,
    since: row.since,
    nextProbeAt: row.nextProbeAt,
    probes: Number(row.probes),
  };
}

/**
 * Records the account as unavailable. Already recorded: the state, the message and the
 * installation are updated, and `since` is kept when the state is the same; the next probe is
 * not brought forward (a refusal seen by an effect must not make probes more frequent).
 */
export async function markAccountUnavailable(tx: Tx, outage: { accountKey: string; installationId: number | null; state: OutageState; message: string; at: Date; nextProbeAt: Date }): Promise<void> {
  const { accountKey, state, message, at, nextProbeAt } = outage;
  const installationId = outage.installationId === null ? null : BigInt(outage.installationId);
  const known = await tx.installationOutage.findUnique({ where: { accountKey } });
  if (!known) {
    // Two processes may record the same outage at once: the second changes nothing.
    await tx.$executeRaw`INSERT INTO "InstallationOutage" ("accountKey", "installationId", "state", "message", "since", "nextProbeAt", "probes")
      VALUES (${accountKey}, ${installationId}, ${state}, ${message}, ${at}, ${nextProbeAt}, 0)
      ON CONFLICT ("accountKey") DO NOTHING`;
    return;
  }
  await tx.installationOutage.update({
    where: { accountKey },
    data: { state, message, installationId: installationId ?? known.installationId, ...(known.state === state ? {} : { since: at, nextProbeAt, probes: 0 }) },
  });
}

/** The account answers again at `at`: forgets its outage, and its queues are due. Answers whether there was one. */
export async function clearAccountOutage(tx: Tx, accountKey: string, at: Date): Promise<boolean> {
  const { count } = await tx.installationOutage.deleteMany({ where: { accountKey } });
  if (count > 0) await markAccountQueuesDue(tx, accountKey, at);
  return count > 0;
}

/** The outage of the account, or null when the App works there (as far as Greenline knows). */
export async function outageOf(tx: Tx, accountKey: string): Promise<InstallationOutage | null> {
  // Plain SQL (sqlOf): the effect runner asks at every call.
  const [row] = await sqlOf(tx).all<Record<string, unknown>>(`SELECT * FROM "InstallationOutage" WHERE "accountKey" = ?`, [accountKey]);
  return row ? toOutage(prismaShaped<Row>(row, [], ["since", "nextProbeAt"])) : null;
}

/** The outages among the accounts `keys`, by account key. */
export async function outagesOf(tx: Tx, keys: string[]): Promise<Map<string, InstallationOutage>> {
  if (keys.length === 0) return new Map();
  const rows = await tx.installationOutage.findMany({ where: { accountKey: { in: [...new Set(keys)] } } });
  return new Map(rows.map((row) => [row.accountKey, toOutage(row)]));
}

/** The outages whose probe is due at `now`, oldest probe first. */
export async function dueOutageProbes(tx: Tx, now: Date, limit: number): Promise<InstallationOutage[]> {
  // Plain SQL: every worker tick of every replica asks (issue 23 goal 3).
  const rows = await sqlOf(tx).all<Record<string, unknown>>(`SELECT * FROM "InstallationOutage" WHERE "nextProbeAt" <= ? ORDER BY "nextProbeAt" LIMIT ${Math.trunc(limit)}`, [now]);
  return rows.map((row) => toOutage(prismaShaped<Row>(row, [], ["since", "nextProbeAt"])));
}

/**
 * Claims the due probe of an outage by moving its next probe to `next`: only the process that
 * moves it from `due` probes (replicas probe an account once). Answers whether it did.
 */
export async function claimOutageProbe(tx: Tx, accountKey: string, due: Date, next: Date): Promise<boolean> {
  const { count } = await tx.installationOutage.updateMany({ where: { accountKey, nextProbeAt: due }, data: { nextProbeAt: next, probes: { increment: 1 } } });
  return count > 0;
}

/** A repository of the account that has a queue (what a probe asks the code host about), or null. */
export async function queuedRepositoryOfAccount(tx: Tx, accountKey: string): Promise<{ host: string; owner: string; name: string } | null> {
  return tx.repository.findFirst({ where: { key: { startsWith: `${accountKey}/` }, queues: { some: {} } }, select: { host: true, owner: true, name: true }, orderBy: { key: "asc" } });
}

/** The outage of the account of the queue's repository, or null. */
export async function outageOfQueue(tx: Tx, queueId: string): Promise<InstallationOutage | null> {
  const queue = await tx.queue.findUnique({ where: { id: queueId }, select: { repository: { select: { host: true, owner: true } } } });
  return queue ? outageOf(tx, accountKeyOf(queue.repository)) : null;
}
