import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BACKENDS } from "../support/backends.js";
import { prOf, queueOf, startTestServer, type TestServer } from "../support/harness.js";
import { runGreenlineCli } from "../support/cli-process.js";

const STACK_FRAME = /^\s+at /m;

/** The real `greenline` CLI in its own process in `cwd` (test/support/cli-process.ts). */
const greenline = runGreenlineCli;

describe("greenline pr, queue and targets against a real Greenline (sandbox code host)", () => {
  let server: TestServer;
  let dir: string;
  let env: Record<string, string>;
  const cli = (args: string[], stdin?: string, extraEnv: Record<string, string> = {}) => greenline(args, { ...env, ...extraEnv }, dir, stdin);
  /** The queue `name` (branch main of acme/<name>), as flags. */
  const at = (name: string) => ["--repo", `acme/${name}`, "--target-branch", "main"];

  beforeAll(async () => {
    server = await startTestServer(BACKENDS[0]!);
    dir = mkdtempSync(join(tmpdir(), "greenline-queue-cli-"));
    env = { GREENLINE_URL: server.url, GREENLINE_API_TOKEN: server.api.token };
    await server.api.ok("createQueue", queueOf("web"));
    await server.api.ok("createQueue", queueOf("show"));
    await server.api.ok("createQueue", queueOf("restart"));
    await server.api.ok("createQueue", { ...queueOf("lanes"), mode: "parallel", concurrency: 5 });
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server?.close();
  });

  test("pr submit puts the PR in the queue at its priority; pr status shows its state, position, priority and test run; --json is the API's answer", async () => {
    const submitted = await cli(["pr", "submit", "--pr", "1", ...at("web"), "--priority", "HIGH", "--no-batch"]);
    expect(submitted).toMatchObject({ code: 0, stderr: "" });
    expect(submitted.stdout).toBe("greenline: submitted PR #1 to the queue main of acme/web (priority high, never batched)\n");
    const record = await server.api.ok("getSubmittedPullRequest", prOf(1));
    expect(record).toMatchObject({ state: "testing", priorityName: "high", noBatch: true, isCurrentlySubmittedToQueue: true });
    await server.greenline.worker.drain();

    const status = await cli(["pr", "status", "--pr", "1", ...at("web")]);
    expect(status.code).toBe(0);
    const run = await server.api.ok("getMergeQueueTestingDetails", prOf(1));
    expect(status.stdout.split("\n")).toEqual(
      expect.arrayContaining([
        'PR #1 "Sandbox pull request #1" in the queue main of acme/web: testing',
        "  position 1 of 1, priority high (10), never batched; the queue is running",
        `  test run ${run.testRunId}: in_progress on ${run.testBranch} at ${run.testBranchSha.slice(0, 12)}`,
        "    greenline/sandbox-ci: pending",
      ]),
    );

    const json = await cli(["pr", "status", "--pr", "1", ...at("web"), "--json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(await server.api.ok("getSubmittedPullRequest", prOf(1)));
  });

  test("pr restart starts a new test run; pr cancel takes the PR out, and pr status then exits 1 saying so", async () => {
    await cli(["pr", "submit", "--pr", "2", ...at("restart")]);
    await server.greenline.worker.drain();
    const first = await server.api.ok("getMergeQueueTestingDetails", prOf(2, "restart"));
    const restarted = await cli(["pr", "restart", "--pr", "2", ...at("restart")]);
    expect(restarted).toMatchObject({ code: 0, stdout: "greenline: restarted the tests of PR #2 in the queue main of acme/restart\n" });
    await server.greenline.worker.drain();
    expect((await server.api.ok("getMergeQueueTestingDetails", prOf(2, "restart"))).testRunId).not.toBe(first.testRunId);

    const cancelled = await cli(["pr", "cancel", "--pr", "2", ...at("restart")]);
    expect(cancelled).toMatchObject({ code: 0, stdout: "greenline: cancelled PR #2 in the queue main of acme/restart\n" });
    expect(await server.api.ok("getSubmittedPullRequest", prOf(2, "restart"))).toMatchObject({ state: "cancelled", isCurrentlySubmittedToQueue: false });
    const status = await cli(["pr", "status", "--pr", "2", ...at("restart")]);
    expect(status.code).toBe(1);
    expect(status.stdout).toContain("in the queue main of acme/restart: cancelled (cancelled_by_user)");
    expect(status.stdout).toContain("greenline: PR #2 is not in the queue (cancelled)");
    expect((await cli(["pr", "status", "--pr", "2", ...at("restart"), "--json"])).code).toBe(1);
  });

  test("queue show lists the PRs in queue order; pause and resume change the queue's state", async () => {
    await cli(["pr", "submit", "--pr", "7", ...at("show"), "--priority", "low"]);
    await cli(["pr", "submit", "--pr", "8", ...at("show"), "--priority", "urgent"]);
    const shown = await cli(["queue", "show", ...at("show")]);
    expect(shown.code).toBe(0);
    const lines = shown.stdout.split("\n");
    expect(lines[0]).toBe("The queue main of acme/show: running; single mode, concurrency 1, no batching");
    const order = lines.filter((l) => /^\s+\d+\. #/.test(l)).map((l) => /#(\d+)/.exec(l)![1]);
    expect(order).toEqual(["8", "7"]);
    const json = await cli(["queue", "show", ...at("show"), "--json"]);
    expect(JSON.parse(json.stdout)).toEqual(await server.api.ok("getQueue", queueOf("show")));

    const paused = await cli(["queue", "pause", ...at("show")]);
    expect(paused).toMatchObject({ code: 0, stdout: "greenline: the queue main of acme/show is paused\n" });

    // Batching: the smallest batch the engine waits for, and the largest it forms (twice that).
    await server.api.ok("updateQueue", { ...queueOf("show"), batch: true, batchingMinSize: 3, batchingMaxWaitTimeMinutes: 5 });
    const batched = await cli(["queue", "show", ...at("show")]);
    expect(batched.stdout.split("\n")[0]).toBe("The queue main of acme/show: paused; single mode, concurrency 1, batches of 3 to 6 PRs (fewer after 5 min)");
    expect((await server.api.ok("getQueue", queueOf("show"))).state).toBe("paused");
    // Adaptive tuning within a CI budget: what it picks, not the fixed settings.
    await server.api.ok("updateQueue", { ...queueOf("show"), tuning: "adaptive", ciBudget: 2, concurrency: 5 });
    const adaptive = await cli(["queue", "show", ...at("show")]);
    expect(adaptive.stdout.split("\n")[0]).toBe(
      "The queue main of acme/show: paused; single mode, adaptive tuning: up to 2 run(s) in flight, batches of up to 10 PRs (observed failure rate 5.0% per PR), CI budget 2 run(s) at once",
    );
    await server.api.ok("updateQueue", { ...queueOf("show"), tuning: "fixed", ciBudget: 0, concurrency: 1 });
    const resumed = await cli(["queue", "resume", ...at("show")]);
    expect(resumed).toMatchObject({ code: 0, stdout: "greenline: the queue main of acme/show is running\n" });
    expect((await server.api.ok("getQueue", queueOf("show"))).state).toBe("running");
  });

  test("targets set from a file (blank lines and spaces ignored) and from stdin (ALL); an empty file sets none", async () => {
    await cli(["pr", "submit", "--pr", "1", ...at("lanes")]);
    const head = (await server.api.ok("getSubmittedPullRequest", prOf(1, "lanes"))).prSha;
    writeFileSync(join(dir, "targets.txt"), "  //api:lib  \n\n//web:app\r\n\n");
    const fromFile = await cli(["targets", "set", "targets.txt", "--pr", "1", "--commit", head, ...at("lanes")]);
    expect(fromFile).toMatchObject({ code: 0, stdout: `greenline: set 2 impacted target(s) for PR #1 at ${head.slice(0, 12)} in the queue main of acme/lanes\n` });
    expect(await server.api.ok("getSubmittedPullRequest", prOf(1, "lanes"))).toMatchObject({ state: "testing", readiness: { hasImpactedTargets: true } });
    await server.greenline.worker.drain();
    expect((await server.api.ok("getMergeQueueTestingDetails", prOf(1, "lanes"))).impactedTargets).toEqual(["//api:lib", "//web:app"]);

    await cli(["pr", "submit", "--pr", "2", ...at("lanes")]);
    const fromStdin = await cli(["targets", "set", "-", "--pr", "2", ...at("lanes")], "ALL\n");
    expect(fromStdin).toMatchObject({ code: 0, stdout: "greenline: set ALL targets (every target) for PR #2 at its head in the queue main of acme/lanes\n" });
    await server.greenline.worker.drain();
    expect((await server.api.ok("getMergeQueueTestingDetails", prOf(2, "lanes"))).impactedTargets).toBe("ALL");

    writeFileSync(join(dir, "none.txt"), "\n  \n");
    await cli(["pr", "submit", "--pr", "3", ...at("lanes")]);
    expect((await cli(["targets", "set", "none.txt", "--pr", "3", ...at("lanes")])).code).toBe(0);
    expect((await server.api.ok("getSubmittedPullRequest", prOf(3, "lanes"))).readiness.hasImpactedTargets).toBe(true);
  });

  test("in a GitHub Actions pull_request build no flag is needed: target branch from GITHUB_BASE_REF, targets for the event's head commit (not the merge commit GITHUB_SHA)", async () => {
    await server.api.ok("submitPullRequest", prOf(4, "lanes"));
    const head = (await server.api.ok("getSubmittedPullRequest", prOf(4, "lanes"))).prSha;
    writeFileSync(join(dir, "event.json"), JSON.stringify({ pull_request: { number: 4, head: { sha: head }, base: { ref: "main" } } }));
    const actions = {
      GITHUB_ACTIONS: "true",
      GITHUB_REPOSITORY: "acme/lanes",
      GITHUB_SERVER_URL: "https://github.com",
      GITHUB_SHA: "b".repeat(40),
      GITHUB_REF: "refs/pull/4/merge",
      GITHUB_HEAD_REF: "feature",
      GITHUB_BASE_REF: "main",
      GITHUB_EVENT_PATH: join(dir, "event.json"),
    };
    writeFileSync(join(dir, "one.txt"), "//api:lib\n");
    const set = await cli(["targets", "set", "one.txt"], undefined, actions);
    expect(set).toMatchObject({ code: 0, stdout: `greenline: set 1 impacted target(s) for PR #4 at ${head.slice(0, 12)} in the queue main of acme/lanes\n` });
    expect((await server.api.ok("getSubmittedPullRequest", prOf(4, "lanes"))).readiness.hasImpactedTargets).toBe(true);
    const status = await cli(["pr", "status", "--json"], undefined, actions);
    expect(JSON.parse(status.stdout)).toMatchObject({ prNumber: 4, prBaseBranch: "main" });
  });

  test("mistakes are usage errors (exit 2, the command's usage line); Greenline's refusal is exit 1 with its message; unreachable is 69", async () => {
    const noBranch = await cli(["pr", "submit", "--pr", "1", "--repo", "acme/web"]);
    expect(noBranch.code).toBe(2);
    expect(noBranch.stderr).toContain("greenline: --target-branch is required");
    expect(noBranch.stderr).toContain("Usage: greenline pr submit");
    expect(noBranch.stderr.split("\n").length).toBeLessThan(5);
    expect((await cli(["pr", "submit", ...at("web")])).stderr).toContain("--pr is required");
    expect((await cli(["pr", "submit", "--pr", "x1", ...at("web")])).code).toBe(2);
    expect((await cli(["pr", "submit", "--pr", "1", ...at("web"), "--priority", "highest"])).stderr).toContain("--priority must be urgent, high, medium, low or a number from 0 to 255 (got highest)");
    expect((await cli(["targets", "set", "--pr", "1", ...at("lanes")])).code).toBe(2);
    expect((await cli(["targets", "set", "missing.txt", "--pr", "1", ...at("lanes")])).stderr).toContain("cannot read missing.txt: ENOENT");
    expect((await cli(["targets", "set", "one.txt", "--pr", "1", "--commit", "not-a-sha", ...at("lanes")])).stderr).toContain("--commit must be a commit sha");
    writeFileSync(join(dir, "mixed.txt"), "//a\nALL\n");
    const mixed = await cli(["targets", "set", "mixed.txt", "--pr", "1", ...at("lanes")]);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain("mixed.txt: ALL must be the only line");

    const refusal = await server.api.call("submitPullRequest", prOf(1, "web", "no-such-branch"));
    const unknown = await cli(["pr", "submit", "--pr", "1", "--repo", "acme/web", "--target-branch", "no-such-branch"]);
    expect(unknown).toMatchObject({ code: 1, stdout: "" });
    expect(unknown.stderr).toBe(`greenline: submitPullRequest answered 404: ${refusal.body.error.message}\n`);
    const badToken = await cli(["queue", "show", ...at("web")], undefined, { GREENLINE_API_TOKEN: "glt_wrong" });
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toMatch(/^greenline: getQueue answered 401: /);

    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const closed = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
    await new Promise((resolve) => probe.close(resolve));
    const offline = await cli(["queue", "show", ...at("web"), "--url", closed]);
    expect(offline.code).toBe(69);
    expect(offline.stderr).toContain(`cannot reach Greenline at ${closed}/v1/getQueue: connection refused`);
    expect(offline.stderr).not.toMatch(STACK_FRAME);
  });
});
