import { rng } from "./random.js";
import { Agent, request } from "node:http";

/**
 * A generated mix of valid and invalid API requests over a few kept-alive connections, as the
 * load of issue 22 (item 10) was made, and what each answer took. Shared by `npm run
 * bench:api-load` and test/api/load.test.ts.
 */

export type Answer = { status: number; retryAfter: string | undefined; ms: number; text: string };

/** What was measured of one operation. */
export type OperationStats = {
  operation: string;
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  over1s: number;
  over5s: number;
  /** 503 answers, and how many of them lacked a Retry-After header. */
  unavailable: number;
  unavailableWithoutRetryAfter: number;
  /** 5xx answers other than 503. */
  serverErrors: number;
};

export type LoadReport = {
  requests: number;
  durationMs: number;
  /** Requests that got no answer: the connection was refused, reset or closed before one came. */
  failedConnections: number;
  connectionErrors: string[];
  operations: OperationStats[];
  all: OperationStats;
};

const TOKEN_HEADER = "x-api-token";

type Call = { operation: string; method: "GET" | "POST"; path: string; body?: unknown };

/** One request through `agent`; rejects only when no answer came (a failed connection). */
export function send(baseUrl: string, token: string, agent: Agent, call: Call): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const body = call.body === undefined ? undefined : typeof call.body === "string" ? call.body : JSON.stringify(call.body);
    const headers: Record<string, string> = { [TOKEN_HEADER]: token };
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      headers["content-length"] = String(Buffer.byteLength(body));
    }
    const req = request(`${baseUrl}${call.path}`, { method: call.method, agent, headers });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => {
        const retryAfter = res.headers["retry-after"];
        resolve({ status: res.statusCode!, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, ms: performance.now() - started, text });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

const repo = (name: string) => ({ host: "github.com", owner: "load", name });

/** The queues, PRs and endpoints the mix works on. */
export type LoadWorld = { repos: string[]; branches: string[]; prs: number; endpointIds: string[] };

/**
 * Creates the world the mix works on: `repos` repositories with a queue each (and `extraQueues`
 * more on other branches of the first), and seeds `cycles` submit/cancel rounds of `prs` pull
 * requests, so the metrics' window holds transitions and long histories.
 */
export async function seedWorld(baseUrl: string, token: string, options: { repos: number; prs: number; cycles: number; extraQueues?: number; connections?: number }): Promise<LoadWorld> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections ?? 4 });
  const call = async (path: string, body: unknown) => {
    const answer = await send(baseUrl, token, agent, { operation: path, method: "POST", path: `/v1/${path}`, body });
    if (answer.status !== 200) throw new Error(`${path} answered ${answer.status}`);
  };
  try {
    const repos = Array.from({ length: options.repos }, (_, i) => `repo${i}`);
    const branches = ["main", ...Array.from({ length: options.extraQueues ?? 0 }, (_, i) => `extra-${i}`)];
    for (const name of repos) await call("createQueue", { repo: repo(name), targetBranch: "main" });
    for (const branch of branches.slice(1)) await call("createQueue", { repo: repo(repos[0]!), targetBranch: branch });
    const jobs: (() => Promise<void>)[] = [];
    for (const name of repos)
      for (let number = 1; number <= options.prs; number++)
        jobs.push(async () => {
          const pr = { repo: repo(name), targetBranch: "main", pr: { number } };
          for (let round = 0; round < options.cycles; round++) {
            await call("submitPullRequest", pr);
            await call("cancelPullRequest", pr);
          }
        });
    let next = 0;
    await Promise.all(
      Array.from({ length: options.connections ?? 4 }, async () => {
        while (next < jobs.length) await jobs[next++]!();
      }),
    );
    return { repos, branches, prs: options.prs, endpointIds: [] };
  } finally {
    agent.destroy();
  }
}

