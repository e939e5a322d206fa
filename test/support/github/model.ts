import { createHash } from "node:crypto";
import type { SimulatorCommit, SimulatorEvent } from "./events.js";
import type { RepositorySettings, WorkflowRunRecord } from "./shapes.js";

/**
 * The simulated GitHub's model, which every part of the simulator shares: repositories as commit
 * graphs with whole trees and branches, pull requests (one commit on top of the base they were
 * opened on), workflow runs, the ids and the clock; and the events reported to `onEvent`. Each
 * concern (installations, checks, Actions, rules, repositories, pull requests, rate limits, HTTP)
 * is a layer on top of it (test/support/github-simulator.ts assembles them).
 */

export type Tree = Record<string, string>;
export type Commit = { sha: string; parents: string[]; tree: Tree; message: string };

export type PullRequest = {
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

/** The sender of what the App does with its installation token. */
export const APP_BOT = "greenline[bot]";

export type SimulatorOptions = {
  /** How many reads of a PR answer `mergeable: null` after it opens, moves, or its base moves (default 1). */
  mergeabilityDelay?: number;
};

/** The shared state and the helpers every layer uses (commits, ancestry, events). */
export abstract class SimulatorModel {
  protected readonly mergeabilityDelay: number;
  protected readonly pulls = new Map<string, PullRequest>();
  protected readonly refs = new Map<string, string>();
  protected readonly commits = new Map<string, Commit>();
  /** File contents by blob sha, as the contents API has listed them (the blob API answers them). */
  protected readonly blobs = new Map<string, string>();
  protected readonly repos = new Map<string, RepositorySettings>();
  /** GitHub Actions' workflow runs, by id (ids of their own, as large as GitHub's). */
  protected readonly workflowRuns = new Map<number, WorkflowRunRecord>();
  protected counter = 0;
  protected ids = 1000;
  protected clock: () => number = () => Date.now();
  /** While set, every API request is answered with this status, as when GitHub is down. */
  outage: number | null = null;
  /** Called for everything that happens in the simulator (webhook delivery hooks in here). */
  onEvent?: (event: SimulatorEvent) => void;

  constructor(options: SimulatorOptions = {}) {
    this.mergeabilityDelay = options.mergeabilityDelay ?? 1;
  }

  protected settings(repo: string): RepositorySettings {
    return this.repos.get(repo.toLowerCase()) ?? { defaultBranch: "main", allowMergeCommit: true, allowSquashMerge: true, allowRebaseMerge: true };
  }

  protected emit(event: SimulatorEvent): void {
    this.onEvent?.(event);
  }

  protected commit(parents: string[], tree: Tree, message: string): string {
    const sha = createHash("sha1")
      .update(JSON.stringify([parents, tree, message, ++this.counter]))
      .digest("hex");
    this.commits.set(sha, { sha, parents, tree, message });
    return sha;
  }

  protected isAncestor(ancestor: string, of: string): boolean {
    const seen = new Set<string>();
    const todo = [of];
    while (todo.length > 0) {
      const sha = todo.pop()!;
      if (sha === ancestor) return true;
      if (seen.has(sha)) continue;
      seen.add(sha);
      todo.push(...(this.commits.get(sha)?.parents ?? []));
    }
    return false;
  }

  /** Commits reachable from `to` and not from `from`. */
  protected newCommits(from: string | undefined, to: string): Commit[] {
    const out: Commit[] = [];
    const seen = new Set<string>();
    const todo = [to];
    while (todo.length > 0) {
      const sha = todo.pop()!;
      if (seen.has(sha) || (from !== undefined && this.isAncestor(sha, from))) continue;
      seen.add(sha);
      const c = this.commits.get(sha);
      if (!c) continue;
      out.push(c);
      todo.push(...c.parents);
    }
    return out;
  }

  /** A commit as events describe it: its files against its first parent. */
  protected describeCommit(sha: string): SimulatorCommit {
    const commit = this.commits.get(sha);
    if (!commit) return { sha, parents: [], message: "", added: [], removed: [], modified: [] };
    const from = this.commits.get(commit.parents[0] ?? "")?.tree ?? {};
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

  /** Applies the changes of `head` (a PR commit: its tree against its first parent) on top of `base`; null on a conflict. */
  protected applyChanges(baseSha: string, headSha: string): Tree | null {
    const head = this.commits.get(headSha)!;
    const from = this.commits.get(head.parents[0] ?? "")?.tree ?? {};
    const tree = { ...this.commits.get(baseSha)!.tree };
    for (const [file, content] of Object.entries(head.tree)) {
      if (from[file] === content) continue;
      if (tree[file] !== undefined && tree[file] !== from[file] && tree[file] !== content) return null;
      tree[file] = content;
    }
    return tree;
  }

  protected pullOrThrow(repo: string, number: number): PullRequest {
    const pr = this.pulls.get(`${repo.toLowerCase()}#${number}`);
    if (!pr) throw new Error(`no PR ${repo}#${number}`);
    return pr;
  }

  /** A PR as an event carries it: a copy, its mergeability as GitHub last computed it ("unknown" until read). */
  protected snapshot(pr: PullRequest): PullRequest {
    return { ...pr, files: { ...pr.files }, mergeableState: pr.mergeableState ?? "unknown" };
  }
}
