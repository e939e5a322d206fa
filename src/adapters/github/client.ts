import type { Probot } from "probot";
import { CodeHostRefusal, type RepoRef } from "../../ports/code-host.js";
import { installationRefusalOf, rateLimitOf } from "./refusals.js";
import { isSpacedWrite, WriteGate, writePriority } from "./write-order.js";

/** The share of an installation's rate limit kept for first attempts, unless configured (GREENLINE_GITHUB_RESERVE_PERCENT). */
export const DEFAULT_RESERVE_PERCENT = 20;

export type OctokitError = { status?: number };
export type Octokit = Awaited<ReturnType<Probot["auth"]>>;

/**
 * The App's access to GitHub: which installation covers a repository (cached), and an Octokit
 * authenticated as that installation. The cache is dropped when installations change
 * (`forgetInstallations`, on installation webhooks), and a repository's entry when GitHub
 * answers 401 or 404 for its installation (its token or the installation is gone: the App was
 * reinstalled with a new id, or suspended): the call is then made once more through the
 * installation GitHub names now, so a reinstall needs no restart.
 */
export class GitHubClient {
  readonly #installations = new Map<string, number>();

  /** Per installation: epoch ms before which GitHub's rate limit refuses it (no request is sent meanwhile). */
  readonly #rateLimitedUntil = new Map<number, number>();

  /** Per installation: its primary rate limit as GitHub's latest answers tell it (`x-ratelimit-*`). */
  readonly #rateLimits = new Map<number, { limit: number; remaining: number; resetAt: number }>();

  constructor(
    readonly probot: Probot,
    /** Epoch ms now (tests inject their clock). */
    readonly now: () => number = Date.now,
    /** The share of an installation's rate limit (percent) kept for first attempts: retries wait below it. */
    readonly reservePercent: number = DEFAULT_RESERVE_PERCENT,
    /** The order of this process's writes (write-order.ts): merges and testing branches before statuses and comments. */
    readonly writes: WriteGate = new WriteGate(0),
  ) {}

  /**
   * Epoch ms of the reset of the rate limit of the repository's installation when what is left
   * of it is below the reserve (`reservePercent` of the limit), else null. Asks GitHub nothing:
   * an installation not yet known, or not yet answered, is not below its reserve.
   */
  reserveReachedUntil(repo: RepoRef): number | null {
    const installation = this.#installations.get(`${repo.owner}/${repo.name}`.toLowerCase());
    const limits = installation === undefined ? undefined : this.#rateLimits.get(installation);
    if (!limits || this.now() >= limits.resetAt) return null;
    return limits.remaining < (limits.limit * this.reservePercent) / 100 ? limits.resetAt : null;
  }

  /** Each installation's primary rate limit as GitHub last answered it (service metrics). */
  rateLimits(): { installation: number; limit: number; remaining: number; resetAt: number }[] {
    // Past its reset a window's count says nothing (the installation has its whole limit again, or is idle).
    const now = this.now();
    return [...this.#rateLimits].filter(([, limits]) => limits.resetAt > now).map(([installation, limits]) => ({ installation, ...limits }));
  }

  /** Notes what an answer's headers (a success or a refusal) say of the installation's rate limit. */
  #noteRateLimit(installation: number, headers: Record<string, string | number | undefined> | undefined): void {
    const limit = Number(headers?.["x-ratelimit-limit"]);
    const remaining = Number(headers?.["x-ratelimit-remaining"]);
    const reset = Number(headers?.["x-ratelimit-reset"]);
    if (!headers?.["x-ratelimit-limit"] || !Number.isFinite(limit) || !Number.isFinite(remaining) || !Number.isFinite(reset)) return;
    const resetAt = reset * 1000;
    const known = this.#rateLimits.get(installation);
    // Answers to concurrent requests arrive in any order: a late one of a past window says
    // nothing, and within one window the least left wins.
    if (known !== undefined && resetAt < known.resetAt) return;
    const sameWindow = known !== undefined && known.resetAt === resetAt;
    this.#rateLimits.set(installation, { limit, remaining: sameWindow ? Math.min(known.remaining, remaining) : remaining, resetAt });
  }

  /** The installation covering the repository, or null when the App is not installed there. */
  async installationFor(repo: RepoRef): Promise<number | null> {
    const key = `${repo.owner}/${repo.name}`.toLowerCase();
    const cached = this.#installations.get(key);
    if (cached !== undefined) return cached;
    const app = await this.probot.auth();
    try {
      const { data } = await app.rest.apps.getRepoInstallation({ owner: repo.owner, repo: repo.name });
      this.#installations.set(key, data.id);
      return data.id;
    } catch (error) {
      if ((error as OctokitError).status === 404) return null;
      throw error;
    }
  }

  /** Forgets which installation covers which repository (installations changed). */
  forgetInstallations(): void {
    this.#installations.clear();
  }

  /** An Octokit for the repository's installation, or null when the App is not installed there. */
  async octokitOrNull(repo: RepoRef): Promise<Octokit | null> {
    const installation = await this.installationFor(repo);
    if (installation === null) return null;
    this.#refuseWhileRateLimited(installation);
    const octokit = await this.probot.auth(installation);
    // Innermost of these hooks, outside Octokit's own throttle (which keeps spacing the writes
    // the gate lets go, so it never reorders them).
    octokit.hook.wrap("request", async (request, options) => {
      if (isSpacedWrite(options.method, options.url)) await this.writes.turn(writePriority());
      return request(options);
    });
    this.#gateRateLimit(octokit, installation);
    octokit.hook.wrap("request", async (request, options) => {
      try {
        return await request(options);
      } catch (error) {
        const retried = await this.#throughCurrentInstallation(repo, installation, error);
        if (!retried) throw installationRefusalOf(error) ?? error;
        // The options carry this Octokit's request hook (its authentication): the other's must be used.
        const { hook: _thisOctokits, ...request } = options.request ?? {};
        return retried.request({ ...options, request });
      }
    });
    return octokit;
  }

