import { randomUUID } from "node:crypto";
import type { GitHubSimulator } from "./github-simulator.js";
import type { TestServer, TestServerOptions } from "./harness.js";

type GitHubAppSettings = NonNullable<TestServerOptions["githubApp"]>;

/**
 * Posts one webhook delivery to Greenline as GitHub does: JSON body, event name, a delivery id
 * (new unless given) and the simulator's signature. Answers Greenline's response.
 */
export function postWebhook(baseUrl: string, gh: GitHubSimulator, event: string, payload: object, deliveryId: string = randomUUID()): Promise<Response> {
  const body = JSON.stringify(payload);
  return fetch(`${baseUrl}/api/github/webhooks`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": event, "x-github-delivery": deliveryId, "x-hub-signature-256": gh.sign(body) },
    body,
  });
}

/** Posts a delivery that Greenline must accept (200), then has the worker process it: deliveries are recorded and answered at once. */
export async function deliverWebhook(server: TestServer, gh: GitHubSimulator, event: string, payload: object): Promise<void> {
  const response = await postWebhook(server.url, gh, event, payload);
  // A plain error, not jest's expect: the bench (compiled by `npm run build`) posts through here too.
  if (response.status !== 200) throw new Error(`the ${event} delivery was answered ${response.status}: ${await response.text()}`);
  await server.greenline.worker.processWebhooks();
}

/** Greenline's GitHub App settings for the simulator `gh`; no throttling, so tests count every call and never wait. */
export function githubAppOf(gh: GitHubSimulator, more: Partial<GitHubAppSettings> = {}): GitHubAppSettings {
  return { appId: gh.appId, privateKey: gh.privateKey, webhookSecret: gh.webhookSecret, apiUrl: gh.url, throttle: false, ...more };
}

/** The `installation` webhook of an organization `login` installing the App (installation `id`; the account's id defaults to id × 10). */
export function installationCreated(id: number, login: string, accountId = id * 10): object {
  return { action: "created", installation: { id, account: { login, id: accountId, type: "Organization" } }, repositories: [], sender: { login: "admin", id: 1, type: "User" } };
}
