import type { Backend } from "./backends.js";
import { SimulatedCi, type Workflow } from "./github-ci.js";
import { GitHubDriver } from "./github-driver.js";
import { GitHubSimulator } from "./github-simulator.js";
import { attachWebhooks, type WebhookDeliverer } from "./github-webhooks.js";
import { startTestServer, type TestClock, type TestServer } from "./harness.js";
import { githubAppOf } from "./webhook-post.js";

/**
 * Everything a test of test/github needs on one clock: the GitHub simulator (mergeability computed
 * at once), Greenline's server as a GitHub App of it, CI reporting `ci/test` as a commit status on
 * each testing branch, webhooks delivered the way GitHub delivers them (faults can be set), and
 * one driver per account, whose installation Greenline has learned from its webhook.
 */
export type GitHubWorld = {
  gh: GitHubSimulator;
  server: TestServer;
  ci: SimulatedCi;
  webhooks: WebhookDeliverer;
  /** The accounts' drivers, in the order asked for, each signed in. */
  accounts: GitHubDriver[];
  /**
   * `rounds` of: webhooks delivered, CI finishing what it runs, webhooks again, the worker
   * drained; the clock moves on by `stepMs` after each (short of any re-read unless asked).
   */
  settle(rounds?: number, stepMs?: number): Promise<void>;
  close(): Promise<void>;
};

/** `workflows`: CI's workflows (default: `ci/test`, green, on every testing branch). */
export async function startGitHubWorld(backend: Backend, clock: TestClock, accounts: { owner: string; installation: number }[], workflows?: Workflow[]): Promise<GitHubWorld> {
  const gh = await new GitHubSimulator({ mergeabilityDelay: 0 }).start();
  gh.useClock(() => clock.ms);
  const server = await startTestServer(backend, { githubApp: githubAppOf(gh), now: clock.now, random: () => 0.5 });
  const ci = new SimulatedCi(gh, workflows ?? [{ name: "ci/test", on: ["push"], branches: "greenline/", report: "status" }]).attach();
  const webhooks = attachWebhooks(gh, { url: `${server.url}/api/github/webhooks`, secret: gh.webhookSecret, now: clock.now });
  for (const { owner, installation } of accounts) gh.installApp(installation, owner);
  await webhooks.flush();
  await server.greenline.worker.processWebhooks();
  const drivers: GitHubDriver[] = [];
  for (const { owner, installation } of accounts) drivers.push(new GitHubDriver(server, gh, await server.clientFor(owner), owner, installation));
  return {
    gh,
    server,
    ci,
    webhooks,
    accounts: drivers,
    async settle(rounds = 8, stepMs = 1_000) {
      for (let round = 0; round < rounds; round++) {
        await webhooks.flush();
        ci.finish();
        await webhooks.flush();
        await server.greenline.worker.drain();
        clock.advance(stepMs);
      }
    },
    async close() {
      webhooks.detach();
      await server.close();
      await gh.stop();
    },
  };
}
