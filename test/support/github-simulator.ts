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

/** A commit status set by CI (the "ci" work's block). */
type CiStatus = { repo: string; id: number; sha: string; context: string; state: string; updated_at: string };

export type SimulatorRequest = { method: string; path: string; authorization: string | undefined };

// --- Events (what happens in the simulator, for webhook deliveries: test/support/github-webhooks.ts) ---

/** A commit as a push or status event describes it: files against its first parent. */
export type SimulatorCommit = { sha: string; parents: string[]; message: string; added: string[]; removed: string[]; modified: string[] };
export type SimulatorPullRequest = PullRequest;
export type SimulatorCheckRun = {
  id: number;
  name: string;
  headSha: string;
  status: "queued" | "in_progress" | "completed";
  conclusion: "success" | "failure" | "neutral" | "cancelled" | "timed_out" | "action_required" | "skipped" | null;
  suiteId: number;
};
/** Who did it: a user's login, or an App's bot ("greenline[bot]" for calls with an installation token). */
type Sender = { sender: string };
export type SimulatorEvent =
  | ({ kind: "push"; repo: string; branch: string; before: string; after: string; created: boolean; deleted: boolean; forced: boolean; commits: SimulatorCommit[] } & Sender)
  | ({
      kind: "status";
      repo: string;
      id: number;
      sha: string;
      context: string;
      state: string;
      description: string | null;
      targetUrl: string | null;
      commit: SimulatorCommit;
      branches: { name: string; sha: string }[];
    } & Sender)
  | ({ kind: "check_run"; action: "created" | "completed" | "rerequested"; repo: string; checkRun: SimulatorCheckRun; branch: string | null } & Sender)
  | ({ kind: "check_suite"; action: "completed"; repo: string; suiteId: number; headSha: string; branch: string | null; conclusion: string; runs: number } & Sender)
  | ({
      kind: "pull_request";
      action: "opened" | "synchronize" | "closed" | "reopened" | "edited";
      repo: string;
      pr: PullRequest;
      before?: string;
      after?: string;
      changes?: { base?: { ref: { from: string }; sha: { from: string } } };
    } & Sender)
  | ({ kind: "pull_request_review"; action: "submitted"; repo: string; pr: PullRequest; review: { id: number; state: "approved" | "changes_requested" | "commented"; body: string | null; commitId: string } } & Sender)
  | ({ kind: "issue_comment"; action: "created"; repo: string; pr: PullRequest; comment: { id: number; body: string } } & Sender)
  | ({ kind: "installation"; action: "created" | "deleted" | "suspend" | "unsuspend" | "new_permissions_accepted"; installation: { id: number; account: string }; repositories: string[] } & Sender)
  | ({ kind: "installation_repositories"; action: "added" | "removed"; installation: { id: number; account: string }; added: string[]; removed: string[] } & Sender);

