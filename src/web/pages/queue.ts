import type { QueueLine, RunView } from "../../app/dashboard.js";
import type { QueueAddress } from "../../app/queues.js";
import type { MergeItemRecord } from "../../app/records.js";
import { PRIORITY_NAMES } from "../../domain/priority.js";
import type { Assets } from "../assets.js";
import { html, type Html } from "../html.js";
import { canWrite, layout, readOnlyHint, type Viewer } from "../layout.js";
import { type SettingsRefusal, settingsForm } from "../settings-form.js";
import { pullPath, queuePath, reasonAfterState, since, words } from "./format.js";

/** A message above the line after an action: done, or the application's refusal verbatim. */
export type Notice = { kind: "ok" | "error"; text: string };

/**
 * Where an action's outcome shows: outside the part the live stream refreshes, so the next
 * refresh does not wipe it. An action's answer replaces it out of band (hx-swap-oob).
 */
export function noticeArea(notice: Notice | undefined, outOfBand = false): Html {
  const role = notice?.kind === "error" ? "alert" : "status";
  return html`<div id="notice" role="${role}" aria-live="polite"${outOfBand ? html` hx-swap-oob="true"` : ""}>${notice ? html`<p class="notice notice-${notice.kind}">${notice.text}</p>` : ""}</div>`;
}

/**
 * An action's answer to htmx: the refreshed live part and the notice; after a settings change,
 * the form with the new values; after a refused one, the form with what was typed and the
 * refusal next to it (the notice above then stays empty: one message, where the fields are).
 */
export function actionAnswer(viewer: Viewer, address: QueueAddress, line: QueueLine, now: Date, notice: Notice, settings: { refusal?: SettingsRefusal } | undefined): Html {
  return html`${liveSection(viewer, address, line, now)}${noticeArea(settings?.refusal ? undefined : notice, true)}${settings ? settingsPanel(viewer, address, line, { open: true, outOfBand: true, refusal: settings.refusal }) : ""}`;
}

/** The settings form, folded away until opened (write tokens only). */
function settingsPanel(viewer: Viewer, address: QueueAddress, line: QueueLine, options: { open: boolean; outOfBand: boolean; refusal?: SettingsRefusal | undefined }): Html {
  if (!canWrite(viewer)) return html``;
  return html`<details id="settings" class="card"${options.open ? html` open` : ""}${options.outOfBand ? html` hx-swap-oob="true"` : ""}><summary>Settings</summary>${settingsForm(line.queue, hidden(viewer, address), options.refusal)}</details>`;
}

/** The hidden fields of every action form: the CSRF token and the queue's address. */
function hidden(viewer: Viewer, address: QueueAddress): Html {
  const { repo, targetBranch } = address;
  return html`<input type="hidden" name="csrf" value="${viewer.csrf}"><input type="hidden" name="host" value="${repo.host}"><input type="hidden" name="owner" value="${repo.owner}"><input type="hidden" name="repo" value="${repo.name}"><input type="hidden" name="branch" value="${targetBranch}">`;
}

/** A button that posts one action after the browser asks for confirmation. */
function actionButton(viewer: Viewer, address: QueueAddress, action: string, label: string, confirm: string, extra: Html | string = ""): Html {
  return html`<form class="inline" method="post" action="/actions/queue" hx-post="/actions/queue" hx-target="#queue-live" hx-swap="outerHTML" hx-confirm="${confirm}">
${hidden(viewer, address)}<input type="hidden" name="action" value="${action}">${extra}<button type="submit" data-action="${action}">${label}</button></form>`;
}

