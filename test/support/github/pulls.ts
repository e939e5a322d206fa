import type { MergeMethod, Change } from "./rules.js";
import { APP_BOT, type PullRequest, type Tree } from "./model.js";
import { Refusal } from "./protection.js";
import { Repositories } from "./repositories.js";
import type { RepoRequest } from "./request-log.js";
import * as shape from "./shapes.js";

/**
 * Pull requests: opening, moving, retargeting and closing them, reviews and comments, their
 * mergeability as GitHub computes it (lazily), and their REST routes (list, create, read, PATCH,
 * reviews, comments). Merging one is merge.ts.
 */
export abstract class PullRequests extends Repositories {
  readonly #reviews: { repo: string; number: number; reviewer: string; state: "approved" | "changes_requested" | "commented"; sha: string }[] = [];
  /** The App's comments on PRs (`POST …/issues/{n}/comments`), in order. */
  readonly comments: { repo: string; number: number; body: string; id: number; author: string }[] = [];

  /** Opens a PR: one commit changing `files` (default: a file of its own) on top of its base branch. */
  openPr(repo: string, pr: Partial<Omit<PullRequest, "headSha" | "baseSha" | "unknownReads" | "mergeCommitSha">> & { number: number }): PullRequest {
    const base = pr.base ?? "main";
    const baseSha = this.branchHead(repo, base);
    const files = pr.files ?? { [`changes/pr-${pr.number}.txt`]: `change of #${pr.number}\n` };
    const headSha = this.commit([baseSha], { ...this.commits.get(baseSha)!.tree, ...files }, `PR #${pr.number}`);
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
      unknownReads: this.mergeabilityDelay,
    };
    this.pulls.set(`${repo.toLowerCase()}#${pr.number}`, full);
    if (full.headRepo.toLowerCase() === repo.toLowerCase()) this.refs.set(`${repo.toLowerCase()}:${full.headRef}`, headSha);
    this.emit({ kind: "pull_request", action: "opened", repo, pr: this.snapshot(full), sender: full.author });
    return full;
  }

  pr(repo: string, number: number): PullRequest | undefined {
    return this.pulls.get(`${repo.toLowerCase()}#${number}`);
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
    const pr = this.pullOrThrow(repo, number);
    const before = pr.headSha;
    // One commit on the PR's base with all its changes (a force-push): its changes stay those of one commit.
    pr.files = { ...pr.files, ...files };
    pr.headSha = this.commit([pr.baseSha], { ...this.commits.get(pr.baseSha)!.tree, ...pr.files }, `PR #${number} (updated)`);
    pr.unknownReads = this.mergeabilityDelay;
    if (pr.headRepo.toLowerCase() === repo.toLowerCase()) this.refs.set(`${repo.toLowerCase()}:${pr.headRef}`, pr.headSha);
    if (emit) this.emit({ kind: "pull_request", action: "synchronize", repo, pr: this.snapshot(pr), before, after: pr.headSha, sender: pr.author });
    return pr.headSha;
  }

  /**
   * The PR is moved to another base branch (`pull_request.edited` with `changes.base`, whose
   * delivery a test may drop): from then on GitHub merges it into that branch, as a merge
   * (`PUT …/merge`) takes the PR's base as it is when it merges.
   */
  retargetPr(repo: string, number: number, base: string, sender?: string): void {
    const pr = this.pullOrThrow(repo, number);
    if (pr.state !== "open") throw new Error(`#${number} is closed: GitHub cannot change the base branch of a closed pull request`);
    if (this.refs.get(`${repo.toLowerCase()}:${base}`) === undefined) throw new Error(`${repo} has no branch ${base}`);
    const from = pr.base;
    pr.base = base;
    pr.unknownReads = this.mergeabilityDelay;
    pr.retargetRefusals = this.mergeRefusalsAfterRetarget;
    this.emit({ kind: "pull_request", action: "edited", repo, pr: this.snapshot(pr), changes: { base: { ref: { from }, sha: { from: pr.baseSha } } }, sender: sender ?? pr.author });
  }

  closePr(repo: string, number: number, sender?: string): void {
    const pr = this.pulls.get(`${repo.toLowerCase()}#${number}`);
    if (!pr || pr.state === "closed") return;
    pr.state = "closed";
    this.emit({ kind: "pull_request", action: "closed", repo, pr: this.snapshot(pr), sender: sender ?? pr.author });
  }

  /** A user reviews the PR's current head; returns the review's id. */
  review(repo: string, number: number, user: string, state: "approved" | "changes_requested" | "commented", body: string | null = null): number {
    const pr = this.pullOrThrow(repo, number);
    const id = ++this.ids;
    this.#reviews.push({ repo: repo.toLowerCase(), number, reviewer: user, state, sha: pr.headSha });
    this.emit({ kind: "pull_request_review", action: "submitted", repo, pr: this.snapshot(pr), review: { id, state, body, commitId: pr.headSha }, sender: user });
    return id;
  }

  /** An approving review (by `reviewer`). */
  approve(repo: string, number: number, reviewer = "reviewer"): number {
    return this.review(repo, number, reviewer, "approved");
  }

  /** A user's comment on a PR (an issue comment, as `/greenline merge` is). */
  comment(repo: string, number: number, user: string, body: string): number {
    const pr = this.pullOrThrow(repo, number);
    const id = ++this.ids;
    this.emit({ kind: "issue_comment", action: "created", repo, pr: this.snapshot(pr), comment: { id, body }, sender: user });
    return id;
  }

  /** PRs whose head branch is `branch` (the App's testing-branch PRs). */
  prsFrom(repo: string, branch: string): PullRequest[] {
    return [...this.pulls].filter(([k, pr]) => k.startsWith(`${repo.toLowerCase()}#`) && pr.headRef === branch).map(([, pr]) => pr);
  }

  #approvals(repo: string, pr: PullRequest): number {
    const latest = new Map<string, string>();
    for (const r of this.#reviews) if (r.repo === repo.toLowerCase() && r.number === pr.number && r.state !== "commented") latest.set(r.reviewer, r.state);
    return [...latest.values()].filter((s) => s === "approved").length;
  }

  protected prChange(repo: string, pr: PullRequest, method: MergeMethod | undefined): Change {
    const baseHead = this.refs.get(`${repo.toLowerCase()}:${pr.base}`) ?? pr.baseSha;
    return {
      via: "pull_request",
      branch: pr.base,
      creating: false,
      fastForward: true,
      mergeCommit: method === "merge",
      check: (context) => this.checkState(repo, pr.headSha, context),
      approvals: this.#approvals(repo, pr),
      behind: !this.isAncestor(baseHead, pr.headSha),
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
    const baseHead = this.refs.get(`${repo.toLowerCase()}:${pr.base}`) ?? pr.baseSha;
    if (!this.applyChanges(baseHead, pr.headSha)) return { mergeable: false, state: "dirty" };
    if (pr.draft) return { mergeable: true, state: "draft" };
    try {
      this.checkRules(repo, this.prChange(repo, pr, undefined), 405);
    } catch (e) {
      return { mergeable: true, state: e instanceof Refusal && /out of date/.test(e.message) ? "behind" : "blocked" };
    }
    const failing = this.statuses.some((s) => s.repo === repo.toLowerCase() && s.sha === pr.headSha && this.checkState(repo, pr.headSha, s.context) === "failure");
    const failingRun = this.checkRuns(repo, pr.headSha).some((r) => this.checkState(repo, pr.headSha, r.name) === "failure");
    return { mergeable: true, state: failing || failingRun ? "unstable" : "clean" };
  }

  #pullAnswer(fullName: string, pr: PullRequest) {
    const { mergeable, state } = this.#mergeability(fullName, pr);
    return shape.pullRequest(fullName, this.settings(fullName), {
      ...pr,
      headRepo: pr.headRepo,
      baseSha: pr.baseSha,
      mergeable,
      mergeableState: state,
      changedFiles: Object.keys(pr.files).length,
    });
  }

  protected answerPulls({ method, rest, query, body, repoName, fullName, owner, settings, refKey, send, notFound }: RepoRequest): boolean {
    let match: RegExpExecArray | null;
    if ((match = /^\/issues\/(\d+)\/comments$/.exec(rest)) && method === "POST") {
      if (!this.pulls.has(`${repoName}#${match[1]}`)) return notFound();
      if (typeof body.body !== "string") {
        return send(422, { message: 'Invalid request.\n\n"body" wasn\'t supplied.', documentation_url: "https://docs.github.com/rest/issues/comments#create-an-issue-comment", status: "422" });
      }
      const id = ++this.ids;
      const comment = { repo: repoName, number: Number(match[1]), body: body.body, id, author: "greenline[bot]" };
      this.comments.push(comment);
      // GitHub sends the App's own comments back to it, as a Bot's.
      this.emit({ kind: "issue_comment", action: "created", repo: repoName, pr: this.snapshot(this.pulls.get(`${repoName}#${match[1]}`)!), comment: { id, body: body.body }, sender: APP_BOT });
      return send(201, shape.comment(fullName, comment));
    }

    // ---- Pull requests ----
    if ((match = /^\/pulls\/(\d+)$/.exec(rest)) && (method === "GET" || method === "PATCH")) {
      const pr = this.pulls.get(`${repoName}#${match[1]}`);
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
          if (this.refs.get(refKey(base)) === undefined) return invalidBase();
        }
        if (typeof body.title === "string") pr.title = body.title;
        if (base !== undefined && base !== pr.base) this.retargetPr(repoName, pr.number, base, APP_BOT);
        if (body.state === "closed") this.closePr(repoName, pr.number, APP_BOT);
        if (body.state === "open" && !pr.merged && pr.state === "closed") {
          pr.state = "open";
          this.emit({ kind: "pull_request", action: "reopened", repo: repoName, pr: this.snapshot(pr), sender: APP_BOT });
        }
      }
      return send(200, this.#pullAnswer(fullName, pr));
    }
    if (rest === "/pulls" && method === "GET") {
      const state = query.get("state") ?? "open";
      const head = query.get("head");
      const base = query.get("base");
      const pulls = [...this.pulls.entries()]
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
      const headSha = this.refs.get(refKey(head));
      const baseSha = this.refs.get(refKey(base));
      const invalid = (field: string, code = "invalid") =>
        send(422, { message: "Validation Failed", errors: [{ resource: "PullRequest", field, code }], documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", status: "422" });
      if (headSha === undefined) return invalid("head");
      if (baseSha === undefined) return invalid("base");
      if (this.isAncestor(headSha, baseSha)) {
        return send(422, {
          message: "Validation Failed",
          errors: [{ resource: "PullRequest", code: "custom", message: `No commits between ${base} and ${head}` }],
          documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
          status: "422",
        });
      }
      if ([...this.pulls.values()].some((p) => p.state === "open" && p.headRef === head && p.base === base && p.headRepo.toLowerCase() === repoName)) {
        return send(422, {
          message: "Validation Failed",
          errors: [{ resource: "PullRequest", code: "custom", message: `A pull request already exists for ${owner}:${head}.` }],
          documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
          status: "422",
        });
      }
      // Numbered after every PR the test opened by hand (from 1001), so they never collide.
      const number = Math.max(1000, ...[...this.pulls.entries()].filter(([key]) => key.startsWith(`${repoName}#`)).map(([, p]) => p.number)) + 1;
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
        unknownReads: this.mergeabilityDelay,
      };
      this.pulls.set(`${repoName}#${number}`, pr);
      this.emit({ kind: "pull_request", action: "opened", repo: repoName, pr: this.snapshot(pr), sender: APP_BOT });
      return send(201, this.#pullAnswer(fullName, pr));
    }
    if ((match = /^\/pulls\/(\d+)\/reviews$/.exec(rest)) && method === "GET") {
      if (!this.pulls.has(`${repoName}#${match[1]}`)) return notFound();
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
    return false;
  }
}
