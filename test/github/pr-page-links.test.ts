import { REASONS } from "../../src/domain/reasons.js";
import { BACKENDS } from "../support/backends.js";
import { GitHubDriver } from "../support/github-driver.js";
import { githubAppOf } from "../support/webhook-post.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, type TestServer } from "../support/harness.js";

const PUBLIC_URL = "https://greenline.example.com";

/**
 * With GREENLINE_PUBLIC_URL configured, the PR's commit status links to the PR's dashboard page
 * (`target_url`) and the queue's comment ends with a "Details:" line to it; the sentences are the
 * same as without (test/github/github-queue.test.ts checks there is no link without it).
 */
describe("links from GitHub to the PR's page, with a public URL", () => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  const OWNER = "octo-links";
  const NAME = "app";
  const full = `${OWNER}/${NAME}`;
  const queue = { repo: { host: "github.com", owner: OWNER, name: NAME }, targetBranch: "release/1.x" };

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    server = await startTestServer(BACKENDS[0]!, { publicUrl: PUBLIC_URL, githubApp: githubAppOf(gh) });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: 78, drain: true });
    api = github.api;
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("a failed PR's status and comment link to its page; the sentences are unchanged", async () => {
    await api.ok("createQueue", { ...queue, requiredStatuses: ["ci/test"] });
    gh.openPr(full, { number: 7, base: "release/1.x", files: { "src/a.ts": "a", BROKEN: "yes" } });
    await api.ok("submitPullRequest", { ...queue, pr: { number: 7 } });
    const reported = new Set<string>();
    for (let round = 0; round < 20; round++) {
      await server.greenline.worker.drain();
      for (const branch of gh.branches(full, "greenline/")) {
        if (reported.has(branch.sha)) continue;
        reported.add(branch.sha);
        await github.deliverThenDrain("status", github.statusPayload(NAME, branch.sha, "ci/test", "failure"));
      }
      if ((await api.ok("getSubmittedPullRequest", { ...queue, pr: { number: 7 } })).state === "failed") break;
    }
    await server.greenline.worker.drain();
    expect((await api.ok("getSubmittedPullRequest", { ...queue, pr: { number: 7 } })).state).toBe("failed");

    const page = `${PUBLIC_URL}/queues/github.com/${OWNER}/${NAME}/release/1.x/pulls/7`;
    const statuses = gh.statuses.filter((st) => st.repo === full && st.sha === gh.pr(full, 7)!.headSha && st.context === "greenline/merge-queue");
    expect(statuses.length).toBeGreaterThan(1);
    expect(statuses.map((st) => st.targetUrl)).toEqual(statuses.map(() => page));
    expect(statuses.at(-1)).toMatchObject({ state: "failure", description: REASONS.tests_failed });
    expect(gh.comments.filter((c) => c.repo === full && c.number === 7).map((c) => c.body)).toEqual([
      `Greenline removed this pull request from the merge queue for \`release/1.x\`: **failed** (\`tests_failed\`). ${REASONS.tests_failed}\n\nDetails: ${page}`,
    ]);
  });
});
