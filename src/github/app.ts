import type { Probot } from "probot";
import { ensureOrganization } from "../auth/tokens.js";
import type { Database } from "../store/database.js";

/**
 * The Probot app: webhooks from GitHub. An installation makes its account an organization of
 * Greenline (slug = account login), owning that account's repositories.
 */
export function createGitHubApp(db: Database) {
  return (app: Probot) => {
    app.on(["installation.created", "installation.new_permissions_accepted", "installation.unsuspend"], async (context) => {
      const { id, account } = context.payload.installation;
      const login = account && "login" in account ? account.login : String(id);
      await db.transaction(async (tx) => {
        const org = await ensureOrganization(tx, login);
        await tx.installation.upsert({
          where: { id: BigInt(id) },
          create: { id: BigInt(id), organizationId: org.id, accountLogin: login },
          update: { organizationId: org.id, accountLogin: login },
        });
      });
      context.log.info({ installation: id, account: login }, "installation registered");
    });
    app.on("installation.deleted", async (context) => {
      const id = BigInt(context.payload.installation.id);
      await db.transaction((tx) => tx.installation.deleteMany({ where: { id } }));
    });
  };
}
