import type { Principal } from "../auth/tokens.js";
import { repositoryKey, type RepoRef } from "../ports/code-host.js";
import type { Tx } from "../store/database.js";
import { insertRepository, repositoriesOf, repositoryByKey } from "../store/repositories.js";
import { notFound } from "./errors.js";
import type { Services } from "./services.js";

export type RepositoryRow = { id: string; organizationId: string; host: string; owner: string; name: string };

export { repositoryKey };

export function repoNotFound(repo: RepoRef) {
  return notFound(`repository ${repo.host}/${repo.owner}/${repo.name} not found`);
}

/**
 * The principal's repository, or null when it has none by that name. Another organization's
 * repository is answered exactly as a missing one, so nothing leaks across organizations.
 */
export async function findRepository(tx: Tx, principal: Principal, repo: RepoRef): Promise<RepositoryRow | null> {
  const row = await repositoryByKey(tx, repositoryKey(repo));
  return row && row.organizationId === principal.organizationId ? row : null;
}

/** The principal's organization's repositories (only its own), by host, owner and name. */
export async function listRepositories(services: Services, principal: Principal): Promise<RepoRef[]> {
  const rows = await services.db.read((tx) => repositoriesOf(tx, principal.organizationId));
  return rows.map(({ host, owner, name }) => ({ host, owner, name }));
}

/**
 * Whether an upload for `repo` would be stored (claimRepository would find or register it),
 * without registering anything; else the same 404 as a missing repository, so nothing leaks
 * whether another organization owns it. For an upload that arrives later (a bundle's URL).
 */
export async function checkRepositoryClaimable(services: Services, tx: Tx, principal: Principal, repo: RepoRef): Promise<void> {
  const existing = await repositoryByKey(tx, repositoryKey(repo));
  if (existing ? existing.organizationId !== principal.organizationId : !(await services.codeHost.mayOwnRepository(tx, principal.organizationId, repo))) throw repoNotFound(repo);
}

/**
 * Finds the principal's repository, registering it on first use when the code host lets the
 * organization own it (anyone, in the sandbox; with GitHub, the organizations the App is
 * installed for on the repository's account): the first to claim it owns it.
 */
export async function claimRepository(services: Services, tx: Tx, principal: Principal, repo: RepoRef): Promise<RepositoryRow> {
  const key = repositoryKey(repo);
  const existing = await repositoryByKey(tx, key);
  if (existing) {
    if (existing.organizationId !== principal.organizationId) throw repoNotFound(repo);
    return existing;
  }
  if (!(await services.codeHost.mayOwnRepository(tx, principal.organizationId, repo))) throw repoNotFound(repo);
  const row = await insertRepository(tx, { id: services.newId(), organizationId: principal.organizationId, ...repo, key, createdAt: services.now() });
  if (row.organizationId !== principal.organizationId) throw repoNotFound(repo);
  return row;
}
