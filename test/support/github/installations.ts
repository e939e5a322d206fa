import { createHash, createHmac, createPublicKey, generateKeyPairSync, verify } from "node:crypto";
import { APP_BOT, SimulatorModel, type SimulatorOptions } from "./model.js";
import { DEFAULT_PERMISSIONS, type Permissions } from "./permissions.js";
import type { AppRequest, RepoRequest } from "./request-log.js";
import * as shape from "./shapes.js";

/**
 * GitHub's answer to a suspended installation's token request and to calls with its tokens
 * (docs/github.md, "Suspended and uninstalled installations").
 */
export const SUSPENDED_MESSAGE = "This installation has been suspended";

/**
 * The App and its installations: its credentials (a private key whose JWTs the App routes check,
 * the webhook secret), the accounts it is installed on with the permissions each granted,
 * suspensions, and what users may do in repositories (`grant`).
 */
export abstract class Installations extends SimulatorModel {
  readonly appId = "12345";
  readonly webhookSecret = "simulated-webhook-secret";
  /** The App's OAuth client (what a manifest conversion answers, and what `greenline setup github` writes). */
  readonly clientId = `Iv1.${createHash("sha256").update(`client:12345`).digest("hex").slice(0, 16)}`;
  readonly clientSecret = createHash("sha256").update(`secret:12345`).digest("hex").slice(0, 40);
  readonly privateKey: string;
  readonly #publicKey;
  protected readonly installations = new Map<number, { account: string; permissions: Permissions }>();
  /** Suspended installations: who suspended each and when (ISO). Their token requests, and calls with their tokens, are refused 403. */
  protected readonly suspended = new Map<number, { by: string; at: string }>();
  /** What users may do, by "owner/name:user" (lower-case); anyone else may only read. */
  protected readonly userPermissions = new Map<string, "admin" | "maintain" | "write" | "triage" | "read" | "none">();

  constructor(options: SimulatorOptions = {}) {
    super(options);
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    this.privateKey = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    this.#publicKey = createPublicKey(publicKey.export({ type: "spki", format: "pem" }));
  }

