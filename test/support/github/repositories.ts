import { createHash } from "node:crypto";
import type { SimulatorCommit } from "./events.js";
import { APP_BOT, type Commit, type Tree } from "./model.js";
import { BranchRules } from "./protection.js";
import type { RepoRequest } from "./request-log.js";
import * as shape from "./shapes.js";
import type { RepositorySettings } from "./shapes.js";

const NULL_SHA = "0000000000000000000000000000000000000000";

/**
 * Repositories and git data: settings, branches (refs) and the `push` events their moves send,
 * commits, and the REST routes of the repository, its contents, compare, git refs and merges.
 */
export abstract class Repositories extends BranchRules {
  /** Repository settings (default branch, allowed merge methods). */
  setRepository(repo: string, settings: Partial<RepositorySettings>): void {
    this.repos.set(repo.toLowerCase(), { ...this.settings(repo), ...settings });
  }

  /** Creates a branch at `from` (a sha or a branch; default: a fresh root commit). */
  createBranch(repo: string, name: string, from?: string): string {
    const sha = from === undefined ? this.commit([], { "README.md": `# ${repo}\n` }, "Initial commit") : this.commits.has(from) ? from : this.branchHead(repo, from);
    this.setRef(repo, name, sha, "octocat");
    return sha;
  }

  /** The head commit of a branch; a test-side helper that creates a missing branch (the HTTP routes answer 404, except for the default branch, which every repository has). */
  branchHead(repo: string, branch: string): string {
    const key = `${repo.toLowerCase()}:${branch}`;
    if (!this.refs.has(key)) this.refs.set(key, this.commit([], { "README.md": `# ${repo}\n` }, "Initial commit"));
    return this.refs.get(key)!;
  }

  hasBranch(repo: string, branch: string): boolean {
    return this.refs.has(`${repo.toLowerCase()}:${branch}`);
  }

  /** The files on a branch. */
  files(repo: string, branch: string): Tree {
    return this.commits.get(this.branchHead(repo, branch))!.tree;
  }

  /** Branches whose name starts with `prefix`, with their heads. */
  branches(repo: string, prefix: string): { name: string; sha: string }[] {
    const start = `${repo.toLowerCase()}:`;
    return [...this.refs].filter(([k]) => k.startsWith(start + prefix)).map(([k, sha]) => ({ name: k.slice(start.length), sha }));
  }

  /** Commits from a branch's head back to the first, first parents only. */
  history(repo: string, branch: string): Commit[] {
    const out: Commit[] = [];
    for (let c = this.commits.get(this.branchHead(repo, branch)); c; c = this.commits.get(c.parents[0] ?? "")) out.push(c);
    return out;
  }

  /** Pushes a commit to a branch directly (outside any PR; an admin's push, not checked against protection). */
  push(repo: string, branch: string, files: Tree): string {
    const head = this.branchHead(repo, branch);
    const sha = this.commit([head], { ...this.commits.get(head)!.tree, ...files }, "Direct push");
    this.setRef(repo, branch, sha, "octocat");
    return sha;
  }

  /** The files of a commit (a test's CI reads them to decide its verdict). */
  filesAt(sha: string): Tree {
    const commit = this.commits.get(sha);
    if (!commit) throw new Error(`no commit ${sha}`);
    return commit.tree;
  }

  /** A commit's parents (first parent first). */
  parentsOf(sha: string): string[] {
    return this.commits.get(sha)?.parents ?? [];
  }

  /** Forgets a commit, as after a force-push and garbage collection: asking for it answers 404 / "Object does not exist". */
  forgetCommit(sha: string): void {
    this.dropCommit(sha);
    // GitHub collects only commits no branch holds: the branches at it are gone with it.
    for (const [ref, at] of this.refs) if (at === sha) this.refs.delete(ref);
  }

  /** Every ref creation or move (a push, as CI sees it), in order. */
  readonly refPushes: { repo: string; branch: string; sha: string }[] = [];

