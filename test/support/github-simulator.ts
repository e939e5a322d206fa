import { createHash, createHmac, createPublicKey, generateKeyPairSync, verify } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A simulated GitHub, served over HTTP so the real Octokit (through Probot) talks to it.
 * It keeps a small model — App installations; repositories as commit graphs with whole trees
 * and branches; pull requests (one commit on top of the base they were opened on); branch
 * protection — and speaks in domain verbs (`installApp`, `openPr`, `closePr`, `files`).
 * Merges apply a PR's changes and refuse conflicts; a ref update refuses what is not a
 * fast-forward; a PR whose head lands on its base branch becomes merged, as on GitHub.
 */

type Tree = Record<string, string>;
type Commit = { sha: string; parents: string[]; tree: Tree; message: string };

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
  /** The commit of the base branch the PR was opened on (its head's parent). */
  baseSha: string;
  files: Tree;
};

export type SimulatorRequest = { method: string; path: string; authorization: string | undefined };

export class GitHubSimulator {
  readonly appId = "12345";
  readonly webhookSecret = "simulated-webhook-secret";
  readonly privateKey: string;
  readonly #publicKey;
  readonly #installations = new Map<number, { account: string }>();
  readonly #pulls = new Map<string, PullRequest>();
  readonly #refs = new Map<string, string>();
  readonly #commits = new Map<string, Commit>();
  readonly #protection = new Map<string, string[]>();
  /** Commit statuses and PR comments Greenline posted, in order. */
  readonly statuses: { repo: string; sha: string; context: string; state: string; description: string }[] = [];
  readonly comments: { repo: string; number: number; body: string }[] = [];
  /** What users may do, by "owner/name:user" (lower-case); anyone else may only read. */
  readonly #permissions = new Map<string, "admin" | "write" | "read" | "none">();
  #counter = 0;
  readonly requests: SimulatorRequest[] = [];
  #server: Server | null = null;
  url = "";

  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    this.privateKey = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    this.#publicKey = createPublicKey(publicKey.export({ type: "spki", format: "pem" }));
  }

  async start(): Promise<this> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        this.#handle(req, res, text ? (JSON.parse(text) as Record<string, unknown>) : {});
      });
    });
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

  /** Opens a PR: one commit changing `files` (default: a file of its own) on top of its base branch. */
  openPr(repo: string, pr: Partial<Omit<PullRequest, "headSha" | "baseSha">> & { number: number }): PullRequest {
    const base = pr.base ?? "main";
    const baseSha = this.branchHead(repo, base);
    const files = pr.files ?? { [`changes/pr-${pr.number}.txt`]: `change of #${pr.number}\n` };
    const headSha = this.#commit([baseSha], { ...this.#commits.get(baseSha)!.tree, ...files }, `PR #${pr.number}`);
    const full: PullRequest = {
      title: `PR #${pr.number}`,
      author: "octocat",
      headRef: `feature-${pr.number}`,
      base,
      state: "open",
      merged: false,
      draft: false,
      mergeableState: "clean",
      ...pr,
      files,
      baseSha,
      headSha,
    };
    this.#pulls.set(`${repo.toLowerCase()}#${pr.number}`, full);
    return full;
  }

  pr(repo: string, number: number): PullRequest | undefined {
    return this.#pulls.get(`${repo.toLowerCase()}#${number}`);
  }

  /** The head commit of a branch; a branch other than a testing branch is created on first use. */
  branchHead(repo: string, branch: string): string {
    const key = `${repo.toLowerCase()}:${branch}`;
    if (!this.#refs.has(key)) this.#refs.set(key, this.#commit([], { "README.md": `# ${repo}\n` }, "Initial commit"));
    return this.#refs.get(key)!;
  }

  /** The files on a branch. */
  files(repo: string, branch: string): Tree {
    return this.#commits.get(this.branchHead(repo, branch))!.tree;
  }

  /** Branches whose name starts with `prefix`, with their heads. */
  branches(repo: string, prefix: string): { name: string; sha: string }[] {
    const start = `${repo.toLowerCase()}:`;
    return [...this.#refs].filter(([k]) => k.startsWith(start + prefix)).map(([k, sha]) => ({ name: k.slice(start.length), sha }));
  }

  /** Commits from a branch's head back to the first, first parents only. */
  history(repo: string, branch: string): Commit[] {
    const out: Commit[] = [];
    for (let c = this.#commits.get(this.branchHead(repo, branch)); c; c = this.#commits.get(c.parents[0] ?? "")) out.push(c);
    return out;
  }

  /** Branch protection: the statuses a branch requires. */
  protect(repo: string, branch: string, contexts: string[]): void {
    this.#protection.set(`${repo.toLowerCase()}:${branch}`, contexts);
  }

  /** Pushes a commit to a branch directly (outside any PR). */
  push(repo: string, branch: string, files: Tree): string {
    const head = this.branchHead(repo, branch);
    const sha = this.#commit([head], { ...this.#commits.get(head)!.tree, ...files }, "Direct push");
    this.#setRef(repo, branch, sha);
    return sha;
  }

  #commit(parents: string[], tree: Tree, message: string): string {
    const sha = createHash("sha1")
      .update(JSON.stringify([parents, tree, message, ++this.#counter]))
      .digest("hex");
    this.#commits.set(sha, { sha, parents, tree, message });
    return sha;
  }

  #isAncestor(ancestor: string, of: string): boolean {
    const seen = new Set<string>();
    const todo = [of];
    while (todo.length > 0) {
      const sha = todo.pop()!;
      if (sha === ancestor) return true;
      if (seen.has(sha)) continue;
      seen.add(sha);
      todo.push(...(this.#commits.get(sha)?.parents ?? []));
    }
    return false;
  }

  #setRef(repo: string, branch: string, sha: string): void {
    this.#refs.set(`${repo.toLowerCase()}:${branch}`, sha);
    // As on GitHub: a PR whose head is now on its base branch is merged.
    for (const [key, pr] of this.#pulls) {
      if (key.startsWith(`${repo.toLowerCase()}#`) && pr.base === branch && pr.state === "open" && this.#isAncestor(pr.headSha, sha)) {
        pr.merged = true;
        pr.state = "closed";
      }
    }
  }

  /** Applies the changes of `head` (a PR commit: its tree against its first parent) on top of `base`; null on a conflict. */
  #applyChanges(baseSha: string, headSha: string): Tree | null {
    const head = this.#commits.get(headSha)!;
    const from = this.#commits.get(head.parents[0] ?? "")?.tree ?? {};
    const tree = { ...this.#commits.get(baseSha)!.tree };
    for (const [file, content] of Object.entries(head.tree)) {
      if (from[file] === content) continue;
      if (tree[file] !== undefined && tree[file] !== from[file] && tree[file] !== content) return null;
      tree[file] = content;
    }
    return tree;
  }

  closePr(repo: string, number: number): void {
    const pr = this.#pulls.get(`${repo.toLowerCase()}#${number}`);
    if (pr) pr.state = "closed";
  }

  grant(repo: string, user: string, permission: "admin" | "write" | "read" | "none"): void {
    this.#permissions.set(`${repo.toLowerCase()}:${user.toLowerCase()}`, permission);
  }

  // ------------------------------------------------------------- merging (refusals, races)
  // Added for the merging work: protection that refuses direct pushes, pushes to a PR whose
  // webhook is never delivered, and someone else's commit landing while PRs are merged.

  /** Branch protection or rulesets: pushes refused ("pull requests required"); `approvals`: merges need that many reviews. */
  readonly #pullRequestsRequired = new Map<string, { approvals: number }>();
  /** Run just before GitHub merges a PR (by "owner/name#number"), once. */
  readonly #beforeMerge = new Map<string, () => undefined | { status: number; message: string }>();

  /**
   * Requires pull requests on a branch, as classic protection or a ruleset does: a ref update
   * (a direct push) answers 422 "Changes must be made through a pull request."; with
   * `approvals`, merging a PR answers 405 until it has that many approving reviews (never here).
   */
  requirePullRequests(repo: string, branch: string, options: { approvals?: number } = {}): void {
    this.#pullRequestsRequired.set(`${repo.toLowerCase()}:${branch}`, { approvals: options.approvals ?? 0 });
  }

  /**
   * Pushes new changes to a PR's branch (a force-push: one commit on the PR's base with its
   * files and these), and sends no webhook: a `synchronize` delivery late or lost. Answers the
   * new head.
   */
  amendPr(repo: string, number: number, files: Tree): string {
    const pr = this.pr(repo, number);
    if (!pr) throw new Error(`no PR #${number} in ${repo}`);
    pr.files = { ...pr.files, ...files };
    pr.headSha = this.#commit([pr.baseSha], { ...this.#commits.get(pr.baseSha)!.tree, ...pr.files }, `PR #${number}, amended`);
    return pr.headSha;
  }

  /**
   * Runs `action` (a push of someone else's, say) right before GitHub merges PR `number`, once;
   * an answer it returns is sent instead of merging (a failure of GitHub's).
   */
  beforeMerge(repo: string, number: number, action: () => undefined | { status: number; message: string }): void {
    this.#beforeMerge.set(`${repo.toLowerCase()}#${number}`, action);
  }

  /** A commit's parents (first parent first). */
  parentsOf(sha: string): string[] {
    return this.#commits.get(sha)?.parents ?? [];
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

  #handle(req: IncomingMessage, res: ServerResponse, body: Record<string, any>): void {
    // Octokit escapes the slashes of a ref ("heads%2Fgreenline%2F…"), as GitHub accepts.
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
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
    const refKey = (branch: string) => `${repoName}:${branch}`;
    if ((match = /^\/repos\/[^/]+\/[^/]+\/branches\/(.+)\/protection\/required_status_checks$/.exec(path)) && req.method === "GET") {
      const contexts = this.#protection.get(refKey(decodeURIComponent(match[1]!)));
      return contexts ? send(200, { strict: false, contexts, checks: contexts.map((context) => ({ context, app_id: null })) }) : notFound();
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/branches\/(.+)$/.exec(path)) && req.method === "GET") {
      const branch = decodeURIComponent(match[1]!);
      if (branch.startsWith("greenline/") && !this.#refs.has(refKey(branch))) return notFound();
      return send(200, { name: branch, commit: { sha: this.branchHead(repoName, branch) } });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/contents\/(.+)$/.exec(path)) && req.method === "GET") {
      // GET a file's contents at a ref (commit sha or branch), base64 as GitHub sends them.
      const ref = new URL(req.url ?? "/", "http://x").searchParams.get("ref") ?? "main";
      const sha = this.#commits.has(ref) ? ref : this.#refs.get(refKey(ref));
      const content = sha === undefined ? undefined : this.#commits.get(sha)?.tree[match[1]!];
      if (content === undefined) return notFound();
      return send(200, { type: "file", encoding: "base64", path: match[1], content: Buffer.from(content).toString("base64").replace(/.{60}/g, "$&\n") });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/compare\/(.+)\.\.\.(.+)$/.exec(path)) && req.method === "GET") {
      const base = match[1]!;
      const baseHead = this.#commits.has(base) ? base : this.branchHead(repoName, base);
      const head = decodeURIComponent(match[2]!);
      if (!this.#commits.has(head)) return notFound();
      const behind = !this.#isAncestor(baseHead, head);
      return send(200, { behind_by: behind ? 1 : 0, ahead_by: 1, status: behind ? "diverged" : "ahead", merge_base_commit: { sha: behind ? (this.#commits.get(head)!.parents[0] ?? head) : baseHead } });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/statuses\/([0-9a-f]+)$/.exec(path)) && req.method === "POST") {
      if (!this.#commits.has(match[1]!)) return send(422, { message: "No commit found for SHA" });
      this.statuses.push({ repo: repoName, sha: match[1]!, context: String(body.context), state: String(body.state), description: String(body.description ?? "") });
      return send(201, { id: this.statuses.length, state: body.state, context: body.context });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/collaborators\/([^/]+)\/permission$/.exec(path)) && req.method === "GET") {
      const permission = this.#permissions.get(`${repoName}:${match[1]!.toLowerCase()}`) ?? "read";
      return send(200, { permission, role_name: permission === "admin" ? "admin" : permission === "write" ? "write" : "read", user: { login: match[1] } });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/issues\/(\d+)\/comments$/.exec(path)) && req.method === "POST") {
      if (!this.#pulls.has(`${repoName}#${match[1]}`)) return notFound();
      this.comments.push({ repo: repoName, number: Number(match[1]), body: String(body.body) });
      return send(201, { id: this.comments.length, body: body.body });
    }
    if (/^\/repos\/[^/]+\/[^/]+\/git\/refs$/.test(path) && req.method === "POST") {
      const branch = String(body.ref).replace(/^refs\/heads\//, "");
      if (this.#refs.has(refKey(branch))) return send(422, { message: "Reference already exists" });
      if (!this.#commits.has(String(body.sha))) return send(422, { message: "Object does not exist" });
      this.#refs.set(refKey(branch), String(body.sha));
      return send(201, { ref: `refs/heads/${branch}`, object: { sha: body.sha } });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/git\/refs\/heads\/(.+)$/.exec(path)) && (req.method === "PATCH" || req.method === "DELETE")) {
      const branch = decodeURIComponent(match[1]!);
      const current = this.#refs.get(refKey(branch));
      if (current === undefined) return send(422, { message: "Reference does not exist" });
      if (req.method === "DELETE") {
        this.#refs.delete(refKey(branch));
        res.writeHead(204).end();
        return;
      }
      if (this.#pullRequestsRequired.has(refKey(branch))) return send(422, { message: "Changes must be made through a pull request.", documentation_url: "https://docs.github.com/rest/git/refs#update-a-reference" });
      if (!body.force && !this.#isAncestor(current, String(body.sha))) return send(422, { message: "Update is not a fast forward" });
      this.#setRef(repoName, branch, String(body.sha));
      return send(200, { ref: `refs/heads/${branch}`, object: { sha: body.sha } });
    }
    if (/^\/repos\/[^/]+\/[^/]+\/merges$/.test(path) && req.method === "POST") {
      const branch = String(body.base);
      const baseSha = this.#refs.get(refKey(branch));
      const head = String(body.head);
      if (baseSha === undefined || !this.#commits.has(head)) return notFound();
      if (this.#isAncestor(head, baseSha)) {
        res.writeHead(204).end();
        return;
      }
      const tree = this.#applyChanges(baseSha, head);
      if (!tree) return send(409, { message: "Merge conflict" });
      const sha = this.#commit([baseSha, head], tree, String(body.commit_message ?? "Merge"));
      this.#setRef(repoName, branch, sha);
      return send(201, { sha });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/pulls\/(\d+)\/merge$/.exec(path)) && req.method === "PUT") {
      const pr = this.#pulls.get(`${repoName}#${match[1]}`);
      if (!pr) return notFound();
      if (pr.merged || pr.state !== "open") return send(405, { message: "Pull Request is not mergeable" });
      if (body.sha && body.sha !== pr.headSha) return send(409, { message: "Head branch was modified. Review and try the merge again." });
      if ((this.#pullRequestsRequired.get(refKey(pr.base))?.approvals ?? 0) > 0) {
        return send(405, { message: "At least 1 approving review is required by reviewers with write access.", documentation_url: "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request" });
      }
      const hook = this.#beforeMerge.get(`${repoName}#${pr.number}`);
      this.#beforeMerge.delete(`${repoName}#${pr.number}`);
      const answer = hook?.();
      if (answer) return send(answer.status, { message: answer.message });
      const baseSha = this.branchHead(repoName, pr.base);
      const tree = this.#applyChanges(baseSha, pr.headSha);
      if (!tree) return send(405, { message: "Pull Request is not mergeable" });
      const sha = body.merge_method === "merge" ? this.#commit([baseSha, pr.headSha], tree, `Merge pull request #${pr.number}`) : this.#commit([baseSha], tree, `${pr.title} (#${pr.number})`);
      this.#setRef(repoName, pr.base, sha);
      pr.merged = true;
      pr.state = "closed";
      return send(200, { sha, merged: true, message: "Pull Request successfully merged" });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/git\/commits\/([0-9a-f]+)$/.exec(path)) && req.method === "GET") {
      // GET a commit (merging checks what each merge landed on).
      const commit = this.#commits.get(match[1]!);
      if (!commit) return notFound();
      return send(200, { sha: commit.sha, message: commit.message, parents: commit.parents.map((sha) => ({ sha })), tree: { sha: createHash("sha1").update(JSON.stringify(commit.tree)).digest("hex") } });
    }
    if ((match = /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)$/.exec(path)) && req.method === "GET") {
      const pr = this.#pulls.get(`${match[1]!.toLowerCase()}/${match[2]!.toLowerCase()}#${match[3]}`);
      if (!pr) return notFound();
      return send(200, {
        number: pr.number,
        title: pr.title,
        user: { login: pr.author },
        head: { sha: pr.headSha, ref: pr.headRef },
        base: { ref: pr.base, sha: pr.baseSha },
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