/** The sender of what the App does with its installation token. */
export const APP_BOT = "greenline[bot]";

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
  /** Called when something happens that GitHub sends a webhook for (see github-webhooks.ts). */
  onEvent?: (event: SimulatorEvent) => void;
  readonly checkRuns: (SimulatorCheckRun & { repo: string })[] = [];
  #server: Server | null = null;
  url = "";
  /** Outages (inbox tests): while set, every API request is answered with this status, as when GitHub is down. */
  outage: number | null = null;

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
    this.onEvent?.({ kind: "installation", action: "created", installation: { id, account }, repositories: [], sender: account });
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
    this.onEvent?.({ kind: "pull_request", action: "opened", repo, pr: { ...full }, sender: full.author });
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
    this.#setRef(repo, branch, sha, "octocat");
    return sha;
  }

  // --- CI on commits and rulesets (added by the "ci" work; the strict simulator may supersede it) ---
  readonly #rulesets = new Map<string, string[]>();
  readonly #ciStatuses: CiStatus[] = [];
  readonly #checkRuns: { repo: string; id: number; sha: string; name: string; status: string; conclusion: string | null }[] = [];
  #ciIds = 1000;
  /** Whether the installation may read classic protection's endpoints (administration: read); app.yml does not ask for it. */
  administrationRead = false;
  /** Whether the rulesets route refuses the installation (403), so the checks a branch requires cannot be read. */
  rulesRefused = false;

  /** A ruleset on `branch` with a required_status_checks rule. */
  ruleset(repo: string, branch: string, contexts: string[]): void {
    this.#rulesets.set(`${repo.toLowerCase()}:${branch}`, contexts);
  }

  /** CI sets a commit status (GitHub keeps every one; the latest per context counts). Answers the `status` webhook payload's fields. */
  ciStatus(repo: string, sha: string, context: string, state: "pending" | "success" | "failure" | "error") {
    const status = { repo: repo.toLowerCase(), id: ++this.#ciIds, sha, context, state, updated_at: new Date().toISOString() };
    this.#ciStatuses.push(status);
    return { id: status.id, sha, context, state, updated_at: status.updated_at, created_at: status.updated_at };
  }

  /** CI creates a check run (`id` omitted) or updates one. Answers the `check_run` webhook payload's check_run. */
  checkRun(repo: string, sha: string, name: string, status: "queued" | "in_progress" | "completed", conclusion: string | null = null, id?: number) {
    let run = id === undefined ? undefined : this.#checkRuns.find((r) => r.id === id);
    if (!run) {
      run = { repo: repo.toLowerCase(), id: ++this.#ciIds, sha, name, status, conclusion };
      this.#checkRuns.push(run);
    }
    run.status = status;
    run.conclusion = conclusion;
    return { id: run.id, name, head_sha: sha, status, conclusion };
  }

  #ciRoutes(method: string, path: string, repoName: string, send: (status: number, body: unknown) => void): boolean {
    let match: RegExpExecArray | null;
    if (method !== "GET") return false;
    if ((match = /^\/repos\/[^/]+\/[^/]+\/rules\/branches\/(.+)$/.exec(path))) {
      if (this.rulesRefused) {
        send(403, { message: "Resource not accessible by integration", documentation_url: "https://docs.github.com/rest/repos/rules#get-rules-for-a-branch" });
        return true;
      }
      const contexts = this.#rulesets.get(`${repoName}:${match[1]}`);
      const rules = contexts
        ? [
            {
              type: "required_status_checks",
              ruleset_source_type: "Repository",
              ruleset_source: repoName,
              ruleset_id: 1,
              parameters: { strict_required_status_checks_policy: false, required_status_checks: contexts.map((context) => ({ context })) },
            },
          ]
        : [];
      const branch = match[1]!;
      const others = (this.#branchRulesets.get(repoName) ?? [])
        .filter((r) => r.branch === branch)
        .flatMap((r) => r.rules.map((rule) => ({ ...rule, ruleset_source_type: "Repository", ruleset_source: repoName, ruleset_id: r.id })));
      send(200, [...rules, ...others]);
      return true;
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/commits\/([0-9a-f]+)\/(status|check-runs|check-suites)$/.exec(path))) {
      const sha = match[1]!;
      const latest = new Map<string, CiStatus>();
      for (const s of this.#ciStatuses) if (s.repo === repoName && s.sha === sha) latest.set(s.context, s);
      const statuses = [...latest.values()].sort((a, b) => b.id - a.id);
      const runs = this.#checkRuns.filter((r) => r.repo === repoName && r.sha === sha);
      if (match[2] === "status") {
        const states = statuses.map((s) => s.state);
        const state = states.some((s) => s === "failure" || s === "error") ? "failure" : states.length === 0 || states.includes("pending") ? "pending" : "success";
        send(200, { state, sha, total_count: statuses.length, statuses: statuses.map(({ id, context, state, updated_at }) => ({ id, context, state, created_at: updated_at, updated_at })) });
      } else if (match[2] === "check-runs") {
        send(200, { total_count: runs.length, check_runs: runs.map(({ id, name, status, conclusion }) => ({ id, name, head_sha: sha, status, conclusion })) });
      } else {
        // One suite (one CI app) per commit holding its check runs.
        const suites = runs.length === 0 ? [] : [{ id: 1, head_sha: sha, status: runs.every((r) => r.status === "completed") ? "completed" : "in_progress", latest_check_runs_count: runs.length }];
        send(200, { total_count: suites.length, check_suites: suites });
      }
      return true;
    }
    return false;
  }
  // --- end of CI on commits and rulesets ---

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

  #setRef(repo: string, branch: string, sha: string, sender = APP_BOT): void {
    const before = this.#refs.get(`${repo.toLowerCase()}:${branch}`);
    this.#refs.set(`${repo.toLowerCase()}:${branch}`, sha);
    this.#emitPush(repo, branch, before, sha, sender);
    this.refPushes.push({ repo: repo.toLowerCase(), branch, sha });
    // As on GitHub: a PR whose head is now on its base branch is merged.
    for (const [key, pr] of this.#pulls) {
      if (key.startsWith(`${repo.toLowerCase()}#`) && pr.base === branch && pr.state === "open" && this.#isAncestor(pr.headSha, sha)) {
        pr.merged = true;
        pr.state = "closed";
        this.onEvent?.({ kind: "pull_request", action: "closed", repo, pr: { ...pr }, sender });
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
    if (pr?.state === "open") {
      pr.state = "closed";
      this.onEvent?.({ kind: "pull_request", action: "closed", repo, pr: { ...pr }, sender: pr.author });
    }
  }

  grant(repo: string, user: string, permission: "admin" | "write" | "read" | "none"): void {
    this.#permissions.set(`${repo.toLowerCase()}:${user.toLowerCase()}`, permission);
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

  // --- Domain verbs that GitHub sends webhooks for (users and CI acting on the repository) ---

  /** A user comments on a PR (an issue comment, as `/greenline merge` is). */
  comment(repo: string, number: number, user: string, body: string): number {
    const pr = this.#pullOrThrow(repo, number);
    const id = 1_000_000 + ++this.#counter;
    this.onEvent?.({ kind: "issue_comment", action: "created", repo, pr: { ...pr }, comment: { id, body }, sender: user });
    return id;
  }

  /** A user submits a review of a PR's head. */
  review(repo: string, number: number, user: string, state: "approved" | "changes_requested" | "commented", body: string | null = null): number {
    const pr = this.#pullOrThrow(repo, number);
    const id = 2_000_000 + ++this.#counter;
    this.onEvent?.({ kind: "pull_request_review", action: "submitted", repo, pr: { ...pr }, review: { id, state, body, commitId: pr.headSha }, sender: user });
    return id;
  }

  /** The PR's author pushes a new commit to it (GitHub: `pull_request.synchronize`). */
  pushToPr(repo: string, number: number, files: Tree): string {
    const pr = this.#pullOrThrow(repo, number);
    const before = pr.headSha;
    pr.headSha = this.#commit([before], { ...this.#commits.get(before)!.tree, ...files }, `More changes to #${number}`);
    pr.files = { ...pr.files, ...files };
    this.onEvent?.({ kind: "pull_request", action: "synchronize", repo, pr: { ...pr }, before, after: pr.headSha, sender: pr.author });
    return pr.headSha;
  }

  /** The PR is moved to another base branch (GitHub: `pull_request.edited` with `changes.base`). */
  retargetPr(repo: string, number: number, base: string): void {
    const pr = this.#pullOrThrow(repo, number);
    const from = pr.base;
    pr.base = base;
    this.onEvent?.({ kind: "pull_request", action: "edited", repo, pr: { ...pr }, changes: { base: { ref: { from }, sha: { from: pr.baseSha } } }, sender: pr.author });
  }

  /** CI posts a commit status (as a CI service does with its own token). */
  setStatus(repo: string, sha: string, context: string, state: "pending" | "success" | "failure" | "error", sender = "ci-bot"): void {
    this.statuses.push({ repo: repo.toLowerCase(), sha, context, state, description: "" });
    this.#emitStatus(repo, sha, { context, state, description: null, target_url: null }, sender);
  }

  /** CI (another App, such as GitHub Actions) creates a check run on a commit. */
  createCheckRun(repo: string, run: { name: string; headSha: string; status?: "queued" | "in_progress" }): number {
    const existing = this.checkRuns.find((r) => r.repo === repo.toLowerCase() && r.headSha === run.headSha);
    const checkRun = { id: 3_000_000 + ++this.#counter, name: run.name, headSha: run.headSha, status: run.status ?? "queued", conclusion: null, suiteId: existing?.suiteId ?? 4_000_000 + ++this.#counter };
    this.checkRuns.push({ ...checkRun, repo: repo.toLowerCase() });
    this.onEvent?.({ kind: "check_run", action: "created", repo, checkRun, branch: this.#branchAt(repo, run.headSha), sender: "github-actions[bot]" });
    return checkRun.id;
  }

  /** CI completes a check run; when every run of its suite is complete, the suite completes too. */
  completeCheckRun(repo: string, id: number, conclusion: NonNullable<SimulatorCheckRun["conclusion"]>): void {
    const run = this.checkRuns.find((r) => r.id === id);
    if (!run) throw new Error(`no check run ${id}`);
    run.status = "completed";
    run.conclusion = conclusion;
    const { repo: _repo, ...checkRun } = run;
    const branch = this.#branchAt(repo, run.headSha);
    this.onEvent?.({ kind: "check_run", action: "completed", repo, checkRun, branch, sender: "github-actions[bot]" });
    const suite = this.checkRuns.filter((r) => r.suiteId === run.suiteId);
    if (suite.every((r) => r.status === "completed")) {
      const failed = suite.some((r) => r.conclusion !== "success" && r.conclusion !== "neutral" && r.conclusion !== "skipped");
      this.onEvent?.({ kind: "check_suite", action: "completed", repo, suiteId: run.suiteId, headSha: run.headSha, branch, conclusion: failed ? "failure" : "success", runs: suite.length, sender: "github-actions[bot]" });
    }
  }

  /** The App is uninstalled from its account. */
  uninstallApp(id: number): void {
    const installation = this.#installations.get(id);
    if (!installation) return;
    this.#installations.delete(id);
    this.onEvent?.({ kind: "installation", action: "deleted", installation: { id, ...installation }, repositories: [], sender: installation.account });
  }

  /** Repositories are added to (or removed from) an installation's selection. */
  changeInstallationRepositories(id: number, change: { added?: string[]; removed?: string[] }): void {
    const installation = this.#installations.get(id);
    if (!installation) throw new Error(`no installation ${id}`);
    this.onEvent?.({
      kind: "installation_repositories",
      action: change.added?.length ? "added" : "removed",
      installation: { id, ...installation },
      added: change.added ?? [],
      removed: change.removed ?? [],
      sender: installation.account,
    });
  }

  /** The files of a commit (CI reads them to decide its verdict). */
  filesAt(sha: string): Tree {
    const commit = this.#commits.get(sha);
    if (!commit) throw new Error(`no commit ${sha}`);
    return commit.tree;
  }

  /** The installation of the App on `owner`'s account, if any (webhooks name it). */
  installationOf(owner: string): number | undefined {
    return this.#installationFor(owner);
  }

  #pullOrThrow(repo: string, number: number): PullRequest {
    const pr = this.#pulls.get(`${repo.toLowerCase()}#${number}`);
    if (!pr) throw new Error(`no PR ${repo}#${number}`);
    return pr;
  }

  /** The branch whose head is `sha`, if any (check runs and suites name it as head_branch). */
  #branchAt(repo: string, sha: string): string | null {
    const start = `${repo.toLowerCase()}:`;
    for (const [key, head] of this.#refs) if (key.startsWith(start) && head === sha) return key.slice(start.length);
    return null;
  }

  /** A commit as events describe it: its files against its first parent. */
  #describeCommit(sha: string): SimulatorCommit {
    const commit = this.#commits.get(sha)!;
    const from = this.#commits.get(commit.parents[0] ?? "")?.tree ?? {};
    const files = Object.keys({ ...from, ...commit.tree });
    return {
      sha,
      parents: commit.parents,
      message: commit.message,
      added: files.filter((f) => from[f] === undefined && commit.tree[f] !== undefined),
      removed: files.filter((f) => from[f] !== undefined && commit.tree[f] === undefined),
      modified: files.filter((f) => from[f] !== undefined && commit.tree[f] !== undefined && from[f] !== commit.tree[f]),
    };
  }

  /** A ref created (before undefined), moved or deleted (after null): GitHub's `push` event. */
  #emitPush(repo: string, branch: string, before: string | undefined, after: string | null, sender: string): void {
    if (!this.onEvent) return;
    const commits: SimulatorCommit[] = [];
    // The commits new to the branch (for a new branch: those not on the default branch), at most 20.
    const known = before ?? this.#refs.get(`${repo.toLowerCase()}:main`);
    if (after !== null) {
      for (let sha: string | undefined = after; sha && commits.length < 20 && !(known && this.#isAncestor(sha, known)); sha = this.#commits.get(sha)?.parents[0]) {
        commits.unshift(this.#describeCommit(sha));
      }
    }
    const forced = before !== undefined && after !== null && !this.#isAncestor(before, after);
    this.onEvent({ kind: "push", repo, branch, before: before ?? "0".repeat(40), after: after ?? "0".repeat(40), created: before === undefined, deleted: after === null, forced, commits, sender });
  }

  #emitStatus(repo: string, sha: string, body: Record<string, unknown>, sender: string): void {
    if (!this.onEvent) return;
    const start = `${repo.toLowerCase()}:`;
    const branches = [...this.#refs].filter(([k, head]) => k.startsWith(start) && head === sha).map(([k, head]) => ({ name: k.slice(start.length), sha: head }));
    this.onEvent({
      kind: "status",
      repo,
      id: 5_000_000 + this.statuses.length,
      sha,
      context: String(body.context ?? "default"),
      state: String(body.state),
      description: typeof body.description === "string" ? body.description : null,
      targetUrl: typeof body.target_url === "string" ? body.target_url : null,
      commit: this.#describeCommit(sha),
      branches: branches.slice(0, 10),
      sender,
    });
  }

  #handle(req: IncomingMessage, res: ServerResponse, body: Record<string, any>): void {
    // Octokit escapes the slashes of a ref ("heads%2Fgreenline%2F…"), as GitHub accepts.
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    this.requests.push({ method: req.method ?? "GET", path, authorization: req.headers.authorization });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    };
    const notFound = () => send(404, { message: "Not Found", documentation_url: "https://docs.github.com/rest" });
    if (this.outage !== null) return send(this.outage, { message: "Server Error" });
    if (this.#answerLimitsAndFaults(req, res, path)) return;
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
    if (repoMatch && this.#ciRoutes(req.method ?? "GET", path, repoName, send)) return;
    if (repoMatch && this.#handleBranchesRoutes(req.method ?? "GET", path, new URL(req.url ?? "/", "http://x").searchParams, repoName, body, send)) return;
    if ((match = /^\/repos\/[^/]+\/[^/]+\/branches\/(.+)\/protection\/required_status_checks$/.exec(path)) && req.method === "GET") {
      if (!this.administrationRead) return send(403, { message: "Resource not accessible by integration", documentation_url: "https://docs.github.com/rest/branches/branch-protection#get-status-checks-protection" });
      const contexts = this.#protection.get(refKey(decodeURIComponent(match[1]!)));
      return contexts ? send(200, { strict: false, contexts, checks: contexts.map((context) => ({ context, app_id: null })) }) : notFound();
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/branches\/(.+)$/.exec(path)) && req.method === "GET") {
      const branch = decodeURIComponent(match[1]!);
      if (branch.startsWith("greenline/") && !this.#refs.has(refKey(branch))) return notFound();
      const required = this.#protection.get(refKey(branch));
      const protection = {
        enabled: required !== undefined,
        required_status_checks: { enforcement_level: required ? "non_admins" : "off", contexts: required ?? [], checks: (required ?? []).map((context) => ({ context, app_id: null })) },
      };
      return send(200, { name: branch, commit: { sha: this.branchHead(repoName, branch) }, protected: required !== undefined, protection });
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
      // (the "ci" work) head at or behind base: "identical" / "behind", as GitHub answers.
      if (head === baseHead) return send(200, { behind_by: 0, ahead_by: 0, status: "identical", merge_base_commit: { sha: head } });
      if (this.#isAncestor(head, baseHead)) return send(200, { behind_by: 1, ahead_by: 0, status: "behind", merge_base_commit: { sha: head } });
      const behind = !this.#isAncestor(baseHead, head);
      return send(200, { behind_by: behind ? 1 : 0, ahead_by: 1, status: behind ? "diverged" : "ahead", merge_base_commit: { sha: behind ? (this.#commits.get(head)!.parents[0] ?? head) : baseHead } });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/statuses\/([0-9a-f]+)$/.exec(path)) && req.method === "POST") {
      if (!this.#commits.has(match[1]!)) return send(422, { message: "No commit found for SHA" });
      this.statuses.push({ repo: repoName, sha: match[1]!, context: String(body.context), state: String(body.state), description: String(body.description ?? "") });
      this.#emitStatus(repoName, match[1]!, body, APP_BOT);
      return send(201, { id: this.statuses.length, state: body.state, context: body.context });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/collaborators\/([^/]+)\/permission$/.exec(path)) && req.method === "GET") {
      const permission = this.#permissions.get(`${repoName}:${match[1]!.toLowerCase()}`) ?? "read";
      return send(200, { permission, role_name: permission === "admin" ? "admin" : permission === "write" ? "write" : "read", user: { login: match[1] } });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/issues\/(\d+)\/comments$/.exec(path)) && req.method === "POST") {
      if (!this.#pulls.has(`${repoName}#${match[1]}`)) return notFound();
      this.comments.push({ repo: repoName, number: Number(match[1]), body: String(body.body) });
      // GitHub sends the App's own comments back to it (as a Bot's: Greenline must not obey them).
      this.onEvent?.({
        kind: "issue_comment",
        action: "created",
        repo: repoName,
        pr: { ...this.#pulls.get(`${repoName}#${match[1]}`)! },
        comment: { id: 1_000_000 + ++this.#counter, body: String(body.body) },
        sender: APP_BOT,
      });
      return send(201, { id: this.comments.length, body: body.body });
    }
    if (/^\/repos\/[^/]+\/[^/]+\/git\/refs$/.test(path) && req.method === "POST") {
      const branch = String(body.ref).replace(/^refs\/heads\//, "");
      if (this.#refs.has(refKey(branch))) return send(422, { message: "Reference already exists" });
      if (!this.#commits.has(String(body.sha))) return send(422, { message: "Object does not exist" });
      this.#refs.set(refKey(branch), String(body.sha));
      this.#emitPush(repoName, branch, undefined, String(body.sha), APP_BOT);
      this.refPushes.push({ repo: repoName, branch, sha: String(body.sha) });
      return send(201, { ref: `refs/heads/${branch}`, object: { sha: body.sha } });
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/git\/refs\/heads\/(.+)$/.exec(path)) && (req.method === "PATCH" || req.method === "DELETE")) {
      const branch = decodeURIComponent(match[1]!);
      const current = this.#refs.get(refKey(branch));
      if (current === undefined) return send(422, { message: "Reference does not exist" });
      if (req.method === "DELETE") {
        this.#refs.delete(refKey(branch));
        this.#emitPush(repoName, branch, current, null, APP_BOT);
        res.writeHead(204).end();
        return;
      }
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
      const baseSha = this.branchHead(repoName, pr.base);
      const tree = this.#applyChanges(baseSha, pr.headSha);
      if (!tree) return send(405, { message: "Pull Request is not mergeable" });
      const sha = body.merge_method === "merge" ? this.#commit([baseSha, pr.headSha], tree, `Merge pull request #${pr.number}`) : this.#commit([baseSha], tree, `${pr.title} (#${pr.number})`);
      pr.merged = true;
      pr.state = "closed";
      this.#setRef(repoName, pr.base, sha);
      this.onEvent?.({ kind: "pull_request", action: "closed", repo: repoName, pr: { ...pr }, sender: APP_BOT });
      return send(200, { sha, merged: true, message: "Pull Request successfully merged" });
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

  // ---------------------------------------------------------------------------------------
  // Testing branches, PRs for them, rulesets and the workflows permission (the "branches" work).
  // Additive: routes here answer first and fall through (false) for everything else.

  /** Every ref creation or move (a push, as CI sees it), in order: `push` events GitHub would send. */
  readonly refPushes: { repo: string; branch: string; sha: string }[] = [];
  /** Whether the App's installation has `workflows: write` (GitHub refuses workflow-file changes without it). */
  workflowsWritable = true;
  readonly #branchRulesets = new Map<string, { id: number; branch: string; rules: { type: string; parameters?: object }[]; bypass: "always" | "never" }[]>();
  #nextRulesetId = 100;

  /** Pushes (ref creations and moves) to a branch so far. */
  pushesTo(repo: string, branch: string): number {
    return this.refPushes.filter((p) => p.repo === repo.toLowerCase() && p.branch === branch).length;
  }

  /** A repository ruleset on `branch` (exact name) with rules of these types; `bypass`: whether the App is on its bypass list. */
  addRuleset(repo: string, branch: string, rules: string[], bypass: "always" | "never" = "never"): number {
    const id = this.#nextRulesetId++;
    const list = this.#branchRulesets.get(repo.toLowerCase()) ?? [];
    list.push({ id, branch, rules: rules.map((type) => ({ type })), bypass });
    this.#branchRulesets.set(repo.toLowerCase(), list);
    return id;
  }

  /** Forgets a commit, as after a force-push and garbage collection: asking for it answers 404 / "Object does not exist". */
  forgetCommit(sha: string): void {
    this.#commits.delete(sha);
  }

  /** The PRs whose head branch is `branch` (testing branches' PRs). */
  prsFrom(repo: string, branch: string): PullRequest[] {
    return [...this.#pulls].filter(([k, pr]) => k.startsWith(`${repo.toLowerCase()}#`) && pr.headRef === branch).map(([, pr]) => pr);
  }

  #pullJson(pr: PullRequest) {
    return { number: pr.number, title: pr.title, state: pr.state, draft: pr.draft, merged: pr.merged, head: { ref: pr.headRef, sha: pr.headSha }, base: { ref: pr.base, sha: pr.baseSha }, user: { login: pr.author } };
  }

  #handleBranchesRoutes(method: string, path: string, query: URLSearchParams, repoName: string, body: Record<string, any>, send: (status: number, body: unknown) => void): boolean {
    let match: RegExpExecArray | null;
    const rulesets = this.#branchRulesets.get(repoName) ?? [];
    if ((match = /^\/repos\/[^/]+\/[^/]+\/rulesets\/(\d+)$/.exec(path)) && method === "GET") {
      const ruleset = rulesets.find((r) => r.id === Number(match![1]));
      if (!ruleset) send(404, { message: "Not Found" });
      else
        send(200, {
          id: ruleset.id,
          name: `ruleset ${ruleset.id}`,
          target: "branch",
          source_type: "Repository",
          source: repoName,
          enforcement: "active",
          conditions: { ref_name: { include: [`refs/heads/${ruleset.branch}`], exclude: [] } },
          rules: ruleset.rules,
          current_user_can_bypass: ruleset.bypass,
        });
      return true;
    }
    // Moving a ref to a commit GitHub does not have.
    if (/^\/repos\/[^/]+\/[^/]+\/git\/refs\/heads\/.+$/.test(path) && method === "PATCH" && !this.#commits.has(String(body.sha))) {
      send(422, { message: "Object does not exist", documentation_url: "https://docs.github.com/rest/git/refs#update-a-reference" });
      return true;
    }
    // Merging a commit that changes workflow files, without `workflows: write`.
    if (/^\/repos\/[^/]+\/[^/]+\/merges$/.test(path) && method === "POST" && !this.workflowsWritable) {
      const head = this.#commits.get(String(body.head));
      const from = this.#commits.get(head?.parents[0] ?? "")?.tree ?? {};
      const workflow = Object.keys(head?.tree ?? {}).find((file) => file.startsWith(".github/workflows/") && from[file] !== head!.tree[file]);
      if (workflow) {
        send(403, {
          message: `refusing to allow a GitHub App to create or update workflow \`${workflow}\` without \`workflows\` permission`,
          documentation_url: "https://docs.github.com/rest/branches/branches#merge-a-branch",
        });
        return true;
      }
    }
    if (/^\/repos\/[^/]+\/[^/]+\/pulls$/.test(path) && method === "POST") {
      const headSha = this.#refs.get(`${repoName}:${body.head}`);
      const baseSha = this.#refs.get(`${repoName}:${body.base}`);
      if (headSha === undefined || baseSha === undefined) {
        send(422, { message: "Validation Failed", errors: [{ resource: "PullRequest", field: headSha === undefined ? "head" : "base", code: "invalid" }] });
        return true;
      }
      const open = [...this.#pulls].find(([k, pr]) => k.startsWith(`${repoName}#`) && pr.headRef === body.head && pr.base === body.base && pr.state === "open");
      if (open) {
        send(422, { message: "Validation Failed", errors: [{ resource: "PullRequest", code: "custom", message: `A pull request already exists for ${body.head}.` }] });
        return true;
      }
      const number = Math.max(1000, ...[...this.#pulls.keys()].filter((k) => k.startsWith(`${repoName}#`)).map((k) => Number(k.split("#")[1]))) + 1;
      const pr: PullRequest = {
        number,
        title: String(body.title),
        author: "greenline[bot]",
        headSha,
        headRef: String(body.head),
        base: String(body.base),
        state: "open",
        merged: false,
        draft: Boolean(body.draft),
        mergeableState: "clean",
        baseSha,
        files: {},
      };
      this.#pulls.set(`${repoName}#${number}`, pr);
      send(201, this.#pullJson(pr));
      return true;
    }
    if (/^\/repos\/[^/]+\/[^/]+\/pulls$/.test(path) && method === "GET") {
      const head = query.get("head")?.replace(/^[^:]+:/, "");
      const state = query.get("state") ?? "open";
      const prs = [...this.#pulls].filter(([k, pr]) => k.startsWith(`${repoName}#`) && (head === undefined || pr.headRef === head) && (state === "all" || pr.state === state)).map(([, pr]) => this.#pullJson(pr));
      send(200, prs);
      return true;
    }
    if ((match = /^\/repos\/[^/]+\/[^/]+\/pulls\/(\d+)$/.exec(path)) && method === "PATCH") {
      const pr = this.#pulls.get(`${repoName}#${match[1]}`);
      if (!pr) send(404, { message: "Not Found" });
      else {
        if (body.state === "closed" && !pr.merged) pr.state = "closed";
        if (typeof body.title === "string") pr.title = body.title;
        send(200, this.#pullJson(pr));
      }
      return true;
    }
    return false;
  }

  // ------------------------------------------------------------ rate limits and faults
  // Rate limits as GitHub answers them (docs/github.md, "Refusals and rate limits"): every
  // answer to an installation carries x-ratelimit-* headers, counted per installation over an
  // hour; at the limit GitHub answers 403 with `x-ratelimit-remaining: 0`. A secondary limit
  // answers 403 with `retry-after`. Time is the simulator's clock (`useClock`), also sent as
  // the `date` header. Faults make the next matching requests fail (502s, refusals).

  #clock: () => number = () => Date.now();
  readonly #rateLimits = new Map<number, { limit: number; used: number; resetAt: number }>();
  readonly #secondaryUntil = new Map<number, number>();
  readonly #faults: { method: string; path: RegExp; status: number; message: string; times: number; headers: Record<string, string> }[] = [];

  /** Uses `now` (epoch ms) as GitHub's clock: rate-limit windows and the `date` header. */
  useClock(now: () => number): void {
    this.#clock = now;
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
    this.#secondaryUntil.set(installation, this.#clock() + retryAfterSeconds * 1000);
  }

  /** The next `times` requests of `method` whose path matches `path` answer `status` with `message`. */
  failNext(method: string, path: RegExp, status: number, message: string, times = 1, headers: Record<string, string> = {}): void {
    this.#faults.push({ method, path, status, message, times, headers });
  }

  #rateWindow(installation: number): { limit: number; used: number; resetAt: number } {
    let window = this.#rateLimits.get(installation);
    if (!window) this.#rateLimits.set(installation, (window = { limit: 5000, used: 0, resetAt: this.#clock() + 3600_000 }));
    if (this.#clock() >= window.resetAt) Object.assign(window, { used: 0, resetAt: this.#clock() + 3600_000 });
    return window;
  }

  /** Sets the rate-limit headers; answers (and returns true) when a limit or a fault refuses the request. */
  #answerLimitsAndFaults(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    res.setHeader("date", new Date(this.#clock()).toUTCString());
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
      if (this.#clock() < secondaryUntil) {
        return refuse(
          403,
          "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
          { ...headers(), "retry-after": String(Math.ceil((secondaryUntil - this.#clock()) / 1000)) },
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