  /** Pushes (ref creations and moves) to a branch so far. */
  pushesTo(repo: string, branch: string): number {
    return this.refPushes.filter((p) => p.repo === repo.toLowerCase() && p.branch === branch).length;
  }

  protected setRef(repo: string, branch: string, sha: string, sender = APP_BOT): void {
    const key = `${repo.toLowerCase()}:${branch}`;
    const before = this.refs.get(key);
    this.refs.set(key, sha);
    if (before === sha) return;
    this.refPushes.push({ repo: repo.toLowerCase(), branch, sha });
    this.#emitPush(repo, branch, before, sha, sender);
    for (const [prKey, pr] of this.pulls) {
      if (!prKey.startsWith(`${repo.toLowerCase()}#`) || pr.base !== branch || pr.state !== "open") continue;
      // As on GitHub: a PR whose head is now on its base branch is merged.
      if (this.isAncestor(pr.headSha, sha)) {
        pr.merged = true;
        pr.state = "closed";
        pr.mergeCommitSha = sha;
        this.emit({ kind: "pull_request", action: "closed", repo, pr: this.snapshot(pr), sender });
      } else {
        pr.unknownReads = this.mergeabilityDelay; // the base moved: mergeability is computed again
      }
    }
  }

  /**
   * GraphQL's `updateRefs` (https://docs.github.com/graphql/reference/mutations#updaterefs):
   * creates, moves and deletes refs of one repository atomically — if one update is refused,
   * none is made. `beforeOid` must be where the ref is (the zero oid: absent); `afterOid` the
   * zero oid deletes it; without `force` a move must be a fast-forward. Each change is judged as
   * a push is (protection, rulesets, the `workflows` permission). Answers null, or why it
   * refused (GitHub answers a refusal as GraphQL `errors`, HTTP 200).
   */
  protected updateRefs(installation: number, repo: string, updates: { name?: unknown; beforeOid?: unknown; afterOid?: unknown; force?: unknown }[]): string | null {
    const ZERO = "0".repeat(40);
    const planned: { branch: string; before: string | undefined; after: string | null }[] = [];
    for (const u of updates) {
      const name = String(u.name ?? "");
      if (!name.startsWith("refs/heads/")) return `Invalid ref name ${name}`;
      const branch = name.slice("refs/heads/".length);
      const current = this.refs.get(`${repo}:${branch}`);
      const before = u.beforeOid === undefined || u.beforeOid === null ? undefined : String(u.beforeOid);
      if (before !== undefined && before !== (current ?? ZERO)) return `${name} is at ${current ?? "nothing"}, not ${before}`;
      const after = String(u.afterOid ?? "");
      if (after === ZERO) {
        planned.push({ branch, before: current, after: null });
        continue;
      }
      if (!this.commits.has(after)) return `Object ${after} does not exist`;
      if (current !== undefined && u.force !== true && !this.isAncestor(current, after)) return `Update of ${name} is not a fast forward`;
      try {
        this.checkRefUpdate(repo, installation, branch, current, after);
      } catch (e) {
        return e instanceof Error ? e.message : String(e);
      }
      planned.push({ branch, before: current, after });
    }
    for (const { branch, after } of planned) {
      if (after === null) this.deleteRef(repo, branch);
      else this.setRef(repo, branch, after);
    }
    return null;
  }

  /** The repository ("owner/name", lower-case) whose GraphQL node id is `id`, if it has a branch. */
  protected repositoryOfNode(id: string): string | undefined {
    return [...new Set([...this.refs.keys()].map((k) => k.slice(0, k.indexOf(":"))))].find((name) => shape.nodeId("Repository", shape.idOf(name)) === id);
  }

