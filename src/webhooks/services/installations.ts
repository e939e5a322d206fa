import { ensureOrganization } from "../../auth/tokens.js";
import { deleteInstallation, saveInstallation } from "../../store/repositories.js";
import type { Services } from "../../app/services.js";

/**
 * The GitHub App was installed on an account (or its permissions accepted, or it was
 * unsuspended, or repositories were added to or removed from it): that account becomes a
 * Greenline organization (slug = its login) owning the account's repositories, and the code
 * host forgets which installation it thought covers which repository (a reinstall has a new
 * id). Repeated deliveries change nothing.
 */
export async function registerInstallation(services: Services, installation: { id: number; login: string }): Promise<void> {
  services.codeHost.forgetInstallations?.();
  await services.db.transaction(async (tx) => {
    const organization = await ensureOrganization(tx, installation.login);
    await saveInstallation(tx, { id: installation.id, organizationId: organization.id, accountLogin: installation.login });
  });
}

/** The App was uninstalled: its account's repositories can no longer be claimed through it. */
export async function forgetInstallation(services: Services, id: number): Promise<void> {
  services.codeHost.forgetInstallations?.();
  await services.db.transaction((tx) => deleteInstallation(tx, id));
}

/** The App was suspended on an account: it keeps its organization, but calls must find out anew where the App works. */
export function noticeInstallationSuspended(services: Services): void {
  services.codeHost.forgetInstallations?.();
}
