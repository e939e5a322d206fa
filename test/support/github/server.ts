import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { SUSPENDED_MESSAGE } from "./installations.js";
import { covers, NOT_ACCESSIBLE, routeNeeds } from "./permissions.js";
import { Refusal } from "./protection.js";
import { RateLimits } from "./rate-limits.js";
import { type AppRequest, logRequest, type RepoRequest, type SimulatorRequest } from "./request-log.js";

/**
 * The simulator's HTTP server: it logs every request (`requests`), answers rate limits and
 * faults, GitHub's web pages (OAuth, App registration), then the API: the App's routes (JWT),
 * `/user` (user tokens), and `/repos/{owner}/{repo}/…` with an installation token — refused 401
 * for a token of another installation, 403 while suspended or without the permission the route
 * needs — handed to each concern's routes in turn.
 */
export abstract class SimulatorServer extends RateLimits {
  readonly requests: SimulatorRequest[] = [];
  #server: Server | null = null;
  url = "";

  async start(): Promise<this> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        let body: Record<string, unknown>;
        if (req.headers["content-type"]?.startsWith("application/x-www-form-urlencoded")) {
          // A browser posting a form (GitHub's web pages, not its API).
          this.#handle(req, res, Object.fromEntries(new URLSearchParams(text)));
          return;
        }
        try {
          body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
        } catch {
          res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ message: "Problems parsing JSON", documentation_url: "https://docs.github.com/rest" }));
          return;
        }
        this.#handle(req, res, body);
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()) ?? resolve());
  }

  #handle(req: IncomingMessage, res: ServerResponse, body: Record<string, any>): void {
    // Octokit escapes the slashes of a ref ("heads%2Fgreenline%2F…"), as GitHub accepts.
    const url = new URL(req.url ?? "/", "http://x");
    const path = decodeURIComponent(url.pathname);
    const method = req.method ?? "GET";
    const { record, send, error, notFound } = logRequest(this.requests, req, res, method, path);
    if (path === "/graphql") record.graphql = { query: body.query, variables: body.variables };
    if (this.answerLimitsAndFaults(req, res, path)) return;
    if (path === "/login/oauth/authorize" && method === "GET") return this.authorize(res, record, url.searchParams);
    if (path === "/login/oauth/access_token" && method === "POST") return this.exchangeCode(req, res, record, url.searchParams, body);
    const registration = /^(?:\/organizations\/([^/]+))?\/settings\/apps\/new$/.exec(path);
    if (registration && method === "POST") return this.registerFromManifest(res, record, registration[1], url.searchParams, body);
    try {
      this.#route({ req, method, path, query: url.searchParams, body, send, error, notFound });
    } catch (e) {
      if (e instanceof Refusal) {
        error(e.status, e.message);
        return;
      }
      throw e;
    }
  }

  /**
   * GitHub's GraphQL endpoint, for the one mutation Greenline sends (`updateRefs`); anything
   * else is answered as an unknown field. A refusal is `errors` with HTTP 200, as GitHub answers.
   */
  #answerGraphql({ req, body, send, error }: AppRequest): void {
    if (this.outage !== null) {
      error(this.outage, "Server Error");
      return;
    }
    const installation = /^token ghs_installation_(\d+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (installation === undefined) {
      error(401, "Bad credentials");
      return;
    }
    const query = String(body.query ?? "");
    const input = (body.variables as { input?: { repositoryId?: string; refUpdates?: [] } } | undefined)?.input;
    if (!/\bupdateRefs\s*\(/.test(query) || !input) {
      send(200, { errors: [{ message: "Field is not defined on Mutation", extensions: { code: "undefinedField" } }] });
      return;
    }
    const id = Number(installation);
    const refuse = (type: string, message: string) => send(200, { data: { updateRefs: null }, errors: [{ type, path: ["updateRefs"], message }] });
    const repo = this.repositoryOfNode(String(input.repositoryId ?? ""));
    if (!repo || this.installationFor(repo.split("/")[0]!) !== id) {
      refuse("NOT_FOUND", `Could not resolve to a node with the global id of '${String(input.repositoryId ?? "")}'`);
      return;
    }
    if (this.suspended.has(id)) {
      error(403, SUSPENDED_MESSAGE);
      return;
    }
    if (!covers(this.installations.get(id)!.permissions, [["contents", "write"]])) {
      refuse("FORBIDDEN", "Resource not accessible by integration");
      return;
    }
    const refused = this.updateRefs(id, repo, input.refUpdates ?? []);
    if (refused !== null) {
      refuse("UNPROCESSABLE", refused);
      return;
    }
    send(200, { data: { updateRefs: { clientMutationId: null } } });
  }

  #route(request: AppRequest): void {
    const { req, method, path, send, error, notFound } = request;
    if (this.answerManifestConversion(request) || this.answerApp(request) || this.answerUser(request)) return;
    if (path === "/graphql" && method === "POST") {
      this.#answerGraphql(request);
      return;
    }
    const repoMatch = /^\/repos\/([^/]+)\/([^/]+)(\/|$)/.exec(path);
    if (!repoMatch) {
      notFound();
      return;
    }
    if (this.outage !== null) {
      error(this.outage, "Server Error");
      return;
    }
    const installation = this.installationFor(repoMatch[1]!);
    if (installation === undefined || req.headers.authorization !== `token ghs_installation_${installation}`) {
      error(401, "Bad credentials");
      return;
    }
    // A token issued before the suspension is refused as the token request is.
    if (this.suspended.has(installation)) {
      error(403, SUSPENDED_MESSAGE);
      return;
    }
    const need = routeNeeds(method, path);
    if (need && !covers(this.installations.get(installation)!.permissions, need)) {
      send(403, { ...NOT_ACCESSIBLE, documentation_url: "https://docs.github.com/rest/authentication/permissions-required-for-github-apps" });
      return;
    }
    const repoName = `${repoMatch[1]!.toLowerCase()}/${repoMatch[2]!.toLowerCase()}`;
    const refKey = (branch: string) => `${repoName}:${branch}`;
    const r: RepoRequest = {
      ...request,
      rest: path.slice(`/repos/${repoMatch[1]}/${repoMatch[2]}`.length),
      installation,
      owner: repoMatch[1]!,
      repoName,
      fullName: `${repoMatch[1]}/${repoMatch[2]}`,
      settings: this.settings(repoName),
      refKey,
      resolveRef: (ref) => (this.commits.has(ref) ? ref : this.refs.get(refKey(ref.replace(/^(refs\/)?heads\//, "")))),
    };
    // Every repository has its default branch (GitHub creates it with the first commit): a test
    // need not create it. Any other branch exists only once created (404 "Branch not found").
    if (!this.refs.has(refKey(r.settings.defaultBranch))) this.branchHead(repoName, r.settings.defaultBranch);
    if (this.answerRepository(r) || this.answerRules(r) || this.answerActions(r) || this.answerChecks(r) || this.answerCollaborators(r) || this.answerMerge(r) || this.answerPulls(r)) return;
    notFound();
  }
}