  /**
   * Deletes a branch (`DELETE …/git/refs/heads/…`, `updateRefs`, "Automatically delete head
   * branches") and does to pull requests what GitHub does: after the `push` (deleted), each open
   * PR whose head it was is closed; the open PRs based on it are moved to the base branch of the
   * merged PR whose head it was (`pull_request` `edited`, `changes.base`), or closed when no
   * merged PR of the repository had it as head (docs/github.md, "Stacked pull requests").
   */
  protected deleteRef(repo: string, branch: string, sender = APP_BOT): void {
    const name = repo.toLowerCase();
    const key = `${name}:${branch}`;
    const before = this.refs.get(key);
    if (before === undefined) return;
    this.refs.delete(key);
    this.#emitPush(repo, branch, before, null, sender);
    const pulls = [...this.pulls].map(([k, pr]) => ({ repo: k.slice(0, k.lastIndexOf("#")), pr }));
    // As on GitHub: deleting a PR's head branch closes the PR (a fork's branch: the PR in the repository it was opened on).
    for (const { repo: prRepo, pr } of pulls) {
      if (pr.state === "open" && pr.headRef === branch && pr.headRepo.toLowerCase() === name) this.closePr(prRepo === name ? repo : prRepo, pr.number, sender);
    }
    // The merged PR of this repository whose head the branch was: the one that merged its last commit, else the latest.
    const merged = pulls.filter(({ repo: prRepo, pr }) => prRepo === name && pr.merged && pr.headRef === branch && pr.headRepo.toLowerCase() === name).map(({ pr }) => pr);
    const mergedPr = merged.find((pr) => pr.headSha === before) ?? merged.at(-1);
    const target = mergedPr && mergedPr.base !== branch && this.refs.has(`${name}:${mergedPr.base}`) ? mergedPr.base : undefined;
    for (const { repo: prRepo, pr } of pulls) {
      if (prRepo !== name || pr.state !== "open" || pr.base !== branch) continue;
      if (target !== undefined) this.retargetPr(repo, pr.number, target, sender);
      else this.closePr(repo, pr.number, sender);
    }
  }

