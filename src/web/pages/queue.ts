import type { QueueLine } from "../read-models/dashboard.js";
import type { QueueAddress } from "../../queue/queues.js";
import type { MergeItemRecord } from "../../queue/records.js";
import type { QueueSetupRecord } from "../../queue/preflight.js";
import { preflightPagePath } from "../../domain/links.js";
import { CHECK_VERDICT_WORDS } from "../../domain/preflight/words.js";
import { sentenceOf } from "../../domain/reasons.js";
import type { Cause } from "../../domain/timeline.js";
import type { Assets } from "../assets.js";
import { html, type Html } from "../html.js";
import { canWrite, layout, liveStreamTarget, readOnlyHint, type Viewer } from "../layout.js";
import type { LivePart } from "../live-patch.js";
import { type SettingsRefusal, settingsForm } from "../settings-form.js";
import { cancelledHow, pullPath, queuePath, reasonAfterState, since, words } from "./format.js";
import { hiddenFields, LINE_SHOWN, prLinks, prRow, prShown, type RowOptions, type Rows, rowsOf, runRow, runsByPr, stackGraph, WALL_SHOWN } from "./queue-rows.js";

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
 * An action's answer to htmx: the notice; after a settings change, the form with the new values;
 * after a refused one, the form with what was typed and the refusal next to it (the notice above
 * then stays empty: one message, where the fields are). The line itself changes through the live
 * stream, which alone knows what the page shows, so it can send only what changed.
 */
export function actionAnswer(viewer: Viewer, address: QueueAddress, line: QueueLine, notice: Notice, settings: { refusal?: SettingsRefusal } | undefined): Html {
  return html`${noticeArea(settings?.refusal ? undefined : notice, true)}${settings ? settingsPanel(viewer, address, line, { open: true, outOfBand: true, refusal: settings.refusal }) : ""}`;
}

/** The settings form, folded away until opened (write tokens only). */
function settingsPanel(viewer: Viewer, address: QueueAddress, line: QueueLine, options: { open: boolean; outOfBand: boolean; refusal?: SettingsRefusal | undefined }): Html {
  if (!canWrite(viewer)) return html``;
  return html`<details id="settings" class="card"${options.open ? html` open` : ""}${options.outOfBand ? html` hx-swap-oob="true"` : ""}><summary>Settings</summary>${settingsForm(line.queue, hiddenFields(viewer, address), options.refusal)}</details>`;
}

/** A button that posts one action after the browser asks for confirmation. */
function actionButton(viewer: Viewer, address: QueueAddress, action: string, label: string, confirm: string, extra: Html | string = ""): Html {
  return html`<form class="inline" method="post" action="/actions/queue" hx-post="/actions/queue" hx-swap="none" hx-confirm="${confirm}">
${hiddenFields(viewer, address)}<input type="hidden" name="action" value="${action}">${extra}<button type="submit" data-action="${action}">${label}</button></form>`;
}

function queueActions(viewer: Viewer, line: QueueLine, address: QueueAddress): Html {
  if (!canWrite(viewer)) return readOnlyHint();
  const { state } = line.queue;
  const where = `${address.repo.owner}/${address.repo.name} ${address.targetBranch}`;
  return html`<div class="actions" role="group" aria-label="Queue actions">
${state !== "paused" ? actionButton(viewer, address, "pause", "Pause", `Pause the queue of ${where}? Nothing starts testing and nothing merges until it is resumed.`) : ""}
${state !== "running" ? actionButton(viewer, address, "resume", "Resume", `Resume the queue of ${where}?`) : ""}
${state === "running" ? actionButton(viewer, address, "drain", "Drain", `Drain the queue of ${where}? Runs in flight finish; nothing new starts testing.`) : ""}
${line.queue.freeze.frozen ? actionButton(viewer, address, "unfreeze", "Unfreeze", `End the freezes holding the queue of ${where} now? What passed merges.`) : ""}
${freezeForm(viewer, address, where)}
</div>`;
}

const utc = (iso: string | null) => (iso === null ? "until unfrozen" : `${iso.slice(0, 16).replace("T", " ")} UTC`);

