import type { Principal, TokenRole } from "../../auth/tokens.js";
import { installedOrganization, organizationsOfInstallations, queuedRepositoryKeys } from "../../store/repositories.js";
import type { Services } from "../../app/services.js";

/**
 * Who a GitHub user is in Greenline ("Sign in with GitHub" on the dashboard). GitHub says which
 * installations of the App the user can reach (`GET /user/installations`) and, per installation,
 * which repositories with what permission (`GET /user/installations/{id}/repositories`); each
 * installation Greenline registered belongs to an organization (src/webhooks/services/installations.ts).
 *
 * The role: write when the user may push (push, maintain or admin) to at least one of the
 * organization's repositories that has a Greenline queue, read otherwise. Pushing is what merging
 * a PR takes on GitHub, and what the comment commands ask of their author (comment-commands.ts);
 * the dashboard's actions all act on queues, so a repository without a queue gives no say over them.
 */

/** An installation of the App the user can reach, with the Greenline organization it belongs to. */
export type KnownInstallation = { installationId: number; organizationId: string; slug: string };

/** A repository of an installation as GitHub lists it for the user: its key (host/owner/name) and the user's permissions. */
export type UserRepository = { key: string; permissions: { admin?: boolean; maintain?: boolean; push?: boolean } | undefined };

/** The installations among `ids` that Greenline knows (an installation it never heard of has no organization). */
export async function knownInstallations(services: Services, ids: number[]): Promise<KnownInstallation[]> {
  return services.db.read((tx) => organizationsOfInstallations(tx, ids));
}

/** The user's role in `organizationId` from their permissions on the repositories of its installations. */
export async function roleFromRepositories(services: Services, organizationId: string, repositories: UserRepository[]): Promise<TokenRole> {
  const queued = new Set(await services.db.read((tx) => queuedRepositoryKeys(tx, organizationId)));
  const pushes = repositories.some((r) => queued.has(r.key.toLowerCase()) && Boolean(r.permissions?.push || r.permissions?.maintain || r.permissions?.admin));
  return pushes ? "write" : "read";
}

/**
 * The principal of a GitHub session, or null when its organization no longer has an installation
 * of the App (uninstalled: its GitHub sessions end at once, as a revoked token's do).
 */
export async function githubPrincipal(services: Services, session: { organizationId: string; login: string; role: TokenRole }): Promise<Principal | null> {
  const organization = await services.db.read((tx) => installedOrganization(tx, session.organizationId));
  if (!organization) return null;
  return { organizationId: organization.id, organizationSlug: organization.slug, tokenId: "", role: session.role, actor: { kind: "user", name: session.login } };
}
