import type { RunView } from "../read-models/dashboard.js";
import type { QueueAddress } from "../../queue/queues.js";
import type { MergeItemRecord } from "../../queue/records.js";
import type { PlaceRecord } from "../../queue/estimates.js";
import { DEFAULT_PRIORITY, PRIORITY_NAMES } from "../../domain/priority.js";
import { sentenceOf } from "../../domain/reasons.js";
import { HOUR_MS, MINUTE_MS } from "../../domain/time.js";
import { html, type Html } from "../html.js";
import { canWrite, type Viewer } from "../layout.js";
import { duration, queuePath, reasonAfterState, since, words } from "./format.js";

/**
 * The queue page's dense rows (issue 27, part 6): one line per PR — place, number and title,
 * state with its time, ETA, the checks of the run testing it as a bar, priority when not the
 * default, its actions behind a per-row menu — and the runs in flight drawn as what each tests
 * on top of what. `tv`: the wall display (`?tv`), which has no controls at all.
 */

/** How a queue page is drawn: `tv`, the wall display; `all`, every PR of the line (else the first LINE_SHOWN, or WALL_SHOWN on the wall). */
export type RowOptions = { tv: boolean; all?: boolean };

/** The PRs of the line, and of those waiting for readiness, a queue page draws unless asked for all: a line of 1,000 is 2 MB of rows nobody reads at once. */
export const LINE_SHOWN = 100;
/** On the wall display, which no one scrolls. */
export const WALL_SHOWN = 40;

/**
 * What every row of one rendering shares, made once (a page of 1,000 rows would otherwise build
 * the same hidden fields and the queue's path a thousand times): the queue's address and path,
 * and for a viewer who may act (not on the wall display) the action form's hidden fields.
 */
export type Rows = { address: QueueAddress; prPath(n: number): string; actions: { hidden: Html } | null };

export function rowsOf(viewer: Viewer, address: QueueAddress, options: RowOptions): Rows {
  const base = queuePath(address.repo, address.targetBranch);
  return { address, prPath: (n) => `${base}/pulls/${n}`, actions: !options.tv && canWrite(viewer) ? { hidden: hiddenFields(viewer, address) } : null };
}

/** A PR as the line lists it: getQueue's record with its place and estimated merge time. */
export type LinePr = MergeItemRecord & Partial<PlaceRecord>;

/** The hidden fields of every action form: the CSRF token and the queue's address. */
export function hiddenFields(viewer: Viewer, address: QueueAddress): Html {
  const { repo, targetBranch } = address;
  return html`<input type="hidden" name="csrf" value="${viewer.csrf}"><input type="hidden" name="host" value="${repo.host}"><input type="hidden" name="owner" value="${repo.owner}"><input type="hidden" name="repo" value="${repo.name}"><input type="hidden" name="branch" value="${targetBranch}">`;
}

/**
 * A PR's estimated merge time as its row shows it: rounded, the nearer the finer (a minute within
 * the hour, 5 minutes within 6 hours, 15 beyond), so that an estimate moving by seconds, as every
 * estimate does each time the line is read, changes no row and re-sends none over the live stream.
 * Null when the queue cannot say (a paused queue, no run history).
 */
export function etaOf(estimatedMergeAt: string | null | undefined, now: Date): { at: number; seconds: number } | null {
  if (!estimatedMergeAt) return null;
  const exact = Date.parse(estimatedMergeAt);
  const ahead = exact - now.getTime();
  const step = ahead < HOUR_MS ? MINUTE_MS : ahead < 6 * HOUR_MS ? 5 * MINUTE_MS : 15 * MINUTE_MS;
  const at = Math.round(exact / step) * step;
  return { at, seconds: Math.max(0, Math.round((at - now.getTime()) / 1000)) };
}

/** "~12 min", "< 1 min", "due": what is left of an estimate (src/web/assets/app.js counts it down alike). */
export function etaText(seconds: number): string {
  if (seconds <= 0) return "due";
  if (seconds < 60) return "< 1 min";
  return `~${duration(Math.round(seconds / 60) * 60)}`;
}

function etaCell(pr: LinePr, now: Date): Html {
  const eta = etaOf(pr.estimatedMergeAt, now);
  if (!eta) return html`<span class="eta"></span>`;
  const iso = new Date(eta.at).toISOString();
  return html`<span class="eta" title="estimated to merge at ${iso.slice(11, 16)} UTC"><span class="sr-only">merges in </span><time datetime="${iso}" data-remaining="${eta.seconds}">${etaText(eta.seconds)}</time></span>`;
}

