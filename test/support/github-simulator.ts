import { createHmac, createPublicKey, generateKeyPairSync, verify } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A simulated GitHub, served over HTTP so the real Octokit (through Probot) talks to it.
 * It keeps a small model — App installations, pull requests — and speaks in domain verbs
 * (`installApp`, `openPr`, `closePr`). It grows with what Greenline asks of GitHub.
 */

type PullRequest = {
  number: number;
  title: string;
  author: string;
  headSha: string;
  headRef: string;
  base: string;
  state: "open" | "closed";
  merged: boolean;
  draft: boolean;
  mergeableState: "clean" | "dirty" | "blocked" | "behind" | "unknown" | "unstable";
  /** Commits of the base branch the head lacks (0: up to date). */
  behindBy: number;
};

export type SimulatorRequest = { method: string; path: string; authorization: string | undefined };

export class GitHubSimulator {
  readonly appId = "12345";
  readonly webhookSecret = "simulated-webhook-secret";
  readonly privateKey: string;
  readonly #publicKey;
  readonly #installations = new Map<number, { account: string }>();
  readonly #pulls = new Map<string, PullRequest>();
  readonly #branches = new Map<string, string>();
  readonly requests: SimulatorRequest[] = [];
  #server: Server | null = null;
  url = "";

  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    this.privateKey = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    this.#publicKey = createPublicKey(publicKey.export({ type: "spki", format: "pem" }));
  }

  async start(): Promise<this> {
    this.#server = createServer((req, res) => this.#handle(req, res));
    await new Promise<void>((resolve) => this.#server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()) ?? resolve());
  }

  installApp(id: number, account: string): { id: number; account: string } {
    this.#installations.set(id, { account });
    return { id, account };
  }

  openPr(repo: string, pr: Partial<PullRequest> & { number: number }): PullRequest {
    const full: PullRequest = {
      title: `PR #${pr.number}`,
      author: "octocat",
      headSha: createHmac("sha1", "sha").update(`${repo}#${pr.number}`).digest("hex"),
      headRef: `feature-${pr.number}`,
      base: "main",
      state: "open",
      merged: false,
      draft: false,
      mergeableState: "clean",
      behindBy: 0,
      ...pr,
    };
    this.#pulls.set(`${repo.toLowerCase()}#${pr.number}`, full);
    return full;
  }

  /** The head commit of a branch (created on first use). */
  branchHead(repo: string, branch: string): string {
    const key = `${repo.toLowerCase()}:${branch}`;
    if (!this.#branches.has(key)) this.#branches.set(key, createHmac("sha1", "sha").update(key).digest("hex"));
    return this.#branches.get(key)!;
  }

  closePr(repo: string, number: number): void {
    const pr = this.#pulls.get(`${repo.toLowerCase()}#${number}`);
    if (pr) pr.state = "closed";
  }

  /** Signs a webhook delivery as GitHub does (X-Hub-Signature-256). */
  sign(body: string, secret = this.webhookSecret): string {
    return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
  }

  #appJwtValid(authorization: string | undefined): boolean {
    const token = authorization?.replace(/^(bearer|Bearer) /, "");
    const [header, payload, signature] = token?.split(".") ?? [];
    if (!header || !payload || !signature) return false;
    const ok = verify("RSA-SHA256", Buffer.from(`${header}.${payload}`), this.#publicKey, Buffer.from(signature, "base64url"));
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as { iss?: string | number };
    return ok && String(claims.iss) === this.appId;
  }

  #installationFor(owner: string): number | undefined {
    for (const [id, installation] of this.#installations) if (installation.account.toLowerCase() === owner.toLowerCase()) return id;
    return undefined;
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    this.requests.push({ method: req.method ?? "GET", path, authorization: req.headers.authorization });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    };
    const notFound = () => send(404, { message: "Not Found", documentation_url: "https://docs.github.com/rest" });
    let match: RegExpExecArray | null;

    if ((match = /^\/repos\/([^/]+)\/([^/]+)\/installation$/.exec(path)) && req.method === "GET") {
      if (!this.#appJwtValid(req.headers.authorization)) return send(401, { message: "A JSON web token could not be decoded" });
      const id = this.#installationFor(match[1]!);
      return id === undefined ? notFound() : send(200, { id, account: { login: this.#installations.get(id)!.account } });
    }
    if ((match = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path)) && req.method === "POST") {
      if (!this.#appJwtValid(req.headers.authorization)) return send(401, { message: "A JSON web token could not be decoded" });
      if (!this.#installations.has(Number(match[1]))) return notFound();
      return send(201, { token: `ghs_installation_${match[1]}`, expires_at: new Date(Date.now() + 3600_000).toISOString(), permissions: {}, repository_selection: "all" });
    }
    const repoMatch = /^\/repos\/([^/]+)\/([^/]+)\//.exec(path);
    if (repoMatch) {
      const installation = this.#installationFor(repoMatch[1]!);
      if (installation === undefined || req.headers.authorization !== `token ghs_installation_${installation}`) return send(401, { message: "Bad credentials" });
    }
    const repoName = repoMatch ? `${repoMatch[1]!.toLowerCase()}/${repoMatch[2]!.toLowerCase()}` : "";
    if ((match = /^\/repos\/[^/]+\/[^/]+\/branches\/(.+)$/.exec(path)) && req.method === "GET") {
      return send(200, { name: match[1], commit: { sha: this.branchHead(repoName, decodeURIComponent(match[1]!)) } });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/compare\/(.+)\.\.\.(.+)$/.exec(path)) && req.method === "GET") {
      const base = decodeURIComponent(match[1]!);
      const pr = [...this.#pulls.entries()].find(([key, p]) => key.startsWith(`${repoName}#`) && p.headSha === match![2])?.[1];
      if (!pr) return notFound();
      const head = this.branchHead(repoName, base);
      return send(200, { behind_by: pr.behindBy, ahead_by: 1, merge_base_commit: { sha: pr.behindBy === 0 ? head : `${head.slice(0, 30)}behind0000` } });
    }
    if ((match = /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)$/.exec(path)) && req.method === "GET") {
      const pr = this.#pulls.get(`${match[1]!.toLowerCase()}/${match[2]!.toLowerCase()}#${match[3]}`);
      if (!pr) return notFound();
      return send(200, {
        number: pr.number,
        title: pr.title,
        user: { login: pr.author },
        head: { sha: pr.headSha, ref: pr.headRef },
        base: { ref: pr.base },
        state: pr.state,
        merged: pr.merged,
        draft: pr.draft,
        mergeable: pr.mergeableState === "unknown" ? null : pr.mergeableState !== "dirty",
        mergeable_state: pr.mergeableState,
      });
    }
    notFound();
  }
}
