import { createHash, createHmac, createPublicKey, generateKeyPairSync, verify } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { covers, DEFAULT_PERMISSIONS, NOT_ACCESSIBLE, type Permissions, routeNeeds } from "./github/permissions.js";
import {
  type Bypass,
  type Rule,
  ruleOfType,
  type Change,
  type CheckState,
  type MergeMethod,
  type Protection,
  type ProtectionOptions,
  protectionViolations,
  type Ruleset,
  type RulesetOptions,
  rulesetApplies,
  rulesetViolations,
  rulesFrom,
  ruleViolationsMessage,
} from "./github/rules.js";
import * as shape from "./github/shapes.js";
import type { CheckRunRecord, RepositorySettings, StatusRecord, WorkflowRunRecord } from "./github/shapes.js";

/**
 * A simulated GitHub, served over HTTP so the real Octokit (through Probot) talks to it, and as
 * strict as GitHub where Greenline meets it: App permissions (403 "Resource not accessible by
 * integration"), classic branch protection and rulesets enforced on ref updates and merges with
 * GitHub's status codes and messages, workflow files refused without `workflows: write`,
 * mergeability computed lazily, branches that do not exist answer 404, statuses and check runs
 * stored and validated. It keeps a small model — installations; repositories as commit graphs with
 * whole trees and branches; pull requests (one commit on top of the base they were opened on) —
 * and speaks in domain verbs (`installApp`, `openPr`, `protect`, `addRuleset`, `reportStatus`,
 * `createCheckRun`, `approve`). Everything that happens is reported to `onEvent` (webhooks).
 * Sources of the behaviour: docs/github.md, "The simulator and its sources".
 */

type Tree = Record<string, string>;
type Commit = { sha: string; parents: string[]; tree: Tree; message: string };

type PullRequest = {
  number: number;
  title: string;
  author: string;
  headSha: string;
  headRef: string;
  /** The repository the head lives in: a fork when it differs from the PR's repository. */
  headRepo: string;
  base: string;
  state: "open" | "closed";
  merged: boolean;
  mergeCommitSha: string | null;
  draft: boolean;
  /** A fixed answer for `mergeable_state`, when a test sets one; computed otherwise. */
  mergeableState: "clean" | "dirty" | "blocked" | "behind" | "unknown" | "unstable" | "draft" | undefined;
  /** The commit of the base branch the PR was opened on (its head's parent). */
  baseSha: string;
  files: Tree;
  /** Reads of `GET /pulls/{n}` left that answer `mergeable: null` (GitHub computes it in the background). */
  unknownReads: number;
};

export type SimulatorRequest = {
  method: string;
  path: string;
  authorization: string | undefined;
  /** The answer, for conformance checks. */
  status?: number;
  response?: unknown;
};

// --- Events (what happens in the simulator, for webhook deliveries: test/support/github-webhooks.ts) ---

/** A commit as a push or status event describes it: files against its first parent. */
export type SimulatorCommit = { sha: string; parents: string[]; message: string; added: string[]; removed: string[]; modified: string[] };
export type SimulatorPullRequest = PullRequest;
export type SimulatorCheckRun = {
  id: number;
  name: string;
  headSha: string;
  status: "queued" | "in_progress" | "completed";
  conclusion: "success" | "failure" | "neutral" | "cancelled" | "timed_out" | "action_required" | "skipped" | "stale" | null;
  suiteId: number;
};
/** Who did it: a user's login, or an App's bot ("greenline[bot]" for calls with an installation token). */
type Sender = { sender: string };
/**
 * Something that happened in the simulated GitHub, reported to `onEvent` (webhook delivery builds
 * its payloads from these). PRs are snapshots taken when it happened.
 */
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
  | ({
      kind: "installation";
      action: "created" | "deleted" | "suspend" | "unsuspend" | "new_permissions_accepted";
      /** `suspended`: who suspended it and when (ISO), on the `suspend` action (GitHub's payload says so). */
      installation: { id: number; account: string; suspended?: { by: string; at: string } };
      repositories: string[];
    } & Sender)
  | ({ kind: "installation_repositories"; action: "added" | "removed"; installation: { id: number; account: string }; added: string[]; removed: string[] } & Sender);

/**
 * GitHub's answer to a suspended installation's token request and to calls with its tokens
 * (docs/github.md, "Suspended and uninstalled installations").
 */
export const SUSPENDED_MESSAGE = "This installation has been suspended";

/** The sender of what the App does with its installation token. */
export const APP_BOT = "greenline[bot]";

export type SimulatorOptions = {
  /** How many reads of a PR answer `mergeable: null` after it opens, moves, or its base moves (default 1). */
  mergeabilityDelay?: number;
};

const NULL_SHA = "0000000000000000000000000000000000000000";
const STATUS_STATES = ["error", "failure", "pending", "success"];
const CHECK_CONCLUSIONS = ["action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out"];
const WORKFLOWS = ".github/workflows/";

/** A GitHub App manifest (docs.github.com, "Registering a GitHub App from a manifest"). */
export type Manifest = {
  name?: string;
  url?: string;
  description?: string;
  hook_attributes?: { url?: string; active?: boolean };
  redirect_url?: string;
  callback_urls?: string[];
  setup_url?: string;
  public?: boolean;
  default_permissions?: Record<string, string>;
  default_events?: string[];
  request_oauth_on_install?: boolean;
  setup_on_update?: boolean;
};

/**
 * The permissions an App may ask for and their access levels (GitHub's `app-permissions` schema
 * in @octokit/openapi; test/github/simulator-conformance.test.ts keeps the two equal).
 */
export const APP_PERMISSIONS: Record<string, readonly string[]> = {
  actions: ["read", "write"],
  administration: ["read", "write"],
  artifact_metadata: ["read", "write"],
  attestations: ["read", "write"],
  checks: ["read", "write"],
  code_quality: ["read", "write"],
  codespaces: ["read", "write"],
  contents: ["read", "write"],
  dependabot_secrets: ["read", "write"],
  deployments: ["read", "write"],
  discussions: ["read", "write"],
  environments: ["read", "write"],
  issues: ["read", "write"],
  merge_queues: ["read", "write"],
  metadata: ["read", "write"],
  packages: ["read", "write"],
  pages: ["read", "write"],
  pull_requests: ["read", "write"],
  repository_custom_properties: ["read", "write"],
  repository_hooks: ["read", "write"],
  repository_projects: ["read", "write", "admin"],
  secret_scanning_alerts: ["read", "write"],
  secrets: ["read", "write"],
  security_events: ["read", "write"],
  single_file: ["read", "write"],
  statuses: ["read", "write"],
  vulnerability_alerts: ["read", "write"],
  workflows: ["write"],
  custom_properties_for_organizations: ["read", "write"],
  members: ["read", "write"],
  organization_administration: ["read", "write"],
  organization_custom_roles: ["read", "write"],
  organization_custom_org_roles: ["read", "write"],
  organization_custom_properties: ["read", "write", "admin"],
  organization_copilot_seat_management: ["read", "write"],
  organization_copilot_agent_settings: ["read", "write"],
  organization_announcement_banners: ["read", "write"],
  organization_events: ["read"],
  organization_hooks: ["read", "write"],
  organization_personal_access_tokens: ["read", "write"],
  organization_personal_access_token_requests: ["read", "write"],
  organization_plan: ["read"],
  organization_projects: ["read", "write", "admin"],
  organization_packages: ["read", "write"],
  organization_secrets: ["read", "write"],
  organization_self_hosted_runners: ["read", "write"],
  organization_user_blocking: ["read", "write"],
  email_addresses: ["read", "write"],
  followers: ["read", "write"],
  git_ssh_keys: ["read", "write"],
  gpg_keys: ["read", "write"],
  interaction_limits: ["read", "write"],
  profile: ["write"],
  starring: ["read", "write"],
  enterprise_custom_properties_for_organizations: ["read", "write", "admin"],
};

const isHttpUrl = (value: unknown) => typeof value === "string" && /^https?:\/\/[^\s/]+/.test(value);

/** What GitHub's registration page refuses in a manifest (undefined: nothing). */
function manifestProblem(manifest: Manifest): string | undefined {
  if (!manifest || typeof manifest !== "object" || Array.isArray(manifest)) return "manifest must be a JSON object";
  if (typeof manifest.name !== "string" || manifest.name.trim() === "") return "name can't be blank";
  if (manifest.name.length > 34) return "name is too long (maximum is 34 characters)";
  if (!isHttpUrl(manifest.url)) return "url (the homepage) must be an http(s) URL";
  if (manifest.hook_attributes?.active !== false && !isHttpUrl(manifest.hook_attributes?.url)) return "hook_attributes.url must be an http(s) URL while the webhook is active";
  if (!isHttpUrl(manifest.redirect_url)) return "redirect_url must be an http(s) URL";
  for (const [name, access] of Object.entries(manifest.default_permissions ?? {})) {
    const allowed = APP_PERMISSIONS[name];
    if (!allowed) return `default_permissions: ${name} is not a permission`;
    if (!allowed.includes(access)) return `default_permissions: ${name} cannot be ${JSON.stringify(access)} (${allowed.join(", ")})`;
  }
  if (manifest.default_events !== undefined && (!Array.isArray(manifest.default_events) || manifest.default_events.some((e) => typeof e !== "string"))) return "default_events must be a list of event names";
  return undefined;
}

class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export class GitHubSimulator {
  readonly appId = "12345";
  readonly webhookSecret = "simulated-webhook-secret";
  /** The App's OAuth client (what a manifest conversion answers, and what `greenline setup github` writes). */
  readonly clientId = `Iv1.${createHash("sha256").update(`client:12345`).digest("hex").slice(0, 16)}`;
  readonly clientSecret = createHash("sha256").update(`secret:12345`).digest("hex").slice(0, 40);
  readonly privateKey: string;
  readonly #publicKey;
  readonly #mergeabilityDelay: number;
  readonly #installations = new Map<number, { account: string; permissions: Permissions }>();
  /** Suspended installations: who suspended each and when (ISO). Their token requests, and calls with their tokens, are refused 403. */
  readonly #suspended = new Map<number, { by: string; at: string }>();
  readonly #pulls = new Map<string, PullRequest>();
  readonly #refs = new Map<string, string>();
  readonly #commits = new Map<string, Commit>();
  readonly #repos = new Map<string, RepositorySettings>();
  readonly #protection = new Map<string, Protection>();
  readonly #rulesets = new Map<string, Ruleset[]>();
  readonly #reviews: { repo: string; number: number; reviewer: string; state: "approved" | "changes_requested" | "commented"; sha: string }[] = [];
  readonly #checkRuns = new Map<number, CheckRunRecord>();
  readonly #checkSuites = new Map<string, number>();
  /** GitHub Actions' workflow runs, by id (ids of their own, as large as GitHub's). */
  readonly #workflowRuns = new Map<number, WorkflowRunRecord>();
  #workflowRunIds = 7_000_000_000;
  /** Run just before GitHub merges a PR (by "owner/name#number"), once; an answer it returns is sent instead of merging. */
  readonly #beforeMerge = new Map<string, () => undefined | { status: number; message: string }>();
  /** While set, every API request is answered with this status, as when GitHub is down. */
  outage: number | null = null;
  /** Whether the rules route refuses the installation (403), so a branch's rules cannot be read. */
  rulesRefused = false;
  /** Commit statuses (Greenline's and a test's CI) and PR comments, in order. */
  readonly statuses: (StatusRecord & { repo: string; sha: string; context: string; state: string; description: string })[] = [];
  readonly comments: { repo: string; number: number; body: string; id: number; author: string }[] = [];
  /** What users may do, by "owner/name:user" (lower-case); anyone else may only read. */
  readonly #permissions = new Map<string, "admin" | "write" | "read" | "none">();
  #counter = 0;
  #ids = 1000;
  readonly requests: SimulatorRequest[] = [];
  #server: Server | null = null;
  url = "";
  /** Called for everything that happens in the simulator (webhook delivery hooks in here). */
  onEvent?: (event: SimulatorEvent) => void;

