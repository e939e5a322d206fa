/**
 * Where a CI job's results belong (repository, commit, branch, pull request), read from the
 * CI's environment, or outside CI from the git checkout. Pure: the caller reads the
 * environment, git and GitHub's event file, so each CI is a row in a table test.
 */

export type GitFacts = {
  /** `git remote get-url origin` */
  remoteUrl?: string | undefined;
  /** `git rev-parse HEAD` */
  head?: string | undefined;
  /** `git rev-parse --abbrev-ref HEAD` ("HEAD" when detached) */
  branch?: string | undefined;
};

export type CiFacts = {
  env: Record<string, string | undefined>;
  git: GitFacts;
  /** GitHub Actions' event payload (the JSON at GITHUB_EVENT_PATH), when there is one. */
  githubEvent?: unknown;
};

export type CiName = "github-actions" | "gitlab-ci" | "buildkite" | "circleci" | "jenkins" | "git";

export type CiContext = {
  ci: CiName;
  host?: string | undefined;
  /** "owner/name"; a GitLab project in nested groups keeps its full path ("group/sub/proj"), and the CLI splits it at the last slash (owner "group/sub"). */
  repo?: string | undefined;
  commit?: string | undefined;
  branch?: string | undefined;
  pr?: string | undefined;
  /** The branch the pull request merges into (the queue's target branch), when the CI names it. */
  targetBranch?: string | undefined;
  /**
   * The pull request's head commit, when the CI builds another one (GitHub's pull_request
   * events build the merge commit GITHUB_SHA; GitLab's merged results pipelines a merge commit):
   * impacted targets are computed for the head.
   */
  headSha?: string | undefined;
};

/** host and owner/name of a git remote: https://host/o/n(.git), git@host:o/n.git, ssh://git@host[:port]/o/n.git. */
export function parseRemoteUrl(url: string | undefined): { host: string; repo: string } | undefined {
  const text = url?.trim();
  if (!text) return undefined;
  const scp = /^[^@/\s]+@([^:/\s]+):(?!\/)(.+)$/.exec(text);
  let host: string;
  let path: string;
  if (scp) {
    host = scp[1]!;
    path = scp[2]!;
  } else {
    try {
      const parsed = new URL(text);
      host = parsed.hostname;
      path = parsed.pathname;
    } catch {
      return undefined;
    }
  }
  const repo = path
    .replace(/^\/+|\/+$/g, "")
    .replace(/\.git$/, "")
    .trim();
  if (!host || !repo.includes("/")) return undefined;
  return { host, repo };
}

const nonEmpty = (value: string | undefined) => (value?.trim() ? value.trim() : undefined);

/** A pull request number, or undefined for "false", "" and anything not a number. */
function prNumber(value: string | number | undefined): string | undefined {
  const text = String(value ?? "").trim();
  return /^[1-9]\d*$/.test(text) ? text : undefined;
}

