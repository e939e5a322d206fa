import { createHmac, randomUUID } from "node:crypto";
import type { GitHubSimulator, SimulatorEvent } from "./github-simulator.js";
import { type Webhook, webhookFor } from "./github-webhook-payloads.js";
import { webhookPayloadErrors } from "./webhook-schemas.js";

/**
 * Webhook deliveries from the GitHub simulator, as GitHub makes them: each event the simulator
 * reports (`gh.onEvent`) becomes a signed POST with GitHub's headers and payload, sent one at
 * a time in the order they became due. Faults are deterministic for a seed: a delivery can be
 * dropped, duplicated (the same delivery id, as a redelivery), delayed or swapped with the next
 * one; `lost` drops chosen deliveries for sure; `hold()` keeps deliveries back until
 * `release(order)` sends them in a chosen order.
 * `log` records every attempt with Greenline's answer; `pushes` the ref updates that
 * `on: push` workflows would run for. Every payload is checked against GitHub's published
 * schemas as it is built; what does not conform is listed in `schemaViolations`.
 */
export type WebhookFaults = {
  /** Probability that a delivery is lost. */
  drop?: number;
  /** Probability that a delivery is sent twice (same delivery id). */
  duplicate?: number;
  /** Probability that a delivery is sent after the next one. */
  reorder?: number;
  /** A delay, in milliseconds, drawn uniformly in [min, max] for each delivery. */
  delayMs?: [number, number];
  /** Deliveries lost for sure (say `pull_request` `edited`), whatever the draw: a chosen fault, not a seeded one. */
  lost?: (delivery: Delivery) => boolean;
};

export type WebhookOptions = { url: string; secret: string; seed?: number; faults?: WebhookFaults; hookId?: number; now?: () => Date };

/** A delivery: one event, possibly attempted several times (duplicates, redeliveries). */
export type Delivery = {
  id: string;
  event: string;
  action: string | undefined;
  payload: Record<string, unknown>;
  body: string;
  headers: Record<string, string>;
};

/**
 * One attempt of a delivery and how it was answered (status 0: the request failed; "dropped":
 * never sent). `githubCallsBefore`/`githubCallsAtAnswer` count the simulator's requests when it
 * was sent and when it was answered: equal when the receiver answered before calling GitHub.
 */
export type DeliveryAttempt = {
  delivery: Delivery;
  status: number | "dropped";
  redelivery: boolean;
  answer: string;
  githubCallsBefore?: number;
  githubCallsAtAnswer?: number;
};

export type PushRecord = { repo: string; branch: string; before: string; after: string; created: boolean; deleted: boolean; forced: boolean };

export class WebhookDeliverer {
  readonly log: DeliveryAttempt[] = [];
  readonly pushes: PushRecord[] = [];
  /** Payloads that GitHub's webhook schemas refuse, with the reasons (empty while the simulator conforms). */
  readonly schemaViolations: { event: string; action: string | undefined; errors: string[] }[] = [];
  readonly #gh: GitHubSimulator;
  readonly #options: WebhookOptions;
  readonly #random: () => number;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #deliveries = new Map<string, Delivery>();
  #faults: WebhookFaults;
  #held: Delivery[] | null = null;
  #deferred: { delivery: Delivery; copies: number } | null = null;
  #chain: Promise<void> = Promise.resolve();

  constructor(gh: GitHubSimulator, options: WebhookOptions) {
    this.#gh = gh;
    this.#options = options;
    this.#faults = options.faults ?? {};
    this.#random = seededRandom(options.seed ?? 1);
  }