/** The queue's freezes, current and scheduled, each removable by a write user (`viewer` null: the wall display, no controls). */
function freezesList(viewer: Viewer | null, address: QueueAddress, line: QueueLine): Html {
  if (line.freezes.length === 0) return html``;
  const item = (f: QueueLine["freezes"][number]) => {
    const when =
      f.kind === "weekly" && f.weekly
        ? `every ${f.weekly.days.join(", ")} ${f.weekly.from}–${f.weekly.until} ${f.weekly.timeZone}`
        : f.kind === "once"
          ? `from ${utc(f.from)} to ${utc(f.until)}`
          : `now, ${f.until === null ? "until unfrozen" : `until ${utc(f.until)}`}`;
    const state = f.holdingNow ? " (holding now)" : f.nextStart ? ` (next ${utc(f.nextStart)})` : "";
    const remove = viewer && canWrite(viewer) ? actionButton(viewer, address, "remove_freeze", "Remove", `Remove the freeze "${f.reason}"?`, html`<input type="hidden" name="freezeId" value="${f.id}">`) : "";
    return html`<li data-freeze="${f.id}">${when}${state}${f.testing ? "" : ", testing held"}: ${f.reason} ${remove}</li>`;
  };
  return html`<div class="freezes"><p class="muted">Merge freezes:</p><ul id="queue-freezes">${line.freezes.map(item)}</ul></div>`;
}

/** Freeze merges now, with a reason and an optional end (docs/freezes.md; windows and weekly schedules through the API and CLI). */
function freezeForm(viewer: Viewer, address: QueueAddress, where: string): Html {
  const fields = html`<label for="freeze-reason">Reason</label> <input id="freeze-reason" name="reason" required maxlength="255" placeholder="release 4.2">
<label for="freeze-until">until</label> <input id="freeze-until" name="until" maxlength="40" placeholder="2026-12-24T18:00Z (empty: until unfrozen)">`;
  const window = html`<label for="window-reason">Window's reason</label> <input id="window-reason" name="reason" required maxlength="255">
<label for="window-from">from</label> <input id="window-from" name="from" required maxlength="40" placeholder="2026-12-24T18:00Z">
<label for="window-until">until</label> <input id="window-until" name="until" required maxlength="40" placeholder="2026-12-27T08:00Z">`;
  const weekly = html`<label for="weekly-reason">Weekly reason</label> <input id="weekly-reason" name="reason" required maxlength="255">
<label for="weekly-days">days</label> <input id="weekly-days" name="days" required maxlength="60" placeholder="fri, sat, sun">
<label for="weekly-from">from</label> <input id="weekly-from" name="from" required maxlength="5" placeholder="18:00">
<label for="weekly-until">until</label> <input id="weekly-until" name="until" required maxlength="5" placeholder="08:00">
<label for="weekly-zone">time zone</label> <input id="weekly-zone" name="timeZone" required maxlength="64" value="UTC">`;
  return html`<details class="freeze"><summary>Freeze…</summary>${actionButton(viewer, address, "freeze", "Freeze merges", `Freeze the queue of ${where}? Nothing merges but hotfixes until it ends.`, fields)}
${actionButton(viewer, address, "freeze_window", "Schedule the window", `Schedule a merge freeze of ${where}?`, window)}
${actionButton(viewer, address, "freeze_weekly", "Freeze every week", `Freeze the queue of ${where} every week?`, weekly)}</details>`;
}

function statusBlock(viewer: Viewer, address: QueueAddress, line: QueueLine, options: RowOptions): Html {
  const { queue } = line;
  return html`<section class="status" id="queue-status" aria-label="Queue state">
<p><span class="live-badge">live</span> <span class="state state-${queue.state}" id="queue-state" data-state="${queue.state}">${words(queue.state)}</span>${
    queue.freeze.frozen ? html` <span class="state state-frozen" id="queue-frozen" title="a merge freeze holds: only hotfixes merge">frozen</span>` : ""
  }
<span class="muted">${queue.mode} mode · ${
    queue.tuned ? `adaptive tuning: up to ${queue.tuned.concurrency} run(s), batches of up to ${queue.tuned.largestBatch}` : `concurrency ${queue.concurrency}${queue.batch ? " · batching" : ""}`
  }${queue.ciBudget > 0 ? ` · CI budget ${queue.ciBudget} run(s) at once` : ""}</span></p>
${line.blockedReason ? html`<p class="blocked" id="queue-blocked">${line.blockedReason}</p>` : ""}
${!queue.freeze.frozen && queue.freeze.nextChangeAt ? html`<p class="muted" id="queue-next-freeze">Next merge freeze starts ${queue.freeze.nextChangeAt.slice(0, 16).replace("T", " ")} UTC.</p>` : ""}
${freezesList(options.tv ? null : viewer, address, line)}
${queue.requiredStatusesWarning ? html`<p class="warning">${queue.requiredStatusesWarning}</p>` : ""}
${options.tv ? "" : queueActions(viewer, line, address)}
</section>`;
}

