import { validationError } from "../../src/api/errors.js";
import { MAX_IMPACTED_TARGETS, ZSetImpactedTargetsRequest } from "../../src/api/queues/pull-request-schemas.js";
import { BACKENDS } from "../support/backends.js";
import { SimulatedCi } from "../support/github-ci.js";
import { DEFAULT_PERMISSIONS } from "../support/github/permissions.js";
import { GitHubDriver } from "../support/github-driver.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { ApiClient, startTestServer, type TestServer } from "../support/harness.js";
import { githubAppOf } from "../support/webhook-post.js";

/**
 * Trunk's merge-action on a fork PR: the workflow has no secrets, so it sends an empty
 * x-api-token and its run id in x-forked-workflow-run-id. Greenline (a GitHub App, against the
 * simulated GitHub over HTTP through the real Octokit) authorises the upload by reading the run:
 * a run of the repository, still going, from a fork, for pr.sha, which is the PR's head. And
 * impacted targets are never cut: all 5,000 come back.
 */
describe.each(BACKENDS)("fork PRs' impacted targets (x-forked-workflow-run-id), $name", (backend) => {
  let gh: GitHubSimulator;
  let ci: SimulatedCi;
  let server: TestServer;
  let api: ApiClient;
  let github: GitHubDriver;
  /** merge-action without a token: x-api-token is sent, empty. */
  let fork: ApiClient;
  const OWNER = "octo-fork";
  const INSTALLATION = 88;
  const full = (name: string) => `${OWNER}/${name}`;

  /** The body merge-action's upload script builds: pr.number as a string. */
  const body = (name: string, number: number, sha: string, impactedTargets: string[] | "ALL" = ["//api:server", "//web:app"]) => ({
    repo: { host: "github.com", owner: OWNER, name },
    pr: { number: String(number), sha },
    targetBranch: "main",
    impactedTargets,
  });
  const upload = (runId: number | string, payload: object) => fork.call("setImpactedTargets", payload, { headers: { "x-forked-workflow-run-id": String(runId) } });

  /** The GitHub Actions run CI started for the PR's current head. */
  function runOf(name: string, number: number): number {
    const pr = gh.pr(full(name), number)!;
    const run = ci.runs.filter((r) => r.repo === full(name) && r.sha === pr.headSha && r.workflowRunId !== undefined).at(-1);
    if (!run) throw new Error(`no workflow run for ${name}#${number}`);
    return run.workflowRunId!;
  }
  function openForkPr(name: string, number: number) {
    return gh.openPr(full(name), { number, author: "alice", headRepo: `alice/${name}`, headRef: `fix-${number}`, files: { [`src/f${number}.ts`]: `${number}` } });
  }

  beforeAll(async () => {
    gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
    ci = new SimulatedCi(gh, [{ name: "targets", on: ["pull_request"], report: "check_run" }]).attach();
    server = await startTestServer(backend, { githubApp: githubAppOf(gh) });
    github = await GitHubDriver.install(server, gh, { owner: OWNER, installation: INSTALLATION, accountId: 880, drain: true });
    api = github.api;
    fork = new ApiClient(server.url, "");
    await api.ok("createQueue", { ...github.queue("app"), mode: "parallel" });
    await api.ok("createQueue", { ...github.queue("other"), mode: "parallel" });
  });
  afterAll(async () => {
    await server?.close();
    await gh?.stop();
  });

  test("a fork PR's live run uploads its targets with the headers merge-action sends; the PR is then ready and tested", async () => {
    const pr = openForkPr("app", 1);
    const runId = runOf("app", 1);
    // GitHub lists no pull request on a fork's run: Greenline reads the PR itself.
    expect(gh.workflowRun(runId)).toMatchObject({ status: "in_progress", headSha: pr.headSha, headRepo: "alice/app", event: "pull_request" });
    const answer = await upload(runId, body("app", 1, pr.headSha, ["//api:server", "//web:app"]));
    expect([answer.status, answer.body]).toEqual([200, {}]);
    expect(gh.requests.some((r) => r.method === "GET" && r.path === `/repos/${OWNER}/app/actions/runs/${runId}` && r.status === 200)).toBe(true);

    await api.ok("submitPullRequest", github.pr("app", 1));
    expect((await github.submitted("app", 1)).readiness).toMatchObject({ requiresImpactedTargets: true, hasImpactedTargets: true });
    await server.greenline.worker.drain();
    const details = await api.ok("getMergeQueueTestingDetails", github.pr("app", 1));
    expect(details.impactedTargets).toEqual(["//api:server", "//web:app"]);

    // "ALL" too, from the same run.
    expect((await upload(runId, body("app", 1, pr.headSha, "ALL"))).status).toBe(200);
    expect((await api.ok("getMergeQueueTestingDetails", github.pr("app", 1))).impactedTargets).toBe("ALL");
  });

  test("a token upload still works (a run id alongside it changes nothing), and 5,000 targets all come back", async () => {
    await api.ok("createQueue", { ...github.queue("big"), mode: "parallel" });
    const pr = gh.openPr(full("big"), { number: 2, files: { "src/two.ts": "2" } });
    const targets = Array.from({ length: 5000 }, (_, i) => `//pkg/${i}:lib`);
    const answer = await api.call("setImpactedTargets", body("big", 2, pr.headSha, targets), { headers: { "x-forked-workflow-run-id": "not-checked" } });
    expect(answer.status).toBe(200);
    await api.ok("submitPullRequest", github.pr("big", 2));
    await server.greenline.worker.drain();
    const details = await api.ok("getMergeQueueTestingDetails", github.pr("big", 2));
    expect(details.testedPullRequests.map((t: { prNumber: number }) => t.prNumber)).toContain(2);
    expect(details.impactedTargets).toHaveLength(5000);
    expect(details.impactedTargets).toEqual(targets);
    // A token that is not valid is refused as before, whatever run id comes with it.
    const stranger = new ApiClient(server.url, "glt_unknown");
    const refused = await stranger.call("setImpactedTargets", body("big", 2, pr.headSha), { headers: { "x-forked-workflow-run-id": String(runOf("big", 2)) } });
    expect([refused.status, refused.body.error.message]).toEqual([401, "unknown or revoked API token"]);
  });

  test("a completed run is refused", async () => {
    const pr = openForkPr("app", 3);
    const runId = runOf("app", 3);
    gh.completeWorkflowRun(runId, "success");
    const answer = await upload(runId, body("app", 3, pr.headSha));
    expect([answer.status, answer.body.error.code]).toEqual([401, "unauthenticated"]);
    expect(answer.body.error.message).toBe(`x-forked-workflow-run-id: workflow run ${runId} is completed: only a queued or in-progress run may upload (the upload must come from the run itself)`);
  });

  test("a run of another repository is refused as unknown", async () => {
    const other = openForkPr("other", 4);
    openForkPr("app", 4);
    const answer = await upload(runOf("other", 4), body("app", 4, other.headSha));
    expect([answer.status, answer.body.error.message]).toEqual([401, `x-forked-workflow-run-id: no workflow run ${runOf("other", 4)} in ${OWNER}/app that Greenline can read`]);
  });

  test("a run for another commit than pr.sha, and a pr.sha that is no longer the PR's head, are refused", async () => {
    const pr = openForkPr("app", 5);
    const oldRun = runOf("app", 5);
    const oldHead = pr.headSha;
    const newHead = gh.pushToPr(full("app"), 5, { "src/f5.ts": "5 again" });
    const mismatched = await upload(oldRun, body("app", 5, newHead));
    expect([mismatched.status, mismatched.body.error.message]).toEqual([401, `x-forked-workflow-run-id: workflow run ${oldRun} runs for commit ${oldHead}, not for pr.sha ${newHead}`]);
    // The old run, still going, for the old head: the PR has moved on.
    const stale = await upload(oldRun, body("app", 5, oldHead));
    expect([stale.status, stale.body.error.message]).toEqual([401, `x-forked-workflow-run-id: pr.sha ${oldHead} is not the head of pull request #5 (its head is ${newHead})`]);
    // The new head's run is accepted.
    expect((await upload(runOf("app", 5), body("app", 5, newHead))).status).toBe(200);
  });

  test("a run that does not come from a fork is refused: the repository's own PRs upload with a token", async () => {
    const pr = gh.openPr(full("app"), { number: 6 });
    const runId = runOf("app", 6);
    expect(gh.workflowRun(runId)!.headRepo).toBe(full("app"));
    const answer = await upload(runId, body("app", 6, pr.headSha));
    expect([answer.status, answer.body.error.message]).toEqual([
      401,
      `x-forked-workflow-run-id: workflow run ${runId} does not come from a fork (its head is in ${OWNER}/app itself); a pull request from the repository itself uploads with x-api-token`,
    ]);
  });

  test("an unknown run id, and a repository Greenline does not know, answer alike (nothing leaks)", async () => {
    const pr = openForkPr("app", 7);
    const unknown = await upload(999999, body("app", 7, pr.headSha));
    expect([unknown.status, unknown.body.error.message]).toEqual([401, `x-forked-workflow-run-id: no workflow run 999999 in ${OWNER}/app that Greenline can read`]);
    // A repository of an account the App is not installed on, with a real run of its own.
    const strangerPr = gh.openPr("stranger/app", { number: 1, headRepo: "mallory/app", headRef: "x" });
    const strangerRun = ci.runs.find((r) => r.repo === "stranger/app")!.workflowRunId!;
    const stranger = await upload(strangerRun, { ...body("app", 1, strangerPr.headSha), repo: { host: "github.com", owner: "stranger", name: "app" } });
    expect([stranger.status, stranger.body.error.message]).toEqual([401, `x-forked-workflow-run-id: no workflow run ${strangerRun} in stranger/app that Greenline can read`]);
    // A repository on the App's account that no queue ever claimed: the same.
    const unclaimedPr = openForkPr("unclaimed", 1);
    const unclaimed = await upload(runOf("unclaimed", 1), body("unclaimed", 1, unclaimedPr.headSha));
    expect([unclaimed.status, unclaimed.body.error.message]).toEqual([401, `x-forked-workflow-run-id: no workflow run ${runOf("unclaimed", 1)} in ${OWNER}/unclaimed that Greenline can read`]);
    // Not a run id at all.
    const garbage = await upload("12; DROP", body("app", 7, pr.headSha));
    expect([garbage.status, garbage.body.error.message]).toEqual([401, "x-forked-workflow-run-id: must be a GitHub Actions run id (the digits of github.run_id)"]);
  });

  test("without the App's actions: read the run cannot be checked: refused, naming the permission", async () => {
    const pr = openForkPr("app", 8);
    const { actions: _actions, ...withoutActions } = DEFAULT_PERMISSIONS;
    gh.setPermissions(INSTALLATION, withoutActions);
    try {
      const answer = await upload(runOf("app", 8), body("app", 8, pr.headSha));
      expect([answer.status, answer.body.error.code]).toEqual([401, "unauthenticated"]);
      expect(answer.body.error.message).toBe(
        `x-forked-workflow-run-id: cannot be checked: the GitHub App may not read workflow runs in ${OWNER}/app (grant it "actions: read"; GitHub answered: Resource not accessible by integration)`,
      );
      expect(gh.requests.filter((r) => r.path.includes("/actions/runs/")).at(-1)?.status).toBe(403);
    } finally {
      gh.setPermissions(INSTALLATION, DEFAULT_PERMISSIONS);
    }
  });

  test("GitHub down: 503, to retry; the run id only on setImpactedTargets; pr.sha required", async () => {
    const pr = openForkPr("app", 9);
    const runId = runOf("app", 9);
    gh.outage = 502;
    try {
      const down = await upload(runId, body("app", 9, pr.headSha));
      expect([down.status, down.body.error.code]).toEqual([503, "unavailable"]);
    } finally {
      gh.outage = null;
    }
    const elsewhere = await fork.call("getQueue", github.queue("app"), { headers: { "x-forked-workflow-run-id": String(runId) } });
    expect([elsewhere.status, elsewhere.body.error.message]).toEqual([401, "missing x-api-token header (x-forked-workflow-run-id is accepted only by setImpactedTargets)"]);
    const { sha: _sha, ...noSha } = body("app", 9, pr.headSha).pr;
    const withoutSha = await upload(runId, { ...body("app", 9, pr.headSha), pr: noSha });
    expect([withoutSha.status, withoutSha.body.error.details]).toEqual([400, [{ path: "pr.sha", message: "required with x-forked-workflow-run-id (the head commit the workflow run tests)" }]]);
    expect((await upload(runId, body("app", 9, pr.headSha))).status).toBe(200);
  });
});

