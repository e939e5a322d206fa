import { REASONS, sentenceOf } from "../../domain/reasons.js";
import { isTerminal, PR_STATES } from "../../domain/states.js";
import type { Assets } from "../assets.js";
import { html, type Html } from "../html.js";
import { layout, type Viewer } from "../layout.js";
import { HISTORY_FIELDS, HISTORY_SCAN_LIMIT, type HistoryEntry, type HistoryQuery, type HistoryView, queueKeyOf } from "../read-models/history.js";
import { duration, pullPath, queuePath, reasonAfterState, since, words } from "./format.js";

/**
 * The organization's history (/history): every PR that went through its queues, live and
 * concluded, newest submission first, one line each, searchable by a GET form (its address is a
 * shareable link), paged by key. Each PR links to its page, which shows its timeline; the
 * operators' actions are the audit log's (/audit). Reads only.
 */

const at = (date: Date) => html`<time datetime="${date.toISOString()}">${date.toISOString().slice(0, 16).replace("T", " ")}</time>`;

/** This page's address with the query's filters and one page token (the other parameters kept, empty ones left out). */
function pageLink(query: HistoryQuery, param: "before" | "after" | null, token: string): string {
  const kept = HISTORY_FIELDS.filter((name) => name !== "before" && name !== "after" && query[name] !== "").map((name): [string, string] => [name, query[name]]);
  const params = new URLSearchParams(param ? [...kept, [param, token] as [string, string]] : kept);
  const text = params.toString();
  return text === "" ? "/history" : `/history?${text}`;
}

function row(entry: HistoryEntry, now: Date): Html {
  const concluded = isTerminal(entry.state) ? entry.stateChangedAt : null;
  const sentence = sentenceOf(entry.stateReason);
  return html`<tr data-pr="${entry.prNumber}" data-state="${entry.state}">
<td data-label="Queue" class="nowrap"><a href="${queuePath(entry.repo, entry.branch)}">${entry.repo.owner}/${entry.repo.name}</a> <span class="branch">${entry.branch}</span></td>
<th scope="row"><a href="${pullPath(entry.repo, entry.branch, entry.prNumber)}">#${entry.prNumber} ${entry.prTitle}</a></th>
<td data-label="Author" class="nowrap">${entry.prAuthor}</td>
<td data-label="State"><span class="state state-${entry.state}">${words(entry.state)}</span> <span class="reason-text" title="Reason code ${entry.stateReason} (docs/reasons.md)" data-reason="${entry.stateReason}">${reasonAfterState(entry.state, sentence)}</span>${
    entry.operatorActions > 0 ? html` <span class="badge operator" title="Restarted or cancelled on request ${entry.operatorActions} time(s): see its timeline">operator</span>` : ""
  }</td>
<td data-label="Submitted">${at(entry.submittedAt)}</td>
<td data-label="Concluded">${concluded ? at(concluded) : html`<span class="muted">in line</span>`}</td>
<td data-label="In queue">${concluded ? duration((concluded.getTime() - entry.submittedAt.getTime()) / 1000) : since(entry.submittedAt.toISOString(), now)}</td>
</tr>`;
}

const option = (value: string, label: string, chosen: string) => html`<option value="${value}"${value === chosen ? html` selected` : ""}>${label}</option>`;

function searchForm(view: HistoryView): Html {
  const { query } = view;
  return html`<form class="range history-search" method="get" action="/history" role="search" aria-label="Search the history">
<span class="field"><label for="h-q">PR number or title</label> <input id="h-q" name="q" type="search" maxlength="200" placeholder="#123 or words" value="${query.q}"></span>
<span class="field"><label for="h-author">Author</label> <input id="h-author" name="author" type="text" maxlength="100" placeholder="login" value="${query.author}"></span>
<span class="field"><label for="h-state">State</label> <select id="h-state" name="state">${option("", "Any state", query.state)}${PR_STATES.map((s) => option(s, words(s), query.state))}</select></span>
<span class="field"><label for="h-reason">Reason</label> <select id="h-reason" name="reason">${option("", "Any reason", query.reason)}${Object.keys(REASONS).map((r) => option(r, words(r), query.reason))}</select></span>
<span class="field"><label for="h-queue">Queue</label> <select id="h-queue" name="queue">${option("", "All queues", query.queue)}${view.queues.map((q) => option(queueKeyOf(q), `${q.owner}/${q.name} ${q.branch}`, query.queue))}</select></span>
<span class="field"><label for="h-from">Submitted from</label> <input id="h-from" name="from" type="date" value="${query.from}"> <label for="h-to">to</label> <input id="h-to" name="to" type="date" value="${query.to}"></span>
<button type="submit">Search</button>${HISTORY_FIELDS.some((f) => query[f] !== "") ? html` <a href="/history">Clear</a>` : ""}
</form>`;
}

export function historyPage(assets: Assets, viewer: Viewer, view: HistoryView, now: Date): Html {
  const { query, entries } = view;
  const filtered = HISTORY_FIELDS.some((f) => f !== "before" && f !== "after" && f !== "size" && query[f] !== "");
  const paged = query.before !== "" || query.after !== "";
  const pager = html`<nav class="pager" aria-label="Pages">${paged ? html`<a href="${pageLink(query, null, "")}">Newest</a> ` : ""}${view.newer ? html`<a href="${pageLink(query, "after", view.newer)}" rel="prev">Newer</a> ` : ""}${
    view.older ? html`<a href="${pageLink(query, "before", view.older)}" rel="next">Older</a>` : ""
  }</nav>`;
  const body = html`<h1>History of ${viewer.principal.organizationSlug}</h1>
<p class="muted">Every pull request that went through the organization's queues, live and concluded, newest submission first. A PR's timeline is on its page; who paused, froze, restarted or changed what is in the <a href="/audit">operator actions (audit log)</a>. Dates are UTC; the date range is on the submission date.</p>
${searchForm(view)}
<section aria-labelledby="history-h"><h2 id="history-h">${filtered ? "Matching pull requests" : "Pull requests"} <span class="muted">(${entries.length} shown)</span></h2>
${
  entries.length === 0
    ? html`<p class="empty">${filtered ? "No pull request matches." : "No pull request went through a queue yet."}</p>`
    : html`<div class="table-wrap"><table class="queue-history" id="history-table"><thead><tr><th scope="col">Queue</th><th scope="col">Pull request</th><th scope="col">Author</th><th scope="col">State</th><th scope="col">Submitted (UTC)</th><th scope="col">Concluded (UTC)</th><th scope="col">In queue</th></tr></thead>
<tbody>${entries.map((e) => row(e, now))}</tbody></table></div>`
}
${
  view.scannedTo
    ? html`<p class="muted" id="history-scanned">Searched ${HISTORY_SCAN_LIMIT.toLocaleString("en")} pull requests, ${query.after !== "" ? "forward" : "back"} to those submitted ${at(view.scannedTo)} UTC, without filling the page: ${query.after !== "" ? "Newer" : "Older"} searches on from there.</p>`
    : ""
}
${pager}</section>`;
  return layout(assets, { title: "History", viewer, body, current: "history", charts: false });
}