/**
 * Parallel mode's lanes, one column each (its PRs in line order, and what each of its runs tests
 * on top of, drawn), and the PRs being bisected with the size of the groups they are tested in.
 */
function groupsBlock(rows: Rows, line: QueueLine): Html {
  const { lanes, bisecting } = line.groups;
  const stateOf = new Map(line.queue.enqueuedPullRequests.map((pr) => [pr.prNumber, pr.state]));
  const pr = (n: number) => {
    const state = stateOf.get(n) ?? "pending";
    return html`<li data-pr="${n}"><a href="${rows.prPath(n)}">#${n}</a> <span class="state state-${state}" data-state="${state}">${words(state)}</span></li>`;
  };
  const runsOf = (lane: number[]) => line.runs.filter((run) => run.kind === "main" && run.tested.some((n) => lane.includes(n)));
  return html`<div id="queue-groups">${
    lanes && lanes.length > 0
      ? html`<section aria-labelledby="lanes-h"><h2 id="lanes-h">Lanes (${lanes.length})</h2><div class="lanes">${lanes.map(
          (lane, i) =>
            html`<section class="lane" data-lane="${i + 1}" aria-label="Lane ${i + 1}"><h3>Lane ${i + 1}</h3><ol class="lane-prs">${lane.map(pr)}</ol><ul class="lane-runs">${runsOf(lane).map(
              (run) => html`<li data-run="${run.runId}"><span class="run-id">${run.runId}</span>${stackGraph(rows, run)}</li>`,
            )}</ul></section>`,
        )}</div></section>`
      : ""
  }${
    bisecting.length > 0
      ? html`<section aria-labelledby="bisecting-h"><h2 id="bisecting-h">Bisecting</h2><ul class="bisecting">${bisecting.map(
          (group) => html`<li data-group-size="${group.groupSize}">${prLinks(rows, group.prs)}: tested in groups of ${group.groupSize}<ul>${group.prs.map(pr)}</ul></li>`,
        )}</ul></section>`
      : ""
  }</div>`;
}

/** Why a concluded PR concluded, after its state's badge: its reason's sentence (for a cancel on request, who asked and where). */
function concludedReason(pr: MergeItemRecord, cancelledBy: Record<string, Cause>): string {
  if (pr.stateReason === "cancelled_by_user") return cancelledHow(cancelledBy[pr.id]);
  return reasonAfterState(pr.state, sentenceOf(pr.stateReason)).replace(/\.$/, "");
}

function concludedRow(address: QueueAddress, pr: MergeItemRecord, cancelledBy: Record<string, Cause>, now: Date): Html {
  const reason = concludedReason(pr, cancelledBy);
  return html`<li id="done-${pr.id}" data-pr="${pr.prNumber}"><a href="${pullPath(address.repo, address.targetBranch, pr.prNumber)}"><strong>#${pr.prNumber}</strong> ${pr.prTitle}</a> <span class="state state-${pr.state}" data-state="${pr.state}">${words(pr.state)}</span> <span class="muted">${reason ? `${reason}, ` : ""}${since(pr.stateChangedAt, now)} ago</span>${pr.failureMessage ? html`<blockquote>${pr.failureMessage}</blockquote>` : ""}</li>`;
}

/**
 * Under a list drawn in part: how many more it holds, and (not on the wall display) the link to
 * the page with all of them; with all drawn, the way back. Empty when it is drawn whole.
 */
function moreLine(id: string, address: QueueAddress, total: number, shown: number, what: string, options: RowOptions): Html {
  const path = queuePath(address.repo, address.targetBranch);
  if (options.all) return html`<p id="${id}" class="muted more">${total > LINE_SHOWN ? html`All ${total} ${what} shown. <a href="${path}">Show the first ${LINE_SHOWN}</a>` : ""}</p>`;
  if (total <= shown) return html`<p id="${id}" class="muted more"></p>`;
  return html`<p id="${id}" class="muted more">and ${total - shown} more ${what}${options.tv ? "" : html` · <a href="${path}?all">show all ${total}</a>`}</p>`;
}

/** A list's heading and, when it is empty, the sentence saying so: one block, so its count updates alone. */
function listHead(id: string, title: Html | string, count: number, empty: string | null): Html {
  return html`<div id="${id}-head">${count > 0 || empty !== null ? html`<h2 id="${id}-h">${title}</h2>` : ""}${count === 0 && empty !== null ? html`<p class="empty">${empty}</p>` : ""}</div>`;
}

