import { INSTALLATION_PROBE } from "../../src/webhooks/services/installations.js";
import { BACKENDS } from "../support/backends.js";
import { DashboardClient, queuePath } from "../support/dashboard.js";
import type { SimulatedCi } from "../support/github-ci.js";
import type { GitHubDriver } from "../support/github-driver.js";
import { type GitHubSimulator, SUSPENDED_MESSAGE } from "../support/github-simulator.js";
import type { WebhookDeliverer } from "../support/github-webhooks.js";
import { type ApiClient, TestClock, type TestServer } from "../support/harness.js";
import { type GitHubWorld, startGitHubWorld } from "../support/github-world.js";

/**
 * A suspended (or uninstalled) installation is a state of the installation, not of its PRs
 * (issue 22, item 2): GitHub refusing the App on one account stops that account's queues — they
 * keep their PRs, merge nothing and say why (getQueue's blockedReason, the metric) — and they go
 * on by themselves when GitHub answers again: on the `installation` webhook, or, when it was
 * lost, on the worker's probe. Another installation's queues are not slowed. Everything Greenline
 * learns comes from the simulator: its refusals and its webhooks (some of them dropped here).
 */
describe.each(BACKENDS)("a suspended or uninstalled installation, $name", (backend) => {
  const SUSPENDED = "octo-paused";
  const HEALTHY = "octo-busy";
  let installation = 91;
  let gh: GitHubSimulator;
  let server: TestServer;
  let api: ApiClient;
  let other: ApiClient;
  /** The two accounts: the one whose installation GitHub suspends, and the other. */
  let paused: GitHubDriver;
  let busy: GitHubDriver;
  let ci: SimulatedCi;
  let webhooks: WebhookDeliverer;
  const clock = new TestClock();

  const blockedReasonOf = async (name: string) => (await api.ok("getQueue", paused.queue(name))).blockedReason as { code: string; message: string; evidence: Record<string, unknown> } | null;
  /** GitHub's refusals of the suspended installation so far. */
  const suspendedAnswers = () => gh.requests.filter((r) => r.status === 403 && (r.response as { message?: string } | undefined)?.message === SUSPENDED_MESSAGE).length;
  const publishedBlockedReason = async (name: string) =>
    (await server.greenline.services.db.read((tx) => tx.queue.findFirst({ where: { repository: { owner: SUSPENDED, name } }, select: { blockedReason: true } })))?.blockedReason ?? null;
  const callsFor = (owner: string, name: string) => gh.requests.filter((r) => r.path.startsWith(`/repos/${owner}/${name}/`)).length;

  /** Webhooks delivered, the worker drained, CI finished, and again. */
  async function settle() {
    await webhooks.flush();
    await server.greenline.worker.drain();
    ci.finish();
    await webhooks.flush();
    await server.greenline.worker.drain();
  }
  /** A GitHub event whose webhook is lost. */
  async function withWebhookLost(change: () => void) {
    webhooks.hold();
    change();
    await webhooks.release([]);
  }
  async function createQueues(name: string, owners: string[]) {
    for (const owner of owners) {
      const account = owner === SUSPENDED ? paused : busy;
      await account.api.ok("createQueue", { ...account.queue(name), requiredStatuses: ["ci/test"], mergeMethod: "squash" });
    }
  }

  let world: GitHubWorld;
  beforeAll(async () => {
    world = await startGitHubWorld(backend, clock, [
      { owner: SUSPENDED, installation },
      { owner: HEALTHY, installation: 92 },
    ]);
    ({ gh, server, ci, webhooks } = world);
    [paused, busy] = world.accounts as [GitHubDriver, GitHubDriver];
    api = paused.api;
    other = busy.api;
  });
  afterAll(() => world?.close());

  test("suspended, its webhook lost: GitHub's 403s eject no PR and block the queue (installation_suspended); the other installation merges at once; the unsuspend webhook resumes it", async () => {
    const name = "refused";
    await createQueues(name, [SUSPENDED, HEALTHY]);
    for (const n of [1, 2]) gh.openPr(`${SUSPENDED}/${name}`, { number: n, files: { [`a${n}.txt`]: `${n}` } });
    gh.openPr(`${HEALTHY}/${name}`, { number: 1, files: { "b.txt": "1" } });
    for (const n of [1, 2]) await api.ok("submitPullRequest", paused.pr(name, n));
    // Greenline holds a token of the installation already: both the token request and calls with it are refused.
    await withWebhookLost(() => gh.suspendInstallation(installation));
    const refusedBefore = suspendedAnswers();

    // The other installation's PR merges in the very first round: the suspended queue slows nothing.
    await other.ok("submitPullRequest", busy.pr(name, 1));
    await settle();
    expect(gh.pr(`${HEALTHY}/${name}`, 1)!.merged).toBe(true);
    expect(await busy.stateOf(name, 1)).toBe("merged");

    // Twenty minutes of rounds: no PR of the suspended account leaves its queue, nothing merges.
    for (let minute = 0; minute < 20; minute++) {
      await settle();
      clock.advance(60_000);
    }
    for (const n of [1, 2]) {
      expect(["pending", "testing"]).toContain(await paused.stateOf(name, n));
      expect(gh.pr(`${SUSPENDED}/${name}`, n)!.merged).toBe(false);
    }
    const reason = await blockedReasonOf(name);
    expect(reason).toMatchObject({ code: "installation_suspended", evidence: { account: `github.com/${SUSPENDED}`, state: "suspended", pullRequestsWaiting: 2 } });
    expect(reason!.message).toContain(SUSPENDED_MESSAGE);
    // The queue's effects wait, their attempts not counted and none given up.
    const effects = await server.greenline.services.db.read((tx) => tx.effect.findMany({ where: { queue: { repository: { owner: SUSPENDED, name } }, doneAt: null } }));
    expect(effects.length).toBeGreaterThan(0);
    for (const effect of effects) expect({ kind: effect.kind, attempts: Number(effect.attempts), gaveUp: effect.gaveUp }).toEqual({ kind: effect.kind, attempts: 0, gaveUp: false });
    // GitHub is asked a bounded number of times meanwhile: the first refusals, then a probe a minute, doubling, at most every 15 minutes.
    const refused = suspendedAnswers() - refusedBefore;
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThanOrEqual(10);
    // The worker published the change (queue.blocked, to the organization's endpoints): its code is recorded.
    expect(await publishedBlockedReason(name)).toBe("installation_suspended");
    // The metric says why.
    const metrics = (await api.get("getMergeQueueMetrics")).text;
    expect(metrics).toContain(`greenline_queue_blocked{repo="${SUSPENDED}/${name}",branch="main",queue_type="main",reason="installation_suspended"} 1`);
    // So do the dashboard's queue page and overview; the other account's queue is not blocked.
    const dashboard = await DashboardClient.signIn(server.url, api.token);
    expect((await dashboard.get(queuePath(name, "main", SUSPENDED))).text).toContain("Installation suspended");
    expect((await dashboard.get("/")).text).toContain("Installation suspended");
    expect((await (await DashboardClient.signIn(server.url, other.token)).get("/")).text).not.toContain("Installation suspended");

    // Unsuspended, and the webhook says so: the queue goes on, its PRs merge.
    gh.unsuspendInstallation(installation);
    for (let round = 0; round < 6 && !gh.pr(`${SUSPENDED}/${name}`, 2)!.merged; round++) await settle();
    for (const n of [1, 2]) {
      expect(gh.pr(`${SUSPENDED}/${name}`, n)!.merged).toBe(true);
      expect(await paused.stateOf(name, n)).toBe("merged");
    }
    expect(await blockedReasonOf(name)).toBeNull();
    expect(await publishedBlockedReason(name)).toBeNull();
  }, 240_000);

  test("the suspend webhook blocks the queue before any call; unsuspended with the webhook lost, the probe finds GitHub answering and the queue resumes by itself", async () => {
    const name = "probed";
    await createQueues(name, [SUSPENDED]);
    gh.openPr(`${SUSPENDED}/${name}`, { number: 1, files: { "p.txt": "1" } });
    await api.ok("submitPullRequest", paused.pr(name, 1));
    gh.suspendInstallation(installation);
    const callsBefore = callsFor(SUSPENDED, name);
    await settle();
    // The webhook alone stopped it: its start_run was never tried.
    expect(callsFor(SUSPENDED, name)).toBe(callsBefore);
    const reason = await blockedReasonOf(name);
    expect(reason).toMatchObject({ code: "installation_suspended", evidence: { installationId: installation } });
    expect(gh.branches(`${SUSPENDED}/${name}`, "greenline/")).toEqual([]);

    await withWebhookLost(() => gh.unsuspendInstallation(installation));
    await settle();
    // Nobody told Greenline: it waits for its probe.
    expect((await blockedReasonOf(name))?.code).toBe("installation_suspended");
    const probeAt = Date.parse(reason!.evidence.nextProbeAt as string);
    expect(probeAt - clock.ms).toBeLessThanOrEqual(INSTALLATION_PROBE.baseMs);
    clock.ms = probeAt;
    for (let round = 0; round < 6 && !gh.pr(`${SUSPENDED}/${name}`, 1)!.merged; round++) await settle();
    expect(gh.pr(`${SUSPENDED}/${name}`, 1)!.merged).toBe(true);
    expect(await paused.stateOf(name, 1)).toBe("merged");
    expect(await blockedReasonOf(name)).toBeNull();
    // The simulator's suspend and unsuspend deliveries are shaped as GitHub's schemas say.
    expect(webhooks.deliveries("installation").map((d) => d.action)).toEqual(expect.arrayContaining(["suspend", "unsuspend"]));
    expect(webhooks.schemaViolations).toEqual([]);
  }, 240_000);

  test("uninstalled, its webhook lost: GitHub's 401s eject no PR (installation_removed); installed again, the queue goes on", async () => {
    const name = "removed";
    await createQueues(name, [SUSPENDED]);
    gh.openPr(`${SUSPENDED}/${name}`, { number: 1, files: { "r.txt": "1" } });
    await api.ok("submitPullRequest", paused.pr(name, 1));
    await withWebhookLost(() => gh.uninstallApp(installation));
    for (let minute = 0; minute < 20; minute++) {
      await settle();
      clock.advance(60_000);
    }
    expect(["pending", "testing"]).toContain(await paused.stateOf(name, 1));
    expect(gh.pr(`${SUSPENDED}/${name}`, 1)!.merged).toBe(false);
    expect(await blockedReasonOf(name)).toMatchObject({ code: "installation_removed", evidence: { state: "uninstalled" } });

    // Installed again (a new installation id), and the webhook says so.
    installation = 93;
    gh.installApp(installation, SUSPENDED);
    for (let round = 0; round < 6 && !gh.pr(`${SUSPENDED}/${name}`, 1)!.merged; round++) await settle();
    expect(gh.pr(`${SUSPENDED}/${name}`, 1)!.merged).toBe(true);
    expect(await blockedReasonOf(name)).toBeNull();
  }, 240_000);
});
