import { ensureOrganization } from "../../auth/tokens.js";
import { isInstallationRefusal, type CodeHostRefusal, type RepoRef } from "../../ports/code-host.js";
import { accountKeyOf, claimOutageProbe, clearAccountOutage, dueOutageProbes, markAccountUnavailable, outageOf, queuedRepositoryOfAccount, type OutageState } from "../../store/installation-outages.js";
import type { Tx } from "../../store/database.js";
import { deleteInstallation, saveInstallation } from "../../store/repositories.js";
import type { Services } from "../../app/services.js";

/**
 * How often the worker asks the code host whether an unavailable installation answers again:
 * a minute after the outage is noticed, doubling with each probe that finds it still
 * unavailable, at most every 15 minutes (one call each). An `installation` webhook
 * (unsuspend, created, new_permissions_accepted) ends the outage at once.
 */
export const INSTALLATION_PROBE = { baseMs: 60_000, capMs: 15 * 60_000 };

/** How many outages one worker round probes at most. */
const PROBES_PER_ROUND = 20;

/** An installation's account as a webhook names it: its login, and the host of its page (GitHub Enterprise Server has its own). */
export type InstallationAccount = { id: number; login: string; htmlUrl?: string | null | undefined };

function accountKeyOfInstallation(installation: InstallationAccount): string {
  const host = installation.htmlUrl && URL.canParse(installation.htmlUrl) ? new URL(installation.htmlUrl).host : "github.com";
  return accountKeyOf({ host, owner: installation.login });
}

/** When the probe after `probes` probes that found the account still unavailable is due. */
export function nextProbeAt(now: Date, probes: number): Date {
  return new Date(now.getTime() + Math.min(INSTALLATION_PROBE.capMs, INSTALLATION_PROBE.baseMs * 2 ** Math.max(0, probes)));
}

/**
 * The GitHub App was installed on an account (or its permissions accepted, or it was
 * unsuspended, or repositories were added to or removed from it): that account becomes a
 * Greenline organization (slug = its login) owning the account's repositories, and the code
 * host forgets which installation it thought covers which repository (a reinstall has a new
 * id). `resumes`: the installation works again (created, unsuspend, new_permissions_accepted):
 * an outage of the account ends, and its queues go on. Repeated deliveries change nothing.
 */
export async function registerInstallation(services: Services, installation: InstallationAccount, options: { resumes?: boolean } = {}): Promise<void> {
  services.codeHost.forgetInstallations?.();
  const resumed = await services.db.transaction(async (tx) => {
    const organization = await ensureOrganization(tx, installation.login);
    await saveInstallation(tx, { id: installation.id, organizationId: organization.id, accountLogin: installation.login });
    return options.resumes ? clearAccountOutage(tx, accountKeyOfInstallation(installation), services.now()) : false;
  });
  if (resumed) services.log?.info({ installation: installation.id, account: installation.login }, "installation available again: its queues go on");
}

/**
 * The App was uninstalled: its account's repositories can no longer be claimed through it, and
 * its queues keep their PRs but start and merge nothing (blocked, `installation_removed`) until
 * it is installed again (docs/decisions.md).
 */
export async function forgetInstallation(services: Services, installation: InstallationAccount): Promise<void> {
  services.codeHost.forgetInstallations?.();
  await services.db.transaction(async (tx) => {
    await deleteInstallation(tx, installation.id);
    await markOutage(services, tx, accountKeyOfInstallation(installation), installation.id, "uninstalled", "The GitHub App was uninstalled from the account (installation webhook, action deleted).");
  });
}

/** The App was suspended on an account: its queues stop at once (blocked, `installation_suspended`) and keep their PRs. */
export async function noticeInstallationSuspended(services: Services, installation: InstallationAccount): Promise<void> {
  services.codeHost.forgetInstallations?.();
  await services.db.transaction((tx) =>
    markOutage(services, tx, accountKeyOfInstallation(installation), installation.id, "suspended", "The GitHub App's installation was suspended (installation webhook, action suspend)."),
  );
  services.log?.warn({ installation: installation.id, account: installation.login }, "installation suspended: its queues wait");
}

function markOutage(services: Services, tx: Tx, accountKey: string, installationId: number | null, state: OutageState, message: string): Promise<void> {
  const at = services.now();
  return markAccountUnavailable(tx, { accountKey, installationId, state, message, at, nextProbeAt: nextProbeAt(at, 0) });
}

const stateOfRefusal = (refusal: CodeHostRefusal): OutageState => (refusal.kind === "installation_removed" ? "uninstalled" : "suspended");

/**
 * The code host refused a call for the repository's whole account (its installation suspended
 * or gone): the account is recorded unavailable, so that its queues wait (effects.ts) and say
 * why (blockedReasonOf), in every process and after restarts.
 */
export async function noticeInstallationRefusal(services: Services, repo: RepoRef, refusal: CodeHostRefusal): Promise<void> {
  const accountKey = accountKeyOf(repo);
  const known = await services.db.read((tx) => outageOf(tx, accountKey));
  await services.db.transaction((tx) => markOutage(services, tx, accountKey, known?.installationId ?? null, stateOfRefusal(refusal), refusal.message));
  if (!known) services.log?.warn({ account: accountKey, refusal: refusal.kind, error: refusal.message }, "the code host refuses the App's installation: the account's queues wait");
}

/**
 * The worker's probe of unavailable installations: for each outage whose probe is due, one call
 * through the installation for a repository of the account with a queue. An answer ends the
 * outage (the queues go on by themselves, even when the `installation` webhook saying so was
 * lost); a refusal keeps it, and the next probe waits twice as long (INSTALLATION_PROBE). Each
 * due probe is claimed first, so replicas probe an account once. Answers how many outages ended.
 */
export async function probeInstallationOutages(services: Services): Promise<number> {
  const probe = services.codeHost.probeInstallation?.bind(services.codeHost);
  const now = services.now();
  const due = await services.db.read((tx) => dueOutageProbes(tx, now, PROBES_PER_ROUND));
  let ended = 0;
  for (const outage of due) {
    const claimed = await services.db.transaction((tx) => claimOutageProbe(tx, outage.accountKey, outage.nextProbeAt, nextProbeAt(now, outage.probes + 1)));
    if (!claimed) continue;
    const repo = await services.db.read((tx) => queuedRepositoryOfAccount(tx, outage.accountKey));
    // No queue on the account (or a host without installations): nothing waits on it.
    if (!repo || !probe) {
      if (await services.db.transaction((tx) => clearAccountOutage(tx, outage.accountKey, services.now()))) ended++;
      continue;
    }
    try {
      await probe(repo);
    } catch (error) {
      if (isInstallationRefusal(error)) {
        await services.db.transaction((tx) => markAccountUnavailable(tx, { ...outage, state: stateOfRefusal(error), message: error.message, at: now, nextProbeAt: nextProbeAt(now, outage.probes + 1) }));
      }
      services.log?.info({ account: outage.accountKey, probes: outage.probes + 1, error: error instanceof Error ? error.message : String(error) }, "installation still unavailable");
      continue;
    }
    if (await services.db.transaction((tx) => clearAccountOutage(tx, outage.accountKey, services.now()))) {
      ended++;
      services.log?.info({ account: outage.accountKey, probes: outage.probes + 1 }, "installation answers again: its queues go on");
    }
  }
  return ended;
}