/** How far a run's checks are: passed, failed (failure or error) and still pending, of all it waits for. */
export function checkProgress(checks: RunView["checks"]): { passed: number; failed: number; total: number } {
  const passed = checks.filter((c) => c.state === "success").length;
  const failed = checks.filter((c) => c.state === "failure" || c.state === "error").length;
  return { passed, failed, total: checks.length };
}

/** The checks of `run` as a small bar (a <progress> of the passed ones, red once one failed), its words as the bar's label. */
export function checksBar(run: RunView | undefined): Html {
  if (!run) return html`<span class="checks-cell"></span>`;
  const { passed, failed, total } = checkProgress(run.checks);
  const label = total === 0 ? "no checks reported yet" : `${passed} of ${total} checks passed${failed > 0 ? `, ${failed} failed` : ""}`;
  const detail = run.checks.map((c) => `${c.context}: ${c.state}`).join(", ");
  return html`<span class="checks-cell" title="${run.runId}: ${detail || label}"><progress class="${failed > 0 ? "failing" : "passing"}" max="${Math.max(total, 1)}" value="${passed}" aria-label="${label}"></progress><span class="checks-count" aria-hidden="true">${passed}/${total}</span></span>`;
}

/** The reason's sentence after the state's badge (its code in the tooltip), without what only repeats the state ("testing", "merged"). */
function reasonOf(pr: MergeItemRecord): Html {
  const reason = reasonAfterState(pr.state, sentenceOf(pr.stateReason)).replace(/\.$/, "");
  return html`<span class="reason">${reason ? html`<span class="reason-words" title="${pr.stateReason} (docs/reasons.md)">${reason}</span>` : ""}</span>`;
}

/** A priority other than the default, compactly (urgent and emergency stand out); nothing for the default. */
function priorityTag(pr: MergeItemRecord): Html {
  if (pr.priorityName === DEFAULT_PRIORITY) return html``;
  const title = pr.priorityName === "emergency" ? "an emergency merge: it goes first and merges through freezes" : `priority ${pr.priorityName} (${pr.priorityValue})`;
  return html`<span class="prio prio-${pr.priorityName}" data-priority="${pr.priorityName}" title="${title}"><span class="sr-only">priority </span>${pr.priorityName}</span>`;
}

function stackedTag(rows: Rows, pr: MergeItemRecord): Html {
  if (pr.stackedOn === undefined) return html``;
  return html`<span class="stacked" title="its base is #${pr.stackedOn}'s branch: tested with it, merged after it (docs/stacks.md)">stacked on <a href="${rows.prPath(pr.stackedOn)}">#${pr.stackedOn}</a></span>`;
}

/** The priority menu's options, one list for each priority selected (made once). */
const PRIORITY_CHOICES = new Map(Object.keys(PRIORITY_NAMES).map((selected) => [selected, html`${Object.keys(PRIORITY_NAMES).map((name) => html`<option${name === selected ? html` selected` : ""}>${name}</option>`)}`]));

/**
 * A PR's actions behind its "⋯" menu: one form (works without script: the buttons submit it),
 * each button posting its own action through htmx after the browser asks for confirmation.
 */
function prMenu(hidden: Html, pr: MergeItemRecord): Html {
  const n = pr.prNumber;
  const button = (action: string, label: string, confirm: string) => html`<button type="submit" name="action" value="${action}" data-action="${action}" hx-post="/actions/queue" hx-confirm="${confirm}">${label}</button>`;
  const id = `priority-${n}`;
  const choices = PRIORITY_CHOICES.get(pr.priorityName) ?? PRIORITY_CHOICES.get(DEFAULT_PRIORITY)!;
  // An emergency's priority is an admin's to change (through the API or a comment): not offered here.
  const priority =
    pr.priorityName === "emergency"
      ? ""
      : html`<span class="menu-priority"><label for="${id}">Priority</label><select id="${id}" name="priority">${choices}</select>${button("priority", "Set priority", `Change the priority of #${n}?`)}</span>`;
  return html`<details class="row-menu"><summary title="Actions" aria-label="Actions for #${n}">⋯</summary><form class="menu" method="post" action="/actions/queue" hx-swap="none">${hidden}<input type="hidden" name="pr" value="${n}">${button("cancel", "Cancel", `Remove #${n} from the queue?`)}${button("restart", "Restart", `Restart the tests of #${n}?`)}${priority}</form></details>`;
}