  constructor(options: SimulatorOptions = {}) {
    this.#mergeabilityDelay = options.mergeabilityDelay ?? 1;
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

  // ---- Installations and permissions ----

  /** Installs the App on an account with `permissions` (default: what app.yml asks for). */
  installApp(id: number, account: string, permissions: Permissions = DEFAULT_PERMISSIONS): { id: number; account: string } {
    this.#installations.set(id, { account, permissions: { ...permissions, ...this.#grantedEverywhere } });
    this.#emit({ kind: "installation", action: "created", installation: { id, account }, repositories: [], sender: account });
    return { id, account };
  }

  /** Uninstalls the App: its tokens stop working at once. */
  uninstallApp(id: number): void {
    const installation = this.#installations.get(id);
    if (!installation) return;
    this.#installations.delete(id);
    this.#suspended.delete(id);
    this.#emit({ kind: "installation", action: "deleted", installation: { id, account: installation.account }, repositories: [], sender: installation.account });
  }

  /**
   * Suspends the installation, as its App's owner (`PUT /app/installations/{id}/suspended`) or the
   * account (its settings page) does: its token requests and every call with a token issued
   * before answer 403 "This installation has been suspended", and the `installation` webhook
   * with action `suspend` is sent (a test's deliverer may drop it).
   */
  suspendInstallation(id: number, by = "octo-admin"): void {
    const installation = this.#installations.get(id);
    if (!installation) throw new Error(`no installation ${id}`);
    if (this.#suspended.has(id)) return;
    const suspended = { by, at: new Date(this.#clock()).toISOString().replace(/\.\d{3}Z$/, "Z") };
    this.#suspended.set(id, suspended);
    this.#emit({ kind: "installation", action: "suspend", installation: { id, account: installation.account, suspended }, repositories: [], sender: by });
  }

  /** Lifts a suspension (`DELETE /app/installations/{id}/suspended`): tokens work again; the `installation` webhook `unsuspend` is sent. */
  unsuspendInstallation(id: number, by = "octo-admin"): void {
    const installation = this.#installations.get(id);
    if (!installation) throw new Error(`no installation ${id}`);
    if (!this.#suspended.delete(id)) return;
    this.#emit({ kind: "installation", action: "unsuspend", installation: { id, account: installation.account }, repositories: [], sender: by });
  }

  /** Whether the installation is suspended. */
  isSuspended(id: number): boolean {
    return this.#suspended.has(id);
  }

  /** Changes what an installation was granted (an owner accepting or revoking permissions). */
  setPermissions(id: number, permissions: Permissions): void {
    const installation = this.#installations.get(id);
    if (!installation) throw new Error(`no installation ${id}`);
    installation.permissions = { ...permissions };
    this.#emit({ kind: "installation", action: "new_permissions_accepted", installation: { id, account: installation.account }, repositories: [], sender: installation.account });
  }

  permissionsOf(id: number): Permissions | undefined {
    return this.#installations.get(id)?.permissions;
  }

  /** The installation of the App on `owner`'s account, if any (webhooks name it). */
  installationOf(owner: string): number | undefined {
    return this.#installationFor(owner);
  }

  /** Repositories are added to (or removed from) an installation's selection. */
  changeInstallationRepositories(id: number, change: { added?: string[]; removed?: string[] }): void {
    const installation = this.#installations.get(id);
    if (!installation) throw new Error(`no installation ${id}`);
    this.#emit({
      kind: "installation_repositories",
      action: change.added?.length ? "added" : "removed",
      installation: { id, account: installation.account },
      added: change.added ?? [],
      removed: change.removed ?? [],
      sender: installation.account,
    });
  }

  /** Grants (or withdraws) one permission on every installation, now and for those installed later. */
  #grantEverywhere(permission: "administration" | "workflows", access: "read" | "write" | undefined): void {
    this.#grantedEverywhere[permission] = access;
    for (const installation of this.#installations.values()) {
      if (access === undefined) delete installation.permissions[permission];
      else installation.permissions[permission] = access;
    }
  }
  readonly #grantedEverywhere: Permissions = {};

  /** Whether installations may read classic protection (administration: read; app.yml does not ask for it). */
  get administrationRead(): boolean {
    return [...this.#installations.values()].every((i) => i.permissions.administration !== undefined) && this.#installations.size > 0;
  }
  set administrationRead(value: boolean) {
    this.#grantEverywhere("administration", value ? "read" : undefined);
  }

  /** Whether installations have `workflows: write` (GitHub refuses workflow-file changes without it). */
  get workflowsWritable(): boolean {
    return [...this.#installations.values()].every((i) => i.permissions.workflows === "write") && this.#installations.size > 0;
  }
  set workflowsWritable(value: boolean) {
    this.#grantEverywhere("workflows", value ? "write" : undefined);
  }

  // ---- Repositories and branches ----

  /** Repository settings (default branch, allowed merge methods). */
  setRepository(repo: string, settings: Partial<RepositorySettings>): void {
    this.#repos.set(repo.toLowerCase(), { ...this.#settings(repo), ...settings });
  }

  #settings(repo: string): RepositorySettings {
    return this.#repos.get(repo.toLowerCase()) ?? { defaultBranch: "main", allowMergeCommit: true, allowSquashMerge: true, allowRebaseMerge: true };
  }

  /** Creates a branch at `from` (a sha or a branch; default: a fresh root commit). */
  createBranch(repo: string, name: string, from?: string): string {
    const sha = from === undefined ? this.#commit([], { "README.md": `# ${repo}\n` }, "Initial commit") : this.#commits.has(from) ? from : this.branchHead(repo, from);
    this.#setRef(repo, name, sha, "octocat");
    return sha;
  }

  /** The head commit of a branch; a test-side helper that creates a missing branch (the HTTP routes answer 404, except for the default branch, which every repository has). */
  branchHead(repo: string, branch: string): string {
    const key = `${repo.toLowerCase()}:${branch}`;
    if (!this.#refs.has(key)) this.#refs.set(key, this.#commit([], { "README.md": `# ${repo}\n` }, "Initial commit"));
    return this.#refs.get(key)!;
  }

  hasBranch(repo: string, branch: string): boolean {
    return this.#refs.has(`${repo.toLowerCase()}:${branch}`);
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

  /** Pushes a commit to a branch directly (outside any PR; an admin's push, not checked against protection). */
  push(repo: string, branch: string, files: Tree): string {
    const head = this.branchHead(repo, branch);
    const sha = this.#commit([head], { ...this.#commits.get(head)!.tree, ...files }, "Direct push");
    this.#setRef(repo, branch, sha, "octocat");
    return sha;
  }

  // ---- Protection and rulesets ----

  /**
   * Classic branch protection: `protect(repo, "main", ["build"])` (required checks) or with options
   * (`requiredChecks`, `strict`, `requiredReviews` — which also requires pull requests —,
   * `linearHistory`, `restrictPushes`, `appMayPush`, `allowForcePushes`).
   */
  protect(repo: string, branch: string, options: string[] | ProtectionOptions): void {
    const o: ProtectionOptions = Array.isArray(options) ? { requiredChecks: options } : options;
    this.#protection.set(`${repo.toLowerCase()}:${branch}`, {
      requiredChecks: o.requiredChecks ?? [],
      strict: o.strict ?? false,
      requiredReviews: o.requiredReviews,
      linearHistory: o.linearHistory ?? false,
      restrictPushes: o.restrictPushes ?? false,
      appMayPush: o.appMayPush ?? false,
      allowForcePushes: o.allowForcePushes ?? false,
    });
  }

  unprotect(repo: string, branch: string): void {
    this.#protection.delete(`${repo.toLowerCase()}:${branch}`);
  }

  /**
   * A repository ruleset (default: on the default branch, the App may not bypass it); returns its id.
   * Also `addRuleset(repo, branch, ["pull_request", "merge_queue", ...], bypass)`: rules by type, on one branch.
   */
  addRuleset(repo: string, options: RulesetOptions | string, ruleTypes: Rule["type"][] = [], bypass: Bypass = "never"): number {
    if (typeof options === "string") return this.addRuleset(repo, { branches: [options], rules: ruleTypes.map(ruleOfType), bypass });
    const id = ++this.#ids;
    const list = this.#rulesets.get(repo.toLowerCase()) ?? [];
    list.push({
      id,
      name: options.name ?? `ruleset ${id}`,
      include: options.branches ?? ["~DEFAULT_BRANCH"],
      rules: rulesFrom(options),
      bypass: options.bypass ?? "never",
      enforcement: options.enforcement ?? "active",
    });
    this.#rulesets.set(repo.toLowerCase(), list);
    return id;
  }

  setRulesetBypass(repo: string, id: number, bypass: Bypass): void {
    const ruleset = this.#rulesets.get(repo.toLowerCase())?.find((r) => r.id === id);
    if (!ruleset) throw new Error(`no ruleset ${id}`);
    ruleset.bypass = bypass;
  }

  /** A ruleset on `branch` requiring these checks. */
  ruleset(repo: string, branch: string, contexts: string[]): number {
    return this.addRuleset(repo, { branches: [branch], requiredChecks: contexts });
  }

  /**
   * Requires pull requests on a branch, as classic protection does: a ref update answers 422
   * "Changes must be made through a pull request."; with `approvals`, merging a PR answers 405
   * until it has that many approving reviews.
   */
  requirePullRequests(repo: string, branch: string, options: { approvals?: number } = {}): void {
    const current = this.#protection.get(`${repo.toLowerCase()}:${branch}`);
    this.protect(repo, branch, { ...current, requiredReviews: options.approvals ?? 0 });
  }

  #rulesetsFor(repo: string, branch: string): Ruleset[] {
    return (this.#rulesets.get(repo.toLowerCase()) ?? []).filter((r) => rulesetApplies(r, branch, this.#settings(repo).defaultBranch));
  }

  // ---- Pull requests ----

  /** Opens a PR: one commit changing `files` (default: a file of its own) on top of its base branch. */
  openPr(repo: string, pr: Partial<Omit<PullRequest, "headSha" | "baseSha" | "unknownReads" | "mergeCommitSha">> & { number: number }): PullRequest {
    const base = pr.base ?? "main";
    const baseSha = this.branchHead(repo, base);
    const files = pr.files ?? { [`changes/pr-${pr.number}.txt`]: `change of #${pr.number}\n` };
    const headSha = this.#commit([baseSha], { ...this.#commits.get(baseSha)!.tree, ...files }, `PR #${pr.number}`);
    const full: PullRequest = {
      title: `PR #${pr.number}`,
      author: "octocat",
      headRef: `feature-${pr.number}`,
      headRepo: repo,
      base,
      state: "open",
      merged: false,
      mergeCommitSha: null,
      draft: false,
      mergeableState: undefined,
      ...pr,
      files,
      baseSha,
      headSha,
      unknownReads: this.#mergeabilityDelay,
    };
    this.#pulls.set(`${repo.toLowerCase()}#${pr.number}`, full);
    if (full.headRepo.toLowerCase() === repo.toLowerCase()) this.#refs.set(`${repo.toLowerCase()}:${full.headRef}`, headSha);
    this.#emit({ kind: "pull_request", action: "opened", repo, pr: this.#snapshot(full), sender: full.author });
    return full;
  }

  pr(repo: string, number: number): PullRequest | undefined {
    return this.#pulls.get(`${repo.toLowerCase()}#${number}`);
  }

  /** A new commit on a PR (its author pushes to its head branch): `pull_request.synchronize`. */
  pushToPr(repo: string, number: number, files: Tree): string {
    return this.#movePr(repo, number, files, true);
  }

  /** New changes on a PR's branch whose `synchronize` webhook is late or lost: no event. */
  amendPr(repo: string, number: number, files: Tree): string {
    return this.#movePr(repo, number, files, false);
  }

  #movePr(repo: string, number: number, files: Tree, emit: boolean): string {
    const pr = this.#pullOrThrow(repo, number);
    const before = pr.headSha;
    // One commit on the PR's base with all its changes (a force-push): its changes stay those of one commit.
    pr.files = { ...pr.files, ...files };
    pr.headSha = this.#commit([pr.baseSha], { ...this.#commits.get(pr.baseSha)!.tree, ...pr.files }, `PR #${number} (updated)`);
    pr.unknownReads = this.#mergeabilityDelay;
    if (pr.headRepo.toLowerCase() === repo.toLowerCase()) this.#refs.set(`${repo.toLowerCase()}:${pr.headRef}`, pr.headSha);
    if (emit) this.#emit({ kind: "pull_request", action: "synchronize", repo, pr: this.#snapshot(pr), before, after: pr.headSha, sender: pr.author });
    return pr.headSha;
  }

  /**
   * The PR is moved to another base branch (`pull_request.edited` with `changes.base`, whose
   * delivery a test may drop): from then on GitHub merges it into that branch, as a merge
   * (`PUT …/merge`) takes the PR's base as it is when it merges.
   */
  retargetPr(repo: string, number: number, base: string, sender?: string): void {
    const pr = this.#pullOrThrow(repo, number);
    if (pr.state !== "open") throw new Error(`#${number} is closed: GitHub cannot change the base branch of a closed pull request`);
    if (this.#refs.get(`${repo.toLowerCase()}:${base}`) === undefined) throw new Error(`${repo} has no branch ${base}`);
    const from = pr.base;
    pr.base = base;
    pr.unknownReads = this.#mergeabilityDelay;
    this.#emit({ kind: "pull_request", action: "edited", repo, pr: this.#snapshot(pr), changes: { base: { ref: { from }, sha: { from: pr.baseSha } } }, sender: sender ?? pr.author });
  }

  closePr(repo: string, number: number, sender?: string): void {
    const pr = this.#pulls.get(`${repo.toLowerCase()}#${number}`);
    if (!pr || pr.state === "closed") return;
    pr.state = "closed";
    this.#emit({ kind: "pull_request", action: "closed", repo, pr: this.#snapshot(pr), sender: sender ?? pr.author });
  }

  /** A user reviews the PR's current head; returns the review's id. */
  review(repo: string, number: number, user: string, state: "approved" | "changes_requested" | "commented", body: string | null = null): number {
    const pr = this.#pullOrThrow(repo, number);
    const id = ++this.#ids;
    this.#reviews.push({ repo: repo.toLowerCase(), number, reviewer: user, state, sha: pr.headSha });
    this.#emit({ kind: "pull_request_review", action: "submitted", repo, pr: this.#snapshot(pr), review: { id, state, body, commitId: pr.headSha }, sender: user });
    return id;
  }

  /** An approving review (by `reviewer`). */
  approve(repo: string, number: number, reviewer = "reviewer"): number {
    return this.review(repo, number, reviewer, "approved");
  }

  /** A user's comment on a PR (an issue comment, as `/greenline merge` is). */
  comment(repo: string, number: number, user: string, body: string): number {
    const pr = this.#pullOrThrow(repo, number);
    const id = ++this.#ids;
    this.#emit({ kind: "issue_comment", action: "created", repo, pr: this.#snapshot(pr), comment: { id, body }, sender: user });
    return id;
  }

  /** PRs whose head branch is `branch` (the App's testing-branch PRs). */
  prsFrom(repo: string, branch: string): PullRequest[] {
    return [...this.#pulls].filter(([k, pr]) => k.startsWith(`${repo.toLowerCase()}#`) && pr.headRef === branch).map(([, pr]) => pr);
  }

  /**
   * Runs `action` (someone else's push, say) right before GitHub merges PR `number`, once; an
   * answer it returns (a failure of GitHub's, a refusal) is sent instead of merging.
   */
  beforeMerge(repo: string, number: number, action: () => undefined | { status: number; message: string }): void {
    this.#beforeMerge.set(`${repo.toLowerCase()}#${number}`, action);
  }

  #pullOrThrow(repo: string, number: number): PullRequest {
    const pr = this.#pulls.get(`${repo.toLowerCase()}#${number}`);
    if (!pr) throw new Error(`no PR ${repo}#${number}`);
    return pr;
  }

  /** A PR as an event carries it: a copy, its mergeability as GitHub last computed it ("unknown" until read). */
  #snapshot(pr: PullRequest): PullRequest {
    return { ...pr, files: { ...pr.files }, mergeableState: pr.mergeableState ?? "unknown" };
  }

  #approvals(repo: string, pr: PullRequest): number {
    const latest = new Map<string, string>();
    for (const r of this.#reviews) if (r.repo === repo.toLowerCase() && r.number === pr.number && r.state !== "commented") latest.set(r.reviewer, r.state);
    return [...latest.values()].filter((s) => s === "approved").length;
  }

  // ---- Statuses and check runs (a test's simulated CI) ----

  /** CI posts a commit status (with its own token); returns the status id. */
  reportStatus(repo: string, sha: string, context: string, state: "error" | "failure" | "pending" | "success", description = "", creator = "ci-bot"): number {
    return this.#createStatus(repo, sha, { context, state, description, targetUrl: null, creator });
  }

  /** `reportStatus` under the name the webhook work uses. */
  setStatus(repo: string, sha: string, context: string, state: "pending" | "success" | "failure" | "error", sender = "ci-bot"): number {
    return this.reportStatus(repo, sha, context, state, "", sender);
  }

  #createStatus(repo: string, sha: string, s: { context: string; state: string; description: string; targetUrl: string | null; creator: string }): number {
    const id = ++this.#ids;
    this.statuses.push({ id, repo: repo.toLowerCase(), sha, ...s });
    const start = `${repo.toLowerCase()}:`;
    const branches = [...this.#refs].filter(([k, head]) => k.startsWith(start) && head === sha).map(([k, head]) => ({ name: k.slice(start.length), sha: head }));
    this.#emit({
      kind: "status",
      repo,
      id,
      sha,
      context: s.context,
      state: s.state,
      description: s.description === "" ? null : s.description,
      targetUrl: s.targetUrl,
      commit: this.#describeCommit(sha),
      branches: branches.slice(0, 10),
      sender: s.creator,
    });
    return id;
  }