/**
 * The live part as the stream sees it: blocks and lists of rows, each with an id and the data it
 * shows (its fingerprint). The page renders the same parts (liveSection), so what the stream
 * patches is exactly what the page holds.
 */
export function queueLiveParts(viewer: Viewer, address: QueueAddress, line: QueueLine, now: Date, options: RowOptions = { tv: false }): LivePart[] {
  const { queue } = line;
  const runOf = runsByPr(line.runs);
  const rows = rowsOf(viewer, address, options);
  const inLine = queue.enqueuedPullRequests.filter((pr) => pr.state !== "not_ready");
  const waiting = queue.enqueuedPullRequests.filter((pr) => pr.state === "not_ready");
  const shown = options.all ? Number.POSITIVE_INFINITY : options.tv ? WALL_SHOWN : LINE_SHOWN;
  const block = (id: string, render: () => Html): LivePart => {
    const markup = render();
    return { kind: "block", id, fingerprint: markup.text, render: () => markup };
  };
  // A row's fingerprint is its data (the markup counts "for 3 s" from `now`, which the browser keeps counting).
  const row = (id: string, data: unknown, render: () => Html) => ({ id, fingerprint: JSON.stringify(data), render });
  return [
    block("queue-status", () => statusBlock(viewer, address, line, options)),
    block("queue-groups", () => groupsBlock(rows, line)),
    block("runs-head", () => listHead("runs", `Runs in flight (${line.runs.length})`, line.runs.length, "Nothing is testing.")),
    { kind: "list", id: "runs-list", rows: line.runs.map((run) => row(`queue-${run.runId}`, run, () => runRow(rows, run, now))) },
    block("line-head", () => listHead("line", `The line (${inLine.length})`, inLine.length, "No pull request in line.")),
    { kind: "list", id: "line-list", rows: inLine.slice(0, shown).map((pr) => row(`line-pr-${pr.prNumber}`, prShown(pr, runOf.get(pr.prNumber), now), () => prRow(rows, pr, "line", runOf.get(pr.prNumber), now))) },
    block("line-more", () => moreLine("line-more", address, inLine.length, shown, "in line", options)),
    block("waiting-head", () => listHead("waiting", `Waiting for readiness (${waiting.length})`, waiting.length, null)),
    { kind: "list", id: "waiting-list", rows: waiting.slice(0, shown).map((pr) => row(`waiting-pr-${pr.prNumber}`, prShown(pr, undefined, now), () => prRow(rows, pr, "waiting", undefined, now))) },
    block("waiting-more", () => moreLine("waiting-more", address, waiting.length, shown, "waiting for readiness", options)),
    block("done-head", () =>
      listHead(
        "done",
        line.concludedTotal > line.concluded.length ? `Concluded in the last 24 h (the latest ${line.concluded.length} of ${line.concludedTotal})` : "Concluded in the last 24 h",
        line.concluded.length,
        "Nothing concluded yet.",
      ),
    ),
    { kind: "list", id: "done-list", rows: line.concluded.map((pr) => row(`done-${pr.id}`, [pr, line.cancelledBy[pr.id] ?? null], () => concludedRow(address, pr, line.cancelledBy, now))) },
  ];
}

/** The part of the page the live stream keeps up to date: the parts, each list in its section. */
export function liveSection(parts: LivePart[]): Html {
  const byId = new Map(parts.map((part) => [part.id, part]));
  const block = (id: string) => {
    const part = byId.get(id)!;
    return part.kind === "block" ? part.render() : html``;
  };
  const rows = (id: string) => {
    const part = byId.get(id)!;
    return part.kind === "list" ? part.rows.map((row) => row.render()) : [];
  };
  return html`<div id="queue-live">
${block("queue-status")}
${block("queue-groups")}
<section aria-label="Runs in flight">${block("runs-head")}<ol class="runs" id="runs-list">${rows("runs-list")}</ol></section>
<section aria-label="The line">${block("line-head")}<ol class="line" id="line-list">${rows("line-list")}</ol>${block("line-more")}</section>
<section aria-label="Waiting for readiness">${block("waiting-head")}<ul class="line" id="waiting-list">${rows("waiting-list")}</ul>${block("waiting-more")}</section>
<section aria-label="Concluded in the last 24 h">${block("done-head")}<ul class="concluded" id="done-list">${rows("done-list")}</ul></section>
</div>`;
}