  /** Starts delivering the simulator's events (after any listener already attached, such as a SimulatedCi). */
  attach(): this {
    const previous = this.#gh.onEvent;
    this.#gh.onEvent = (event) => {
      previous?.(event);
      this.#onEvent(event);
    };
    return this;
  }

  /** Stops all deliveries (and any listener attached along with it). */
  detach(): void {
    this.#gh.onEvent = undefined;
  }

  /** Changes the faults from now on. */
  setFaults(faults: WebhookFaults): void {
    this.#faults = faults;
  }

  /** Keeps deliveries back (still built when the event happens) until `release`. */
  hold(): void {
    this.#held ??= [];
  }

  /** The deliveries held back, in the order their events happened. */
  held(): readonly Delivery[] {
    return this.#held ?? [];
  }

  /**
   * Sends the held deliveries, one after another, in `order` (indexes into `held()`; those left
   * out are dropped) or in the order they happened, and stops holding. Resolves once all are answered.
   */
  async release(order?: number[]): Promise<void> {
    const held = this.#held ?? [];
    this.#held = null;
    const chosen = order ? order.map((i) => held[i]!) : held;
    for (const [i, delivery] of held.entries()) if (order && !order.includes(i)) this.log.push({ delivery, status: "dropped", redelivery: false, answer: "" });
    for (const delivery of chosen) this.#enqueue(delivery, false);
    await this.flush();
  }

  /** Waits until every delivery due has been sent and answered (held ones stay held). */
  async flush(): Promise<void> {
    for (;;) {
      this.#sendDeferred();
      if (this.#inFlight.size === 0) return;
      await Promise.all([...this.#inFlight]);
    }
  }

  /** Sends a delivery again, with the same id (as "Redeliver" in GitHub's settings). */
  async redeliver(id: string): Promise<number | "dropped"> {
    const delivery = this.#deliveries.get(id);
    if (!delivery) throw new Error(`no delivery ${id}`);
    this.#enqueue(delivery, true);
    await this.flush();
    return this.log.filter((a) => a.delivery.id === id).at(-1)!.status;
  }

  /** The deliveries of an event (and action), each once, in the order they happened. */
  deliveries(event?: string, action?: string): Delivery[] {
    return [...this.#deliveries.values()].filter((d) => (event === undefined || d.event === event) && (action === undefined || d.action === action));
  }

  /** The pushes to branches starting with `prefix` (creations and updates): each is one `on: push` workflow run. */
  workflowPushes(prefix = "greenline/"): PushRecord[] {
    return this.pushes.filter((p) => p.branch.startsWith(prefix) && !p.deleted);
  }

  /** Builds the delivery at once (the payload is what was true when the event happened), then schedules it. */
  #onEvent(event: SimulatorEvent): void {
    if (event.kind === "push") {
      const { repo, branch, before, after, created, deleted, forced } = event;
      this.pushes.push({ repo, branch, before, after, created, deleted, forced });
    }
    const delivery = this.#deliveryOf(webhookFor(event, { installationOf: (owner) => this.#gh.installationOf(owner), appId: Number(this.#gh.appId), now: this.#options.now ?? (() => new Date()) }));
    this.#deliveries.set(delivery.id, delivery);
    const errors = webhookPayloadErrors(delivery.event, delivery.payload);
    if (errors.length > 0) this.schemaViolations.push({ event: delivery.event, action: delivery.action, errors });
    if (this.#held) {
      this.#held.push(delivery);
      return;
    }
    const faults = this.#faults;
    if (faults.lost?.(delivery)) {
      this.log.push({ delivery, status: "dropped", redelivery: false, answer: "" });
      return;
    }
    if (this.#random() < (faults.drop ?? 0)) {
      this.log.push({ delivery, status: "dropped", redelivery: false, answer: "" });
      return;
    }
    const copies = this.#random() < (faults.duplicate ?? 0) ? 2 : 1;
    if (this.#random() < (faults.reorder ?? 0) && !this.#deferred) {
      this.#deferred = { delivery, copies };
      return;
    }
    for (let i = 0; i < copies; i++) this.#enqueue(delivery, i > 0);
    this.#sendDeferred();
  }

  /** Sends the delivery kept back to go after the next one, if any. */
  #sendDeferred(): void {
    if (!this.#deferred) return;
    const { delivery, copies } = this.#deferred;
    this.#deferred = null;
    for (let i = 0; i < copies; i++) this.#enqueue(delivery, i > 0);
  }

  #deliveryOf(webhook: Webhook): Delivery {
    const id = randomUUID();
    const body = JSON.stringify(webhook.payload);
    const hookId = String(this.#options.hookId ?? 424242);
    return {
      id,
      event: webhook.name,
      action: webhook.action,
      payload: webhook.payload,
      body,
      headers: {
        "content-type": "application/json",
        "user-agent": "GitHub-Hookshot/5a7c3f1",
        "x-github-event": webhook.name,
        "x-github-delivery": id,
        "x-github-hook-id": hookId,
        "x-github-hook-installation-target-type": "integration",
        "x-github-hook-installation-target-id": this.#gh.appId,
        "x-hub-signature": `sha1=${createHmac("sha1", this.#options.secret).update(body).digest("hex")}`,
        "x-hub-signature-256": `sha256=${createHmac("sha256", this.#options.secret).update(body).digest("hex")}`,
      },
    };
  }

  /** Sends after the delivery's delay, and after every delivery sent before it (one at a time). */
  #enqueue(delivery: Delivery, redelivery: boolean): void {
    const [min, max] = this.#faults.delayMs ?? [0, 0];
    const delay = min + Math.floor(this.#random() * (max - min + 1));
    const sent = (async () => {
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      const turn = this.#chain.then(() => this.#send(delivery, redelivery));
      this.#chain = turn;
      await turn;
    })();
    this.#inFlight.add(sent);
    void sent.finally(() => this.#inFlight.delete(sent));
  }

  async #send(delivery: Delivery, redelivery: boolean): Promise<void> {
    const githubCallsBefore = this.#gh.requests.length;
    try {
      const response = await fetch(this.#options.url, { method: "POST", headers: delivery.headers, body: delivery.body });
      const answer = await response.text();
      this.log.push({ delivery, status: response.status, redelivery, answer, githubCallsBefore, githubCallsAtAnswer: this.#gh.requests.length });
    } catch (error) {
      this.log.push({ delivery, status: 0, redelivery, answer: String(error), githubCallsBefore, githubCallsAtAnswer: this.#gh.requests.length });
    }
  }
}

/** Attaches a deliverer to the simulator: its events are delivered to `url`, signed with `secret`. */
export function attachWebhooks(gh: GitHubSimulator, options: WebhookOptions): WebhookDeliverer {
  return new WebhookDeliverer(gh, options).attach();
}

/** mulberry32: a small seeded generator, so a fault schedule repeats for a seed. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