  /**
   * CI (another App, such as GitHub Actions) creates a check run on a commit; returns its id.
   * `createCheckRun(repo, sha, name, status?)` or `createCheckRun(repo, { name, headSha, status? })`.
   */
  createCheckRun(repo: string, shaOrRun: string | { name: string; headSha: string; status?: "queued" | "in_progress" }, name?: string, status?: "queued" | "in_progress"): number {
    const run = typeof shaOrRun === "string" ? { headSha: shaOrRun, name: name!, status: status ?? "in_progress" } : { status: "queued" as const, ...shaOrRun };
    return this.#createCheckRun(repo, run.headSha, run.name, run.status, null, null, "github-actions[bot]").id;
  }

  /** CI completes a check run: `completeCheckRun(id, conclusion)` or `completeCheckRun(repo, id, conclusion)`. */
  completeCheckRun(idOrRepo: number | string, idOrConclusion: number | NonNullable<SimulatorCheckRun["conclusion"]>, conclusion?: NonNullable<SimulatorCheckRun["conclusion"]>): void {
    const id = typeof idOrRepo === "number" ? idOrRepo : (idOrConclusion as number);
    const outcome = typeof idOrRepo === "number" ? (idOrConclusion as NonNullable<SimulatorCheckRun["conclusion"]>) : conclusion!;
    const run = this.#checkRuns.get(id);
    if (!run) throw new Error(`no check run ${id}`);
    this.#completeCheckRun(run, outcome, "github-actions[bot]");
  }

  #completeCheckRun(run: CheckRunRecord, conclusion: string, sender: string): void {
    run.status = "completed";
    run.conclusion = conclusion;
    const repo = run.displayRepo ?? run.repo;
    this.#emit({ kind: "check_run", action: "completed", repo, checkRun: this.#checkRunEvent(run), branch: run.headBranch, sender });
    if (run.workflowRunId !== undefined) this.#concludeWorkflowRun(run.workflowRunId);
    const suite = [...this.#checkRuns.values()].filter((r) => r.suiteId === run.suiteId);
    if (suite.every((r) => r.status === "completed")) {
      const failed = suite.some((r) => !["success", "neutral", "skipped"].includes(r.conclusion ?? ""));
      this.#emit({ kind: "check_suite", action: "completed", repo, suiteId: run.suiteId, headSha: run.sha, branch: run.headBranch, conclusion: failed ? "failure" : "success", runs: suite.length, sender });
    }
  }

  /** A status set by CI, answered with the fields a `status` webhook payload needs. */
  ciStatus(repo: string, sha: string, context: string, state: "pending" | "success" | "failure" | "error") {
    const id = this.reportStatus(repo, sha, context, state);
    const at = new Date().toISOString();
    return { id, sha, context, state, updated_at: at, created_at: at };
  }

  /** CI creates a check run (`id` omitted) or updates one; answered with a `check_run` webhook payload's fields. */
  checkRun(repo: string, sha: string, name: string, status: "queued" | "in_progress" | "completed", conclusion: string | null = null, id?: number) {
    let run = id === undefined ? undefined : this.#checkRuns.get(id);
    if (!run) run = this.#createCheckRun(repo, sha, name, status, conclusion, null, "github-actions[bot]");
    else if (status === "completed") this.#completeCheckRun(run, conclusion ?? "success", "github-actions[bot]");
    else run.status = status;
    return { id: run.id, name, head_sha: sha, status: run.status, conclusion: run.conclusion };
  }

  /** The check runs on a commit. */
  checkRuns(repo: string, sha: string): CheckRunRecord[] {
    return [...this.#checkRuns.values()].filter((r) => r.repo === repo.toLowerCase() && r.sha === sha);
  }

  #checkRunEvent(run: CheckRunRecord): SimulatorCheckRun {
    return { id: run.id, name: run.name, headSha: run.sha, status: run.status, conclusion: run.conclusion as SimulatorCheckRun["conclusion"], suiteId: run.suiteId };
  }

