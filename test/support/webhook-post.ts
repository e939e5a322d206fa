import { randomUUID } from "node:crypto";
import type { GitHubSimulator } from "./github-simulator.js";

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