/** A PR in line or waiting; its position is the list's own count (CSS), so a PR leaving the line re-sends no other row. */
export function prRow(rows: Rows, pr: LinePr, list: "line" | "waiting", run: RunView | undefined, now: Date): Html {
  return html`<li class="pr state-${pr.state}" id="${list}-pr-${pr.prNumber}" data-pr="${pr.prNumber}"><span class="pos" aria-label="position"></span><span class="name"><a href="${rows.prPath(pr.prNumber)}" title="#${pr.prNumber} ${pr.prTitle} (by ${pr.prAuthor})"><strong>#${pr.prNumber}</strong> ${pr.prTitle}</a></span><span class="tags">${stackedTag(rows, pr)}${priorityTag(pr)}</span><span class="state state-${pr.state}" data-state="${pr.state}">${words(pr.state)} ${since(pr.stateChangedAt, now)}</span>${reasonOf(pr)}${etaCell(pr, now)}${checksBar(run)}${
    rows.actions ? prMenu(rows.actions.hidden, pr) : ""
  }</li>`;
}

/**
 * What a PR's row shows, as the live stream compares it: its record's fields, its ETA as rounded,
 * and its run's checks (getQueue's exact estimate and place change for every PR behind a moved one).
 */
export function prShown(pr: LinePr, run: RunView | undefined, now: Date): unknown {
  return [pr.state, pr.stateReason, pr.stateChangedAt, pr.prTitle, pr.prAuthor, pr.priorityName, pr.stackedOn, etaOf(pr.estimatedMergeAt, now)?.at ?? null, run?.runId, run?.checks];
}

/** The run testing each PR (the latest started when a bisection tests it too). */
export function runsByPr(runs: RunView[]): Map<number, RunView> {
  const byPr = new Map<number, RunView>();
  for (const run of runs) for (const n of run.tested) byPr.set(n, run);
  return byPr;
}

/** PR numbers, each linked to its page. */
export function prLinks(rows: Rows, numbers: number[]): Html {
  return html`${numbers.map((n, i) => html`${i > 0 ? ", " : ""}<a href="${rows.prPath(n)}">#${n}</a>`)}`;
}

/** "run-3 tests #3 on top of #1, #2": a run's stack in words, the graph's text alternative. */
export function runSentence(run: RunView): string {
  const list = (numbers: number[]) => numbers.map((n) => `#${n}`).join(", ");
  return `${run.runId} tests ${list(run.tested)}${run.stackedOn.length > 0 ? ` on top of ${list(run.stackedOn)}` : " on the target branch"}`;
}

/** How many of the PRs a run stands on its graph draws (the nearest); the others fold into a "+n". */
const BASE_SHOWN = 5;

/**
 * What a run tests on top of what, drawn: the target branch, the PRs ahead it stands on (the
 * nearest ones; the rest folded, listed in the tooltip), then the PRs it tests. Chips have a
 * fixed width, so the runs of a speculative stack read as a staircase.
 */
export function stackGraph(rows: Rows, run: RunView): Html {
  const chip = (n: number, kind: "on" | "tested") => html`<a class="chip ${kind}" href="${rows.prPath(n)}">#${n}</a>`;
  const folded = run.stackedOn.slice(0, Math.max(0, run.stackedOn.length - BASE_SHOWN));
  const shown = run.stackedOn.slice(folded.length);
  return html`<span class="stack" role="group" aria-label="${runSentence(run)}"><span class="chip base" title="the target branch">${rows.address.targetBranch}</span>${
    folded.length > 0 ? html`<span class="chip more" title="also on top of ${folded.map((n) => `#${n}`).join(", ")}">+${folded.length}</span>` : ""
  }${shown.map((n) => chip(n, "on"))}<span class="arrow" aria-hidden="true">▸</span>${run.tested.map((n) => chip(n, "tested"))}</span>`;
}

/** A run in flight: its id, what it tests on top of what, its checks, since when. */
export function runRow(rows: Rows, run: RunView, now: Date): Html {
  const kind = run.kind === "bisection" ? "bisection" : run.tested.length > 1 ? "batch" : "";
  return html`<li class="run" id="queue-${run.runId}" data-run="${run.runId}"><span class="run-id"${run.testBranch ? html` title="${run.testBranch}"` : ""}>${run.runId}</span>${
    kind ? html`<span class="run-kind">${kind}</span>` : ""
  }${stackGraph(rows, run)}${checksBar(run)}<span class="run-since">started ${since(run.startedAt, now)} ago</span></li>`;
}