  #createCheckRun(repo: string, sha: string, name: string, status: CheckRunRecord["status"], conclusion: string | null, detailsUrl: string | null, sender: string, workflowRunId?: number): CheckRunRecord {
    const id = ++this.#ids;
    const repoKey = repo.toLowerCase();
    const suiteKey = `${repoKey}:${sha}`;
    if (!this.#checkSuites.has(suiteKey)) this.#checkSuites.set(suiteKey, ++this.#ids);
    const headBranch = [...this.#refs].find(([k, v]) => k.startsWith(`${repoKey}:`) && v === sha)?.[0].slice(repoKey.length + 1) ?? null;
    const run: CheckRunRecord = {
      id,
      repo: repoKey,
      displayRepo: repo,
      sha,
      name,
      status,
      conclusion: null,
      suiteId: this.#checkSuites.get(suiteKey)!,
      headBranch,
      detailsUrl,
      ...(workflowRunId !== undefined ? { workflowRunId, attempt: this.#workflowRuns.get(workflowRunId)?.attempt ?? 1 } : {}),
    };
    this.#checkRuns.set(id, run);
    this.#emit({ kind: "check_run", action: "created", repo, checkRun: this.#checkRunEvent(run), branch: headBranch, sender });
    if (status === "completed") this.#completeCheckRun(run, conclusion ?? "success", sender);
    return run;
  }

  // ---- GitHub Actions' workflow runs ----

  /**
   * A workflow run starts in `repo` for a commit (GitHub Actions; returns its id). A fork PR's
   * `pull_request` run belongs to the PR's base repository, with the fork as `headRepo`.
   */
  startWorkflowRun(repo: string, run: { name: string; event: string; headSha: string; headBranch: string; headRepo?: string; status?: "queued" | "in_progress"; actor?: string }): number {
    const id = ++this.#workflowRunIds;
    const runNumber = [...this.#workflowRuns.values()].filter((r) => r.repo.toLowerCase() === repo.toLowerCase()).length + 1;
    const path = `.github/workflows/${run.name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}.yml`;
    this.#workflowRuns.set(id, {
      id,
      repo,
      name: run.name,
      path,
      event: run.event,
      status: run.status ?? "in_progress",
      conclusion: null,
      headSha: run.headSha,
      headBranch: run.headBranch,
      headRepo: run.headRepo ?? repo,
      runNumber,
      actor: run.actor ?? "octocat",
      attempt: 1,
      createdAt: this.#clock(),
      jobs: [],
    });
    return id;
  }

  /** A workflow run finishes (a run without jobs; a run with jobs finishes with its last job). */
  completeWorkflowRun(id: number, conclusion: "success" | "failure" | "cancelled" | "timed_out" = "success"): void {
    const run = this.#workflowRuns.get(id);
    if (!run) throw new Error(`no workflow run ${id}`);
    run.status = "completed";
    run.conclusion = conclusion;
  }

  /**
   * A job of a workflow run starts: GitHub Actions reports each job as a check run on the run's
   * commit (the job's id is its check run's). Returns the check run id.
   */
  startJob(workflowRunId: number, name: string, status: "queued" | "in_progress" = "in_progress"): number {
    const run = this.#workflowRuns.get(workflowRunId);
    if (!run) throw new Error(`no workflow run ${workflowRunId}`);
    const job = this.#createCheckRun(run.repo, run.headSha, name, status, null, null, "github-actions[bot]", workflowRunId);
    run.jobs.push(job.id);
    run.status = "in_progress";
    run.conclusion = null;
    return job.id;
  }

  /** The steps a job (check run) recorded, for `GET …/actions/jobs/{job_id}` (default: one step concluding as the job). */
  setJobSteps(checkRunId: number, steps: NonNullable<CheckRunRecord["steps"]>): void {
    const job = this.#checkRuns.get(checkRunId);
    if (!job) throw new Error(`no check run ${checkRunId}`);
    job.steps = steps;
  }

  /** The jobs (check runs) of a workflow run's latest attempt. */
  jobsOf(workflowRunId: number): CheckRunRecord[] {
    return (this.#workflowRuns.get(workflowRunId)?.jobs ?? []).map((id) => this.#checkRuns.get(id)!);
  }

  /**
   * Called when the failed jobs of a workflow run start again (`POST …/rerun-failed-jobs`), with
   * the new check run of each: the test's CI (github-ci.ts) decides what they conclude.
   */
  onJobsRerun: ((workflowRunId: number, jobs: CheckRunRecord[]) => void) | null = null;

  /** A run whose latest jobs are all done concludes: its worst job's conclusion. */
  #concludeWorkflowRun(id: number): void {
    const run = this.#workflowRuns.get(id);
    const jobs = this.jobsOf(id);
    if (!run || jobs.length === 0 || jobs.some((job) => job.status !== "completed")) return;
    run.status = "completed";
    run.conclusion = ["failure", "timed_out", "cancelled"].find((c) => jobs.some((job) => job.conclusion === c)) ?? "success";
  }

  /**
   * `POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs`, as GitHub answers it
   * (docs/github.md, "Re-running failed jobs"): 403 while the run is not completed or when it
   * is over 30 days old; otherwise each failed (or cancelled, or timed out) job of the latest
   * attempt starts again as a new check run, the run becomes the next attempt, queued, and the
   * answer is 201 with an empty object.
   */
  #rerunFailedJobs(run: WorkflowRunRecord): { status: number; message?: string } {
    if (run.status !== "completed") return { status: 403, message: "This workflow is already running" };
    if (this.#clock() - run.createdAt > 30 * 24 * 3600_000) return { status: 403, message: "Unable to retry this workflow run because it was created over a month ago" };
    const failed = this.jobsOf(run.id).filter((job) => ["failure", "timed_out", "cancelled"].includes(job.conclusion ?? ""));
    if (failed.length === 0) return { status: 403, message: "This workflow run cannot be retried" };
    run.attempt += 1;
    run.status = "queued";
    run.conclusion = null;
    const started = failed.map((job) => this.#createCheckRun(run.repo, run.headSha, job.name, "queued", null, null, "github-actions[bot]", run.id));
    run.jobs = run.jobs.map((id) => started[failed.findIndex((job) => job.id === id)]?.id ?? id);
    this.onJobsRerun?.(run.id, started);
    return { status: 201 };
  }

  workflowRun(id: number): WorkflowRunRecord | undefined {
    return this.#workflowRuns.get(id);
  }

  /**
   * A run's `pull_requests`: the repository's open PRs whose head is the run's, from the
   * repository itself. A run from a fork lists none (github/docs#22501).
   */
  #workflowRunPulls(run: WorkflowRunRecord) {
    if (run.headRepo.toLowerCase() !== run.repo.toLowerCase()) return [];
    return [...this.#pulls.entries()]
      .filter(([key, pr]) => key.startsWith(`${run.repo.toLowerCase()}#`) && pr.state === "open" && pr.headSha === run.headSha && pr.headRepo.toLowerCase() === run.repo.toLowerCase())
      .map(([, pr]) => shape.pullRequestMinimal(run.repo, pr));
  }

  /** A check's state on a commit: its latest check run, else its latest status. */
  checkState(repo: string, sha: string, context: string): CheckState {
    const status = this.statuses.filter((s) => s.repo === repo.toLowerCase() && s.sha === sha && s.context === context).at(-1);
    const run = [...this.#checkRuns.values()].filter((r) => r.repo === repo.toLowerCase() && r.sha === sha && r.name === context).at(-1);
    if (run?.status === "completed") return ["success", "neutral", "skipped"].includes(run.conclusion ?? "") ? "success" : "failure";
    if (status) return status.state === "success" ? "success" : status.state === "pending" ? "pending" : "failure";
    return run ? "pending" : "missing";
  }

  /** The files of a commit (a test's CI reads them to decide its verdict). */
  filesAt(sha: string): Tree {
    const commit = this.#commits.get(sha);
    if (!commit) throw new Error(`no commit ${sha}`);
    return commit.tree;
  }

  /** A commit's parents (first parent first). */
  parentsOf(sha: string): string[] {
    return this.#commits.get(sha)?.parents ?? [];
  }

  /** Forgets a commit, as after a force-push and garbage collection: asking for it answers 404 / "Object does not exist". */
  forgetCommit(sha: string): void {
    this.#commits.delete(sha);
    // GitHub collects only commits no branch holds: the branches at it are gone with it.
    for (const [ref, at] of this.#refs) if (at === sha) this.#refs.delete(ref);
  }

  /** A commit as events describe it: its files against its first parent. */
  #describeCommit(sha: string): SimulatorCommit {
    const commit = this.#commits.get(sha);
    if (!commit) return { sha, parents: [], message: "", added: [], removed: [], modified: [] };
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

  // ---- Users ----

  grant(repo: string, user: string, permission: "admin" | "write" | "read" | "none"): void {
    this.#permissions.set(`${repo.toLowerCase()}:${user.toLowerCase()}`, permission);
  }

  /** Signs a webhook delivery as GitHub does (X-Hub-Signature-256). */
  sign(body: string, secret = this.webhookSecret): string {
    return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
  }

  // ---- The model ----

  #emit(event: SimulatorEvent): void {
    this.onEvent?.(event);
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

  /** Commits reachable from `to` and not from `from`. */
  #newCommits(from: string | undefined, to: string): Commit[] {
    const out: Commit[] = [];
    const seen = new Set<string>();
    const todo = [to];
    while (todo.length > 0) {
      const sha = todo.pop()!;
      if (seen.has(sha) || (from !== undefined && this.#isAncestor(sha, from))) continue;
      seen.add(sha);
      const c = this.#commits.get(sha);
      if (!c) continue;
      out.push(c);
      todo.push(...c.parents);
    }
    return out;
  }

  /** Every ref creation or move (a push, as CI sees it), in order. */
  readonly refPushes: { repo: string; branch: string; sha: string }[] = [];

  /** Pushes (ref creations and moves) to a branch so far. */
  pushesTo(repo: string, branch: string): number {
    return this.refPushes.filter((p) => p.repo === repo.toLowerCase() && p.branch === branch).length;
  }

  #setRef(repo: string, branch: string, sha: string, sender = APP_BOT): void {
    const key = `${repo.toLowerCase()}:${branch}`;
    const before = this.#refs.get(key);
    this.#refs.set(key, sha);
    if (before === sha) return;
    this.refPushes.push({ repo: repo.toLowerCase(), branch, sha });
    this.#emitPush(repo, branch, before, sha, sender);
    for (const [prKey, pr] of this.#pulls) {
      if (!prKey.startsWith(`${repo.toLowerCase()}#`) || pr.base !== branch || pr.state !== "open") continue;
      // As on GitHub: a PR whose head is now on its base branch is merged.
      if (this.#isAncestor(pr.headSha, sha)) {
        pr.merged = true;
        pr.state = "closed";
        pr.mergeCommitSha = sha;
        this.#emit({ kind: "pull_request", action: "closed", repo, pr: this.#snapshot(pr), sender });
      } else {
        pr.unknownReads = this.#mergeabilityDelay; // the base moved: mergeability is computed again
      }
    }
  }

  #deleteRef(repo: string, branch: string, sender = APP_BOT): void {
    const key = `${repo.toLowerCase()}:${branch}`;
    const before = this.#refs.get(key);
    if (before === undefined) return;
    this.#refs.delete(key);
    this.#emitPush(repo, branch, before, null, sender);
    // As on GitHub: deleting a PR's head branch closes the PR.
    for (const pr of this.#pulls.values()) {
      if (pr.state === "open" && pr.headRef === branch && pr.headRepo.toLowerCase() === repo.toLowerCase()) this.closePr(repo, pr.number, sender);
    }
  }

  /** A ref created (before undefined), moved or deleted (after null): GitHub's `push` event. */
  #emitPush(repo: string, branch: string, before: string | undefined, after: string | null, sender: string): void {
    if (!this.onEvent) return;
    const commits: SimulatorCommit[] = [];
    // The commits new to the branch (for a new branch: those not on the default branch), at most 20.
    const defaultBranch = this.#settings(repo).defaultBranch;
    const known = before ?? (branch === defaultBranch ? undefined : this.#refs.get(`${repo.toLowerCase()}:${defaultBranch}`));
    if (after !== null) {
      for (let sha: string | undefined = after; sha && commits.length < 20 && !(known && this.#isAncestor(sha, known)); sha = this.#commits.get(sha)?.parents[0]) {
        commits.unshift(this.#describeCommit(sha));
      }
    }
    const forced = before !== undefined && after !== null && !this.#isAncestor(before, after);
    this.#emit({ kind: "push", repo, branch, before: before ?? NULL_SHA, after: after ?? NULL_SHA, created: before === undefined, deleted: after === null, forced, commits, sender });
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

  /** The first workflow file that differs between two trees. */
  #workflowChange(before: Tree, after: Tree): string | undefined {
    return Object.keys(after).find((file) => file.startsWith(WORKFLOWS) && before[file] !== after[file]) ?? Object.keys(before).find((f) => f.startsWith(WORKFLOWS) && !(f in after));
  }

  #workflowRefusal(file: string): string {
    return `refusing to allow a GitHub App to create or update workflow \`${file}\` without \`workflows\` permission`;
  }

  /** Refuses a ref update (git refs, merges API) as protection, rulesets and permissions would. */
  #checkRefUpdate(repo: string, installation: number, branch: string, before: string | undefined, after: string): void {
    const tree = (sha: string | undefined) => (sha === undefined ? {} : (this.#commits.get(sha)?.tree ?? {}));
    const workflow = this.#workflowChange(tree(before), tree(after));
    if (workflow && this.#installations.get(installation)?.permissions.workflows !== "write") throw new Refusal(422, this.#workflowRefusal(workflow));
    const change: Change = {
      via: "push",
      branch,
      creating: before === undefined,
      fastForward: before === undefined || this.#isAncestor(before, after),
      mergeCommit: this.#newCommits(before, after).some((c) => c.parents.length > 1),
      check: (context) => this.checkState(repo, after, context),
      approvals: 0,
      behind: false,
    };
    this.#checkRules(repo, change, 422);
  }

  #checkRules(repo: string, change: Change, status: number): void {
    const protection = this.#protection.get(`${repo.toLowerCase()}:${change.branch}`);
    const classic = protection ? protectionViolations(protection, change) : [];
    if (classic.length > 0) throw new Refusal(status, classic.join(" "));
    const ruleViolations = rulesetViolations(this.#rulesetsFor(repo, change.branch), change);
    if (ruleViolations.length > 0) throw new Refusal(status, ruleViolationsMessage(ruleViolations));
  }

  #prChange(repo: string, pr: PullRequest, method: MergeMethod | undefined): Change {
    const baseHead = this.#refs.get(`${repo.toLowerCase()}:${pr.base}`) ?? pr.baseSha;
    return {
      via: "pull_request",
      branch: pr.base,
      creating: false,
      fastForward: true,
      mergeCommit: method === "merge",
      check: (context) => this.checkState(repo, pr.headSha, context),
      approvals: this.#approvals(repo, pr),
      behind: !this.#isAncestor(baseHead, pr.headSha),
      method,
    };
  }

  /** `mergeable` and `mergeable_state` as GitHub computes them, lazily. */
  #mergeability(repo: string, pr: PullRequest): { mergeable: boolean | null; state: string } {
    if (pr.state === "closed") return { mergeable: null, state: "unknown" };
    if (pr.unknownReads > 0) {
      pr.unknownReads--;
      return { mergeable: null, state: "unknown" };
    }
    if (pr.mergeableState !== undefined) return { mergeable: pr.mergeableState === "unknown" ? null : pr.mergeableState !== "dirty", state: pr.mergeableState };
    const baseHead = this.#refs.get(`${repo.toLowerCase()}:${pr.base}`) ?? pr.baseSha;
    if (!this.#applyChanges(baseHead, pr.headSha)) return { mergeable: false, state: "dirty" };
    if (pr.draft) return { mergeable: true, state: "draft" };
    try {
      this.#checkRules(repo, this.#prChange(repo, pr, undefined), 405);
    } catch (e) {
      return { mergeable: true, state: e instanceof Refusal && /out of date/.test(e.message) ? "behind" : "blocked" };
    }
    const failing = this.statuses.some((s) => s.repo === repo.toLowerCase() && s.sha === pr.headSha && this.checkState(repo, pr.headSha, s.context) === "failure");
    const failingRun = this.checkRuns(repo, pr.headSha).some((r) => this.checkState(repo, pr.headSha, r.name) === "failure");
    return { mergeable: true, state: failing || failingRun ? "unstable" : "clean" };
  }

  // ---- Registering the App from a manifest (GitHub's web flow) ----

  /** Codes GitHub handed back after a manifest registration, until exchanged (once) or an hour old. */
  readonly #manifestCodes = new Map<string, { manifest: Manifest; owner: string; ownerType: "User" | "Organization"; expiresAt: number }>();
  /** Every App registered from a manifest: who owns it and the manifest GitHub was sent. */
  readonly registeredApps: { owner: string; ownerType: "User" | "Organization"; manifest: Manifest }[] = [];
  /** The user signed in to the simulated github.com (who owns Apps registered on a personal account). */
  webUser = "octocat";

  /**
   * `POST /settings/apps/new` (or `/organizations/{org}/settings/apps/new`) with a form field
   * `manifest`: GitHub's registration page, which the user confirms at once here. The manifest is
   * checked as GitHub does (homepage url, webhook url when active, redirect_url, known permissions
   * and access levels), then the browser is redirected (302) to `redirect_url?code=…&state=…`.
   */
  #registerFromManifest(res: ServerResponse, record: SimulatorRequest, org: string | undefined, query: URLSearchParams, form: Record<string, unknown>): void {
    const refuse = (message: string) => {
      record.status = 422;
      record.response = { message };
      res.writeHead(422, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify({ message }));
    };
    let manifest: Manifest;
    try {
      manifest = JSON.parse(String(form.manifest ?? "")) as Manifest;
    } catch {
      return refuse("manifest must be JSON");
    }
    const problem = manifestProblem(manifest);
    if (problem) return refuse(problem);
    const code = createHash("sha256")
      .update(`${this.#counter++}:${Math.random()}`)
      .digest("hex")
      .slice(0, 20);
    const owner = org ?? this.webUser;
    const ownerType = org ? "Organization" : "User";
    this.#manifestCodes.set(code, { manifest, owner, ownerType, expiresAt: this.#clock() + 3600_000 });
    this.registeredApps.push({ owner, ownerType, manifest });
    // The simulator hosts one App: the last registration's callback URLs are its.
    if (manifest.callback_urls) this.callbackUrls = [...manifest.callback_urls];
    const target = new URL(manifest.redirect_url!);
    target.searchParams.set("code", code);
    const state = query.get("state") ?? (typeof form.state === "string" ? form.state : null);
    if (state !== null) target.searchParams.set("state", state);
    record.status = 302;
    res.writeHead(302, { location: target.href }).end();
  }

  /**
   * The App a manifest conversion answers. The simulator hosts one App: whatever the manifest,
   * it is this simulator's (its id, private key and webhook secret), so the credentials written
   * from it authenticate here.
   */
  #appFromManifest(owner: string, ownerType: "User" | "Organization", manifest: Manifest) {
    const slug = manifest
      .name!.toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "");
    const id = Number(this.appId);
    return {
      id,
      slug,
      node_id: shape.nodeId("Integration", id),
      client_id: this.clientId,
      owner: shape.user(owner, ownerType),
      name: manifest.name!,
      description: manifest.description ?? null,
      external_url: manifest.url,
      html_url: `https://github.com/apps/${slug}`,
      created_at: "2026-01-01T00:00:00Z",
      updated_at: "2026-01-01T00:00:00Z",
      permissions: { ...manifest.default_permissions },
      events: [...(manifest.default_events ?? [])],
      installations_count: 0,
      client_secret: this.clientSecret,
      webhook_secret: this.webhookSecret,
      pem: this.privateKey,
    };
  }

  // ---- Signing users in with the App (GitHub's OAuth web application flow) ----

  /**
   * The App's callback URLs ("Callback URL" in its settings): `redirect_uri` must be one of them,
   * exactly (docs.github.com, "Generating a user access token for a GitHub App").
   */
  callbackUrls: string[] = [];
  /** When set, the simulated consent page is cancelled: GitHub redirects back with `error=access_denied`. */
  consentDenied = false;
  /** Codes handed back by the authorize page, until exchanged (once) or ten minutes old. */
  readonly #oauthCodes = new Map<string, { login: string; redirectUri: string; challenge: string | null; expiresAt: number }>();
  /** User access tokens (`ghu_…`) and whose they are. */
  readonly #userTokens = new Map<string, string>();

  /** The user a user access token belongs to (`Authorization: token ghu_…` or `Bearer ghu_…`). */
  #userOf(authorization: string | undefined): string | undefined {
    const token = /^(?:token|bearer) (ghu_\S+)$/i.exec(authorization ?? "")?.[1];
    return token === undefined ? undefined : this.#userTokens.get(token);
  }

  /** The repositories of `account` the user was granted access to (`grant`), with the permission. */
  #repositoriesOfUser(login: string, account: string): [string, "admin" | "write" | "read"][] {
    const found: [string, "admin" | "write" | "read"][] = [];
    for (const [key, permission] of this.#permissions) {
      const [repo, user] = key.split(":") as [string, string];
      if (user === login.toLowerCase() && repo.startsWith(`${account.toLowerCase()}/`) && permission !== "none") found.push([repo, permission]);
    }
    return found.sort(([a], [b]) => a.localeCompare(b));
  }

  /**
   * The installations a user access token reaches: those on the user's own account, and those on an
   * account where the user was granted a repository (a member or collaborator there).
   */
  #installationsOfUser(login: string): [number, { account: string; permissions: Permissions }][] {
    return [...this.#installations].filter(([, i]) => i.account.toLowerCase() === login.toLowerCase() || this.#repositoriesOfUser(login, i.account).length > 0);
  }

  /**
   * `GET /login/oauth/authorize`: GitHub's consent page, which the signed-in user (`webUser`)
   * accepts at once here. An unknown client_id is GitHub's 404 page; a redirect_uri that is not one
   * of the App's callback URLs sends the browser to the first callback URL with
   * `error=redirect_uri_mismatch` (docs.github.com, "Troubleshooting authorization request
   * errors"); PKCE accepts only S256.
   */
  #authorize(res: ServerResponse, record: SimulatorRequest, query: URLSearchParams): void {
    const page = (status: number, text: string) => {
      record.status = status;
      res.writeHead(status, { "content-type": "text/html; charset=utf-8" }).end(`<!doctype html><title>${text}</title><p>${text}</p>`);
    };
    const redirect = (target: string, params: Record<string, string | null>) => {
      const url = new URL(target);
      for (const [name, value] of Object.entries(params)) if (value !== null) url.searchParams.set(name, value);
      record.status = 302;
      res.writeHead(302, { location: url.href }).end();
    };
    if (query.get("client_id") !== this.clientId) return page(404, "Not Found");
    const state = query.get("state");
    const registered = this.callbackUrls[0];
    if (registered === undefined) return page(404, "Not Found");
    const redirectUri = query.get("redirect_uri") ?? registered;
    if (!this.callbackUrls.includes(redirectUri)) {
      return redirect(registered, {
        error: "redirect_uri_mismatch",
        error_description: "The redirect_uri MUST match the registered callback URL for this application.",
        error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#redirect-uri-mismatch",
        state,
      });
    }
    const challenge = query.get("code_challenge");
    const method = query.get("code_challenge_method");
    if ((challenge !== null || method !== null) && (method !== "S256" || !challenge || !/^[A-Za-z0-9_-]{43}$/.test(challenge))) {
      return redirect(redirectUri, { error: "invalid_request", error_description: "code_challenge_method must be S256, with a code_challenge", state });
    }
    if (this.consentDenied) {
      return redirect(redirectUri, {
        error: "access_denied",
        error_description: "The user has denied your application access.",
        error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#access-denied",
        state,
      });
    }
    const code = createHash("sha256")
      .update(`${this.#counter++}:${Math.random()}`)
      .digest("hex")
      .slice(0, 20);
    this.#oauthCodes.set(code, { login: this.webUser, redirectUri, challenge, expiresAt: this.#clock() + 600_000 });
    redirect(redirectUri, { code, state });
  }