  /** A ref created (before undefined), moved or deleted (after null): GitHub's `push` event. */
  #emitPush(repo: string, branch: string, before: string | undefined, after: string | null, sender: string): void {
    if (!this.onEvent) return;
    const commits: SimulatorCommit[] = [];
    // The commits new to the branch (for a new branch: those not on the default branch), at most 20.
    const defaultBranch = this.settings(repo).defaultBranch;
    const known = before ?? (branch === defaultBranch ? undefined : this.refs.get(`${repo.toLowerCase()}:${defaultBranch}`));
    if (after !== null) {
      for (let sha: string | undefined = after; sha && commits.length < 20 && !(known && this.isAncestor(sha, known)); sha = this.commits.get(sha)?.parents[0]) {
        commits.unshift(this.describeCommit(sha));
      }
    }
    const forced = before !== undefined && after !== null && !this.isAncestor(before, after);
    this.emit({ kind: "push", repo, branch, before: before ?? NULL_SHA, after: after ?? NULL_SHA, created: before === undefined, deleted: after === null, forced, commits, sender });
  }

  /** Closes a PR (deleting its head branch does; pulls.ts). */
  abstract closePr(repo: string, number: number, sender?: string): void;

  /** Moves an open PR to another base branch (deleting a merged PR's head branch does for the PRs based on it; pulls.ts). */
  abstract retargetPr(repo: string, number: number, base: string, sender?: string): void;

  protected answerRepository({ method, rest, query, body, repoName, fullName, settings, installation, refKey, resolveRef, send, error, notFound }: RepoRequest): boolean {
    let match: RegExpExecArray | null;
    if (rest === "" && method === "GET") return send(200, shape.repository(fullName, settings));
    if ((match = /^\/git\/commits\/([0-9a-f]+)$/.exec(rest)) && method === "GET") {
      const commit = this.commits.get(match[1]!);
      return commit ? send(200, shape.gitCommit(fullName, commit)) : notFound();
    }

    // ---- Contents ----
    if ((match = /^\/contents\/(.+)$/.exec(rest)) && method === "GET") {
      // GET a file's contents at a ref (commit sha or branch), base64 as GitHub sends them.
      const sha = resolveRef(query.get("ref") ?? settings.defaultBranch);
      const file = match[1]!.replace(/\/$/, "");
      const tree = sha === undefined ? undefined : this.commits.get(sha)?.tree;
      const content = tree?.[file];
      if (content === undefined && tree !== undefined && Object.keys(tree).some((p) => p.startsWith(`${file}/`))) {
        // A directory: its entries, files and directories, as "Get repository content" lists them.
        const ref = query.get("ref") ?? settings.defaultBranch;
        const names = new Map<string, "file" | "dir">();
        for (const path of Object.keys(tree)) {
          if (!path.startsWith(`${file}/`)) continue;
          const [name, ...deeper] = path.slice(file.length + 1).split("/");
          names.set(name!, deeper.length > 0 ? "dir" : "file");
        }
        return send(
          200,
          [...names]
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([name, type]) => {
              const path = `${file}/${name}`;
              const text = type === "file" ? tree[path]! : "";
              const blob = createHash("sha1")
                .update(type === "file" ? `blob ${Buffer.byteLength(text)}\0${text}` : `tree ${path}`)
                .digest("hex");
              const self = `https://api.github.com/repos/${fullName}/contents/${path}?ref=${ref}`;
              const git = `https://api.github.com/repos/${fullName}/git/${type === "file" ? "blobs" : "trees"}/${blob}`;
              const html = `https://github.com/${fullName}/${type === "file" ? "blob" : "tree"}/${sha}/${path}`;
              return {
                type,
                size: type === "file" ? Buffer.byteLength(text) : 0,
                name,
                path,
                sha: blob,
                url: self,
                git_url: git,
                html_url: html,
                download_url: type === "file" ? `https://raw.githubusercontent.com/${fullName}/${sha}/${path}` : null,
                _links: { self, git, html },
              };
            }),
        );
      }
      if (content === undefined) return notFound();
      const blob = createHash("sha1")
        .update(`blob ${Buffer.byteLength(content)}\0${content}`)
        .digest("hex");
      const self = `https://api.github.com/repos/${fullName}/contents/${file}?ref=${query.get("ref") ?? settings.defaultBranch}`;
      // Files of 1 to 100 MB come without their content (encoding "none"); larger ones are refused
      // ("Get repository content"; changelog 2022-05-03): the blob API has them (up to 100 MB).
      const bytes = Buffer.byteLength(content);
      if (bytes > 100 * 1024 * 1024)
        return send(403, {
          message: "This API returns blobs up to 100 MB in size.",
          errors: [{ resource: "Blob", field: "data", code: "too_large" }],
          documentation_url: "https://docs.github.com/rest/repos/contents#get-repository-content",
          status: "403",
        });
      const inline = bytes <= 1024 * 1024;
      this.blobs.set(blob, content);
      return send(200, {
        type: "file",
        encoding: inline ? "base64" : "none",
        size: bytes,
        name: file.split("/").at(-1),
        path: file,
        content: inline ? Buffer.from(content).toString("base64").replace(/.{60}/g, "$&\n") : "",
        sha: blob,
        url: self,
        git_url: `https://api.github.com/repos/${fullName}/git/blobs/${blob}`,
        html_url: `https://github.com/${fullName}/blob/${sha}/${file}`,
        download_url: `https://raw.githubusercontent.com/${fullName}/${sha}/${file}`,
        _links: { self, git: `https://api.github.com/repos/${fullName}/git/blobs/${blob}`, html: `https://github.com/${fullName}/blob/${sha}/${file}` },
      });
    }
    if ((match = /^\/git\/blobs\/([0-9a-f]{40})$/.exec(rest)) && method === "GET") {
      // "Get a blob": base64 content up to 100 MB (the simulator knows the blobs it listed).
      const content = this.blobs.get(match[1]!);
      if (content === undefined) return notFound();
      const size = Buffer.byteLength(content);
      return send(200, {
        sha: match[1],
        node_id: `B_${match[1]!.slice(0, 16)}`,
        size,
        url: `https://api.github.com/repos/${fullName}/git/blobs/${match[1]}`,
        content: Buffer.from(content).toString("base64").replace(/.{60}/g, "$&\n"),
        encoding: "base64",
      });
    }
    if ((match = /^\/compare\/(.+)\.\.\.(.+)$/.exec(rest)) && method === "GET") {
      const baseHead = resolveRef(match[1]!);
      const head = resolveRef(match[2]!);
      if (baseHead === undefined || head === undefined) return notFound();
      const ahead = this.newCommits(baseHead, head);
      const behind = this.newCommits(head, baseHead);
      const mergeBase = this.mergeBase(baseHead, head) ?? baseHead;
      const status = ahead.length === 0 && behind.length === 0 ? "identical" : behind.length === 0 ? "ahead" : ahead.length === 0 ? "behind" : "diverged";
      return send(200, {
        url: `https://api.github.com/repos/${fullName}/compare/${match[1]}...${match[2]}`,
        html_url: `https://github.com/${fullName}/compare/${match[1]}...${match[2]}`,
        permalink_url: `https://github.com/${fullName}/compare/${baseHead}...${head}`,
        diff_url: `https://github.com/${fullName}/compare/${match[1]}...${match[2]}.diff`,
        patch_url: `https://github.com/${fullName}/compare/${match[1]}...${match[2]}.patch`,
        base_commit: shape.commit(fullName, this.commits.get(baseHead)!),
        merge_base_commit: shape.commit(fullName, this.commits.get(mergeBase) ?? this.commits.get(baseHead)!),
        status,
        ahead_by: ahead.length,
        behind_by: behind.length,
        total_commits: ahead.length,
        commits: ahead.reverse().map((c) => shape.commit(fullName, c)),
        files: [],
      });
    }

    // ---- Refs and merges ----
    if ((match = /^\/git\/ref\/heads\/(.+)$/.exec(rest)) && method === "GET") {
      const sha = this.refs.get(refKey(match[1]!));
      return sha === undefined ? notFound() : send(200, shape.gitRef(fullName, match[1]!, sha));
    }
    if (rest === "/git/refs" && method === "POST") {
      const ref = String(body.ref ?? "");
      if (!/^refs\/[^/]+\/.+/.test(ref)) return error(422, "Reference name must start with 'refs/' and have at least two slashes.");
      const branch = ref.replace(/^refs\/heads\//, "");
      if (this.refs.has(refKey(branch))) return error(422, "Reference already exists");
      if (!this.commits.has(String(body.sha))) return error(422, "Object does not exist");
      this.checkRefUpdate(repoName, installation, branch, undefined, String(body.sha));
      this.setRef(repoName, branch, String(body.sha));
      return send(201, shape.gitRef(fullName, branch, String(body.sha)));
    }
    if ((match = /^\/git\/refs\/heads\/(.+)$/.exec(rest)) && (method === "PATCH" || method === "DELETE")) {
      const branch = match[1]!;
      const current = this.refs.get(refKey(branch));
      if (current === undefined) return error(422, "Reference does not exist");
      if (method === "DELETE") {
        this.deleteRef(repoName, branch);
        return send(204);
      }
      const sha = String(body.sha);
      if (!this.commits.has(sha)) return error(422, "Object does not exist");
      if (!body.force && !this.isAncestor(current, sha)) return error(422, "Update is not a fast forward");
      this.checkRefUpdate(repoName, installation, branch, current, sha);
      this.setRef(repoName, branch, sha);
      return send(200, shape.gitRef(fullName, branch, sha));
    }
    if (rest === "/merges" && method === "POST") {
      const branch = String(body.base);
      const baseSha = this.refs.get(refKey(branch));
      const head = resolveRef(String(body.head));
      if (baseSha === undefined) return notFound("Base does not exist");
      if (head === undefined) return notFound("Head does not exist");
      if (this.isAncestor(head, baseSha)) return send(204);
      const tree = this.applyChanges(baseSha, head);
      if (!tree) return error(409, "Merge conflict");
      const sha = this.commit([baseSha, head], tree, String(body.commit_message ?? `Merge ${head} into ${branch}`));
      this.checkRefUpdate(repoName, installation, branch, baseSha, sha);
      this.setRef(repoName, branch, sha);
      return send(201, shape.commit(fullName, this.commits.get(sha)!));
    }
    return false;
  }
}
