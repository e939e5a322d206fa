import { createHmac } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { BACKENDS } from "../support/backends.js";
import { SimulatedCi } from "../support/github-ci.js";
import { GitHubSimulator } from "../support/github-simulator.js";
import { type ApiClient, startTestServer, type TestServer } from "../support/harness.js";
import { attachWebhooks, type WebhookDeliverer } from "../support/github-webhooks.js";
import { webhookPayloadErrors } from "../support/webhook-schemas.js";
import { githubAppOf } from "../support/webhook-post.js";

/**
 * The simulator's webhook deliveries: every payload it sends validates against GitHub's
 * published schemas (@octokit/webhooks-schemas), so it cannot drift from what GitHub sends;
 * the headers and signature are GitHub's; faults (drop, duplicate, reorder, hold and release,
 * redeliver) are deterministic.
 */
type Received = { headers: Record<string, string | string[] | undefined>; body: string };

/** A receiver that records what it is sent and answers `status`. */
async function startReceiver(status = 200): Promise<{ url: string; received: Received[]; close: () => Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(status, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const OWNER = "octo-w";
const REPO = `${OWNER}/hooks`;

describe("webhook deliveries from the GitHub simulator", () => {
  let gh: GitHubSimulator;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    gh = await new GitHubSimulator().start();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await gh.stop();
    await receiver.close();
  });

  /** A call to the simulator's REST API as the App's installation does it. */
  async function asApp(method: string, path: string, body?: object): Promise<number> {
    const response = await fetch(`${gh.url}${path}`, { method, headers: { authorization: "token ghs_installation_91", "content-type": "application/json" }, body: body && JSON.stringify(body) });
    await response.text();
    return response.status;
  }

  /** Every event and action Greenline subscribes to, made to happen in the simulator. */
  async function scriptedScenario(webhooks: WebhookDeliverer): Promise<void> {
    gh.installApp(91, OWNER);
    gh.changeInstallationRepositories(91, { added: [REPO] });
    gh.changeInstallationRepositories(91, { removed: [`${OWNER}/old`] });
    gh.branchHead(REPO, "main");
    gh.openPr(REPO, { number: 1, files: { "src/a.ts": "a" } });
    gh.openPr(REPO, { number: 2, files: { "src/b.ts": "b" } });
    // With a priority: answered by a reply (the status does not show it), which comes back as a Bot's comment.
    gh.comment(REPO, 1, "alice", "/greenline merge --priority high");
    gh.review(REPO, 1, "bob", "approved");
    gh.pushToPr(REPO, 1, { "src/a.ts": "a2" });
    gh.branchHead(REPO, "release");
    gh.retargetPr(REPO, 2, "release");
    gh.closePr(REPO, 2);
    const base = gh.branchHead(REPO, "main");
    expect(await asApp("POST", `/repos/${REPO}/git/refs`, { ref: "refs/heads/greenline/test-1", sha: gh.pr(REPO, 1)!.headSha })).toBe(201);
    expect(await asApp("POST", `/repos/${REPO}/statuses/${gh.pr(REPO, 1)!.headSha}`, { context: "greenline/merge-queue", state: "pending", description: "Testing" })).toBe(201);
    gh.setStatus(REPO, gh.pr(REPO, 1)!.headSha, "ci/test", "success");
    const run = gh.createCheckRun(REPO, { name: "build", headSha: gh.pr(REPO, 1)!.headSha });
    gh.completeCheckRun(REPO, run, "success");
    expect(await asApp("DELETE", `/repos/${REPO}/git/refs/heads/greenline/test-1`)).toBe(204);
    // A fast-forward of main to the PR's head: a push, and the PR becomes merged (closed).
    expect(await asApp("PATCH", `/repos/${REPO}/git/refs/heads/main`, { sha: gh.pr(REPO, 1)!.headSha })).toBe(200);
    expect(gh.branchHead(REPO, "main")).not.toBe(base);
    gh.push(REPO, "main", { "docs/outside.md": "x" });
    gh.uninstallApp(91);
    await webhooks.flush();
  }

  test("every payload of a scripted scenario (each event and action) validates against GitHub's published schemas", async () => {
    const webhooks = attachWebhooks(gh, { url: receiver.url, secret: gh.webhookSecret });
    await scriptedScenario(webhooks);
    webhooks.detach();
    const kinds = new Set(webhooks.deliveries().map((d) => (d.action ? `${d.event}.${d.action}` : d.event)));
    expect([...kinds].sort()).toEqual(
      [
        "check_run.completed",
        "check_run.created",
        "check_suite.completed",
        "installation.created",
        "installation.deleted",
        "installation_repositories.added",
        "installation_repositories.removed",
        "issue_comment.created",
        "pull_request.closed",
        "pull_request.edited",
        "pull_request.opened",
        "pull_request.synchronize",
        "pull_request_review.submitted",
        "push",
        "status",
      ].sort(),
    );
    for (const delivery of webhooks.deliveries()) {
      expect({ event: delivery.event, action: delivery.action, errors: webhookPayloadErrors(delivery.event, delivery.payload) }).toEqual({ event: delivery.event, action: delivery.action, errors: [] });
    }
    expect(webhooks.schemaViolations).toEqual([]);
    // Every delivery was answered by the receiver, once (no faults).
    expect(webhooks.log.map((a) => a.status).every((s) => s === 200)).toBe(true);
    expect(webhooks.log).toHaveLength(webhooks.deliveries().length);
    // The merged PR is told as merged; the closed one is not.
    const closed = webhooks.deliveries("pull_request", "closed").map((d) => d.payload.pull_request as { number: number; merged: boolean });
    expect(closed.map((pr) => [pr.number, pr.merged]).sort()).toEqual([
      [1, true],
      [2, false],
    ]);
  });

  test("the validator rejects a payload that drifts: a required field missing, a field GitHub does not send, a value outside an enum", async () => {
    const webhooks = attachWebhooks(gh, { url: receiver.url, secret: gh.webhookSecret });
    gh.installApp(92, "octo-drift");
    gh.openPr("octo-drift/r", { number: 7 });
    gh.setStatus("octo-drift/r", gh.pr("octo-drift/r", 7)!.headSha, "ci/test", "failure");
    await webhooks.flush();
    webhooks.detach();
    const status = webhooks.deliveries("status")[0]!.payload;
    expect(webhookPayloadErrors("status", status)).toEqual([]);
    const { context: _context, ...missing } = status;
    expect(webhookPayloadErrors("status", missing)).toEqual(["$.context: required"]);
    expect(webhookPayloadErrors("status", { ...status, target: "x" })).toEqual(["$.target: not allowed (additionalProperties: false)"]);
    expect(webhookPayloadErrors("status", { ...status, state: "passed" })).toEqual([expect.stringContaining("$.state")]);
    const opened = webhooks.deliveries("pull_request", "opened")[0]!.payload;
    const pr = opened.pull_request as Record<string, unknown>;
    const { mergeable: _mergeable, ...withoutMergeable } = pr;
    expect(webhookPayloadErrors("pull_request", { ...opened, pull_request: withoutMergeable })).toContain("$.pull_request.mergeable: required");
    expect(webhookPayloadErrors("pull_request", { ...opened, pull_request: { ...pr, state: "closed" } })).toEqual([expect.stringContaining("$.pull_request.state")]);
  });

  test("a delivery carries GitHub's headers and a signature of its body with the webhook secret", async () => {
    const own = await startReceiver();
    const webhooks = attachWebhooks(gh, { url: own.url, secret: "s3cret", hookId: 7 });
    gh.installApp(93, "octo-headers");
    gh.openPr("octo-headers/r", { number: 1 });
    await webhooks.flush();
    webhooks.detach();
    await own.close();
    const request = own.received.at(-1)!;
    expect(request.headers).toMatchObject({
      "content-type": "application/json",
      "x-github-event": "pull_request",
      "x-github-delivery": expect.stringMatching(/^[0-9a-f-]{36}$/),
      "x-github-hook-id": "7",
      "x-github-hook-installation-target-type": "integration",
      "x-github-hook-installation-target-id": gh.appId,
      "user-agent": expect.stringMatching(/^GitHub-Hookshot\//),
      "x-hub-signature-256": `sha256=${createHmac("sha256", "s3cret").update(request.body).digest("hex")}`,
    });
    expect(JSON.parse(request.body)).toMatchObject({ action: "opened", number: 1, installation: { id: 93 } });
  });

  test("faults are deterministic for a seed: drops, duplicates with the same delivery id, reordering", async () => {
    const schedule = async (seed: number) => {
      const sim = await new GitHubSimulator().start();
      const own = await startReceiver();
      const webhooks = attachWebhooks(sim, { url: own.url, secret: "s", seed, faults: { drop: 0.2, duplicate: 0.2, reorder: 0.2 } });
      sim.installApp(1, "o");
      for (let n = 1; n <= 20; n++) sim.openPr("o/r", { number: n });
      await webhooks.flush();
      await sim.stop();
      await own.close();
      const numbers = own.received.map((r) => (JSON.parse(r.body) as { number?: number }).number ?? 0);
      return { numbers, log: webhooks.log, ids: own.received.map((r) => r.headers["x-github-delivery"]) };
    };
    const first = await schedule(42);
    const again = await schedule(42);
    expect(again.numbers).toEqual(first.numbers);
    expect(first.log.some((a) => a.status === "dropped")).toBe(true);
    expect(first.log.some((a) => a.redelivery)).toBe(true);
    // A duplicate is the same delivery (id) sent twice.
    expect(new Set(first.ids).size).toBeLessThan(first.ids.length);
    // Some delivery arrived after one whose event happened later.
    expect(first.numbers.some((n, i) => i > 0 && n < first.numbers[i - 1]!)).toBe(true);
    expect((await schedule(7)).numbers).not.toEqual(first.numbers);
  });

  test("hold and release in a chosen order; redeliver sends the same delivery again", async () => {
    const own = await startReceiver(500);
    const webhooks = attachWebhooks(gh, { url: own.url, secret: "s" });
    gh.installApp(94, "octo-hold");
    await webhooks.flush();
    webhooks.hold();
    gh.openPr("octo-hold/r", { number: 1 });
    gh.comment("octo-hold/r", 1, "alice", "/greenline merge");
    gh.closePr("octo-hold/r", 1);
    expect(webhooks.held().map((d) => d.action)).toEqual(["opened", "created", "closed"]);
    expect(own.received).toHaveLength(1);
    await webhooks.release([2, 0]);
    const events = own.received.slice(1).map((r) => `${r.headers["x-github-event"]}.${(JSON.parse(r.body) as { action: string }).action}`);
    expect(events).toEqual(["pull_request.closed", "pull_request.opened"]);
    expect(webhooks.log.filter((a) => a.status === "dropped").map((a) => a.delivery.event)).toEqual(["issue_comment"]);
    // The receiver answered 500: the log says so, and GitHub's redelivery sends the same id.
    const closed = webhooks.deliveries("pull_request", "closed")[0]!;
    expect(await webhooks.redeliver(closed.id)).toBe(500);
    expect(own.received.at(-1)!.headers["x-github-delivery"]).toBe(closed.id);
    expect(own.received.at(-1)!.body).toBe(closed.body);
    webhooks.detach();
    await own.close();
  });

  test("simulated CI runs each workflow for the events that trigger it, and reports when told to", async () => {
    const webhooks = attachWebhooks(gh, { url: receiver.url, secret: "s" });
    const ci = new SimulatedCi(gh, [
      { name: "on-push", on: ["push"], branches: "greenline/", report: "status", fails: (files) => "BROKEN" in files },
      { name: "on-pr", on: ["pull_request"], branches: "main", report: "check_run" },
    ]).attach();
    gh.installApp(96, "octo-ci");
    gh.openPr("octo-ci/r", { number: 1, files: { BROKEN: "yes" } });
    const head = gh.pr("octo-ci/r", 1)!.headSha;
    const call = (method: string, path: string, body?: object) => fetch(`${gh.url}${path}`, { method, headers: { authorization: "token ghs_installation_96" }, body: body && JSON.stringify(body) }).then((r) => r.status);
    expect(await call("POST", "/repos/octo-ci/r/git/refs", { ref: "refs/heads/greenline/t", sha: head })).toBe(201);
    gh.push("octo-ci/r", "main", { "x.md": "x" });
    expect(ci.queued().map((r) => [r.workflow, r.trigger, r.sha === head])).toEqual([
      ["on-pr", "pull_request", true],
      ["on-push", "push", true],
    ]);
    await webhooks.flush();
    expect(webhooks.deliveries("status")).toEqual([]);
    ci.finish();
    await webhooks.flush();
    webhooks.detach();
    expect(webhooks.deliveries("status").map((d) => [d.payload.context, d.payload.state])).toEqual([["on-push", "failure"]]);
    expect(webhooks.deliveries("check_run").map((d) => d.action)).toEqual(["created", "completed"]);
    expect(webhooks.deliveries("check_suite", "completed")).toHaveLength(1);
    expect(ci.queued()).toEqual([]);
    expect(webhooks.schemaViolations).toEqual([]);
  });

  test("pushes to testing branches are counted: what `on: push` workflows would run for", async () => {
    const webhooks = attachWebhooks(gh, { url: receiver.url, secret: "s" });
    gh.installApp(95, "octo-push");
    gh.openPr("octo-push/r", { number: 1 });
    const head = gh.pr("octo-push/r", 1)!.headSha;
    const call = (method: string, path: string, body?: object) => fetch(`${gh.url}${path}`, { method, headers: { authorization: "token ghs_installation_95" }, body: body && JSON.stringify(body) }).then((r) => r.status);
    expect(await call("POST", "/repos/octo-push/r/git/refs", { ref: "refs/heads/greenline/x", sha: gh.branchHead("octo-push/r", "main") })).toBe(201);
    expect(await call("PATCH", "/repos/octo-push/r/git/refs/heads/greenline/x", { sha: head })).toBe(200);
    expect(await call("DELETE", "/repos/octo-push/r/git/refs/heads/greenline/x")).toBe(204);
    await webhooks.flush();
    webhooks.detach();
    expect(webhooks.workflowPushes().map((p) => [p.branch, p.created, p.after === head])).toEqual([
      ["greenline/x", true, false],
      ["greenline/x", false, true],
    ]);
    expect(webhooks.pushes.at(-1)).toMatchObject({ branch: "greenline/x", deleted: true, after: "0".repeat(40) });
  });
});

/**
 * Greenline against the simulator's own deliveries, end to end: the installation, a
 * `/greenline merge` comment, the testing branch's pushes and CI's statuses all reach Greenline
 * as GitHub would send them (signed, schema-shaped), and the PR is merged. The base for
 * tests of lost, late, duplicated and reordered deliveries.
 */
describe.each(BACKENDS)("Greenline fed by the simulator's webhook deliveries, $name", (backend) => {
  const OWNER = "octo-e2e";
  const REPO = `${OWNER}/app`;
  const queue = { repo: { host: "github.com", owner: OWNER, name: "app" }, targetBranch: "main" };
  let gh: GitHubSimulator;
  let server: TestServer;
  let webhooks: WebhookDeliverer;
  let api: ApiClient;
  let ci: SimulatedCi;

  beforeAll(async () => {
    gh = await new GitHubSimulator().start();
    server = await startTestServer(backend, { githubApp: githubAppOf(gh) });
    // An `on: push` workflow for testing branches, reporting the commit status `ci/test`.
    ci = new SimulatedCi(gh, [{ name: "ci/test", on: ["push"], branches: "greenline/", report: "status" }]).attach();
    webhooks = attachWebhooks(gh, { url: `${server.url}/api/github/webhooks`, secret: gh.webhookSecret });
    gh.installApp(77, OWNER);
    await webhooks.flush();
    await server.greenline.worker.processWebhooks();
    api = await server.clientFor(OWNER);
  });
  afterAll(async () => {
    webhooks?.detach();
    await server?.close();
    await gh?.stop();
  });

  test("a PR queued by a `/greenline merge` comment, tested by CI statuses the simulator delivers, is merged", async () => {
    await api.ok("createQueue", { ...queue, requiredStatuses: ["ci/test"], mergeMethod: "merge_commit" });
    gh.openPr(REPO, { number: 1, files: { "src/feature.ts": "feature" } });
    gh.grant(REPO, "alice", "write");
    // With a priority: answered by a reply (the status does not show it), which comes back as a Bot's comment.
    gh.comment(REPO, 1, "alice", "/greenline merge --priority high");
    await webhooks.flush();
    await server.greenline.worker.processWebhooks();
    expect(await api.ok("getSubmittedPullRequest", { ...queue, pr: { number: 1 } })).toMatchObject({ state: expect.stringMatching(/pending|testing/) });

    for (let round = 0; round < 10 && (await api.ok("getSubmittedPullRequest", { ...queue, pr: { number: 1 } })).state !== "merged"; round++) {
      await server.greenline.worker.drain();
      await webhooks.flush();
      ci.finish();
      await webhooks.flush();
      await server.greenline.worker.drain();
      await webhooks.flush();
    }

    expect(await api.ok("getSubmittedPullRequest", { ...queue, pr: { number: 1 } })).toMatchObject({ state: "merged" });
    expect(gh.pr(REPO, 1)).toMatchObject({ merged: true, state: "closed" });
    expect(gh.files(REPO, "main")["src/feature.ts"]).toBe("feature");
    expect(gh.comments.map((c) => c.body)).toEqual([expect.stringContaining("@alice queued for `main` at priority high")]);
    // Greenline's reply came back as a Bot's comment, and was not obeyed.
    expect(webhooks.deliveries("issue_comment").map((d) => (d.payload.comment as { user: { type: string } }).user.type)).toEqual(["User", "Bot"]);
    // Every delivery reached Greenline and was answered 2xx; each event kind was seen.
    expect(webhooks.log.filter((a) => typeof a.status !== "number" || a.status < 200 || a.status >= 300).map((a) => [a.delivery.event, a.status, a.answer])).toEqual([]);
    expect(new Set(webhooks.log.map((a) => a.delivery.event))).toEqual(new Set(["installation", "pull_request", "issue_comment", "push", "status"]));
    expect(webhooks.schemaViolations).toEqual([]);
    // What `on: push` CI would have run for on testing branches (the cost the branch work lowers).
    expect(webhooks.workflowPushes().length).toBeGreaterThanOrEqual(1);
    expect(ci.runs).toHaveLength(webhooks.workflowPushes().length);
    const failing = await server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { lastError: { not: null } } }));
    expect(failing.map((e) => [e.kind, e.lastError])).toEqual([]);
  });
});
