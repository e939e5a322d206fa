import type { Response } from "express";
import { type LiveTopic, liveStamps, topicKey } from "./read-models/dashboard.js";
import type { Services } from "../app/services.js";
import type { Logger } from "../log.js";
import type { Html } from "./html.js";

/**
 * What a stream sends when its topic changed: the page's update (out-of-band swaps of what
 * changed since this stream last sent), null when nothing it shows changed, or "ended" when its
 * session no longer holds (the stream ends). Each stream's update keeps what it last sent.
 */
export type LiveUpdate = () => Promise<Html | null | "ended">;

/** Whether the stream's session still holds (its token not revoked, its session not signed out). */
export type LiveSessionCheck = () => Promise<boolean>;

type Stream = { res: Response; update: LiveUpdate; signedIn: LiveSessionCheck };

type Watched = { topic: LiveTopic; stamp: string | undefined; streams: Set<Stream> };

/**
 * The live stream's hub (server-sent events). Every write to a queue or its PRs bumps the
 * queue's version in the same transaction (lockQueueRow), whichever replica or way in made it:
 * the API, a webhook, the worker's CI results and timers. The hub watches the stamps of the
 * topics someone is looking at (a queue's version; an organization's queues and their versions)
 * with one or two indexed queries per tick, only while a page is open, and asks each stream of a
 * changed topic for its update, which it sends as `event: patch` with the stamp as the event's
 * id (a reconnecting browser sends it back as Last-Event-ID). Watching the committed version
 * rather than a hook in this process keeps pages live when another replica made the change.
 * At each heartbeat (every 20 s by default) every stream's session is checked again, changes or
 * not: a stream whose session ended (a revoked token, a sign-out elsewhere) ends then, and the
 * page, finding the stream refused (401), says it is signed out.
 */
export class LiveHub {
  readonly #watched = new Map<string, Watched>();
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

  /** The stamp of `topic` now (undefined: it no longer exists). */
  async stampOf(topic: LiveTopic): Promise<string | undefined> {
    return (await liveStamps(this.services, [topic])).get(topicKey(topic));
  }

  /**
   * Streams `topic`'s changes to `res` until the client goes away. `stamp` is the topic's stamp
   * the page now shows; `first`, when given, is sent at once (a page that missed changes: the
   * whole live part); `signedIn` is asked at each heartbeat, and the stream ends when it answers false.
   */
  watch(topic: LiveTopic, stamp: string | undefined, res: Response, update: LiveUpdate, first: Html | null, signedIn: LiveSessionCheck): void {
    if (this.#closed) {
      res.end();
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no" });
    res.write(`retry: 2000\n: watching\n\n`);
    if (first) res.write(eventOf(stamp, first));
    else if (stamp !== undefined) res.write(`id: ${stamp}\n\n`);
    const key = topicKey(topic);
    const watched = this.#watched.get(key) ?? { topic, stamp, streams: new Set() };
    this.#watched.set(key, watched);
    const stream = { res, update, signedIn };
    watched.streams.add(stream);
    res.on("close", () => {
      watched.streams.delete(stream);
      if (watched.streams.size === 0 && this.#watched.get(key) === watched) this.#watched.delete(key);
      if (this.#watched.size === 0) this.#stop();
    });
    this.#timer ??= setInterval(() => void this.#tick(), this.#intervalMs);
  }

  async #tick(): Promise<void> {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      const watched = [...this.#watched.values()];
      if (watched.length === 0) return;
      const stamps = await liveStamps(
        this.services,
        watched.map((w) => w.topic),
      );
      for (const w of watched) {
        const stamp = stamps.get(topicKey(w.topic));
        if (stamp === w.stamp) continue;
        w.stamp = stamp;
        // Each stream renders for its own viewer; one at a time keeps a tick's memory small.
        for (const stream of [...w.streams]) await this.#send(stream, stamp);
      }
      if (Date.now() - this.#lastBeat >= this.#heartbeatMs) {
        this.#lastBeat = Date.now();
        for (const w of [...this.#watched.values()]) for (const stream of [...w.streams]) await this.#beat(stream);
      }
    } catch (error) {
      // The database is closing or unreachable: pages stay as they are; the next tick retries.
      this.log.warn({ err: error }, "dashboard live updates: could not read what changed");
    } finally {
      this.#ticking = false;
    }
  }

  async #send(stream: Stream, stamp: string | undefined): Promise<void> {
    if (stream.res.writableEnded) return;
    try {
      const update = await stream.update();
      if (update === "ended") stream.res.end();
      else if (update === null) stream.res.write(stamp === undefined ? "" : `id: ${stamp}\n\n`);
      else stream.res.write(eventOf(stamp, update));
    } catch (error) {
      // The topic is gone (a deleted queue answers not found) or the read failed: the browser
      // reconnects, and the page it then opens says what there is.
      this.log.warn({ err: error }, "dashboard live updates: could not render an update");
      stream.res.end();
    }
  }

  /** The heartbeat of one stream: it goes on while its session holds, and ends when it no longer does. */
  async #beat(stream: Stream): Promise<void> {
    if (stream.res.writableEnded) return;
    let holds = true;
    try {
      holds = await stream.signedIn();
    } catch (error) {
      // The database cannot say now: the stream goes on, and the next heartbeat asks again.
      this.log.warn({ err: error }, "dashboard live updates: could not check a stream's session");
    }
    if (holds) stream.res.write(": heartbeat\n\n");
    else stream.res.end();
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Ends every stream (the server is shutting down: browsers reconnect elsewhere). */
  close(): void {
    this.#closed = true;
    this.#stop();
    for (const w of this.#watched.values()) for (const { res } of w.streams) res.end();
    this.#watched.clear();
  }
}

/** One server-sent event: the update's lines as data lines, the stamp as its id (an id without a stamp resets it). */
function eventOf(stamp: string | undefined, update: Html): string {
  return `id: ${stamp ?? ""}\nevent: patch\n${update.text
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}\n`)
    .join("")}\n`;
}
