import { pullRequestPagePath, queuePagePath } from "../../domain/links.js";
import type { Cause } from "../../domain/timeline.js";
import type { RepoRef } from "../../ports/code-host.js";
import { html, type Html } from "../html.js";

/** "3 min", "2 h 5 min": a duration in seconds as people read it (src/web/assets/app.js says it alike). */
export function duration(seconds: number | null): string {
  if (seconds === null) return "—";
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`;
}

/**
 * The time since `iso`, kept current in the browser: app.js counts on from the seconds given
 * here (the server's clock, so a browser's wrong clock changes nothing); the exact time is its
 * tooltip.
 */
export function since(iso: string, now: Date): Html {
  const seconds = Math.max(0, Math.floor((now.getTime() - Date.parse(iso)) / 1000));
  return html`<time class="elapsed" datetime="${iso}" data-elapsed="${seconds}" title="${iso.replace("T", " ").replace(/\.\d+Z$/, " UTC")}">${duration(seconds)}</time>`;
}

/** The queue page's address: a deep link that can be pasted anywhere. */
export function queuePath(repo: RepoRef, branch: string): string {
  return queuePagePath(repo, branch);
}

/** A pull request's page in a queue (the PR's status and comment link here, src/worker/effects.ts). */
export function pullPath(repo: RepoRef, branch: string, prNumber: number): string {
  return pullRequestPagePath(repo, branch, prNumber);
}

const repoSegments = (repo: RepoRef) => [repo.host, repo.owner, repo.name].map(encodeURIComponent).join("/");

/** A repository's flaky-test page. */
export function testsPath(repo: RepoRef): string {
  return `/tests/${repoSegments(repo)}`;
}

/** A test's page: a deep link that can be pasted in a PR comment. */
export function testPath(repo: RepoRef, testId: string): string {
  return `${testsPath(repo)}/${encodeURIComponent(testId)}`;
}

export const words = (value: string) => value.replaceAll("_", " ");

/**
 * A reason shown right after its state's badge, without the words that only repeat the state:
 * "merged" + "Merged." shows no reason, "paused" + "Paused: nothing starts…" shows "Nothing
 * starts…", "testing" + "Testing on top of…" shows "on top of…". Every page joins state and
 * reason through this, so none reads "merged merged".
 */
export function reasonAfterState(state: string, reason: string): string {
  const said = words(state).toLowerCase();
  const text = reason.trim();
  if (!text.toLowerCase().startsWith(said) || /^[\p{L}\p{N}_]/u.test(text.slice(said.length))) return text;
  const rest = text.slice(said.length);
  const stripped = rest.replace(/^[\s.:;,—–-]+/u, "");
  // After a stop (". ", ": "), what is left starts a sentence of its own.
  return /^\s*[.:;,—–-]/u.test(rest) ? stripped.charAt(0).toUpperCase() + stripped.slice(1) : stripped;
}

/**
 * How a PR was cancelled on request, in the words after "cancelled": who asked and where, from
 * the cause its timeline holds. "through the API (token release-bot)", "on the dashboard (token
 * ops)", "by octocat on the dashboard", "by octocat with /greenline cancel"; "on request" when the
 * timeline does not say.
 */
export function cancelledHow(cause: Cause | undefined): string {
  if (!cause) return "on request";
  const { actor, command } = cause;
  const onDashboard = command?.startsWith("dashboard") ?? false;
  switch (actor.kind) {
    case "token":
      return onDashboard ? `on the dashboard (token ${actor.name})` : `through the API (token ${actor.name})`;
    case "user":
      return onDashboard ? `by ${actor.name} on the dashboard` : command?.startsWith("/") ? `by ${actor.name} with ${command}` : `by ${actor.name}`;
    case "code_host":
      return `by the code host (${actor.name})`;
    case "fork_run":
      return `by fork workflow run ${actor.name}`;
    default:
      return "on request";
  }
}
