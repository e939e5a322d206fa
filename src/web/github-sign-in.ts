import { createHash, randomBytes } from "node:crypto";
import type { UserRepository } from "./read-models/github-members.js";

/**
 * "Sign in with GitHub": the GitHub App's OAuth web flow (docs.github.com, "Generating a user
 * access token for a GitHub App"), done server-side. The browser is sent to
 * `<github>/login/oauth/authorize?client_id&redirect_uri&state&code_challenge&code_challenge_method=S256`
 * (PKCE, which GitHub supports for Apps since July 2025: only S256); GitHub sends it back to the
 * redirect URI with `code` and `state`; the code, with the client secret and the PKCE verifier, is
 * exchanged at `POST <github>/login/oauth/access_token` (JSON answer with `Accept: application/json`;
 * a refused code is a 200 with `error`, e.g. `bad_verification_code`) for a user access token
 * (`ghu_…`). That token reads `GET /user`, `GET /user/installations` and
 * `GET /user/installations/{id}/repositories` (each repository with the user's `permissions`),
 * then is dropped: it is never stored, logged or put in a cookie.
 */

export type GitHubSignInOptions = {
  /** GITHUB_CLIENT_ID / GITHUB_CLIENT_SECRET: the App's OAuth client. */
  clientId: string;
  clientSecret: string;
  /** GitHub's web address (https://github.com, or a GitHub Enterprise Server's). */
  webUrl: string;
  /** GitHub's REST API (https://api.github.com, or `<server>/api/v3`). */
  apiUrl: string;
  /** The App's id: installations of other Apps are ignored. */
  appId: string;
};

/** GitHub refused, or did not answer as it should: the message is shown to the user (it holds no secret). */
export class SignInFailed extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const TIMEOUT_MS = 10_000;
const PAGE = 100;
/** At most this many pages of installations or repositories are read (10,000 entries). */
const MAX_PAGES = 100;

/** A new random value for `state` or a PKCE verifier (32 bytes, base64url: 43 characters, as RFC 7636 asks). */
export const randomToken = () => randomBytes(32).toString("base64url");

/** The PKCE S256 challenge of a verifier (RFC 7636 §4.2). */
export const codeChallenge = (verifier: string) => createHash("sha256").update(verifier).digest("base64url");

export class GitHubSignIn {
  constructor(readonly options: GitHubSignInOptions) {}

  /** Where the browser goes to authorize the App. */
  authorizeUrl(params: { redirectUri: string; state: string; verifier: string }): string {
    const url = new URL("/login/oauth/authorize", this.options.webUrl);
    url.searchParams.set("client_id", this.options.clientId);
    url.searchParams.set("redirect_uri", params.redirectUri);
    url.searchParams.set("state", params.state);
    url.searchParams.set("code_challenge", codeChallenge(params.verifier));
    url.searchParams.set("code_challenge_method", "S256");
    url.searchParams.set("allow_signup", "false");
    return url.href;
  }

  /** The user access token a code is exchanged for. */
  async exchange(params: { code: string; redirectUri: string; verifier: string }): Promise<string> {
    const answer = await this.#call(new URL("/login/oauth/access_token", this.options.webUrl).href, {
      method: "POST",
      headers: { accept: "application/json", "content-type": "application/json" },
      body: JSON.stringify({ client_id: this.options.clientId, client_secret: this.options.clientSecret, code: params.code, redirect_uri: params.redirectUri, code_verifier: params.verifier }),
    });
    const body = answer as { access_token?: unknown; error?: unknown; error_description?: unknown };
    if (typeof body.error === "string") {
      const why = typeof body.error_description === "string" ? `: ${body.error_description}` : "";
      throw new SignInFailed(body.error === "bad_verification_code" ? 401 : 502, `GitHub refused the sign-in (${body.error}${why}). Try again.`);
    }
    if (typeof body.access_token !== "string" || body.access_token === "") throw new SignInFailed(502, "GitHub answered the sign-in without an access token.");
    return body.access_token;
  }

  /** The signed-in user's login. */
  async login(token: string): Promise<string> {
    const user = (await this.#api(token, "/user")) as { login?: unknown };
    if (typeof user.login !== "string") throw new SignInFailed(502, "GitHub answered GET /user without a login.");
    return user.login;
  }

  /** The ids of this App's installations the user can reach. */
  async installations(token: string): Promise<number[]> {
    const ids: number[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const body = (await this.#api(token, `/user/installations?per_page=${PAGE}&page=${page}`)) as { installations?: { id: number; app_id: number }[] };
      const found = body.installations ?? [];
      for (const installation of found) if (String(installation.app_id) === this.options.appId) ids.push(installation.id);
      if (found.length < PAGE) break;
    }
    return ids;
  }

  /** The repositories of an installation the user can reach, with the user's permissions. */
  async repositories(token: string, installationId: number): Promise<UserRepository[]> {
    const repositories: UserRepository[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const body = (await this.#api(token, `/user/installations/${installationId}/repositories?per_page=${PAGE}&page=${page}`)) as {
        repositories?: { full_name: string; html_url: string; permissions?: UserRepository["permissions"] }[];
      };
      const found = body.repositories ?? [];
      for (const repo of found) repositories.push({ key: `${new URL(repo.html_url).host}/${repo.full_name}`.toLowerCase(), permissions: repo.permissions });
      if (found.length < PAGE) break;
    }
    return repositories;
  }

  #api(token: string, path: string): Promise<unknown> {
    const base = this.options.apiUrl.replace(/\/+$/, "");
    return this.#call(`${base}${path}`, { headers: { accept: "application/vnd.github+json", authorization: `Bearer ${token}`, "x-github-api-version": "2022-11-28", "user-agent": "greenline" } });
  }

  async #call(url: string, init: RequestInit): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(url, { ...init, redirect: "error", signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch {
      throw new SignInFailed(502, "GitHub could not be reached to sign you in. Try again later.");
    }
    const path = new URL(url).pathname;
    if (!response.ok) throw new SignInFailed(502, `GitHub answered ${response.status} to ${path} during sign-in.`);
    try {
      return (await response.json()) as unknown;
    } catch {
      throw new SignInFailed(502, `GitHub answered ${path} with something other than JSON.`);
    }
  }
}