/**
 * The queue's page. `tv`: the wall display (`?tv`): larger type, no navigation beyond the title
 * and no controls at all (no forms, buttons or menus in the markup), still live.
 */
export function queuePage(assets: Assets, viewer: Viewer, address: QueueAddress, line: QueueLine, now: Date, notice?: Notice, refusal?: SettingsRefusal, options: RowOptions = { tv: false }): Html {
  const { repo, targetBranch } = address;
  // The version the page shows: the stream sends at once what changed after it (rendered for the same display).
  const stream = `/events?queue=${encodeURIComponent(`${repo.host}/${repo.owner}/${repo.name}/${targetBranch}`)}&since=${line.version}${options.tv ? "&tv=1" : ""}${options.all ? "&all=1" : ""}`;
  const live = html`<div hx-ext="sse" sse-connect="${stream}" class="live-stream">
${liveStreamTarget()}
${liveSection(queueLiveParts(viewer, address, line, now, options))}
</div>`;
  const title = `${repo.owner}/${repo.name} ${targetBranch}`;
  if (options.tv) {
    return layout(assets, {
      title,
      viewer,
      wall: true,
      body: html`<h1>${repo.owner}/${repo.name} <span class="branch">${targetBranch}</span></h1>
${live}`,
    });
  }
  const analytics = `/analytics?${new URLSearchParams({ queue: `${repo.host}/${repo.owner}/${repo.name}/${targetBranch}` }).toString()}`;
  const body = html`<p class="crumbs"><a href="/">Queues</a> / ${repo.host} · <a href="${analytics}">Analytics of this queue</a></p>
<div class="title-line"><h1>${repo.owner}/${repo.name} <span class="branch">${targetBranch}</span></h1><a class="wall-link" href="${queuePath(repo, targetBranch)}?tv" title="The queue for a wall display: larger type, no controls, live">Wall display</a></div>
${noticeArea(refusal ? undefined : notice)}
${live}
${settingsPanel(viewer, address, line, { open: refusal !== undefined, outOfBand: false, refusal })}
${preflightPanel(address)}`;
  return layout(assets, { title, viewer, body });
}

/**
 * The preflight on demand (it asks GitHub a dozen questions, so not on every view of a live
 * page): a link that loads the report into the panel, or opens it as a page without script.
 */
function preflightPanel(address: QueueAddress): Html {
  const path = preflightPagePath(address.repo, address.targetBranch);
  return html`<details id="preflight" class="card"><summary>Preflight: will every required check report on testing commits?</summary>
<p>Reads the required checks, the repository's workflow files and who reported checks on recent pull requests, and says of each check whether it will report on the queue's testing commits, why not and the fix.</p>
<p><a class="button" href="${path}" hx-get="${path}" hx-target="#preflight-report" hx-swap="innerHTML" data-preflight>Check the setup</a></p>
<div id="preflight-report" aria-live="polite"></div></details>`;
}

/** The preflight's report: a line per required check, what is wrong and the fix, then the warnings. */
export function preflightReport(report: QueueSetupRecord): Html {
  const mode = report.mode === "draft_pr" ? "testing branches with draft pull requests" : "pushed testing branches";
  const rows = report.checks.map(
    (c) =>
      html`<tr class="${c.verdict === "reports" ? "ok" : "problem"}"><th scope="row"><code>${c.context}</code></th><td>${CHECK_VERDICT_WORDS[c.verdict] ?? c.verdict}</td><td>${c.verdict === "reports" ? (c.sources[0] ?? "") : c.why}${c.fix ? html`<br><strong>Fix:</strong> ${c.fix}` : ""}</td></tr>`,
  );
  return html`<p class="preflight-summary" data-ok="${String(report.ok)}">${report.ok ? "Every required check will report on the queue's testing commits" : "Some required checks will not report on the queue's testing commits"} (${mode}${report.queueExists ? "" : "; no queue yet"}).</p>
${report.workflowsUnavailable ? html`<p>${report.workflowsUnavailable}</p>` : ""}
${report.checks.length > 0 ? html`<table class="preflight"><thead><tr><th scope="col">Required check</th><th scope="col">On testing commits</th><th scope="col">Why, and the fix</th></tr></thead><tbody>${rows}</tbody></table>` : html`<p>No required checks.</p>`}
${report.warnings.length > 0 ? html`<ul class="warnings">${report.warnings.map((w) => html`<li>${w}</li>`)}</ul>` : ""}`;
}
