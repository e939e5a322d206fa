import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Installations } from "./installations.js";
import type { Permissions } from "./permissions.js";
import type { AppRequest, SimulatorRequest } from "./request-log.js";
import * as shape from "./shapes.js";

/** Signing users in with the App (GitHub's OAuth web application flow), and the `/user` routes their tokens call. */
export abstract class UserSignIn extends Installations {
  /** The user signed in to the simulated github.com (who owns Apps registered on a personal account). */
  webUser = "octocat";
  /**
   * The App's callback URLs ("Callback URL" in its settings): `redirect_uri` must be one of them,
   * exactly (docs.github.com, "Generating a user access token for a GitHub App").
   */
  callbackUrls: string[] = [];
  /** When set, the simulated consent page is cancelled: GitHub redirects back with `error=access_denied`. */
  consentDenied = false;
  /** Codes handed back by the authorize page, until exchanged (once) or ten minutes old. */
  readonly #oauthCodes = new Map<string, { login: string; redirectUri: string; challenge: string | null; expiresAt: number }>();
  /** User access tokens (`ghu_…`) and whose they are. */
  readonly #userTokens = new Map<string, string>();

  /** The user a user access token belongs to (`Authorization: token ghu_…` or `Bearer ghu_…`). */
  #userOf(authorization: string | undefined): string | undefined {
    const token = /^(?:token|bearer) (ghu_\S+)$/i.exec(authorization ?? "")?.[1];
    return token === undefined ? undefined : this.#userTokens.get(token);
  }

  /** The repositories of `account` the user was granted access to (`grant`), with the permission. */
  #repositoriesOfUser(login: string, account: string): [string, "admin" | "write" | "read"][] {
    const found: [string, "admin" | "write" | "read"][] = [];
    for (const [key, permission] of this.userPermissions) {
      const [repo, user] = key.split(":") as [string, string];
      if (user === login.toLowerCase() && repo.startsWith(`${account.toLowerCase()}/`) && permission !== "none") found.push([repo, permission === "maintain" ? "write" : permission === "triage" ? "read" : permission]);
    }
    return found.sort(([a], [b]) => a.localeCompare(b));
  }

  /**
   * The installations a user access token reaches: those on the user's own account, and those on an
   * account where the user was granted a repository (a member or collaborator there).
   */
  #installationsOfUser(login: string): [number, { account: string; permissions: Permissions }][] {
    return [...this.installations].filter(([, i]) => i.account.toLowerCase() === login.toLowerCase() || this.#repositoriesOfUser(login, i.account).length > 0);
  }

  /**
   * `GET /login/oauth/authorize`: GitHub's consent page, which the signed-in user (`webUser`)
   * accepts at once here. An unknown client_id is GitHub's 404 page; a redirect_uri that is not one
   * of the App's callback URLs sends the browser to the first callback URL with
   * `error=redirect_uri_mismatch` (docs.github.com, "Troubleshooting authorization request
   * errors"); PKCE accepts only S256.
   */
  protected authorize(res: ServerResponse, record: SimulatorRequest, query: URLSearchParams): void {
    const page = (status: number, text: string) => {
      record.status = status;
      res.writeHead(status, { "content-type": "text/html; charset=utf-8" }).end(`<!doctype html><title>${text}</title><p>${text}</p>`);
    };
    const redirect = (target: string, params: Record<string, string | null>) => {
      const url = new URL(target);
      for (const [name, value] of Object.entries(params)) if (value !== null) url.searchParams.set(name, value);
      record.status = 302;
      res.writeHead(302, { location: url.href }).end();
    };
    if (query.get("client_id") !== this.clientId) return page(404, "Not Found");
    const state = query.get("state");
    const registered = this.callbackUrls[0];
    if (registered === undefined) return page(404, "Not Found");
    const redirectUri = query.get("redirect_uri") ?? registered;
    if (!this.callbackUrls.includes(redirectUri)) {
      return redirect(registered, {
        error: "redirect_uri_mismatch",
        error_description: "The redirect_uri MUST match the registered callback URL for this application.",
        error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#redirect-uri-mismatch",
        state,
      });
    }
    const challenge = query.get("code_challenge");
    const method = query.get("code_challenge_method");
    if ((challenge !== null || method !== null) && (method !== "S256" || !challenge || !/^[A-Za-z0-9_-]{43}$/.test(challenge))) {
      return redirect(redirectUri, { error: "invalid_request", error_description: "code_challenge_method must be S256, with a code_challenge", state });
    }
    if (this.consentDenied) {
      return redirect(redirectUri, {
        error: "access_denied",
        error_description: "The user has denied your application access.",
        error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#access-denied",
        state,
      });
    }
    const code = createHash("sha256")
      .update(`${this.counter++}:${Math.random()}`)
      .digest("hex")
      .slice(0, 20);
    this.#oauthCodes.set(code, { login: this.webUser, redirectUri, challenge, expiresAt: this.clock() + 600_000 });
    redirect(redirectUri, { code, state });
  }

  /**
   * `POST /login/oauth/access_token`: the code (single use, ten minutes) for a user access token.
   * Parameters come as a form, JSON or the query. GitHub answers 200 even when it refuses, with an
   * `error` (`incorrect_client_credentials`, `redirect_uri_mismatch`, `bad_verification_code`:
   * "Troubleshooting OAuth App access token request errors"); JSON with `Accept: application/json`,
   * a form otherwise.
   */
  protected exchangeCode(req: IncomingMessage, res: ServerResponse, record: SimulatorRequest, query: URLSearchParams, body: Record<string, unknown>): void {
    const params: Record<string, string> = Object.fromEntries(query);
    for (const [name, value] of Object.entries(body)) if (typeof value === "string") params[name] = value;
    const json = /application\/json/.test(String(req.headers.accept ?? ""));
    const answer = (value: Record<string, string | number>) => {
      record.status = 200;
      record.response = value;
      if (json) res.writeHead(200, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(value));
      else res.writeHead(200, { "content-type": "application/x-www-form-urlencoded; charset=utf-8" }).end(new URLSearchParams(Object.entries(value).map(([k, v]): [string, string] => [k, String(v)])).toString());
    };
    const docs = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors";
    const refuse = (error: string, description: string) => answer({ error, error_description: description, error_uri: `${docs}#${error.replace(/_/g, "-")}` });
    if (params.client_id !== this.clientId || params.client_secret !== this.clientSecret) return refuse("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.");
    const pending = this.#oauthCodes.get(params.code ?? "");
    if (!pending || pending.expiresAt <= this.clock()) return refuse("bad_verification_code", "The code passed is incorrect or expired.");
    if (params.redirect_uri !== undefined && params.redirect_uri !== pending.redirectUri) return refuse("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.");
    this.#oauthCodes.delete(params.code!);
    if (pending.challenge !== null) {
      const verifier = params.code_verifier ?? "";
      if (createHash("sha256").update(verifier).digest("base64url") !== pending.challenge) return refuse("bad_verification_code", "The code passed is incorrect or expired.");
    }
    const token = `ghu_${createHash("sha256")
      .update(`user:${this.counter++}:${Math.random()}`)
      .digest("base64url")
      .slice(0, 36)}`;
    this.#userTokens.set(token, pending.login);
    answer({ access_token: token, expires_in: 28800, refresh_token: `ghr_${token.slice(4)}`, refresh_token_expires_in: 15811200, token_type: "bearer", scope: "" });
  }

  /** Revokes every user access token (as when users revoke the App's authorization). */
  revokeUserTokens(): void {
    this.#userTokens.clear();
  }

  /** `/user` and `/user/…` with a user access token: the user, the installations and repositories it reaches. */
  protected answerUser({ req, method, path, query, send, error, notFound }: AppRequest): boolean {
    if (!(path === "/user" || path.startsWith("/user/"))) return false;
    let match: RegExpExecArray | null;
    const appId = Number(this.appId);
    if (this.outage !== null) return error(this.outage, "Server Error");
    const login = this.#userOf(req.headers.authorization);
    if (login === undefined) return error(401, "Bad credentials");
    const page = Math.max(1, Number(query.get("page") ?? 1) || 1);
    const perPage = Math.min(100, Math.max(1, Number(query.get("per_page") ?? 30) || 30));
    const slice = <T>(items: T[]) => items.slice((page - 1) * perPage, page * perPage);
    if (path === "/user" && method === "GET") return send(200, shape.publicUser(login));
    if (path === "/user/installations" && method === "GET") {
      const reachable = this.#installationsOfUser(login);
      return send(200, { total_count: reachable.length, installations: slice(reachable).map(([id, i]) => shape.installation(appId, id, i.account, i.permissions as Record<string, string>)) });
    }
    if ((match = /^\/user\/installations\/(\d+)\/repositories$/.exec(path)) && method === "GET") {
      const id = Number(match[1]);
      if (!this.#installationsOfUser(login).some(([reachable]) => reachable === id)) return notFound();
      const repositories = this.#repositoriesOfUser(login, this.installations.get(id)!.account);
      return send(200, {
        total_count: repositories.length,
        repository_selection: "all",
        repositories: slice(repositories).map(([repo, permission]) => ({ ...shape.repository(repo, this.settings(repo)), permissions: shape.repositoryPermissions(permission) })),
      });
    }
    return notFound();
  }
}