  /**
   * `POST /login/oauth/access_token`: the code (single use, ten minutes) for a user access token.
   * Parameters come as a form, JSON or the query. GitHub answers 200 even when it refuses, with an
   * `error` (`incorrect_client_credentials`, `redirect_uri_mismatch`, `bad_verification_code`:
   * "Troubleshooting OAuth App access token request errors"); JSON with `Accept: application/json`,
   * a form otherwise.
   */
  #exchangeCode(req: IncomingMessage, res: ServerResponse, record: SimulatorRequest, query: URLSearchParams, body: Record<string, unknown>): void {
    const params: Record<string, string> = Object.fromEntries(query);
    for (const [name, value] of Object.entries(body)) if (typeof value === "string") params[name] = value;
    const json = /application\/json/.test(String(req.headers.accept ?? ""));
    const answer = (value: Record<string, string | number>) => {
      record.status = 200;
      record.response = value;
      if (json) res.writeHead(200, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(value));
      else res.writeHead(200, { "content-type": "application/x-www-form-urlencoded; charset=utf-8" }).end(new URLSearchParams(Object.entries(value).map(([k, v]): [string, string] => [k, String(v)])).toString());
    };
    const docs = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors";
    const refuse = (error: string, description: string) => answer({ error, error_description: description, error_uri: `${docs}#${error.replace(/_/g, "-")}` });
    if (params.client_id !== this.clientId || params.client_secret !== this.clientSecret) return refuse("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.");
    const pending = this.#oauthCodes.get(params.code ?? "");
    if (!pending || pending.expiresAt <= this.#clock()) return refuse("bad_verification_code", "The code passed is incorrect or expired.");
    if (params.redirect_uri !== undefined && params.redirect_uri !== pending.redirectUri) return refuse("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.");
    this.#oauthCodes.delete(params.code!);
    if (pending.challenge !== null) {
      const verifier = params.code_verifier ?? "";
      if (createHash("sha256").update(verifier).digest("base64url") !== pending.challenge) return refuse("bad_verification_code", "The code passed is incorrect or expired.");
    }
    const token = `ghu_${createHash("sha256")
      .update(`user:${this.#counter++}:${Math.random()}`)
      .digest("base64url")
      .slice(0, 36)}`;
    this.#userTokens.set(token, pending.login);
    answer({ access_token: token, expires_in: 28800, refresh_token: `ghr_${token.slice(4)}`, refresh_token_expires_in: 15811200, token_type: "bearer", scope: "" });
  }

  /** Revokes every user access token (as when users revoke the App's authorization). */
  revokeUserTokens(): void {
    this.#userTokens.clear();
  }

  // ---- HTTP ----

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
    const url = new URL(req.url ?? "/", "http://x");
    const path = decodeURIComponent(url.pathname);
    const method = req.method ?? "GET";
    const record: SimulatorRequest = { method, path, authorization: req.headers.authorization };
    this.requests.push(record);
    const send = (status: number, answer?: unknown) => {
      record.status = status;
      record.response = answer;
      if (answer === undefined) res.writeHead(status).end();
      else res.writeHead(status, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(answer));
    };
    const error = (status: number, message: string, documentation = "https://docs.github.com/rest") => send(status, { message, documentation_url: documentation, status: String(status) });
    const notFound = (message = "Not Found") => error(404, message);
    if (this.#answerLimitsAndFaults(req, res, path)) return;
    if (path === "/login/oauth/authorize" && method === "GET") return this.#authorize(res, record, url.searchParams);
    if (path === "/login/oauth/access_token" && method === "POST") return this.#exchangeCode(req, res, record, url.searchParams, body);
    const registration = /^(?:\/organizations\/([^/]+))?\/settings\/apps\/new$/.exec(path);
    if (registration && method === "POST") return this.#registerFromManifest(res, record, registration[1], url.searchParams, body);
    try {
      this.#route(req, method, path, url.searchParams, body, send, error, notFound);
    } catch (e) {
      if (e instanceof Refusal) return error(e.status, e.message);
      throw e;
    }
  }

  #route(
    req: IncomingMessage,
    method: string,
    path: string,
    query: URLSearchParams,
    body: Record<string, any>,
    send: (status: number, answer?: unknown) => void,
    error: (status: number, message: string, documentation?: string) => void,
    notFound: (message?: string) => void,
  ): void {
    let match: RegExpExecArray | null;
    const appId = Number(this.appId);

    if ((match = /^\/app-manifests\/([^/]+)\/conversions$/.exec(path)) && method === "POST") {
      // No authentication: the code is the credential (single use, valid an hour).
      const pending = this.#manifestCodes.get(match[1]!);
      this.#manifestCodes.delete(match[1]!);
      if (!pending || pending.expiresAt <= this.#clock()) return notFound();
      return send(201, this.#appFromManifest(pending.owner, pending.ownerType, pending.manifest));
    }

    if ((match = /^\/repos\/([^/]+)\/([^/]+)\/installation$/.exec(path)) && method === "GET") {
      if (!this.#appJwtValid(req.headers.authorization)) return error(401, "A JSON web token could not be decoded");
      const id = this.#installationFor(match[1]!);
      if (id === undefined) return notFound();
      const installation = this.#installations.get(id)!;
      const suspended = this.#suspended.get(id);
      return send(200, {
        ...shape.installation(appId, id, installation.account, installation.permissions as Record<string, string>),
        ...(suspended ? { suspended_at: suspended.at, suspended_by: shape.user(suspended.by) } : {}),
      });
    }
    if ((match = /^\/(?:users|orgs)\/([^/]+)\/installation$/.exec(path)) && method === "GET") {
      // The App's installation on an account (JWT only); 404 when it is not installed there.
      if (!this.#appJwtValid(req.headers.authorization)) return error(401, "A JSON web token could not be decoded");
      const id = this.#installationFor(match[1]!);
      if (id === undefined) return notFound();
      const installation = this.#installations.get(id)!;
      const suspended = this.#suspended.get(id);
      return send(200, {
        ...shape.installation(appId, id, installation.account, installation.permissions as Record<string, string>),
        ...(suspended ? { suspended_at: suspended.at, suspended_by: shape.user(suspended.by) } : {}),
      });
    }
    if ((match = /^\/app\/installations\/(\d+)\/suspended$/.exec(path)) && (method === "PUT" || method === "DELETE")) {
      // Suspend / unsuspend an app installation: JWT only, 204 (404 for an unknown installation).
      if (!this.#appJwtValid(req.headers.authorization)) return error(401, "A JSON web token could not be decoded");
      const id = Number(match[1]);
      if (!this.#installations.has(id)) return notFound();
      if (method === "PUT") this.suspendInstallation(id, APP_BOT);
      else this.unsuspendInstallation(id, APP_BOT);
      return send(204);
    }
    if ((match = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path)) && method === "POST") {
      if (!this.#appJwtValid(req.headers.authorization)) return error(401, "A JSON web token could not be decoded");
      const installation = this.#installations.get(Number(match[1]));
      if (!installation) return notFound();
      if (this.#suspended.has(Number(match[1]))) return error(403, SUSPENDED_MESSAGE, "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app");
      return send(201, {
        token: `ghs_installation_${match[1]}`,
        expires_at: new Date(Date.now() + 3600_000).toISOString(),
        permissions: installation.permissions,
        repository_selection: "all",
      });
    }
    if (path === "/user" || path.startsWith("/user/")) {
      if (this.outage !== null) return error(this.outage, "Server Error");
      const login = this.#userOf(req.headers.authorization);
      if (login === undefined) return error(401, "Bad credentials");
      const page = Math.max(1, Number(query.get("page") ?? 1) || 1);
      const perPage = Math.min(100, Math.max(1, Number(query.get("per_page") ?? 30) || 30));
      const slice = <T>(items: T[]) => items.slice((page - 1) * perPage, page * perPage);
      if (path === "/user" && method === "GET") return send(200, shape.publicUser(login));
      if (path === "/user/installations" && method === "GET") {
        const reachable = this.#installationsOfUser(login);
        return send(200, { total_count: reachable.length, installations: slice(reachable).map(([id, i]) => shape.installation(appId, id, i.account, i.permissions as Record<string, string>)) });
      }
      if ((match = /^\/user\/installations\/(\d+)\/repositories$/.exec(path)) && method === "GET") {
        const id = Number(match[1]);
        if (!this.#installationsOfUser(login).some(([reachable]) => reachable === id)) return notFound();
        const repositories = this.#repositoriesOfUser(login, this.#installations.get(id)!.account);
        return send(200, {
          total_count: repositories.length,
          repository_selection: "all",
          repositories: slice(repositories).map(([repo, permission]) => ({ ...shape.repository(repo, this.#settings(repo)), permissions: shape.repositoryPermissions(permission) })),
        });
      }
      return notFound();
    }
    const repoMatch = /^\/repos\/([^/]+)\/([^/]+)(\/|$)/.exec(path);
    if (!repoMatch) return notFound();
    if (this.outage !== null) return error(this.outage, "Server Error");
    const installation = this.#installationFor(repoMatch[1]!);
    if (installation === undefined || req.headers.authorization !== `token ghs_installation_${installation}`) return error(401, "Bad credentials");
    // A token issued before the suspension is refused as the token request is.
    if (this.#suspended.has(installation)) return error(403, SUSPENDED_MESSAGE);
    const need = routeNeeds(method, path);
    if (need && !covers(this.#installations.get(installation)!.permissions, need)) {
      return send(403, { ...NOT_ACCESSIBLE, documentation_url: "https://docs.github.com/rest/authentication/permissions-required-for-github-apps" });
    }
    const repoName = `${repoMatch[1]!.toLowerCase()}/${repoMatch[2]!.toLowerCase()}`;
    const fullName = `${repoMatch[1]}/${repoMatch[2]}`;
    const settings = this.#settings(repoName);
    const rest = path.slice(`/repos/${repoMatch[1]}/${repoMatch[2]}`.length);
    const refKey = (branch: string) => `${repoName}:${branch}`;
    /** A sha, or a branch name, as GitHub resolves `{ref}`. */
    const resolveRef = (ref: string) => (this.#commits.has(ref) ? ref : this.#refs.get(refKey(ref.replace(/^(refs\/)?heads\//, ""))));

    // Every repository has its default branch (GitHub creates it with the first commit): a test
    // need not create it. Any other branch exists only once created (404 "Branch not found").
    if (!this.#refs.has(refKey(settings.defaultBranch))) this.branchHead(repoName, settings.defaultBranch);
    if (rest === "" && method === "GET") return send(200, shape.repository(fullName, settings));
    if ((match = /^\/git\/commits\/([0-9a-f]+)$/.exec(rest)) && method === "GET") {
      const commit = this.#commits.get(match[1]!);
      return commit ? send(200, shape.gitCommit(fullName, commit)) : notFound();
    }

    // ---- Branches, protection, rules ----
    if ((match = /^\/branches\/(.+)\/protection\/required_status_checks$/.exec(rest)) && method === "GET") {
      const branch = match[1]!;
      if (!this.#refs.has(refKey(branch))) return notFound("Branch not found");
      const p = this.#protection.get(refKey(branch));
      if (!p) return notFound("Branch not protected");
      return send(200, this.#statusCheckPolicy(fullName, branch, p));
    }
    if ((match = /^\/branches\/(.+)\/protection$/.exec(rest)) && method === "GET") {
      const branch = match[1]!;
      if (!this.#refs.has(refKey(branch))) return notFound("Branch not found");
      const p = this.#protection.get(refKey(branch));
      if (!p) return notFound("Branch not protected");
      return send(200, this.#protectionAnswer(fullName, branch, p));
    }
    if ((match = /^\/branches\/(.+)$/.exec(rest)) && method === "GET") {
      const branch = match[1]!;
      const sha = this.#refs.get(refKey(branch));
      if (sha === undefined) return notFound("Branch not found");
      const p = this.#protection.get(refKey(branch));
      const contexts = p?.requiredChecks ?? [];
      return send(200, {
        name: branch,
        commit: shape.commit(fullName, this.#commits.get(sha)!),
        _links: { html: `https://github.com/${fullName}/tree/${branch}`, self: `https://api.github.com/repos/${fullName}/branches/${branch}` },
        protected: p !== undefined || this.#rulesetsFor(repoName, branch).length > 0,
        protection: {
          enabled: p !== undefined,
          required_status_checks: { enforcement_level: p ? "non_admins" : "off", contexts, checks: contexts.map((context) => ({ context, app_id: null })) },
        },
        protection_url: `https://api.github.com/repos/${fullName}/branches/${branch}/protection`,
      });
    }
    if ((match = /^\/rules\/branches\/(.+)$/.exec(rest)) && method === "GET") {
      if (this.rulesRefused) return send(403, { ...NOT_ACCESSIBLE, documentation_url: "https://docs.github.com/rest/repos/rules#get-rules-for-a-branch" });
      const rules = this.#rulesetsFor(repoName, match[1]!).flatMap((r) => r.rules.map((rule) => ({ ...rule, ruleset_source_type: "Repository", ruleset_source: fullName, ruleset_id: r.id })));
      return send(200, rules);
    }
    if (rest === "/rulesets" && method === "GET") {
      return send(
        200,
        (this.#rulesets.get(repoName) ?? []).map((r) => this.#rulesetAnswer(fullName, r, false)),
      );
    }
    if ((match = /^\/rulesets\/(\d+)$/.exec(rest)) && method === "GET") {
      const ruleset = (this.#rulesets.get(repoName) ?? []).find((r) => r.id === Number(match![1]));
      return ruleset ? send(200, this.#rulesetAnswer(fullName, ruleset, true)) : notFound();
    }

    // ---- Contents ----
    if ((match = /^\/contents\/(.+)$/.exec(rest)) && method === "GET") {
      // GET a file's contents at a ref (commit sha or branch), base64 as GitHub sends them.
      const sha = resolveRef(query.get("ref") ?? settings.defaultBranch);
      const file = match[1]!;
      const content = sha === undefined ? undefined : this.#commits.get(sha)?.tree[file];
      if (content === undefined) return notFound();
      const blob = createHash("sha1")
        .update(`blob ${Buffer.byteLength(content)}\0${content}`)
        .digest("hex");
      const self = `https://api.github.com/repos/${fullName}/contents/${file}?ref=${query.get("ref") ?? settings.defaultBranch}`;
      return send(200, {
        type: "file",
        encoding: "base64",
        size: Buffer.byteLength(content),
        name: file.split("/").at(-1),
        path: file,
        content: Buffer.from(content).toString("base64").replace(/.{60}/g, "$&\n"),
        sha: blob,
        url: self,
        git_url: `https://api.github.com/repos/${fullName}/git/blobs/${blob}`,
        html_url: `https://github.com/${fullName}/blob/${sha}/${file}`,
        download_url: `https://raw.githubusercontent.com/${fullName}/${sha}/${file}`,
        _links: { self, git: `https://api.github.com/repos/${fullName}/git/blobs/${blob}`, html: `https://github.com/${fullName}/blob/${sha}/${file}` },
      });
    }
    if ((match = /^\/compare\/(.+)\.\.\.(.+)$/.exec(rest)) && method === "GET") {
      const baseHead = resolveRef(match[1]!);
      const head = resolveRef(match[2]!);
      if (baseHead === undefined || head === undefined) return notFound();
      const ahead = this.#newCommits(baseHead, head);
      const behind = this.#newCommits(head, baseHead);
      const mergeBase = this.#isAncestor(baseHead, head) ? baseHead : (this.#commits.get(head)!.parents[0] ?? head);
      const status = ahead.length === 0 && behind.length === 0 ? "identical" : behind.length === 0 ? "ahead" : ahead.length === 0 ? "behind" : "diverged";
      return send(200, {
        url: `https://api.github.com/repos/${fullName}/compare/${match[1]}...${match[2]}`,
        html_url: `https://github.com/${fullName}/compare/${match[1]}...${match[2]}`,
        permalink_url: `https://github.com/${fullName}/compare/${baseHead}...${head}`,
        diff_url: `https://github.com/${fullName}/compare/${match[1]}...${match[2]}.diff`,
        patch_url: `https://github.com/${fullName}/compare/${match[1]}...${match[2]}.patch`,
        base_commit: shape.commit(fullName, this.#commits.get(baseHead)!),
        merge_base_commit: shape.commit(fullName, this.#commits.get(mergeBase) ?? this.#commits.get(baseHead)!),
        status,
        ahead_by: ahead.length,
        behind_by: behind.length,
        total_commits: ahead.length,
        commits: ahead.reverse().map((c) => shape.commit(fullName, c)),
        files: [],
      });
    }

    // ---- GitHub Actions ----
    if (rest === "/actions/runs" && method === "GET") {
      // Newest first, filtered as GitHub filters (`head_sha`, `branch` = head_branch, `status`).
      const page = Math.max(1, Number(query.get("page") ?? 1) || 1);
      const perPage = Math.min(100, Math.max(1, Number(query.get("per_page") ?? 30) || 30));
      const headSha = query.get("head_sha");
      const branch = query.get("branch");
      const status = query.get("status");
      const runs = [...this.#workflowRuns.values()]
        .filter((r) => r.repo.toLowerCase() === repoName && (headSha === null || r.headSha === headSha) && (branch === null || r.headBranch === branch))
        .filter((r) => status === null || r.status === status || r.conclusion === status)
        .sort((a, b) => b.id - a.id);
      const pulls = query.get("exclude_pull_requests") === "true";
      return send(200, { total_count: runs.length, workflow_runs: runs.slice((page - 1) * perPage, page * perPage).map((r) => shape.workflowRun(r, pulls ? [] : this.#workflowRunPulls(r))) });
    }
    if ((match = /^\/actions\/runs\/(\d+)\/rerun-failed-jobs$/.exec(rest)) && method === "POST") {
      const run = this.#workflowRuns.get(Number(match[1]));
      if (!run || run.repo.toLowerCase() !== repoName) return notFound();
      const answer = this.#rerunFailedJobs(run);
      if (answer.message !== undefined) return error(answer.status, answer.message, "https://docs.github.com/rest/actions/workflow-runs#re-run-failed-jobs-from-a-workflow-run");
      return send(201, {});
    }
    if ((match = /^\/actions\/jobs\/(\d+)$/.exec(rest)) && method === "GET") {
      // A check run of GitHub Actions is a job with the same id; another app's check run is no job.
      const checkRun = this.#checkRuns.get(Number(match[1]));
      const run = checkRun?.workflowRunId === undefined ? undefined : this.#workflowRuns.get(checkRun.workflowRunId);
      if (!checkRun || !run || run.repo.toLowerCase() !== repoName) return notFound();
      return send(200, shape.job({ ...checkRun, workflowRunId: run.id, repo: run.repo }, { runAttempt: checkRun.attempt ?? 1, name: run.name }));
    }
    if ((match = /^\/actions\/runs\/(\d+)$/.exec(rest)) && method === "GET") {
      const run = this.#workflowRuns.get(Number(match[1]));
      // Another repository's run is not found here.
      if (!run || run.repo.toLowerCase() !== repoName) return notFound();
      return send(200, shape.workflowRun(run, this.#workflowRunPulls(run)));
    }

    // ---- Statuses and checks ----
    if ((match = /^\/statuses\/([^/]+)$/.exec(rest)) && method === "POST") {
      const sha = match[1]!;
      if (!STATUS_STATES.includes(body.state)) {
        return send(422, {
          message: "Validation Failed",
          errors: [{ resource: "Status", field: "state", code: "custom", message: `state is not included in the list` }],
          documentation_url: "https://docs.github.com/rest/commits/statuses#create-a-commit-status",
          status: "422",
        });
      }
      if (!this.#commits.has(sha)) return error(422, `No commit found for SHA: ${sha}`);
      const description = body.description === undefined || body.description === null ? "" : String(body.description);
      if (description.length > 140) {
        return send(422, {
          message: "Validation Failed",
          errors: [{ resource: "Status", field: "description", code: "custom", message: "description is too long (maximum is 140 characters)" }],
          documentation_url: "https://docs.github.com/rest/commits/statuses#create-a-commit-status",
          status: "422",
        });
      }
      const context = body.context === undefined ? "default" : String(body.context);
      // "There is a limit of 1000 statuses per sha and context within a repository" ("Create a commit status").
      if (this.statuses.filter((s) => s.repo === repoName && s.sha === sha && s.context === context).length >= 1000) {
        return send(422, {
          message: "Validation Failed",
          errors: [{ resource: "Status", code: "custom", message: "This SHA and context has reached the maximum number of statuses." }],
          documentation_url: "https://docs.github.com/rest/commits/statuses#create-a-commit-status",
          status: "422",
        });
      }
      const targetUrl = typeof body.target_url === "string" ? body.target_url : null;
      const id = this.#createStatus(repoName, sha, { context, state: String(body.state), description, targetUrl, creator: APP_BOT });
      return send(201, shape.status(this.statuses.find((s) => s.id === id)!));
    }
    if ((match = /^\/commits\/(.+)\/status$/.exec(rest)) && method === "GET") {
      const sha = resolveRef(match[1]!);
      if (sha === undefined) return error(422, `No commit found for SHA: ${match[1]}`);
      const latest = new Map<string, StatusRecord>();
      for (const s of this.statuses) if (s.repo === repoName && s.sha === sha) latest.set(s.context, s);
      const states = [...latest.values()].map((s) => s.state);
      const state = states.some((s) => s === "failure" || s === "error") ? "failure" : states.length === 0 || states.includes("pending") ? "pending" : "success";
      return send(200, {
        state,
        sha,
        total_count: latest.size,
        statuses: [...latest.values()].reverse().map((s) => shape.status(s)),
        repository: shape.minimalRepository(fullName),
        commit_url: `https://api.github.com/repos/${fullName}/commits/${sha}`,
        url: `https://api.github.com/repos/${fullName}/commits/${sha}/status`,
      });
    }
    if ((match = /^\/commits\/(.+)\/check-runs$/.exec(rest)) && method === "GET") {
      const sha = resolveRef(match[1]!);
      if (sha === undefined) return error(422, `No commit found for SHA: ${match[1]}`);
      const name = query.get("check_name");
      const runs = this.checkRuns(repoName, sha).filter((r) => name === null || r.name === name);
      return send(200, { total_count: runs.length, check_runs: runs.map((r) => shape.checkRun(appId, { ...r, repo: fullName })) });
    }
    if ((match = /^\/commits\/(.+)\/check-suites$/.exec(rest)) && method === "GET") {
      const sha = resolveRef(match[1]!);
      if (sha === undefined) return error(422, `No commit found for SHA: ${match[1]}`);
      const suiteId = this.#checkSuites.get(`${repoName}:${sha}`);
      const runs = this.checkRuns(repoName, sha);
      const suites = suiteId === undefined ? [] : [shape.checkSuite(appId, fullName, settings, { id: suiteId, sha, headBranch: runs[0]?.headBranch ?? null, runs })];
      return send(200, { total_count: suites.length, check_suites: suites });
    }
    if (rest === "/check-runs" && method === "POST") {
      const invalid = (field: string) => send(422, { message: "Invalid request.", errors: [`${field} is invalid`], documentation_url: "https://docs.github.com/rest/checks/runs#create-a-check-run", status: "422" });
      if (typeof body.name !== "string" || body.name === "") return invalid("name");
      if (typeof body.head_sha !== "string" || !this.#commits.has(body.head_sha)) return error(422, `No commit found for SHA: ${String(body.head_sha)}`);
      const status = body.conclusion !== undefined ? "completed" : (body.status ?? "queued");
      if (!["queued", "in_progress", "completed"].includes(status)) return invalid("status");
      if (status === "completed" && !CHECK_CONCLUSIONS.includes(body.conclusion)) return invalid("conclusion");
      const run = this.#createCheckRun(repoName, body.head_sha, body.name, status, status === "completed" ? body.conclusion : null, body.details_url ?? null, APP_BOT);
      return send(201, shape.checkRun(appId, { ...run, repo: fullName }));
    }
    if ((match = /^\/check-runs\/(\d+)$/.exec(rest)) && (method === "PATCH" || method === "GET")) {
      const run = this.#checkRuns.get(Number(match[1]));
      if (!run || run.repo !== repoName) return notFound();
      if (method === "PATCH") {
        const status = body.conclusion !== undefined ? "completed" : (body.status ?? run.status);
        if (!["queued", "in_progress", "completed"].includes(status) || (status === "completed" && !CHECK_CONCLUSIONS.includes(body.conclusion ?? ""))) {
          return send(422, { message: "Invalid request.", errors: ["conclusion is invalid"], documentation_url: "https://docs.github.com/rest/checks/runs#update-a-check-run", status: "422" });
        }
        if (status === "completed") this.#completeCheckRun(run, body.conclusion, APP_BOT);
        else run.status = status;
      }
      return send(200, shape.checkRun(appId, { ...run, repo: fullName }));
    }

    // ---- Collaborators and comments ----
    if ((match = /^\/collaborators\/([^/]+)\/permission$/.exec(rest)) && method === "GET") {
      const permission = this.#permissions.get(`${repoName}:${match[1]!.toLowerCase()}`) ?? "read";
      return send(200, {
        permission,
        role_name: permission === "admin" ? "admin" : permission === "write" ? "write" : "read",
        user: { ...shape.user(match[1]!), role_name: permission },
      });
    }
    if ((match = /^\/issues\/(\d+)\/comments$/.exec(rest)) && method === "POST") {
      if (!this.#pulls.has(`${repoName}#${match[1]}`)) return notFound();
      if (typeof body.body !== "string") {
        return send(422, { message: 'Invalid request.\n\n"body" wasn\'t supplied.', documentation_url: "https://docs.github.com/rest/issues/comments#create-an-issue-comment", status: "422" });
      }
      const id = ++this.#ids;
      const comment = { repo: repoName, number: Number(match[1]), body: body.body, id, author: "greenline[bot]" };
      this.comments.push(comment);
      // GitHub sends the App's own comments back to it, as a Bot's.
      this.#emit({ kind: "issue_comment", action: "created", repo: repoName, pr: this.#snapshot(this.#pulls.get(`${repoName}#${match[1]}`)!), comment: { id, body: body.body }, sender: APP_BOT });
      return send(201, shape.comment(fullName, comment));
    }

    // ---- Refs and merges ----
    if ((match = /^\/git\/ref\/heads\/(.+)$/.exec(rest)) && method === "GET") {
      const sha = this.#refs.get(refKey(match[1]!));
      return sha === undefined ? notFound() : send(200, shape.gitRef(fullName, match[1]!, sha));
    }
    if (rest === "/git/refs" && method === "POST") {
      const ref = String(body.ref ?? "");
      if (!/^refs\/[^/]+\/.+/.test(ref)) return error(422, "Reference name must start with 'refs/' and have at least two slashes.");
      const branch = ref.replace(/^refs\/heads\//, "");
      if (this.#refs.has(refKey(branch))) return error(422, "Reference already exists");
      if (!this.#commits.has(String(body.sha))) return error(422, "Object does not exist");
      this.#checkRefUpdate(repoName, installation, branch, undefined, String(body.sha));
      this.#setRef(repoName, branch, String(body.sha));
      return send(201, shape.gitRef(fullName, branch, String(body.sha)));
    }
    if ((match = /^\/git\/refs\/heads\/(.+)$/.exec(rest)) && (method === "PATCH" || method === "DELETE")) {
      const branch = match[1]!;
      const current = this.#refs.get(refKey(branch));
      if (current === undefined) return error(422, "Reference does not exist");
      if (method === "DELETE") {
        this.#deleteRef(repoName, branch);
        return send(204);
      }
      const sha = String(body.sha);
      if (!this.#commits.has(sha)) return error(422, "Object does not exist");
      if (!body.force && !this.#isAncestor(current, sha)) return error(422, "Update is not a fast forward");
      this.#checkRefUpdate(repoName, installation, branch, current, sha);
      this.#setRef(repoName, branch, sha);
      return send(200, shape.gitRef(fullName, branch, sha));
    }
    if (rest === "/merges" && method === "POST") {
      const branch = String(body.base);
      const baseSha = this.#refs.get(refKey(branch));
      const head = resolveRef(String(body.head));
      if (baseSha === undefined) return notFound("Base does not exist");
      if (head === undefined) return notFound("Head does not exist");
      if (this.#isAncestor(head, baseSha)) return send(204);
      const tree = this.#applyChanges(baseSha, head);
      if (!tree) return error(409, "Merge conflict");
      const sha = this.#commit([baseSha, head], tree, String(body.commit_message ?? `Merge ${head} into ${branch}`));
      this.#checkRefUpdate(repoName, installation, branch, baseSha, sha);
      this.#setRef(repoName, branch, sha);
      return send(201, shape.commit(fullName, this.#commits.get(sha)!));
    }
    if ((match = /^\/pulls\/(\d+)\/merge$/.exec(rest)) && method === "PUT") {
      const pr = this.#pulls.get(`${repoName}#${match[1]}`);
      if (!pr) return notFound();
      const mergeMethod: MergeMethod = body.merge_method ?? "merge";
      if (!["merge", "squash", "rebase"].includes(mergeMethod)) {
        return send(422, {
          message: "Validation Failed",
          errors: [{ resource: "PullRequest", field: "merge_method", code: "invalid" }],
          documentation_url: "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request",
          status: "422",
        });
      }
      if (pr.merged || pr.state !== "open") return error(405, "Pull Request is not mergeable");
      if (body.sha && body.sha !== pr.headSha) return error(409, "Head branch was modified. Review and try the merge again.");
      if (pr.draft) return error(405, "Pull Request is still a draft");
      const hook = this.#beforeMerge.get(`${repoName}#${pr.number}`);
      this.#beforeMerge.delete(`${repoName}#${pr.number}`);
      const answer = hook?.();
      if (answer) return error(answer.status, answer.message);
      const allowed = { merge: settings.allowMergeCommit, squash: settings.allowSquashMerge, rebase: settings.allowRebaseMerge }[mergeMethod];
      if (!allowed) return error(405, `${{ merge: "Merge commits", squash: "Squash merges", rebase: "Rebase merges" }[mergeMethod]} are not allowed on this repository.`);
      const workflow = this.#workflowChange(this.#commits.get(this.#commits.get(pr.headSha)!.parents[0] ?? "")?.tree ?? {}, this.#commits.get(pr.headSha)!.tree);
      if (workflow && this.#installations.get(installation)!.permissions.workflows !== "write") return error(403, this.#workflowRefusal(workflow));
      const baseSha = this.branchHead(repoName, pr.base);
      const tree = this.#applyChanges(baseSha, pr.headSha);
      if (!tree) return error(405, mergeMethod === "rebase" ? "This branch can't be rebased" : "Pull Request is not mergeable");
      this.#checkRules(repoName, this.#prChange(repoName, pr, mergeMethod), 405);
      const sha =
        mergeMethod === "merge" ? this.#commit([baseSha, pr.headSha], tree, body.commit_title ?? `Merge pull request #${pr.number}`) : this.#commit([baseSha], tree, body.commit_title ?? `${pr.title} (#${pr.number})`);
      pr.merged = true;
      pr.state = "closed";
      pr.mergeCommitSha = sha;
      this.#setRef(repoName, pr.base, sha);
      this.#emit({ kind: "pull_request", action: "closed", repo: repoName, pr: this.#snapshot(pr), sender: APP_BOT });
      return send(200, { sha, merged: true, message: "Pull Request successfully merged" });
    }

    // ---- Pull requests ----
    if ((match = /^\/pulls\/(\d+)$/.exec(rest)) && (method === "GET" || method === "PATCH")) {
      const pr = this.#pulls.get(`${repoName}#${match[1]}`);
      if (!pr) return notFound();
      if (method === "PATCH") {
        const base = body.base === undefined ? undefined : String(body.base);
        if (base !== undefined && base !== pr.base) {
          // GitHub's answers (docs/github.md, "The simulator and its sources"): a closed PR's
          // base cannot change, and the new base must be a branch of the repository.
          const invalidBase = (message?: string) =>
            send(422, {
              message: "Validation Failed",
              errors: [{ ...(message ? { message } : {}), resource: "PullRequest", field: "base", code: "invalid" }],
              documentation_url: "https://docs.github.com/rest/pulls/pulls#update-a-pull-request",
              status: "422",
            });
          if (pr.state === "closed" || body.state === "closed") return invalidBase("Cannot change the base branch of a closed pull request.");
          if (this.#refs.get(refKey(base)) === undefined) return invalidBase();
        }
        if (typeof body.title === "string") pr.title = body.title;
        if (base !== undefined && base !== pr.base) this.retargetPr(repoName, pr.number, base, APP_BOT);
        if (body.state === "closed") this.closePr(repoName, pr.number, APP_BOT);
        if (body.state === "open" && !pr.merged && pr.state === "closed") {
          pr.state = "open";
          this.#emit({ kind: "pull_request", action: "reopened", repo: repoName, pr: this.#snapshot(pr), sender: APP_BOT });
        }
      }
      return send(200, this.#pullAnswer(fullName, pr));
    }
    if (rest === "/pulls" && method === "GET") {
      const state = query.get("state") ?? "open";
      const head = query.get("head");
      const base = query.get("base");
      const pulls = [...this.#pulls.entries()]
        .filter(([key]) => key.startsWith(`${repoName}#`))
        .map(([, pr]) => pr)
        .filter((pr) => state === "all" || pr.state === state)
        .filter((pr) => head === null || `${pr.headRepo.split("/")[0]}:${pr.headRef}`.toLowerCase() === head.toLowerCase())
        .filter((pr) => base === null || pr.base === base)
        .sort((a, b) => b.number - a.number);
      // The list gives PRs without what GitHub computes per PR (mergeability, counts).
      const computed = ["mergeable", "rebaseable", "mergeable_state", "merged", "merged_by", "comments", "review_comments", "maintainer_can_modify", "commits", "additions", "deletions", "changed_files"];
      const simple = (pr: PullRequest) => {
        const full: Record<string, unknown> = shape.pullRequest(fullName, settings, { ...pr, mergeable: null, mergeableState: "unknown", changedFiles: 0 });
        for (const key of computed) delete full[key];
        return full;
      };
      return send(200, pulls.map(simple));
    }
    if (rest === "/pulls" && method === "POST") {
      const head = String(body.head ?? "").replace(/^[^:]+:/, "");
      const base = String(body.base ?? "");
      const headSha = this.#refs.get(refKey(head));
      const baseSha = this.#refs.get(refKey(base));
      const invalid = (field: string, code = "invalid") =>
        send(422, { message: "Validation Failed", errors: [{ resource: "PullRequest", field, code }], documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", status: "422" });
      if (headSha === undefined) return invalid("head");
      if (baseSha === undefined) return invalid("base");
      if (this.#isAncestor(headSha, baseSha)) {
        return send(422, {
          message: "Validation Failed",
          errors: [{ resource: "PullRequest", code: "custom", message: `No commits between ${base} and ${head}` }],
          documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
          status: "422",
        });
      }
      if ([...this.#pulls.values()].some((p) => p.state === "open" && p.headRef === head && p.base === base && p.headRepo.toLowerCase() === repoName)) {
        return send(422, {
          message: "Validation Failed",
          errors: [{ resource: "PullRequest", code: "custom", message: `A pull request already exists for ${repoMatch[1]}:${head}.` }],
          documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
          status: "422",
        });
      }
      // Numbered after every PR the test opened by hand (from 1001), so they never collide.
      const number = Math.max(1000, ...[...this.#pulls.entries()].filter(([key]) => key.startsWith(`${repoName}#`)).map(([, p]) => p.number)) + 1;
      const pr: PullRequest = {
        number,
        title: String(body.title ?? head),
        author: "greenline[bot]",
        headSha,
        headRef: head,
        headRepo: repoName,
        base,
        state: "open",
        merged: false,
        mergeCommitSha: null,
        draft: body.draft === true,
        mergeableState: undefined,
        baseSha,
        files: {},
        unknownReads: this.#mergeabilityDelay,
      };
      this.#pulls.set(`${repoName}#${number}`, pr);
      this.#emit({ kind: "pull_request", action: "opened", repo: repoName, pr: this.#snapshot(pr), sender: APP_BOT });
      return send(201, this.#pullAnswer(fullName, pr));
    }
    if ((match = /^\/pulls\/(\d+)\/reviews$/.exec(rest)) && method === "GET") {
      if (!this.#pulls.has(`${repoName}#${match[1]}`)) return notFound();
      const reviews = this.#reviews.filter((r) => r.repo === repoName && r.number === Number(match![1]));
      return send(
        200,
        reviews.map((r, i) => ({
          id: i + 1,
          node_id: shape.nodeId("PullRequestReview", i + 1),
          user: shape.user(r.reviewer),
          body: "",
          state: r.state.toUpperCase(),
          html_url: `https://github.com/${fullName}/pull/${r.number}#pullrequestreview-${i + 1}`,
          pull_request_url: `https://api.github.com/repos/${fullName}/pulls/${r.number}`,
          _links: { html: { href: `https://github.com/${fullName}/pull/${r.number}` }, pull_request: { href: `https://api.github.com/repos/${fullName}/pulls/${r.number}` } },
          submitted_at: "2026-01-01T00:00:00Z",
          commit_id: r.sha,
          author_association: "MEMBER",
        })),
      );
    }
    notFound();
  }

  #pullAnswer(fullName: string, pr: PullRequest) {
    const { mergeable, state } = this.#mergeability(fullName, pr);
    return shape.pullRequest(fullName, this.#settings(fullName), {
      ...pr,
      headRepo: pr.headRepo,
      baseSha: pr.baseSha,
      mergeable,
      mergeableState: state,
      changedFiles: Object.keys(pr.files).length,
    });
  }

  #statusCheckPolicy(fullName: string, branch: string, p: Protection) {
    const url = `https://api.github.com/repos/${fullName}/branches/${branch}/protection/required_status_checks`;
    return { url, strict: p.strict, contexts: p.requiredChecks, contexts_url: `${url}/contexts`, checks: p.requiredChecks.map((context) => ({ context, app_id: null })) };
  }

  #protectionAnswer(fullName: string, branch: string, p: Protection) {
    const url = `https://api.github.com/repos/${fullName}/branches/${branch}/protection`;
    return {
      url,
      required_status_checks: { ...this.#statusCheckPolicy(fullName, branch, p), enforcement_level: "non_admins" },
      enforce_admins: { url: `${url}/enforce_admins`, enabled: false },
      ...(p.requiredReviews === undefined
        ? {}
        : {
            required_pull_request_reviews: {
              url: `${url}/required_pull_request_reviews`,
              dismiss_stale_reviews: false,
              require_code_owner_reviews: false,
              required_approving_review_count: p.requiredReviews,
              require_last_push_approval: false,
            },
          }),
      ...(p.restrictPushes
        ? {
            restrictions: {
              url: `${url}/restrictions`,
              users_url: `${url}/restrictions/users`,
              teams_url: `${url}/restrictions/teams`,
              apps_url: `${url}/restrictions/apps`,
              users: [],
              teams: [],
              apps: p.appMayPush ? [shape.app(Number(this.appId))] : [],
            },
          }
        : {}),
      required_linear_history: { enabled: p.linearHistory },
      allow_force_pushes: { enabled: p.allowForcePushes },
      allow_deletions: { enabled: false },
      block_creations: { enabled: false },
      required_conversation_resolution: { enabled: false },
      lock_branch: { enabled: false },
      allow_fork_syncing: { enabled: false },
      required_signatures: { url: `${url}/required_signatures`, enabled: false },
    };
  }

  #rulesetAnswer(fullName: string, r: Ruleset, detailed: boolean) {
    const url = `https://api.github.com/repos/${fullName}/rulesets/${r.id}`;
    return {
      id: r.id,
      name: r.name,
      target: "branch",
      source_type: "Repository",
      source: fullName,
      enforcement: r.enforcement,
      node_id: shape.nodeId("RepositoryRuleset", r.id),
      _links: { self: { href: url }, html: { href: `https://github.com/${fullName}/rules/${r.id}` } },
      created_at: "2026-01-01T00:00:00Z",
      updated_at: "2026-01-01T00:00:00Z",
      current_user_can_bypass: r.bypass,
      ...(detailed
        ? {
            conditions: { ref_name: { include: r.include.map((b) => (b.startsWith("~") ? b : `refs/heads/${b}`)), exclude: [] } },
            rules: r.rules,
          }
        : {}),
    };
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
