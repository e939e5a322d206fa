import type { IncomingMessage, ServerResponse } from "node:http";
import { Merging } from "./merge.js";

/**
 * Rate limits and faults, what GitHub answers before it routes a request. Rate limits as GitHub
 * answers them (docs/github.md, "Refusals and rate limits"): every answer to an installation
 * carries x-ratelimit-* headers, counted per installation over an hour; at the limit GitHub
 * answers 403 with `x-ratelimit-remaining: 0`. A secondary limit answers 403 with `retry-after`.
 * Time is the simulator's clock (`useClock`), also sent as the `date` header. Faults make the
 * next matching requests fail (502s, refusals).
 */
export abstract class RateLimits extends Merging {
  readonly #rateLimits = new Map<number, { limit: number; used: number; resetAt: number }>();
  readonly #secondaryUntil = new Map<number, number>();
  readonly #faults: { method: string; path: RegExp; status: number; message: string; times: number; headers: Record<string, string> }[] = [];

  /** Uses `now` (epoch ms) as GitHub's clock: rate-limit windows and the `date` header. */
  useClock(now: () => number): void {
    this.clock = now;
  }

  /** Sets an installation's primary rate limit (requests per hour; GitHub's default for an installation is 5,000). */
  setRateLimit(installation: number, limit: number): void {
    this.#rateWindow(installation).limit = limit;
  }

  /** What the installation has left of its primary rate limit, as the headers say. */
  rateLimitOf(installation: number): { limit: number; used: number; remaining: number; resetAt: number } {
    const window = this.#rateWindow(installation);
    return { ...window, remaining: Math.max(0, window.limit - window.used) };
  }

  /** Answers the installation's requests with a secondary rate limit for `retryAfterSeconds`. */
  secondaryRateLimit(installation: number, retryAfterSeconds: number): void {
    this.#secondaryUntil.set(installation, this.clock() + retryAfterSeconds * 1000);
  }

  /** The next `times` requests of `method` whose path matches `path` answer `status` with `message`. */
  failNext(method: string, path: RegExp, status: number, message: string, times = 1, headers: Record<string, string> = {}): void {
    this.#faults.push({ method, path, status, message, times, headers });
  }

  #rateWindow(installation: number): { limit: number; used: number; resetAt: number } {
    let window = this.#rateLimits.get(installation);
    if (!window) this.#rateLimits.set(installation, (window = { limit: 5000, used: 0, resetAt: this.clock() + 3600_000 }));
    if (this.clock() >= window.resetAt) Object.assign(window, { used: 0, resetAt: this.clock() + 3600_000 });
    return window;
  }

  /** Sets the rate-limit headers; answers (and returns true) when a limit or a fault refuses the request. */
  protected answerLimitsAndFaults(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    res.setHeader("date", new Date(this.clock()).toUTCString());
    const refuse = (status: number, message: string, headers: Record<string, string> = {}, documentation = "https://docs.github.com/rest") => {
      res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify({ message, documentation_url: documentation }));
      return true;
    };
    const installation = /^token ghs_installation_(\d+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (installation !== undefined) {
      const id = Number(installation);
      const window = this.#rateWindow(id);
      const headers = () => ({
        "x-ratelimit-limit": String(window.limit),
        "x-ratelimit-remaining": String(Math.max(0, window.limit - window.used)),
        "x-ratelimit-used": String(window.used),
        "x-ratelimit-reset": String(Math.ceil(window.resetAt / 1000)),
        "x-ratelimit-resource": "core",
      });
      const rateLimitDocs = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api";
      if (window.used >= window.limit) return refuse(403, `API rate limit exceeded for installation ID ${id}.`, headers(), rateLimitDocs);
      const secondaryUntil = this.#secondaryUntil.get(id) ?? 0;
      if (this.clock() < secondaryUntil) {
        return refuse(
          403,
          "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
          { ...headers(), "retry-after": String(Math.ceil((secondaryUntil - this.clock()) / 1000)) },
          rateLimitDocs,
        );
      }
      window.used++;
      for (const [name, value] of Object.entries(headers())) res.setHeader(name, value);
    }
    const fault = this.#faults.find((f) => f.times > 0 && f.method === req.method && f.path.test(path));
    if (!fault) return false;
    fault.times--;
    return refuse(fault.status, fault.message, fault.headers);
  }
}