/** The next request of the mix: valid and invalid forms of the operations the issue names, and others. */
function nextCall(random: () => number, world: LoadWorld, created: string[]): Call {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const name = pick(world.repos);
  const queue = { repo: repo(name), targetBranch: "main" };
  const pr = { ...queue, pr: { number: 1 + Math.floor(random() * world.prs) } };
  const invalid = random() < 0.3;
  const r = random();
  const post = (operation: string, path: string, body: unknown): Call => ({ operation, method: "POST", path: `/v1/${path}`, body });
  if (r < 0.2) {
    const query = invalid ? `?repo=load/${name}` : random() < 0.5 ? "" : `?repo=load/${name}&repoHost=github.com`;
    return { operation: "getMergeQueueMetrics", method: "GET", path: `/v1/getMergeQueueMetrics${query}` };
  }
  if (r < 0.3)
    return post("updateFlakySettings", "flaky-tests/update-settings", { repo: repo(name), org_url_slug: "load", settings: invalid ? { flakyRate: 0.9, brokenRate: 0.5 } : { windowDays: 1 + Math.floor(random() * 30) } });
  if (r < 0.4) return post("updateQueue", "updateQueue", invalid ? { ...queue, deleteRequiredStatuses: true, requiredStatuses: ["ci"] } : { ...queue, state: random() < 0.5 ? "paused" : "running" });
  if (r < 0.47) return post("createWebhookEndpoint", "webhooks/create-endpoint", invalid ? { url: "", events: [] } : { url: `https://hooks.example.com/${Math.floor(random() * 1e9)}`, events: ["*"] });
  if (r < 0.54) {
    const id = invalid || created.length === 0 ? `missing-${Math.floor(random() * 1e6)}` : created.splice(Math.floor(random() * created.length), 1)[0]!;
    return post("deleteWebhookEndpoint", "webhooks/delete-endpoint", { id });
  }
  if (r < 0.66) return post("submitPullRequest", "submitPullRequest", invalid ? { ...queue, pr: { number: -1 } } : pr);
  if (r < 0.76) return post("cancelPullRequest", "cancelPullRequest", invalid ? { ...queue, pr: { number: "x" } } : pr);
  if (r < 0.84) return post("getQueue", "getQueue", invalid ? { repo: { owner: "load" }, targetBranch: "main" } : queue);
  if (r < 0.92) return post("getSubmittedPullRequest", "getSubmittedPullRequest", invalid ? { ...pr, includeTimeline: "yes" } : { ...pr, includeTimeline: random() < 0.5 });
  if (r < 0.96) return post("getFlakySettings", "flaky-tests/get-settings", invalid ? { repo: "nope" } : { repo: repo(name), org_url_slug: "load" });
  return post("createQueue", "createQueue", invalid ? { repo: repo(name) } : { repo: repo(name), targetBranch: `branch-${Math.floor(random() * 1e9)}` });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function statsOf(operation: string, answers: Answer[]): OperationStats {
  const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  const unavailable = answers.filter((a) => a.status === 503);
  return {
    operation,
    count: answers.length,
    p50: round(percentile(ms, 50)),
    p95: round(percentile(ms, 95)),
    p99: round(percentile(ms, 99)),
    max: round(ms.at(-1) ?? 0),
    over1s: ms.filter((m) => m > 1000).length,
    over5s: ms.filter((m) => m > 5000).length,
    unavailable: unavailable.length,
    unavailableWithoutRetryAfter: unavailable.filter((a) => !a.retryAfter).length,
    serverErrors: answers.filter((a) => a.status >= 500 && a.status !== 503).length,
  };
}

/** Sends `requests` requests of the mix over `connections` kept-alive connections, each sending its next request when answered. */
export async function runLoad(baseUrl: string, token: string, world: LoadWorld, options: { requests: number; connections: number; seed?: number }): Promise<LoadReport> {
  // Seeded (mulberry32), so runs are comparable.
  const random = rng(options.seed ?? 22);
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections });
  const answers = new Map<string, Answer[]>();
  const created: string[] = [];
  const connectionErrors: string[] = [];
  let sent = 0;
  const started = performance.now();
  const worker = async () => {
    while (sent < options.requests) {
      sent++;
      const call = nextCall(random, world, created);
      try {
        const answer = await send(baseUrl, token, agent, call);
        (answers.get(call.operation) ?? answers.set(call.operation, []).get(call.operation)!).push(answer);
        if (call.operation === "createWebhookEndpoint" && answer.status === 200) created.push((JSON.parse(answer.text) as { endpoint: { id: string } }).endpoint.id);
      } catch (error) {
        connectionErrors.push(`${call.operation}: ${(error as Error).message}`);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: options.connections }, worker));
  } finally {
    agent.destroy();
  }
  const operations = [...answers].map(([operation, list]) => statsOf(operation, list)).sort((a, b) => a.operation.localeCompare(b.operation));
  return {
    requests: sent,
    durationMs: Math.round(performance.now() - started),
    failedConnections: connectionErrors.length,
    connectionErrors: connectionErrors.slice(0, 10),
    operations,
    all: statsOf("(all)", [...answers.values()].flat()),
  };
}

/** A Markdown table of a report's operations. */
export function reportTable(label: string, report: LoadReport): string {
  const lines = [`| ${label} | n | p50 ms | p95 ms | p99 ms | max ms | > 1 s | > 5 s | 503 (without Retry-After) | other 5xx |`, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"];
  for (const s of [...report.operations, report.all]) {
    lines.push(`| ${s.operation} | ${s.count} | ${s.p50} | ${s.p95} | ${s.p99} | ${s.max} | ${s.over1s} | ${s.over5s} | ${s.unavailable} (${s.unavailableWithoutRetryAfter}) | ${s.serverErrors} |`);
  }
  lines.push(
    `\n${report.requests} requests in ${(report.durationMs / 1000).toFixed(1)} s; failed connections: ${report.failedConnections}${report.connectionErrors.length ? ` (${report.connectionErrors.join("; ")})` : ""}`,
  );
  return lines.join("\n");
}
