import type { IncomingMessage, ServerResponse } from "node:http";
import type { RepositorySettings } from "./shapes.js";

/** A request the simulator received (`GitHubSimulator.requests`, in order) and, once answered, its answer. */
export type SimulatorRequest = {
  method: string;
  path: string;
  authorization: string | undefined;
  /** When it arrived: `performance.now()` of this process (the bench times calls with it). */
  at: number;
  /** A GraphQL request's body (its query and variables): what it asked is not in its path. */
  graphql?: { query?: unknown; variables?: unknown };
  /** The answer, for conformance checks. */
  status?: number;
  response?: unknown;
};

/** Answers a request (JSON, recorded in its log entry); always true: "answered". */
export type Send = (status: number, answer?: unknown) => true;

/** How a route answers: `send` a status and body, an `error` in GitHub's shape, or `notFound`. */
export type Reply = {
  send: Send;
  error: (status: number, message: string, documentation?: string) => true;
  notFound: (message?: string) => true;
};

/** What an API route is handed: the request, and how to answer it. Routes return true once they answered. */
export type AppRequest = Reply & {
  req: IncomingMessage;
  method: string;
  path: string;
  query: URLSearchParams;
  body: Record<string, any>;
};

/** A `/repos/{owner}/{repo}/…` route's request, once the installation token was accepted. */
export type RepoRequest = AppRequest & {
  /** The path after `/repos/{owner}/{repo}`. */
  rest: string;
  /** The installation whose token called. */
  installation: number;
  /** "owner" as the path spells it. */
  owner: string;
  /** "owner/name", lower-case (the model's key). */
  repoName: string;
  /** "owner/name" as the path spells it. */
  fullName: string;
  settings: RepositorySettings;
  /** The model's key of one of the repository's branches. */
  refKey: (branch: string) => string;
  /** A sha, or a branch name, as GitHub resolves `{ref}`. */
  resolveRef: (ref: string) => string | undefined;
};

/** Logs a request in `log` and gives the ways to answer it, each recording the answer in the log entry. */
export function logRequest(log: SimulatorRequest[], req: IncomingMessage, res: ServerResponse, method: string, path: string): { record: SimulatorRequest } & Reply {
  const record: SimulatorRequest = { method, path, authorization: req.headers.authorization, at: performance.now() };
  log.push(record);
  const send: Send = (status, answer) => {
    record.status = status;
    record.response = answer;
    if (answer === undefined) res.writeHead(status).end();
    else res.writeHead(status, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(answer));
    return true;
  };
  const error = (status: number, message: string, documentation = "https://docs.github.com/rest") => send(status, { message, documentation_url: documentation, status: String(status) });
  const notFound = (message = "Not Found") => error(404, message);
  return { record, send, error, notFound };
}