describe.each(BACKENDS)("x-forked-workflow-run-id in sandbox mode, $name", (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(backend);
    await server.api.ok("createQueue", { repo: { host: "github.com", owner: "acme", name: "web" }, targetBranch: "main" });
  });
  afterAll(() => server?.close());

  test("is refused: there is no GitHub to ask about the run", async () => {
    const fork = new ApiClient(server.url, "");
    const answer = await fork.call(
      "setImpactedTargets",
      { repo: { host: "github.com", owner: "acme", name: "web" }, pr: { number: "1", sha: "a".repeat(40) }, targetBranch: "main", impactedTargets: ["x"] },
      { headers: { "x-forked-workflow-run-id": "123" } },
    );
    expect([answer.status, answer.body.error.code]).toEqual([401, "unauthenticated"]);
    expect(answer.body.error.message).toBe("x-forked-workflow-run-id: accepted only when Greenline runs as a GitHub App (this server's code host, sandbox, runs no workflows); send x-api-token");
  });
});

/**
 * More targets than one upload may name are refused with the limit named, never cut (checked on
 * the request schema: 5,000,001 names over HTTP take seconds to send and parse, per backend).
 */
test("more impacted targets than the limit are refused, naming it", () => {
  const address = { repo: { host: "github.com", owner: "acme", name: "web" }, pr: { number: 1, sha: "a".repeat(40) }, targetBranch: "main" };
  const parsed = ZSetImpactedTargetsRequest.safeParse({ ...address, impactedTargets: Array.from({ length: MAX_IMPACTED_TARGETS + 1 }, () => "t") });
  expect(parsed.success).toBe(false);
  expect(validationError(parsed.error!.issues).details).toEqual([{ path: "impactedTargets", message: 'must list at most 5000000 targets (send "ALL" instead)' }]);
});
