import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

/** A message the receiver accepted: verified with one of its secrets by the `standardwebhooks` package. */
export type Received = { webhookId: string; type: string; timestamp: string; data: any; at: number };

/**
 * How the receiver answers: 204 (ok), a status of its choice, never (hang: the sender's timeout
 * must end it), a redirect to `location`, or a function of the request number.
 */
export type Behaviour =
  | { kind: "ok" }
  | { kind: "status"; status: number; headers?: Record<string, string> }
  | { kind: "hang" }
  | { kind: "redirect"; location: string }
  | { kind: "custom"; answer: (n: number) => number };

/**
 * A real HTTP webhook receiver on 127.0.0.1 that verifies every request as a Standard Webhooks
 * consumer would (`standardwebhooks`' Webhook.verify: signature and timestamp), and records
 * what it accepted, in order. A request no secret verifies is answered 401 and counted.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  /** Requests refused because no secret verified them. */
  unverified = 0;
  /** Every request that arrived, answered or not. */
  requests = 0;
  behaviour: Behaviour = { kind: "ok" };
  /** Every answer waits this long (a slow receiver: requests are in flight when a test kills the sender). */
  delayMs = 0;
  /** Requests being answered now. */
  inFlight = 0;
  #server: Server | null = null;
  readonly #hanging = new Set<ServerResponse>();
  url = "";

  constructor(public secrets: string[] = []) {}

  async start(): Promise<this> {
    const server = createServer((req, res) => void this.#handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.#server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    return this;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const n = ++this.requests;
    if (this.delayMs > 0) {
      this.inFlight++;
      await new Promise((r) => setTimeout(r, this.delayMs));
      this.inFlight--;
    }
    const headers = { "webhook-id": String(req.headers["webhook-id"]), "webhook-timestamp": String(req.headers["webhook-timestamp"]), "webhook-signature": String(req.headers["webhook-signature"]) };
    const verified = this.secrets.some((secret) => {
      try {
        new Webhook(secret).verify(body, headers);
        return true;
      } catch {
        return false;
      }
    });
    if (!verified) {
      this.unverified++;
      res.writeHead(401).end("signature not verified");
      return;
    }
    const behaviour = this.behaviour;
    if (behaviour.kind === "hang") {
      this.#hanging.add(res);
      return;
    }
    if (behaviour.kind === "redirect") {
      res.writeHead(307, { location: behaviour.location }).end();
      return;
    }
    const status = behaviour.kind === "status" ? behaviour.status : behaviour.kind === "custom" ? behaviour.answer(n) : 204;
    if (status >= 200 && status < 300) {
      const message = JSON.parse(body) as { type: string; timestamp: string; data: unknown };
      this.received.push({ webhookId: headers["webhook-id"], type: message.type, timestamp: message.timestamp, data: message.data, at: Date.now() });
    }
    res.writeHead(status, behaviour.kind === "status" ? (behaviour.headers ?? {}) : {}).end(status >= 300 ? "receiver says no" : undefined);
  }

  /** Waits until `predicate` holds of what was received (bounded; fails with what arrived). */
  async waitFor(predicate: (received: Received[]) => boolean, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.received)) {
      if (Date.now() > deadline) throw new Error(`the receiver did not get what was expected; it got ${this.received.length}: ${this.received.map((r) => r.type).join(", ")}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async close(): Promise<void> {
    for (const res of this.#hanging) res.destroy();
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }
}
