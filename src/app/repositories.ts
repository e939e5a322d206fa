import type { Principal } from "../auth/tokens.js";
import { repositoryKey, type RepoRef } from "../ports/code-host.js";
import type { Tx } from "../store/database.js";
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
  const row = await tx.repository.findUnique({ where: { key: repositoryKey(repo) } });
  return row && row.organizationId === principal.organizationId ? row : null;
}

/**
 * Finds the principal's repository, registering it on first use when the code host lets the
 * organization own it (anyone, in the sandbox; with GitHub, the organizations the App is
 * installed for on the repository's account): the first to claim it owns it.
 */
export async function claimRepository(services: Services, tx: Tx, principal: Principal, repo: RepoRef): Promise<RepositoryRow> {
  const key = repositoryKey(repo);
  const existing = await tx.repository.findUnique({ where: { key } });
  if (existing) {
    if (existing.organizationId !== principal.organizationId) throw repoNotFound(repo);
    return existing;
  }
  if (!(await services.codeHost.mayOwnRepository(tx, principal.organizationId, repo))) throw repoNotFound(repo);
  // Two first uses may race: the insert does nothing for the loser, who then reads the winner's row.
  await tx.$executeRaw`INSERT INTO "Repository" ("id", "organizationId", "host", "owner", "name", "key", "createdAt")
    VALUES (${services.newId()}, ${principal.organizationId}, ${repo.host}, ${repo.owner}, ${repo.name}, ${key}, ${services.now()})
    ON CONFLICT ("key") DO NOTHING`;
  const row = await tx.repository.findUniqueOrThrow({ where: { key } });
  if (row.organizationId !== principal.organizationId) throw repoNotFound(repo);
  return row;
}
