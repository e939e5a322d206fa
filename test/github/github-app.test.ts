import { randomUUID } from "node:crypto";
import { mergeabilityOf } from "../../src/adapters/github/code-host.js";
import { BACKENDS } from "../support/backends.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, type TestServer } from "../support/harness.js";
import { githubAppOf, installationCreated } from "../support/webhook-post.js";

const queue = (owner: string, name = "app") => ({ repo: { host: "github.com", owner, name }, targetBranch: "main" });

describe("mergeabilityOf", () => {
  test.each([
    [{ mergeable: true, mergeable_state: "clean" }, "mergeable"],
    [{ mergeable: true, mergeable_state: "behind" }, "mergeable"],
    [{ mergeable: true, mergeable_state: "unstable" }, "mergeable"],
    [{ mergeable: false, mergeable_state: "dirty" }, "not_mergeable"],
    [{ mergeable: true, mergeable_state: "blocked" }, "not_mergeable"],
    [{ mergeable: null, mergeable_state: "unknown" }, "in_progress"],
    [{ mergeable: true, mergeable_state: "clean", draft: true }, "not_mergeable"],
  ] as const)("%p is %s", (pr, expected) => {
    expect(mergeabilityOf(pr)).toBe(expected);
  });
});

describe.each(BACKENDS)("as a GitHub App on $name", (backend) => {
  let gh: GitHubSimulator;
  let server: TestServer;
  let octo: ApiClient;

  /** Delivers a webhook as GitHub does, then lets the worker process what was recorded. */
  async function deliver(event: string, payload: object, signature?: string, deliveryId = randomUUID()) {
    const response = await post(event, payload, signature, deliveryId);
    await server.greenline.worker.drain();
    return response;
  }

  /** Delivers a webhook as GitHub does; the worker does not run. */
  function post(event: string, payload: object, signature?: string, deliveryId = randomUUID()) {
    const body = JSON.stringify(payload);
    return fetch(`${server.url}/api/github/webhooks`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": event,
        "x-github-delivery": deliveryId,
        "x-hub-signature-256": signature ?? gh.sign(body),
      },
      body,
    });
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    server = await startTestServer(backend, {
      githubApp: githubAppOf(gh),
    });
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("a webhook with a bad signature is refused and changes nothing", async () => {
    const forged = await deliver("installation", installationCreated(7, "mallory"), gh.sign("{}", "wrong-secret"));
    expect(forged.status).toBeGreaterThanOrEqual(400);
    expect(forged.status).toBeLessThan(500);
    const orgs = await server.greenline.services.db.read((tx) => tx.organization.findMany({ where: { slug: "mallory" } }));
    expect(orgs).toEqual([]);
  });

  test("an installation makes its account an organization that owns the account's repositories", async () => {
    gh.installApp(42, "Octo-Org");
    const delivered = await deliver("installation", installationCreated(42, "Octo-Org"));
    expect(delivered.status).toBe(200);
    octo = await server.clientFor("octo-org");
    expect((await octo.call("createQueue", queue("octo-org"))).status).toBe(200);
    // A repository of an account where the App is not installed for this organization.
    const other = await octo.call("createQueue", queue("someone-else"));
    expect(other.status).toBe(404);
    // The bootstrap organization has no installation: it owns nothing on GitHub.
    expect((await server.api.call("createQueue", queue("acme"))).status).toBe(404);
  });

  test("submitting reads the pull request from GitHub through the App's installation", async () => {
    gh.openPr("octo-org/app", { number: 5, title: "Add caching", author: "hubot" });
    expect((await octo.call("submitPullRequest", { ...queue("octo-org"), pr: { number: 5 } })).status).toBe(200);
    expect(await octo.ok("getSubmittedPullRequest", { ...queue("octo-org"), pr: { number: 5 } })).toMatchObject({
      state: "testing",
      prTitle: "Add caching",
      prAuthor: "hubot",
      prBaseBranch: "main",
      readiness: { gitHubMergeability: "mergeable", doesBaseBranchMatch: true },
    });
    const calls = gh.requests.filter((r) => r.path === "/repos/octo-org/app/pulls/5");
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every((r) => r.authorization === "token ghs_installation_42")).toBe(true);
  });

  test("flaky-test uploads read CODEOWNERS from the repository at the commit through the App", async () => {
    const sha = gh.push("octo-org/app", "main", { ".github/CODEOWNERS": "/lib/ @octo-org/core\n*.md @octo-org/docs\n" });
    const report = `<testsuite name="unit"><testcase classname="Cache" name="evicts" file="lib/cache.test.js"><failure message="stale entry"/></testcase></testsuite>`;
    const scope = { repo: queue("octo-org").repo, org_url_slug: "octo-org" };
    expect(await octo.ok("flaky-tests/upload", { ...scope, commit_sha: sha, branch: "main", junit_xml: [report] })).toMatchObject({ test_cases: 1, failures: 1 });
    const listed = await octo.ok("flaky-tests/list-failing-tests", {
      ...scope,
      start_time: new Date(Date.now() - 3600_000).toISOString(),
      end_time: new Date(Date.now() + 60_000).toISOString(),
      page_query: { page_size: 10 },
    });
    expect(listed.tests.map((t: any) => [t.name, t.codeowners])).toEqual([["evicts", ["@octo-org/core"]]]);
    // Another job of the same commit: CODEOWNERS at a commit never changes, so it is not read again.
    expect(await octo.ok("flaky-tests/upload", { ...scope, commit_sha: sha, branch: "main", junit_xml: [report] })).toMatchObject({ test_cases: 1 });
    const reads = gh.requests.filter((r) => r.path === "/repos/octo-org/app/contents/.github/CODEOWNERS");
    expect(reads.length).toBe(1);
    expect(reads[0]!.authorization).toBe("token ghs_installation_42");
    // Another organization cannot upload to the App's repositories.
    const other = await server.api.call("flaky-tests/upload", { ...scope, org_url_slug: "acme", commit_sha: sha, branch: "main", junit_xml: [report] });
    expect(other.status).toBe(404);
  });

  test("readiness follows GitHub: wrong base, conflicts; a missing or closed PR is refused", async () => {
    gh.openPr("octo-org/app", { number: 6, base: "develop" });
    gh.openPr("octo-org/app", { number: 7, mergeableState: "dirty" });
    await octo.ok("submitPullRequest", { ...queue("octo-org"), pr: { number: 6 } });
    await octo.ok("submitPullRequest", { ...queue("octo-org"), pr: { number: 7 } });
    expect(await octo.ok("getSubmittedPullRequest", { ...queue("octo-org"), pr: { number: 6 } })).toMatchObject({ state: "not_ready", readiness: { doesBaseBranchMatch: false } });
    expect(await octo.ok("getSubmittedPullRequest", { ...queue("octo-org"), pr: { number: 7 } })).toMatchObject({ state: "not_ready", readiness: { gitHubMergeability: "not_mergeable" } });
    expect((await octo.call("submitPullRequest", { ...queue("octo-org"), pr: { number: 404 } })).status).toBe(404);
    gh.openPr("octo-org/app", { number: 8 });
    gh.closePr("octo-org/app", 8);
    const closed = await octo.call("submitPullRequest", { ...queue("octo-org"), pr: { number: 8 } });
    expect(closed.status).toBe(409);
    expect(closed.body.error.message).toContain("closed");
  });

  test("a queued PR that gets new commits, is closed or changes base leaves the queue with that reason", async () => {
    const address = (n: number) => ({ ...queue("octo-org"), pr: { number: n } });
    const event = (action: string, n: number, extra: object = {}) => ({
      action,
      number: n,
      pull_request: { number: n, head: { sha: `new-head-${n}`, ref: `feature-${n}` }, base: { ref: "main" }, state: action === "closed" ? "closed" : "open", merged: false },
      repository: { name: "app", full_name: "octo-org/app", html_url: "https://github.com/octo-org/app", owner: { login: "octo-org" } },
      installation: { id: 42 },
      sender: { login: "hubot", id: 2, type: "User" },
      ...extra,
    });
    for (const n of [20, 21, 22, 23]) {
      gh.openPr("octo-org/app", { number: n });
      await octo.ok("submitPullRequest", address(n));
    }
    expect((await deliver("pull_request", event("synchronize", 20))).status).toBe(200);
    expect((await deliver("pull_request", event("closed", 21))).status).toBe(200);
    expect((await deliver("pull_request", event("edited", 22, { changes: { base: { ref: { from: "main" }, sha: { from: "x" } } } }))).status).toBe(200);
    // An edit of the title only changes nothing.
    expect((await deliver("pull_request", event("edited", 23, { changes: { title: { from: "old" } } }))).status).toBe(200);
    const states = await Promise.all([20, 21, 22, 23].map(async (n) => (await octo.ok("getSubmittedPullRequest", address(n))) as { state: string; stateReason: string }));
    expect(states.map((s) => [s.state, s.stateReason])).toEqual([
      ["cancelled", "pr_updated"],
      ["cancelled", "pr_closed"],
      ["cancelled", "base_branch_changed"],
      [expect.not.stringMatching(/^cancelled$/), expect.anything()],
    ]);
    // A redelivery changes nothing; a forged one is refused.
    const before = await server.greenline.services.db.read((tx) => tx.transition.count());
    expect((await deliver("pull_request", event("synchronize", 20))).status).toBe(200);
    expect((await deliver("pull_request", event("closed", 23), gh.sign("{}", "wrong-secret"))).status).toBeGreaterThanOrEqual(400);
    expect(await server.greenline.services.db.read((tx) => tx.transition.count())).toBe(before);
  });

  test("comment commands: /greenline merge queues a pull request for whoever may push, answers on it, and cancel takes it out", async () => {
    const address = (n: number) => ({ ...queue("octo-org"), pr: { number: n } });
    const commented = (n: number, user: string, body: string, type = "User") => ({
      action: "created",
      issue: { number: n, pull_request: { url: `https://api.github.com/repos/octo-org/app/pulls/${n}` } },
      comment: { id: n * 100, body, user: { login: user, id: 7, type } },
      repository: { name: "app", full_name: "octo-org/app", html_url: "https://github.com/octo-org/app", owner: { login: "octo-org" } },
      installation: { id: 42 },
      sender: { login: user, id: 7, type },
    });
    const replies = (n: number) => gh.comments.filter((c) => c.repo === "octo-org/app" && c.number === n).map((c) => c.body);
    gh.openPr("octo-org/app", { number: 30 });
    gh.openPr("octo-org/app", { number: 31 });
    gh.grant("octo-org/app", "maintainer", "write");

    // Someone who may only read is told so, and nothing is queued.
    expect((await deliver("issue_comment", commented(30, "passer-by", "/greenline merge"))).status).toBe(200);
    expect(replies(30).at(-1)).toBe("@passer-by only people who can push to octo-org/app can use the merge queue (your access: read).");
    expect((await octo.call("getSubmittedPullRequest", address(30))).status).toBe(404);

    // A collaborator with write access queues it, with options; the answer says how.
    expect((await deliver("issue_comment", commented(30, "maintainer", "Looks good.\n/greenline merge --priority high --no-batch"))).status).toBe(200);
    expect(await octo.ok("getSubmittedPullRequest", address(30))).toMatchObject({ priorityValue: 10, priorityName: "high", noBatch: true });
    expect(replies(30).at(-1)).toMatch(/^@maintainer queued for `main` at priority high, tested on its own\./);

    // Cancel takes it out; a malformed command is answered with what is wrong and the usage.
    expect((await deliver("issue_comment", commented(30, "maintainer", "/greenline cancel"))).status).toBe(200);
    expect(await octo.ok("getSubmittedPullRequest", address(30))).toMatchObject({ state: "cancelled" });
    expect(replies(30).at(-1)).toBe("@maintainer taken out of the queue for `main`.");
    // The PR's timeline names the GitHub user and the command, for the submission and the cancel.
    const { timeline } = await octo.ok("getSubmittedPullRequest", { ...address(30), includeTimeline: true });
    expect(timeline[0]).toMatchObject({ reason: "submitted", actor: { kind: "user", name: "maintainer" }, evidence: { command: "/greenline merge" } });
    expect(timeline.at(-1)).toMatchObject({ state: "cancelled", reason: "cancelled_by_user", actor: { kind: "user", name: "maintainer" }, evidence: { command: "/greenline cancel" } });
    expect((await deliver("issue_comment", commented(31, "maintainer", "/greenline merge --priority soon"))).status).toBe(200);
    expect(replies(31).at(-1)).toContain("`--priority` must be urgent, high, medium, low or a number from 0 to 255, not `soon`");
    expect(replies(31).at(-1)).toContain("`/greenline merge`");
    // A queue that does not exist is an answer, not a failed delivery.
    expect((await deliver("issue_comment", commented(31, "maintainer", "/greenline merge --branch release"))).status).toBe(200);
    expect(replies(31).at(-1)).toMatch(/^@maintainer could not queue this pull request: .*release/);

    // Ordinary comments, bots (Greenline's own answers among them) and comments on issues are not commands.
    const answered = gh.comments.length;
    expect((await deliver("issue_comment", commented(31, "maintainer", "I will /greenline merge this later"))).status).toBe(200);
    expect((await deliver("issue_comment", commented(31, "greenline[bot]", "/greenline merge", "Bot"))).status).toBe(200);
    const onIssue = { ...commented(31, "maintainer", "/greenline merge"), issue: { number: 31 } };
    expect((await deliver("issue_comment", onIssue)).status).toBe(200);
    expect(gh.comments.length).toBe(answered);
    expect((await octo.call("getSubmittedPullRequest", address(31))).status).toBe(404);
  });

  test("webhook secrets and the private key never reach the logs", () => {
    const logs = server.logs.join("");
    expect(logs).not.toContain(gh.webhookSecret);
    expect(logs).not.toContain("PRIVATE KEY");
    expect(logs).not.toContain("ghs_installation");
  });
});
