import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { type CiContext, type GitFacts, inferCiContext } from "./ci-context.js";
import { describeUnreachable, ServiceUnreachableError } from "./unreachable.js";

/**
 * What every client command shares: one way to post to Greenline's v1 API (an error answer
 * becomes a message naming the status and Greenline's own words), and the CI context read from
 * the environment, GitHub's event file and git. No database, no server code: the client CLI
 * is bundled from these files alone.
 */

/** A mistake in the command line: exit 2, with the command's usage line. */
export class CliUsageError extends Error {}

/** Greenline answered, and refused (4xx) or failed (5xx): the message names the operation, the status and Greenline's reason. */
export class GreenlineRefusal extends Error {
  constructor(
    path: string,
    readonly status: number,
    /** Greenline's own words (its JSON error's message, else the answer's start). */
    readonly reason: string,
  ) {
    super(`${path} answered ${status}: ${reason}`);
  }
}

/** Greenline's error text: `error.message` of its JSON error answer, else the answer's start. */
function reasonOf(text: string): string {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === "string" && message.trim()) return message;
  } catch {
    // not JSON (a proxy's page): its start says more than nothing
  }
  return text.trim().slice(0, 500) || "(empty answer)";
}

/**
 * POSTs `body` as JSON to `${baseUrl}/v1/${path}` with the token. Unreachable: a
 * ServiceUnreachableError (exit 69); an error answer: a GreenlineRefusal. `Answer` is the fields
 * of the answer the caller reads.
 */
export function postToGreenline<Answer>(baseUrl: string, token: string, path: string, body: object): Promise<Answer> {
  return callGreenline<Answer>(baseUrl, token, path, body);
}

/** GETs `${baseUrl}/v1/${path}` (an operation without input, such as webhooks/list-endpoints); answers as postToGreenline. */
export function getFromGreenline<Answer>(baseUrl: string, token: string, path: string): Promise<Answer> {
  return callGreenline<Answer>(baseUrl, token, path, null);
}

/** `body` null: a GET. */
async function callGreenline<Answer>(baseUrl: string, token: string, path: string, body: object | null): Promise<Answer> {
  const url = `${baseUrl}/v1/${path}`;
  let response: Response;
  let text: string;
  try {
    const request: RequestInit =
      body === null ? { method: "GET", headers: { "x-api-token": token } } : { method: "POST", headers: { "content-type": "application/json", "x-api-token": token }, body: JSON.stringify(body) };
    response = await fetch(url, { ...request, signal: AbortSignal.timeout(60_000) });
    text = await response.text();
  } catch (error) {
    throw describeUnreachable(url, error);
  }
  if (!response.ok) throw new GreenlineRefusal(path, response.status, reasonOf(text));
  try {
    return JSON.parse(text) as Answer;
  } catch {
    // Something answered, but not Greenline's API (a login page, a proxy, another service at that address).
    const type = response.headers.get("content-type") ?? "no content type";
    const start = text.trim().slice(0, 200);
    throw new ServiceUnreachableError(
      `${path}: the answer from ${url} (${response.status}, ${type}) is not JSON, so it is not Greenline's API: is the URL Greenline's address?${start ? ` It begins: ${start}` : " It is empty."}`,
    );
  }
}

/** Greenline's address from --url, else GREENLINE_URL: an http(s) URL, without a trailing slash; a usage error naming which otherwise. */
export function greenlineUrl(flag: string | undefined, env: string | undefined): string {
  const source = flag !== undefined ? "--url" : "GREENLINE_URL";
  const text = (flag ?? env)?.trim();
  if (!text) throw new CliUsageError("--url (or GREENLINE_URL) is required");
  let parsed: URL | undefined;
  try {
    parsed = new URL(text);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:") || parsed.search || parsed.hash) {
    throw new CliUsageError(`${source} must be Greenline's http or https address, such as https://greenline.example.com (got ${JSON.stringify(text)})`);
  }
  return text.replace(/\/+$/, "");
}

/** The API token from --token, else GREENLINE_API_TOKEN, trimmed; a usage error when there is none. */
export function greenlineToken(flag: string | undefined, env: string | undefined): string {
  const token = (flag ?? env)?.trim();
  if (!token) throw new CliUsageError("--token (or GREENLINE_API_TOKEN) is required");
  return token;
}

/**
 * owner and name of --repo (or the CI's): the last segment is the name, everything before it
 * the owner, so a GitLab project in nested groups (group/subgroup/project) keeps its full path.
 */
export function splitRepo(full: string): { owner: string; name: string } {
  const parts = full.trim().split("/");
  if (parts.length < 2 || parts.some((p) => p.trim() === "")) {
    throw new CliUsageError(`--repo must be owner/name (or group/subgroup/name for a GitLab project in nested groups; got ${full})`);
  }
  return { owner: parts.slice(0, -1).join("/"), name: parts.at(-1)! };
}

function git(args: string[]): string | undefined {
  try {
    return execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The git facts of the working directory. */
function readGitFacts(): GitFacts {
  return { remoteUrl: git(["remote", "get-url", "origin"]), head: git(["rev-parse", "HEAD"]), branch: git(["rev-parse", "--abbrev-ref", "HEAD"]) };
}

function readGitHubEvent(path: string | undefined): unknown {
  if (!path) return undefined;
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
}

/** This job's CI context (ci-context.ts) from the process's environment, GitHub's event file and git. */
export function inferFromEnvironment(): CiContext {
  const env = process.env;
  return inferCiContext({ env, git: readGitFacts(), githubEvent: readGitHubEvent(env.GITHUB_EVENT_PATH) });
}
