import type { Probot } from "probot";
import type { RepoRef } from "../../ports/code-host.js";

export type OctokitError = { status?: number };
export type Octokit = Awaited<ReturnType<Probot["auth"]>>;

/**
 * The App's access to GitHub: which installation covers a repository (cached), and an Octokit
 * authenticated as that installation.
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

  /** An Octokit for the repository's installation, or null when the App is not installed there. */
  async octokitOrNull(repo: RepoRef): Promise<Octokit | null> {
    const installation = await this.installationFor(repo);
    return installation === null ? null : this.probot.auth(installation);
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
