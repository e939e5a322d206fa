import { sqlOf, type Tx } from "./database.js";

/** A repository Greenline knows, and the organization that owns it. */
export type Repository = { id: string; organizationId: string; host: string; owner: string; name: string; key: string };

const REPOSITORY_SELECT = `SELECT "id", "organizationId", "host", "owner", "name", "key" FROM "Repository"`;
const REPOSITORY_COLUMNS = { id: true, organizationId: true, host: true, owner: true, name: true, key: true } as const;

/** The repository with the key `key` (see repositoryKey), or null. */
export async function repositoryByKey(tx: Tx, key: string): Promise<Repository | null> {
  // Plain SQL (sqlOf): every upload and API write finds its repository.
  const [row] = await sqlOf(tx).all<Repository>(`${REPOSITORY_SELECT} WHERE "key" = ?`, [key]);
  return row ?? null;
}

/** The organization's repositories, by host, owner and name. */
export async function repositoriesOf(tx: Tx, organizationId: string): Promise<Repository[]> {
  return tx.repository.findMany({ where: { organizationId }, select: REPOSITORY_COLUMNS, orderBy: [{ host: "asc" }, { owner: "asc" }, { name: "asc" }] });
}

/** The repository `id`, or null. */
export async function repositoryById(tx: Tx, id: string): Promise<Repository | null> {
  const [row] = await sqlOf(tx).all<Repository>(`${REPOSITORY_SELECT} WHERE "id" = ?`, [id]);
  return row ?? null;
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

/** The organizations the installations `ids` belong to (installations Greenline does not know are left out). */
export async function organizationsOfInstallations(tx: Tx, ids: number[]): Promise<{ installationId: number; organizationId: string; slug: string }[]> {
  if (ids.length === 0) return [];
  const rows = await tx.installation.findMany({ where: { id: { in: ids.map((id) => BigInt(id)) } }, select: { id: true, organizationId: true, organization: { select: { slug: true } } }, orderBy: { id: "asc" } });
  return rows.map((row) => ({ installationId: Number(row.id), organizationId: row.organizationId, slug: row.organization.slug }));
}

/** The organization `id` and its slug when it still has at least one installation of the App, else null. */
export async function installedOrganization(tx: Tx, id: string): Promise<{ id: string; slug: string } | null> {
  return tx.organization.findFirst({ where: { id, installations: { some: {} } }, select: { id: true, slug: true } });
}

/** The keys of the organization's repositories that have a queue. */
export async function queuedRepositoryKeys(tx: Tx, organizationId: string): Promise<string[]> {
  const rows = await tx.repository.findMany({ where: { organizationId, queues: { some: {} } }, select: { key: true } });
  return rows.map((row) => row.key);
}