function fromGitHubActions({ env, githubEvent }: CiFacts): CiContext {
  const event = githubEvent as { pull_request?: { number?: number; base?: { ref?: string }; head?: { sha?: string } } } | undefined;
  const ref = env.GITHUB_REF ?? "";
  const branchFromRef = /^refs\/heads\/(.+)$/.exec(ref)?.[1];
  return {
    ci: "github-actions",
    host: env.GITHUB_SERVER_URL ? safeHost(env.GITHUB_SERVER_URL) : undefined,
    repo: nonEmpty(env.GITHUB_REPOSITORY),
    commit: nonEmpty(env.GITHUB_SHA),
    // On pull_request events GITHUB_REF is refs/pull/N/merge; the PR's own branch is GITHUB_HEAD_REF.
    branch: nonEmpty(env.GITHUB_HEAD_REF) ?? branchFromRef ?? nonEmpty(env.GITHUB_REF_NAME),
    pr: prNumber(event?.pull_request?.number) ?? prNumber(/^refs\/pull\/(\d+)\//.exec(ref)?.[1]),
    // GITHUB_BASE_REF is set on pull_request and pull_request_target events only.
    targetBranch: nonEmpty(env.GITHUB_BASE_REF) ?? nonEmpty(event?.pull_request?.base?.ref),
    // On pull_request events GITHUB_SHA is the merge commit; on pull_request_target, the base's last commit.
    headSha: nonEmpty(event?.pull_request?.head?.sha),
  };
}

function fromGitLab({ env }: CiFacts): CiContext {
  return {
    ci: "gitlab-ci",
    host: nonEmpty(env.CI_SERVER_HOST),
    repo: nonEmpty(env.CI_PROJECT_PATH),
    commit: nonEmpty(env.CI_COMMIT_SHA),
    branch: nonEmpty(env.CI_MERGE_REQUEST_SOURCE_BRANCH_NAME) ?? nonEmpty(env.CI_COMMIT_REF_NAME),
    pr: prNumber(env.CI_MERGE_REQUEST_IID),
    targetBranch: nonEmpty(env.CI_MERGE_REQUEST_TARGET_BRANCH_NAME),
    // Set only in merged results pipelines, where CI_COMMIT_SHA is the merge commit.
    headSha: nonEmpty(env.CI_MERGE_REQUEST_SOURCE_BRANCH_SHA),
  };
}

function fromBuildkite({ env }: CiFacts): CiContext {
  const remote = parseRemoteUrl(env.BUILDKITE_REPO);
  return {
    ci: "buildkite",
    host: remote?.host,
    repo: remote?.repo,
    commit: nonEmpty(env.BUILDKITE_COMMIT),
    branch: nonEmpty(env.BUILDKITE_BRANCH),
    pr: prNumber(env.BUILDKITE_PULL_REQUEST),
    targetBranch: nonEmpty(env.BUILDKITE_PULL_REQUEST_BASE_BRANCH),
  };
}

function fromCircleCi({ env }: CiFacts): CiContext {
  const owner = nonEmpty(env.CIRCLE_PROJECT_USERNAME);
  const name = nonEmpty(env.CIRCLE_PROJECT_REPONAME);
  return {
    ci: "circleci",
    host: parseRemoteUrl(env.CIRCLE_REPOSITORY_URL)?.host,
    repo: owner && name ? `${owner}/${name}` : undefined,
    commit: nonEmpty(env.CIRCLE_SHA1),
    branch: nonEmpty(env.CIRCLE_BRANCH),
    pr: prNumber(/\/pull\/(\d+)\/?$/.exec(env.CIRCLE_PULL_REQUEST ?? "")?.[1] ?? env.CIRCLE_PR_NUMBER),
  };
}

function fromJenkins({ env }: CiFacts): CiContext {
  const remote = parseRemoteUrl(env.GIT_URL);
  // Jenkins' GIT_BRANCH names the remote's branch ("origin/main"); a PR build has CHANGE_BRANCH.
  const branch = nonEmpty(env.CHANGE_BRANCH) ?? nonEmpty(env.GIT_BRANCH)?.replace(/^(?:refs\/heads\/|origin\/)/, "") ?? nonEmpty(env.BRANCH_NAME);
  return { ci: "jenkins", host: remote?.host, repo: remote?.repo, commit: nonEmpty(env.GIT_COMMIT), branch, pr: prNumber(env.CHANGE_ID), targetBranch: nonEmpty(env.CHANGE_TARGET) };
}

function fromGit({ git }: CiFacts): CiContext {
  const remote = parseRemoteUrl(git.remoteUrl);
  const branch = nonEmpty(git.branch);
  return { ci: "git", host: remote?.host, repo: remote?.repo, commit: nonEmpty(git.head), branch: branch === "HEAD" ? undefined : branch };
}

function safeHost(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}

/** Which CI runs this job, by the variable each one documents as always set. */
export function detectCi(env: Record<string, string | undefined>): CiName {
  if (env.GITHUB_ACTIONS === "true") return "github-actions";
  if (env.GITLAB_CI) return "gitlab-ci";
  if (env.BUILDKITE === "true") return "buildkite";
  if (env.CIRCLECI === "true") return "circleci";
  if (env.JENKINS_URL || env.JENKINS_HOME) return "jenkins";
  return "git";
}

const READERS: Record<CiName, (facts: CiFacts) => CiContext> = {
  "github-actions": fromGitHubActions,
  "gitlab-ci": fromGitLab,
  buildkite: fromBuildkite,
  circleci: fromCircleCi,
  jenkins: fromJenkins,
  git: fromGit,
};

/**
 * The CI's answer, each field the CI leaves unset filled from git (a CI checkout is a git
 * checkout too). Flags are applied by the caller, over this.
 */
export function inferCiContext(facts: CiFacts): CiContext {
  const ci = detectCi(facts.env);
  const found = READERS[ci](facts);
  if (ci === "git") return found;
  const local = fromGit(facts);
  return {
    ci,
    host: found.host ?? (found.repo ? undefined : local.host),
    repo: found.repo ?? local.repo,
    commit: found.commit ?? local.commit,
    branch: found.branch ?? local.branch,
    pr: found.pr,
    targetBranch: found.targetBranch,
    headSha: found.headSha,
  };
}
