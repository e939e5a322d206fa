import { createHash } from "node:crypto";
import type { ServerResponse } from "node:http";
import { UserSignIn } from "./oauth.js";
import type { AppRequest, SimulatorRequest } from "./request-log.js";
import * as shape from "./shapes.js";

/** A GitHub App manifest (docs.github.com, "Registering a GitHub App from a manifest"). */
export type Manifest = {
  name?: string;
  url?: string;
  description?: string;
  hook_attributes?: { url?: string; active?: boolean };
  redirect_url?: string;
  callback_urls?: string[];
  setup_url?: string;
  public?: boolean;
  default_permissions?: Record<string, string>;
  default_events?: string[];
  request_oauth_on_install?: boolean;
  setup_on_update?: boolean;
};

/**
 * The permissions an App may ask for and their access levels (GitHub's `app-permissions` schema
 * in @octokit/openapi; test/github/simulator-conformance.test.ts keeps the two equal).
 */
export const APP_PERMISSIONS: Record<string, readonly string[]> = {
  actions: ["read", "write"],
  administration: ["read", "write"],
  artifact_metadata: ["read", "write"],
  attestations: ["read", "write"],
  checks: ["read", "write"],
  code_quality: ["read", "write"],
  codespaces: ["read", "write"],
  contents: ["read", "write"],
  dependabot_secrets: ["read", "write"],
  deployments: ["read", "write"],
  discussions: ["read", "write"],
  environments: ["read", "write"],
  issues: ["read", "write"],
  merge_queues: ["read", "write"],
  metadata: ["read", "write"],
  packages: ["read", "write"],
  pages: ["read", "write"],
  pull_requests: ["read", "write"],
  repository_custom_properties: ["read", "write"],
  repository_hooks: ["read", "write"],
  repository_projects: ["read", "write", "admin"],
  secret_scanning_alerts: ["read", "write"],
  secrets: ["read", "write"],
  security_events: ["read", "write"],
  single_file: ["read", "write"],
  statuses: ["read", "write"],
  vulnerability_alerts: ["read", "write"],
  workflows: ["write"],
  custom_properties_for_organizations: ["read", "write"],
  members: ["read", "write"],
  organization_administration: ["read", "write"],
  organization_custom_roles: ["read", "write"],
  organization_custom_org_roles: ["read", "write"],
  organization_custom_properties: ["read", "write", "admin"],
  organization_copilot_seat_management: ["read", "write"],
  organization_copilot_agent_settings: ["read", "write"],
  organization_announcement_banners: ["read", "write"],
  organization_events: ["read"],
  organization_hooks: ["read", "write"],
  organization_personal_access_tokens: ["read", "write"],
  organization_personal_access_token_requests: ["read", "write"],
  organization_plan: ["read"],
  organization_projects: ["read", "write", "admin"],
  organization_packages: ["read", "write"],
  organization_secrets: ["read", "write"],
  organization_self_hosted_runners: ["read", "write"],
  organization_user_blocking: ["read", "write"],
  email_addresses: ["read", "write"],
  followers: ["read", "write"],
  git_ssh_keys: ["read", "write"],
  gpg_keys: ["read", "write"],
  interaction_limits: ["read", "write"],
  profile: ["write"],
  starring: ["read", "write"],
  enterprise_custom_properties_for_organizations: ["read", "write", "admin"],
};

const isHttpUrl = (value: unknown) => typeof value === "string" && /^https?:\/\/[^\s/]+/.test(value);

/** What GitHub's registration page refuses in a manifest (undefined: nothing). */
function manifestProblem(manifest: Manifest): string | undefined {
  if (!manifest || typeof manifest !== "object" || Array.isArray(manifest)) return "manifest must be a JSON object";
  if (typeof manifest.name !== "string" || manifest.name.trim() === "") return "name can't be blank";
  if (manifest.name.length > 34) return "name is too long (maximum is 34 characters)";
  if (!isHttpUrl(manifest.url)) return "url (the homepage) must be an http(s) URL";
  if (manifest.hook_attributes?.active !== false && !isHttpUrl(manifest.hook_attributes?.url)) return "hook_attributes.url must be an http(s) URL while the webhook is active";
  if (!isHttpUrl(manifest.redirect_url)) return "redirect_url must be an http(s) URL";
  for (const [name, access] of Object.entries(manifest.default_permissions ?? {})) {
    const allowed = APP_PERMISSIONS[name];
    if (!allowed) return `default_permissions: ${name} is not a permission`;
    if (!allowed.includes(access)) return `default_permissions: ${name} cannot be ${JSON.stringify(access)} (${allowed.join(", ")})`;
  }
  if (manifest.default_events !== undefined && (!Array.isArray(manifest.default_events) || manifest.default_events.some((e) => typeof e !== "string"))) return "default_events must be a list of event names";
  return undefined;
}