function queueActions(viewer: Viewer, line: QueueLine, address: QueueAddress): Html {
  if (!canWrite(viewer)) return readOnlyHint();
  const { state } = line.queue;
  const where = `${address.repo.owner}/${address.repo.name} ${address.targetBranch}`;
  return html`<div class="actions" role="group" aria-label="Queue actions">
${state !== "paused" ? actionButton(viewer, address, "pause", "Pause", `Pause the queue of ${where}? Nothing starts testing and nothing merges until it is resumed.`) : ""}
${state !== "running" ? actionButton(viewer, address, "resume", "Resume", `Resume the queue of ${where}?`) : ""}
${state === "running" ? actionButton(viewer, address, "drain", "Drain", `Drain the queue of ${where}? Runs in flight finish; nothing new starts testing.`) : ""}
</div>`;
}

function prActions(viewer: Viewer, address: QueueAddress, pr: MergeItemRecord): Html {
  if (!canWrite(viewer)) return html``;
  const prField = html`<input type="hidden" name="pr" value="${pr.prNumber}">`;
  const id = `priority-${pr.prNumber}`;
  const choices = Object.keys(PRIORITY_NAMES).map((name) => html`<option value="${name}"${name === pr.priorityName ? html` selected` : ""}>${name}</option>`);
  return html`<div class="pr-actions">
${actionButton(viewer, address, "cancel", "Cancel", `Remove #${pr.prNumber} from the queue?`, prField)}
${actionButton(viewer, address, "restart", "Restart", `Restart the tests of #${pr.prNumber}?`, prField)}
${actionButton(viewer, address, "priority", "Set priority", `Change the priority of #${pr.prNumber}?`, html`${prField}<label class="sr-only" for="${id}">Priority of #${pr.prNumber}</label><select id="${id}" name="priority">${choices}</select>`)}
</div>`;
}

/** The reason's words after the state's badge, unless they only repeat it ("testing", "merged"). */
function reasonOf(pr: MergeItemRecord): Html {
  const reason = reasonAfterState(pr.state, words(pr.stateReason));
  return reason ? html`<span class="reason-words">${reason}</span> ` : html``;
}

function prRow(viewer: Viewer, address: QueueAddress, pr: MergeItemRecord, position: number, now: Date): Html {
  return html`<li class="pr state-${pr.state}" data-pr="${pr.prNumber}">
<div class="pr-head"><span class="pos" aria-label="position">${position}</span> <a href="${pullPath(address.repo, address.targetBranch, pr.prNumber)}"><strong>#${pr.prNumber}</strong> ${pr.prTitle}</a></div>
<div class="pr-meta"><span class="state state-${pr.state}" data-state="${pr.state}">${words(pr.state)}</span>
${reasonOf(pr)}<span>for ${since(pr.stateChangedAt, now)}</span>
<span>priority ${pr.priorityName}</span><span>by ${pr.prAuthor}</span></div>
${prActions(viewer, address, pr)}
</li>`;
}

/** PR numbers, each linked to its page. */
function prLinks(address: QueueAddress, numbers: number[]): Html {
  return html`${numbers.map((n, i) => html`${i > 0 ? ", " : ""}<a href="${pullPath(address.repo, address.targetBranch, n)}">#${n}</a>`)}`;
}

function runRow(address: QueueAddress, run: RunView, now: Date): Html {
  return html`<li class="run" data-run="${run.runId}">
<strong>${run.runId}</strong> <span class="muted">${run.kind === "bisection" ? "bisection" : run.tested.length > 1 ? "batch" : "single"}</span>
tests ${prLinks(address, run.tested)}${run.stackedOn.length > 0 ? html` on top of ${prLinks(address, run.stackedOn)}` : " on the target branch"}
<span class="muted">· started ${since(run.startedAt, now)} ago${run.testBranch ? html` · <code>${run.testBranch}</code>` : ""}</span>
${run.checks.length > 0 ? html`<ul class="checks">${run.checks.map((c) => html`<li class="check check-${c.state}">${c.context}: ${c.state}</li>`)}</ul>` : ""}
</li>`;
}

/** The part of the page the live stream refreshes. */
export function liveSection(viewer: Viewer, address: QueueAddress, line: QueueLine, now: Date): Html {
  const { queue } = line;
  const inLine = queue.enqueuedPullRequests.filter((pr) => pr.state !== "not_ready");
  const waiting = queue.enqueuedPullRequests.filter((pr) => pr.state === "not_ready");
  return html`<div id="queue-live" hx-get="${queuePath(address.repo, address.targetBranch)}?part=live" hx-trigger="sse:queue" hx-swap="outerHTML">
<section class="status" aria-label="Queue state">
<p><span class="live-badge">live</span> <span class="state state-${queue.state}" id="queue-state" data-state="${queue.state}">${words(queue.state)}</span>
<span class="muted">${queue.mode} mode · concurrency ${queue.concurrency}${queue.batch ? " · batching" : ""}</span></p>
${line.blockedReason ? html`<p class="blocked">${line.blockedReason}</p>` : ""}
${queue.requiredStatusesWarning ? html`<p class="warning">${queue.requiredStatusesWarning}</p>` : ""}
${queueActions(viewer, line, address)}
</section>
<section aria-labelledby="runs-h"><h2 id="runs-h">Runs in flight (${line.runs.length})</h2>
${line.runs.length === 0 ? html`<p class="empty">Nothing is testing.</p>` : html`<ol class="runs">${line.runs.map((r) => runRow(address, r, now))}</ol>`}</section>
<section aria-labelledby="line-h"><h2 id="line-h">The line (${inLine.length})</h2>
${inLine.length === 0 ? html`<p class="empty">No pull request in line.</p>` : html`<ol class="line">${inLine.map((pr, i) => prRow(viewer, address, pr, i + 1, now))}</ol>`}</section>
${waiting.length > 0 ? html`<section aria-labelledby="waiting-h"><h2 id="waiting-h">Waiting for readiness (${waiting.length})</h2><ul class="line">${waiting.map((pr, i) => prRow(viewer, address, pr, i + 1, now))}</ul></section>` : ""}
<section aria-labelledby="done-h"><h2 id="done-h">Concluded in the last 24 h</h2>
${
  line.concluded.length === 0
    ? html`<p class="empty">Nothing concluded yet.</p>`
    : html`<ul class="concluded">${line.concluded.map(
        (pr) =>
          html`<li data-pr="${pr.prNumber}"><a href="${pullPath(address.repo, address.targetBranch, pr.prNumber)}"><strong>#${pr.prNumber}</strong> ${pr.prTitle}</a> <span class="state state-${pr.state}" data-state="${pr.state}">${words(pr.state)}</span> <span class="muted">${reasonAfterState(pr.state, words(pr.stateReason)) ? `${reasonAfterState(pr.state, words(pr.stateReason))}, ` : ""}${since(pr.stateChangedAt, now)} ago</span>${pr.failureMessage ? html`<blockquote>${pr.failureMessage}</blockquote>` : ""}</li>`,
      )}</ul>`
}</section>
</div>`;
}

export function queuePage(assets: Assets, viewer: Viewer, address: QueueAddress, line: QueueLine, now: Date, notice?: Notice, refusal?: SettingsRefusal): Html {
  const { repo, targetBranch } = address;
  const stream = `/events?queue=${encodeURIComponent(`${repo.host}/${repo.owner}/${repo.name}/${targetBranch}`)}`;
  const body = html`<p class="crumbs"><a href="/">Queues</a> / ${repo.host}</p>
<h1>${repo.owner}/${repo.name} <span class="branch">${targetBranch}</span></h1>
${noticeArea(refusal ? undefined : notice)}
<div hx-ext="sse" sse-connect="${stream}" class="live-stream">
${liveSection(viewer, address, line, now)}
</div>
${settingsPanel(viewer, address, line, { open: refusal !== undefined, outOfBand: false, refusal })}`;
  return layout(assets, { title: `${repo.owner}/${repo.name} ${targetBranch}`, viewer, body });
}
