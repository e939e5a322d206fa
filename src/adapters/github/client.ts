import type { Probot } from "probot";
import { CodeHostRefusal, type RepoRef } from "../../ports/code-host.js";
import { rateLimitOf } from "./refusals.js";

export type OctokitError = { status?: number };
export type Octokit = Awaited<ReturnType<Probot["auth"]>>;

/**
 * The App's access to GitHub: which installation covers a repository (cached), and an Octokit
 * authenticated as that installation.
 */
export class GitHubClient {
  readonly #installations = new Map<string, number>();

  /** Per installation: epoch ms before which GitHub's rate limit refuses it (no request is sent meanwhile). */
  readonly #rateLimitedUntil = new Map<number, number>();

  constructor(
    readonly probot: Probot,
    /** Epoch ms now (tests inject their clock). */
    readonly now: () => number = Date.now,
  ) {}

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

  /** An Octokit for the repository's installation, or null when the App is not installed there. */
  async octokitOrNull(repo: RepoRef): Promise<Octokit | null> {
    const installation = await this.installationFor(repo);
    if (installation === null) return null;
    this.#refuseWhileRateLimited(installation);
    const octokit = await this.probot.auth(installation);
    this.#gateRateLimit(octokit, installation);
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
        if (headers["x-ratelimit-remaining"] === "0" && headers["x-ratelimit-reset"]) this.#rateLimitedUntil.set(installation, Number(headers["x-ratelimit-reset"]) * 1000);
        return response;
      } catch (error) {
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

  /** An Octokit for the repository's installation; throws when the App is not installed there. */
  async octokit(repo: RepoRef): Promise<Octokit> {
    const octokit = await this.octokitOrNull(repo);
    if (!octokit) throw new Error(`the GitHub App is not installed for ${repo.owner}/${repo.name}`);
    return octokit;
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
