import type { PullRequest } from "./model.js";

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