  /** Installs the App on an account with `permissions` (default: what app.yml asks for). */
  installApp(id: number, account: string, permissions: Permissions = DEFAULT_PERMISSIONS): { id: number; account: string } {
    this.installations.set(id, { account, permissions: { ...permissions, ...this.#grantedEverywhere } });
    this.emit({ kind: "installation", action: "created", installation: { id, account }, repositories: [], sender: account });
    return { id, account };
  }

  /** Uninstalls the App: its tokens stop working at once. */
  uninstallApp(id: number): void {
    const installation = this.installations.get(id);
    if (!installation) return;
    this.installations.delete(id);
    this.suspended.delete(id);
    this.emit({ kind: "installation", action: "deleted", installation: { id, account: installation.account }, repositories: [], sender: installation.account });
  }

  /**
   * Suspends the installation, as its App's owner (`PUT /app/installations/{id}/suspended`) or the
   * account (its settings page) does: its token requests and every call with a token issued
   * before answer 403 "This installation has been suspended", and the `installation` webhook
   * with action `suspend` is sent (a test's deliverer may drop it).
   */
  suspendInstallation(id: number, by = "octo-admin"): void {
    const installation = this.installations.get(id);
    if (!installation) throw new Error(`no installation ${id}`);
    if (this.suspended.has(id)) return;
    const suspended = { by, at: new Date(this.clock()).toISOString().replace(/\.\d{3}Z$/, "Z") };
    this.suspended.set(id, suspended);
    this.emit({ kind: "installation", action: "suspend", installation: { id, account: installation.account, suspended }, repositories: [], sender: by });
  }

  /** Lifts a suspension (`DELETE /app/installations/{id}/suspended`): tokens work again; the `installation` webhook `unsuspend` is sent. */
  unsuspendInstallation(id: number, by = "octo-admin"): void {
    const installation = this.installations.get(id);
    if (!installation) throw new Error(`no installation ${id}`);
    if (!this.suspended.delete(id)) return;
    this.emit({ kind: "installation", action: "unsuspend", installation: { id, account: installation.account }, repositories: [], sender: by });
  }

  /** Whether the installation is suspended. */
  isSuspended(id: number): boolean {
    return this.suspended.has(id);
  }

  /** Changes what an installation was granted (an owner accepting or revoking permissions). */
  setPermissions(id: number, permissions: Permissions): void {
    const installation = this.installations.get(id);
    if (!installation) throw new Error(`no installation ${id}`);
    installation.permissions = { ...permissions };
    this.emit({ kind: "installation", action: "new_permissions_accepted", installation: { id, account: installation.account }, repositories: [], sender: installation.account });
  }

  permissionsOf(id: number): Permissions | undefined {
    return this.installations.get(id)?.permissions;
  }

  /** The installation of the App on `owner`'s account, if any (webhooks name it). */
  installationOf(owner: string): number | undefined {
    return this.installationFor(owner);
  }

  /** Repositories are added to (or removed from) an installation's selection. */
  changeInstallationRepositories(id: number, change: { added?: string[]; removed?: string[] }): void {
    const installation = this.installations.get(id);
    if (!installation) throw new Error(`no installation ${id}`);
    this.emit({
      kind: "installation_repositories",
      action: change.added?.length ? "added" : "removed",
      installation: { id, account: installation.account },
      added: change.added ?? [],
      removed: change.removed ?? [],
      sender: installation.account,
    });
  }

  /** Grants (or withdraws) one permission on every installation, now and for those installed later. */
  #grantEverywhere(permission: "administration" | "workflows", access: "read" | "write" | undefined): void {
    this.#grantedEverywhere[permission] = access;
    for (const installation of this.installations.values()) {
      if (access === undefined) delete installation.permissions[permission];
      else installation.permissions[permission] = access;
    }
  }
  readonly #grantedEverywhere: Permissions = {};

  /** Whether installations may read classic protection (administration: read; app.yml does not ask for it). */
  get administrationRead(): boolean {
    return [...this.installations.values()].every((i) => i.permissions.administration !== undefined) && this.installations.size > 0;
  }
  set administrationRead(value: boolean) {
    this.#grantEverywhere("administration", value ? "read" : undefined);
  }

  /** Whether installations have `workflows: write` (GitHub refuses workflow-file changes without it). */
  get workflowsWritable(): boolean {
    return [...this.installations.values()].every((i) => i.permissions.workflows === "write") && this.installations.size > 0;
  }
  set workflowsWritable(value: boolean) {
    this.#grantEverywhere("workflows", value ? "write" : undefined);
  }

  /** What a user may do in a repository (`GET …/collaborators/{user}/permission` answers it). */
  grant(repo: string, user: string, permission: "admin" | "maintain" | "write" | "triage" | "read" | "none"): void {
    this.userPermissions.set(`${repo.toLowerCase()}:${user.toLowerCase()}`, permission);
  }

  /** Signs a webhook delivery as GitHub does (X-Hub-Signature-256). */
  sign(body: string, secret = this.webhookSecret): string {
    return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
  }

  #appJwtValid(authorization: string | undefined): boolean {
    const token = authorization?.replace(/^(bearer|Bearer) /, "");
    const [header, payload, signature] = token?.split(".") ?? [];
    if (!header || !payload || !signature) return false;
    const ok = verify("RSA-SHA256", Buffer.from(`${header}.${payload}`), this.#publicKey, Buffer.from(signature, "base64url"));
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as { iss?: string | number };
    return ok && String(claims.iss) === this.appId;
  }

  protected installationFor(owner: string): number | undefined {
    for (const [id, installation] of this.installations) if (installation.account.toLowerCase() === owner.toLowerCase()) return id;
    return undefined;
  }

  /** The App's routes (JWT): its installations, suspending them, installation tokens. */
  protected answerApp({ req, method, path, send, error, notFound }: AppRequest): boolean {
    let match: RegExpExecArray | null;
    const appId = Number(this.appId);
    // The App's installation for a repository, or on an account (JWT only); 404 when it is not installed there.
    if ((match = /^\/(?:repos\/([^/]+)\/[^/]+|(?:users|orgs)\/([^/]+))\/installation$/.exec(path)) && method === "GET") {
      if (!this.#appJwtValid(req.headers.authorization)) return error(401, "A JSON web token could not be decoded");
      const id = this.installationFor((match[1] ?? match[2])!);
      if (id === undefined) return notFound();
      const installation = this.installations.get(id)!;
      const suspended = this.suspended.get(id);
      return send(200, {
        ...shape.installation(appId, id, installation.account, installation.permissions as Record<string, string>),
        ...(suspended ? { suspended_at: suspended.at, suspended_by: shape.user(suspended.by) } : {}),
      });
    }
    if ((match = /^\/app\/installations\/(\d+)\/suspended$/.exec(path)) && (method === "PUT" || method === "DELETE")) {
      // Suspend / unsuspend an app installation: JWT only, 204 (404 for an unknown installation).
      if (!this.#appJwtValid(req.headers.authorization)) return error(401, "A JSON web token could not be decoded");
      const id = Number(match[1]);
      if (!this.installations.has(id)) return notFound();
      if (method === "PUT") this.suspendInstallation(id, APP_BOT);
      else this.unsuspendInstallation(id, APP_BOT);
      return send(204);
    }
    if ((match = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path)) && method === "POST") {
      if (!this.#appJwtValid(req.headers.authorization)) return error(401, "A JSON web token could not be decoded");
      const installation = this.installations.get(Number(match[1]));
      if (!installation) return notFound();
      if (this.suspended.has(Number(match[1]))) return error(403, SUSPENDED_MESSAGE, "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app");
      return send(201, {
        token: `ghs_installation_${match[1]}`,
        expires_at: new Date(Date.now() + 3600_000).toISOString(),
        permissions: installation.permissions,
        repository_selection: "all",
      });
    }
    return false;
  }

  /** `GET …/collaborators/{user}/permission`: what `grant` gave the user (read otherwise). */
  protected answerCollaborators({ method, rest, repoName, send }: RepoRequest): boolean {
    let match: RegExpExecArray | null;
    if ((match = /^\/collaborators\/([^/]+)\/permission$/.exec(rest)) && method === "GET") {
      const role = this.userPermissions.get(`${repoName}:${match[1]!.toLowerCase()}`) ?? "read";
      // GitHub folds maintain into write and triage into read in `permission`; `role_name` is the role itself.
      const permission = role === "maintain" ? "write" : role === "triage" ? "read" : role;
      return send(200, { permission, role_name: role, user: { ...shape.user(match[1]!), role_name: role } });
    }
    return false;
  }
}