/** Registering the App from a manifest (GitHub's web flow), and converting the code GitHub hands back. */
export abstract class AppRegistration extends UserSignIn {
  /** Codes GitHub handed back after a manifest registration, until exchanged (once) or an hour old. */
  readonly #manifestCodes = new Map<string, { manifest: Manifest; owner: string; ownerType: "User" | "Organization"; expiresAt: number }>();
  /** Every App registered from a manifest: who owns it and the manifest GitHub was sent. */
  readonly registeredApps: { owner: string; ownerType: "User" | "Organization"; manifest: Manifest }[] = [];

  /**
   * `POST /settings/apps/new` (or `/organizations/{org}/settings/apps/new`) with a form field
   * `manifest`: GitHub's registration page, which the user confirms at once here. The manifest is
   * checked as GitHub does (homepage url, webhook url when active, redirect_url, known permissions
   * and access levels), then the browser is redirected (302) to `redirect_url?code=…&state=…`.
   */
  protected registerFromManifest(res: ServerResponse, record: SimulatorRequest, org: string | undefined, query: URLSearchParams, form: Record<string, unknown>): void {
    const refuse = (message: string) => {
      record.status = 422;
      record.response = { message };
      res.writeHead(422, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify({ message }));
    };
    let manifest: Manifest;
    try {
      manifest = JSON.parse(String(form.manifest ?? "")) as Manifest;
    } catch {
      return refuse("manifest must be JSON");
    }
    const problem = manifestProblem(manifest);
    if (problem) return refuse(problem);
    const code = createHash("sha256")
      .update(`${this.counter++}:${Math.random()}`)
      .digest("hex")
      .slice(0, 20);
    const owner = org ?? this.webUser;
    const ownerType = org ? "Organization" : "User";
    this.#manifestCodes.set(code, { manifest, owner, ownerType, expiresAt: this.clock() + 3600_000 });
    this.registeredApps.push({ owner, ownerType, manifest });
    // The simulator hosts one App: the last registration's callback URLs are its.
    if (manifest.callback_urls) this.callbackUrls = [...manifest.callback_urls];
    const target = new URL(manifest.redirect_url!);
    target.searchParams.set("code", code);
    const state = query.get("state") ?? (typeof form.state === "string" ? form.state : null);
    if (state !== null) target.searchParams.set("state", state);
    record.status = 302;
    res.writeHead(302, { location: target.href }).end();
  }

  /**
   * The App a manifest conversion answers. The simulator hosts one App: whatever the manifest,
   * it is this simulator's (its id, private key and webhook secret), so the credentials written
   * from it authenticate here.
   */
  #appFromManifest(owner: string, ownerType: "User" | "Organization", manifest: Manifest) {
    const slug = manifest
      .name!.toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "");
    const id = Number(this.appId);
    return {
      id,
      slug,
      node_id: shape.nodeId("Integration", id),
      client_id: this.clientId,
      owner: shape.user(owner, ownerType),
      name: manifest.name!,
      description: manifest.description ?? null,
      external_url: manifest.url,
      html_url: `https://github.com/apps/${slug}`,
      created_at: "2026-01-01T00:00:00Z",
      updated_at: "2026-01-01T00:00:00Z",
      permissions: { ...manifest.default_permissions },
      events: [...(manifest.default_events ?? [])],
      installations_count: 0,
      client_secret: this.clientSecret,
      webhook_secret: this.webhookSecret,
      pem: this.privateKey,
    };
  }

  /** `POST /app-manifests/{code}/conversions`: the App's credentials, for a manifest registration's code. */
  protected answerManifestConversion({ method, path, send, notFound }: AppRequest): boolean {
    let match: RegExpExecArray | null;
    if ((match = /^\/app-manifests\/([^/]+)\/conversions$/.exec(path)) && method === "POST") {
      // No authentication: the code is the credential (single use, valid an hour).
      const pending = this.#manifestCodes.get(match[1]!);
      this.#manifestCodes.delete(match[1]!);
      if (!pending || pending.expiresAt <= this.clock()) return notFound();
      return send(201, this.#appFromManifest(pending.owner, pending.ownerType, pending.manifest));
    }
    return false;
  }
}
