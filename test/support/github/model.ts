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
  /** Merge attempts left that GitHub refuses because the PR's base was just changed (`mergeRefusalsAfterRetarget`). */
  retargetRefusals?: number;
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
  /**
   * How many merge attempts of a PR GitHub refuses right after its base branch was changed
   * (405 "Base branch was modified. Review and try the merge again.", while it computes the PR
   * again); 0 by default.
   */
  mergeRefusalsAfterRetarget = 0;
  /** Called for everything that happens in the simulator (webhook delivery hooks in here). */
  onEvent?: (event: SimulatorEvent) => void;

  constructor(options: SimulatorOptions = {}) {
    this.mergeabilityDelay = options.mergeabilityDelay ?? 1;
  }

  protected settings(repo: string): RepositorySettings {
    return this.repos.get(repo.toLowerCase()) ?? { defaultBranch: "main", allowMergeCommit: true, allowSquashMerge: true, allowRebaseMerge: true, deleteBranchOnMerge: false };
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

  /** Ancestor sets by commit (memoized: a commit's history never changes; forgetting a commit clears them). */
  readonly #ancestors = new Map<string, Set<string>>();

  /** `sha` and every commit reachable from it. */
  protected ancestors(sha: string): Set<string> {
    const cached = this.#ancestors.get(sha);
    if (cached) return cached;
    const out = new Set<string>();
    const todo = [sha];
    while (todo.length > 0) {
      const next = todo.pop()!;
      if (out.has(next)) continue;
      const known = next === sha ? undefined : this.#ancestors.get(next);
      if (known) {
        // A known set is closed under ancestry: nothing below it needs walking.
        for (const a of known) out.add(a);
        continue;
      }
      out.add(next);
      todo.push(...(this.commits.get(next)?.parents ?? []));
    }
    // Bounded, oldest first out, so thousands of commits do not keep thousands of sets.
    if (this.#ancestors.size >= 256) this.#ancestors.delete(this.#ancestors.keys().next().value!);
    this.#ancestors.set(sha, out);
    return out;
  }

  /** Forgets a commit (after a force-push and garbage collection): ancestry is computed again. */
  protected dropCommit(sha: string): void {
    this.commits.delete(sha);
    this.#ancestors.clear();
  }

  /**
   * The merge base of two commits, as git computes it: a best common ancestor (an ancestor of
   * both that is not an ancestor of another common ancestor). With several (criss-cross merges),
   * the first met walking `b`'s history breadth-first, parents in order; undefined for unrelated
   * histories.
   */
  protected mergeBase(a: string, b: string): string | undefined {
    const ofA = this.ancestors(a);
    if (ofA.has(b)) return b;
    // Walking b's history and stopping at common ancestors meets every best one (a path to a
    // best one through another common ancestor would make it that one's ancestor).
    const candidates: string[] = [];
    const seen = new Set<string>();
    const todo = [b];
    for (let i = 0; i < todo.length; i++) {
      const sha = todo[i]!;
      if (seen.has(sha)) continue;
      seen.add(sha);
      if (ofA.has(sha)) candidates.push(sha);
      else todo.push(...(this.commits.get(sha)?.parents ?? []));
    }
    return candidates.find((c) => !candidates.some((d) => d !== c && this.ancestors(d).has(c)));
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

  /**
   * Merges `head` into `base` as git does (three-way): the changes between their merge base and
   * `head` applied on top of `base`; null on a conflict (a file both sides changed, to different
   * contents). A file `head` deleted stays as `base` has it (deletions are not merged). Unrelated
   * histories merge from the empty tree (git's `--allow-unrelated-histories`). When `head` is
   * already in `base`, the result is `base`'s tree.
   */
  protected applyChanges(baseSha: string, headSha: string): Tree | null {
    const tree = { ...this.commits.get(baseSha)!.tree };
    const mergeBase = this.mergeBase(baseSha, headSha);
    if (mergeBase === headSha) return tree;
    const from = (mergeBase === undefined ? undefined : this.commits.get(mergeBase)?.tree) ?? {};
    for (const [file, content] of Object.entries(this.commits.get(headSha)!.tree)) {
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