  /**
   * The rate-limit gate: once GitHub says an installation's limit is spent (a refusal, or an
   * answer with `x-ratelimit-remaining: 0`), no request is sent for it until the limit is over;
   * its calls are refused at once with `rate_limited` and the time to ask again.
   */
  #gateRateLimit(octokit: Octokit, installation: number): void {
    octokit.hook.wrap("request", async (request, options) => {
      this.#refuseWhileRateLimited(installation);
      try {
        const response = await request(options);
        const headers = response.headers as Record<string, string | undefined>;
        this.#noteRateLimit(installation, headers);
        if (headers["x-ratelimit-remaining"] === "0" && headers["x-ratelimit-reset"]) this.#rateLimitedUntil.set(installation, Number(headers["x-ratelimit-reset"]) * 1000);
        return response;
      } catch (error) {
        this.#noteRateLimit(installation, (error as { response?: { headers?: Record<string, string | undefined> } }).response?.headers);
        const limited = rateLimitOf(error, this.now());
        if (!limited) throw error;
        if (limited.retryAt !== null) this.#rateLimitedUntil.set(installation, Math.max(limited.retryAt, this.#rateLimitedUntil.get(installation) ?? 0));
        throw limited;
      }
    });
  }

  #refuseWhileRateLimited(installation: number): void {
    const until = this.#rateLimitedUntil.get(installation);
    if (until === undefined) return;
    if (this.now() >= until) {
      this.#rateLimitedUntil.delete(installation);
      return;
    }
    throw new CodeHostRefusal("rate_limited", `GitHub's rate limit for installation ${installation} is spent until ${new Date(until).toISOString()}`, until);
  }

  /**
   * After a 401 (or the installation's token refused as not found) through installation
   * `installation`: forgets it for the repository and answers an Octokit for the installation
   * GitHub names now, when that is another one (else null: the error stands).
   */
  async #throughCurrentInstallation(repo: RepoRef, installation: number, error: unknown): Promise<Octokit | null> {
    // 401: the token is not good for the repository any more. 404 only from the token request
    // itself (the installation is gone): other 404s are routine answers (no such PR or file).
    const { status, request } = error as OctokitError & { request?: { url?: string } };
    const installationGone = status === 404 && (request?.url ?? "").includes("/access_tokens");
    if (status !== 401 && !installationGone) return null;
    const key = `${repo.owner}/${repo.name}`.toLowerCase();
    // Forgotten once; a call that failed after another re-read it goes through the new one.
    if (this.#installations.get(key) === installation) this.#installations.delete(key);
    const current = await this.installationFor(repo);
    if (current === null) {
      // GitHub names no installation for the repository now: the App was uninstalled from its
      // account, or (the account still has it) the repository left the installation's selection.
      if (await this.#accountHasInstallation(repo)) return null;
      throw new CodeHostRefusal(
        "installation_removed",
        `The GitHub App is not installed on ${repo.owner} any more (installation ${installation} is gone): GitHub answered ${status} ${(error as Error).message ?? ""}`.trim(),
      );
    }
    return current === installation ? null : this.probot.auth(current);
  }

  /**
   * Whether the App is installed on the repository's account at all, when GitHub names no
   * installation for the repository itself: `GET /users/{username}/installation`, then `GET
   * /orgs/{org}/installation` (both with the App's JWT; 404 when it is not installed there).
   */
  async #accountHasInstallation(repo: RepoRef): Promise<boolean> {
    const app = await this.probot.auth();
    for (const route of ["GET /users/{account}/installation", "GET /orgs/{account}/installation"] as const) {
      try {
        await app.request(route, { account: repo.owner });
        return true;
      } catch (error) {
        if ((error as OctokitError).status !== 404) throw error;
      }
    }
    return false;
  }

  /** An Octokit for the repository's installation; throws when the App is not installed there. */
  async octokit(repo: RepoRef): Promise<Octokit> {
    const octokit = await this.octokitOrNull(repo);
    if (octokit) return octokit;
    // Not installed on the account: a refusal of the account, not the request's (its queues wait
    // for the App to be installed again). Installed, but not for this repository (not in the
    // installation's selection): the request's, asked again with backoff.
    if (!(await this.#accountHasInstallation(repo))) throw new CodeHostRefusal("installation_removed", `the GitHub App is not installed on ${repo.owner} (nor for ${repo.owner}/${repo.name})`);
    throw new CodeHostRefusal("transient", `the GitHub App's installation on ${repo.owner} does not cover ${repo.owner}/${repo.name}: add the repository to the installation`);
  }

  /** The head commit of a branch, or null when it does not exist. */
  async branchHead(octokit: Octokit, repo: RepoRef, branch: string): Promise<string | null> {
    try {
      const { data } = await octokit.rest.repos.getBranch({ owner: repo.owner, repo: repo.name, branch });
      return data.commit.sha;
    } catch (error) {
      if ((error as OctokitError).status === 404) return null;
      throw error;
    }
  }
}
