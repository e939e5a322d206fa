import type { Probot } from "probot";
import type { RepoRef } from "../../ports/code-host.js";

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

  constructor(readonly probot: Probot) {}

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
    const octokit = await this.probot.auth(installation);
    octokit.hook.wrap("request", async (request, options) => {
      try {
        return await request(options);
      } catch (error) {
        const retried = await this.#throughCurrentInstallation(repo, installation, error);
        if (!retried) throw error;
        // The options carry this Octokit's request hook (its authentication): the other's must be used.
        const { hook: _thisOctokits, ...request } = options.request ?? {};
        return retried.request({ ...options, request });
      }
    });
    return octokit;
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
    return current === null || current === installation ? null : this.probot.auth(current);
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
