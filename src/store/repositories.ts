import type { Tx } from "./database.js";

/** A repository Greenline knows, and the organization that owns it. */
export type Repository = { id: string; organizationId: string; host: string; owner: string; name: string; key: string };

const REPOSITORY_COLUMNS = { id: true, organizationId: true, host: true, owner: true, name: true, key: true } as const;

/** The repository with the key `key` (see repositoryKey), or null. */
export async function repositoryByKey(tx: Tx, key: string): Promise<Repository | null> {
  return tx.repository.findUnique({ where: { key }, select: REPOSITORY_COLUMNS });
}

/** The repository `id`, or null. */
export async function repositoryById(tx: Tx, id: string): Promise<Repository | null> {
  return tx.repository.findUnique({ where: { id }, select: REPOSITORY_COLUMNS });
}

/** The repository with the key `key` and its organization's slug, or null. */
export async function repositoryOwnerByKey(tx: Tx, key: string): Promise<{ organizationId: string; organizationSlug: string } | null> {
  const row = await tx.repository.findUnique({ where: { key }, select: { organizationId: true, organization: { select: { slug: true } } } });
  return row && { organizationId: row.organizationId, organizationSlug: row.organization.slug };
}

/**
 * Registers a repository unless one with its key exists, and answers the stored one. Two first
 * uses may race: the insert does nothing for the loser, who then reads the winner's row.
 */
export async function insertRepository(tx: Tx, repository: Repository & { createdAt: Date }): Promise<Repository> {
  const { id, organizationId, host, owner, name, key, createdAt } = repository;
  await tx.$executeRaw`INSERT INTO "Repository" ("id", "organizationId", "host", "owner", "name", "key", "createdAt")
    VALUES (${id}, ${organizationId}, ${host}, ${owner}, ${name}, ${key}, ${createdAt})
    ON CONFLICT ("key") DO NOTHING`;
  return tx.repository.findUniqueOrThrow({ where: { key }, select: REPOSITORY_COLUMNS });
}

/** Records a GitHub App installation for the organization (again: its account may have been renamed). */
export async function saveInstallation(tx: Tx, installation: { id: number; organizationId: string; accountLogin: string }): Promise<void> {
  const id = BigInt(installation.id);
  const { organizationId, accountLogin } = installation;
  await tx.installation.upsert({ where: { id }, create: { id, organizationId, accountLogin }, update: { organizationId, accountLogin } });
}

/** Forgets an installation (a no-op when it is unknown). */
export async function deleteInstallation(tx: Tx, id: number): Promise<void> {
  await tx.installation.deleteMany({ where: { id: BigInt(id) } });
}

/** The logins of the accounts the organization's installations are on. */
export async function installationAccountsOf(tx: Tx, organizationId: string): Promise<string[]> {
  const rows = await tx.installation.findMany({ where: { organizationId }, select: { accountLogin: true } });
  return rows.map((row) => row.accountLogin);
}
