import { type CiContext, type GitFacts, inferCiContext, parseRemoteUrl } from "../../src/cli/ci-context.js";

const checkout: GitFacts = { remoteUrl: "git@github.com:local/checkout.git", head: "1111111111111111111111111111111111111111", branch: "local-branch" };
const noGit: GitFacts = {};

describe("where a CI job's results belong, from each CI's environment", () => {
  const rows: [string, Record<string, string>, unknown, CiContext][] = [
    [
      "GitHub Actions, a push",
      { GITHUB_ACTIONS: "true", GITHUB_REPOSITORY: "acme/web", GITHUB_SHA: "a".repeat(40), GITHUB_REF: "refs/heads/main", GITHUB_REF_NAME: "main", GITHUB_SERVER_URL: "https://github.com" },
      undefined,
      { ci: "github-actions", host: "github.com", repo: "acme/web", commit: "a".repeat(40), branch: "main", pr: undefined },
    ],
    [
      "GitHub Actions, a pull_request event (PR and head commit from the event file, branch from GITHUB_HEAD_REF, target from GITHUB_BASE_REF)",
      {
        GITHUB_ACTIONS: "true",
        GITHUB_REPOSITORY: "acme/web",
        GITHUB_SHA: "b".repeat(40),
        GITHUB_REF: "refs/pull/42/merge",
        GITHUB_REF_NAME: "42/merge",
        GITHUB_HEAD_REF: "feature/x",
        GITHUB_BASE_REF: "main",
        GITHUB_SERVER_URL: "https://ghe.example.com",
      },
      { pull_request: { number: 42, head: { sha: "9".repeat(40) }, base: { ref: "main" } } },
      // GITHUB_SHA is the merge commit GitHub built; the PR's own head is the event's.
      { ci: "github-actions", host: "ghe.example.com", repo: "acme/web", commit: "b".repeat(40), branch: "feature/x", pr: "42", targetBranch: "main", headSha: "9".repeat(40) },
    ],
    [
      "GitHub Actions, a pull_request_target event (GITHUB_REF is the base: the PR, its head and base only in the event file)",
      { GITHUB_ACTIONS: "true", GITHUB_REPOSITORY: "acme/web", GITHUB_SHA: "c".repeat(40), GITHUB_REF: "refs/heads/release", GITHUB_HEAD_REF: "fork-fix" },
      { pull_request: { number: 7, head: { sha: "8".repeat(40) }, base: { ref: "release" } } },
      { ci: "github-actions", host: undefined, repo: "acme/web", commit: "c".repeat(40), branch: "fork-fix", pr: "7", targetBranch: "release", headSha: "8".repeat(40) },
    ],
    [
      "GitLab CI, a merge request pipeline",
      {
        GITLAB_CI: "true",
        CI_PROJECT_PATH: "acme/web",
        CI_COMMIT_SHA: "d".repeat(40),
        CI_COMMIT_REF_NAME: "feature/y",
        CI_MERGE_REQUEST_IID: "15",
        CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
        CI_SERVER_HOST: "gitlab.com",
      },
      undefined,
      { ci: "gitlab-ci", host: "gitlab.com", repo: "acme/web", commit: "d".repeat(40), branch: "feature/y", pr: "15", targetBranch: "main" },
    ],
    [
      "GitLab CI, a merged results pipeline (CI_COMMIT_SHA is the merge commit; the head is CI_MERGE_REQUEST_SOURCE_BRANCH_SHA)",
      {
        GITLAB_CI: "true",
        CI_PROJECT_PATH: "acme/web",
        CI_COMMIT_SHA: "d".repeat(40),
        CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: "feature/y",
        CI_MERGE_REQUEST_SOURCE_BRANCH_SHA: "7".repeat(40),
        CI_MERGE_REQUEST_IID: "15",
        CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
      },
      undefined,
      { ci: "gitlab-ci", host: undefined, repo: "acme/web", commit: "d".repeat(40), branch: "feature/y", pr: "15", targetBranch: "main", headSha: "7".repeat(40) },
    ],
    [
      "GitLab CI, a branch pipeline",
      { GITLAB_CI: "true", CI_PROJECT_PATH: "acme/web", CI_COMMIT_SHA: "e".repeat(40), CI_COMMIT_REF_NAME: "main" },
      undefined,
      { ci: "gitlab-ci", host: undefined, repo: "acme/web", commit: "e".repeat(40), branch: "main", pr: undefined },
    ],
    [
      "Buildkite, a pull request build",
      {
        BUILDKITE: "true",
        BUILDKITE_REPO: "git@github.com:acme/web.git",
        BUILDKITE_COMMIT: "f".repeat(40),
        BUILDKITE_BRANCH: "feature/z",
        BUILDKITE_PULL_REQUEST: "99",
        BUILDKITE_PULL_REQUEST_BASE_BRANCH: "main",
      },
      undefined,
      { ci: "buildkite", host: "github.com", repo: "acme/web", commit: "f".repeat(40), branch: "feature/z", pr: "99", targetBranch: "main" },
    ],
    [
      "Buildkite, a branch build (BUILDKITE_PULL_REQUEST=false)",
      { BUILDKITE: "true", BUILDKITE_REPO: "https://github.com/acme/web.git", BUILDKITE_COMMIT: "0".repeat(40), BUILDKITE_BRANCH: "main", BUILDKITE_PULL_REQUEST: "false" },
      undefined,
      { ci: "buildkite", host: "github.com", repo: "acme/web", commit: "0".repeat(40), branch: "main", pr: undefined },
    ],
    [
      "CircleCI, a pull request build",
      {
        CIRCLECI: "true",
        CIRCLE_PROJECT_USERNAME: "acme",
        CIRCLE_PROJECT_REPONAME: "web",
        CIRCLE_SHA1: "2".repeat(40),
        CIRCLE_BRANCH: "pull/5",
        CIRCLE_PULL_REQUEST: "https://github.com/acme/web/pull/5",
        CIRCLE_REPOSITORY_URL: "git@github.com:acme/web.git",
      },
      undefined,
      { ci: "circleci", host: "github.com", repo: "acme/web", commit: "2".repeat(40), branch: "pull/5", pr: "5" },
    ],
    [
      "Jenkins, a branch build (GIT_BRANCH names the remote's branch)",
      { JENKINS_URL: "https://ci.example.com/", GIT_URL: "https://github.com/acme/web.git", GIT_COMMIT: "3".repeat(40), GIT_BRANCH: "origin/main" },
      undefined,
      { ci: "jenkins", host: "github.com", repo: "acme/web", commit: "3".repeat(40), branch: "main", pr: undefined },
    ],
    [
      "Jenkins multibranch, a change request",
      { JENKINS_URL: "https://ci.example.com/", GIT_URL: "git@github.com:acme/web.git", GIT_COMMIT: "4".repeat(40), GIT_BRANCH: "PR-12", CHANGE_ID: "12", CHANGE_BRANCH: "feature/w", CHANGE_TARGET: "main" },
      undefined,
      { ci: "jenkins", host: "github.com", repo: "acme/web", commit: "4".repeat(40), branch: "feature/w", pr: "12", targetBranch: "main" },
    ],
  ];
  test.each(rows)("%s", (_name, env, githubEvent, expected) => {
    expect(inferCiContext({ env, git: noGit, githubEvent })).toEqual(expected);
  });

  test("outside CI: the git remote origin and HEAD (a CI variable alone, such as a stray GITHUB_SHA, is not a CI)", () => {
    expect(inferCiContext({ env: { GITHUB_SHA: "9".repeat(40) }, git: checkout })).toEqual({ ci: "git", host: "github.com", repo: "local/checkout", commit: checkout.head, branch: "local-branch" });
  });

  test("outside CI on a detached HEAD: no branch (the CLI then asks for --branch)", () => {
    expect(inferCiContext({ env: {}, git: { ...checkout, branch: "HEAD" } }).branch).toBeUndefined();
  });

  test("a CI that leaves a field unset has it filled from the checkout; the CI's own values win", () => {
    const found = inferCiContext({ env: { BUILDKITE: "true", BUILDKITE_COMMIT: "5".repeat(40) }, git: checkout });
    expect(found).toEqual({ ci: "buildkite", host: "github.com", repo: "local/checkout", commit: "5".repeat(40), branch: "local-branch", pr: undefined });
  });

  test.each([
    ["https://github.com/acme/web.git", { host: "github.com", repo: "acme/web" }],
    ["https://x-access-token:secret@github.com/acme/web", { host: "github.com", repo: "acme/web" }],
    ["git@github.com:acme/web.git", { host: "github.com", repo: "acme/web" }],
    ["ssh://git@ghe.example.com:2222/acme/web.git", { host: "ghe.example.com", repo: "acme/web" }],
    ["https://gitlab.com/group/sub/web.git", { host: "gitlab.com", repo: "group/sub/web" }],
    ["/srv/git/web.git", undefined],
    ["", undefined],
  ])("remote %s", (url, expected) => {
    expect(parseRemoteUrl(url)).toEqual(expected);
  });
});
