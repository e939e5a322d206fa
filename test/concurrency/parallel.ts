import { request } from "node:http";
import type { ApiClient, ApiResponse } from "../support/harness.js";

/**
 * Calls the API on a connection of its own, closed after the answer. Fired by the dozen, pooled
 * keep-alive connections sit idle while the worker drains, the server closes them (after 5 s),
 * and a request sent on one as it closes is reset: a property of HTTP keep-alive, not of the
 * service, which fresh connections avoid.
 */
export function callOnce(api: ApiClient, operation: string, body: unknown): Promise<ApiResponse> {
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(`${api.baseUrl}/v1/${operation}`, { method: "POST", agent: false, headers: { "content-type": "application/json", "content-length": payload.length, "x-api-token": api.token } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode!, body: parsed, headers: new Headers(res.headers as Record<string, string>), text });
      });
    });
    req.on("error", reject);
    req.end(payload);
  });
}

/** `n` requests fired together. */
export const times = <T>(n: number, request: (i: number) => Promise<T>): Promise<T[]> => Promise.all(Array.from({ length: n }, (_, i) => request(i)));

/** How many answers had each status, e.g. { 200: 1, 409: 19 }. */
export function countStatuses(responses: ApiResponse[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const r of responses) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

/** Every answer is 200 or one of `allowed`'s statuses, with the error code that goes with it. */
export function expectOnly(responses: ApiResponse[], allowed: Record<number, string> = {}): void {
  for (const r of responses) {
    if (r.status === 200) continue;
    if (!(r.status in allowed))
      throw new Error(
        `answered ${r.status}, allowed are 200${Object.keys(allowed)
          .map((s) => ` and ${s}`)
          .join("")}: ${r.text}`,
      );
    expect(r.body.error.code).toBe(allowed[r.status]);
  }
}
