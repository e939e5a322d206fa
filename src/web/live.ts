import type { Response } from "express";
import { queueVersions } from "../app/dashboard.js";
import type { Services } from "../app/services.js";
import type { Logger } from "../log.js";

/**
 * The live stream's hub (server-sent events). Every write to a queue or its PRs bumps the
 * queue's version in the same transaction (lockQueueRow), whichever replica or way in made it:
 * the API, a webhook, the worker's CI results and timers. The hub watches the versions of the
 * queues someone is looking at (one indexed query per tick, only while a page is open) and
 * tells each of their streams "queue changed"; the page then fetches its new picture through
 * the same authenticated route as the first. Watching the committed version rather than a hook
 * in this process keeps pages live when another replica made the change.
 */
export class LiveHub {
  readonly #streams = new Map<string, Set<Response>>();
  readonly #versions = new Map<string, number>();
  readonly #intervalMs: number;
  readonly #heartbeatMs: number;
  #timer: NodeJS.Timeout | undefined;
  #lastBeat = Date.now();
  #ticking = false;
  #closed = false;

  constructor(
    private readonly services: Services,
    private readonly log: Logger,
    options: { intervalMs?: number; heartbeatMs?: number } = {},
  ) {
    this.#intervalMs = options.intervalMs ?? 200;
    this.#heartbeatMs = options.heartbeatMs ?? 20_000;
  }

  /** Streams changes of queue `queueId` (at `version` now) to `res` until the client goes away. */
  watch(queueId: string, version: number, res: Response): void {
    if (this.#closed) {
      res.end();
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no" });
    res.write(`retry: 2000\n: watching\n\n`);
    const streams = this.#streams.get(queueId) ?? new Set();
    this.#streams.set(queueId, streams);
    streams.add(res);
    if (!this.#versions.has(queueId)) this.#versions.set(queueId, version);
    res.on("close", () => {
      streams.delete(res);
      if (streams.size === 0) {
        this.#streams.delete(queueId);
        this.#versions.delete(queueId);
      }
      if (this.#streams.size === 0) this.#stop();
    });
    this.#timer ??= setInterval(() => void this.#tick(), this.#intervalMs);
  }

  async #tick(): Promise<void> {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      const ids = [...this.#streams.keys()];
      if (ids.length === 0) return;
      const versions = await queueVersions(this.services, ids);
      for (const id of ids) {
        const version = versions.get(id);
        if (version === this.#versions.get(id)) continue;
        if (version === undefined) this.#versions.delete(id);
        else this.#versions.set(id, version);
        for (const res of this.#streams.get(id) ?? []) res.write(`event: queue\ndata: ${version ?? "deleted"}\n\n`);
      }
      if (Date.now() - this.#lastBeat >= this.#heartbeatMs) {
        this.#lastBeat = Date.now();
        for (const streams of this.#streams.values()) for (const res of streams) res.write(": heartbeat\n\n");
      }
    } catch (error) {
      // The database is closing or unreachable: pages stay as they are; the next tick retries.
      this.log.warn({ err: error }, "dashboard live updates: could not read queue versions");
    } finally {
      this.#ticking = false;
    }
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Ends every stream (the server is shutting down: browsers reconnect elsewhere). */
  close(): void {
    this.#closed = true;
    this.#stop();
    for (const streams of this.#streams.values()) for (const res of streams) res.end();
    this.#streams.clear();
  }
}
