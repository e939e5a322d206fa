import type { QueueSummary } from "../read-models/dashboard.js";
import type { Assets } from "../assets.js";
import { type Html, html } from "../html.js";
import { layout, liveBadgeLine, liveStreamTarget, type Viewer } from "../layout.js";
import type { LivePart } from "../live-patch.js";
import { duration, queuePath, reasonAfterState, words } from "./format.js";

/** A card's id, the same whatever the other queues (base64url: safe in an id and a selector). */
const cardId = (q: QueueSummary) => `card-${Buffer.from(`${q.repo.host}/${q.repo.owner}/${q.repo.name}/${q.branch}`).toString("base64url")}`;

function queueCard(q: QueueSummary) {
  const name = `${q.repo.owner}/${q.repo.name}`;
  const id = cardId(q);
  // The chart's data in an attribute, not a <script type="application/json">: htmx drops script
  // elements from what it swaps in (allowScriptTags: false), and the live stream swaps cards.
  const chartId = `trend-${id}`;
  return html`<article class="card queue-card" id="${id}" data-queue="${name}:${q.branch}">
<h2><a href="${queuePath(q.repo, q.branch)}">${name} <span class="branch">${q.branch}</span></a></h2>
<p><span class="state state-${q.state}">${words(q.state)}</span>${q.blockedReason ? html` <span class="blocked">${reasonAfterState(q.state, q.blockedReason)}</span>` : ""}</p>
<dl class="figures">
<div><dt>In line</dt><dd>${q.depth}</dd></div>
<div><dt>Testing</dt><dd>${q.testing}</dd></div>
<div><dt>Waiting for readiness</dt><dd>${q.waiting}</dd></div>
<div><dt>Merged, 24 h</dt><dd>${q.merged24h}</dd></div>
<div><dt>Failed, 24 h</dt><dd>${q.failed24h}</dd></div>
<div><dt>Time in queue p50 / p95</dt><dd>${duration(q.timeInQueueP50)} / ${duration(q.timeInQueueP95)}</dd></div>
<div><dt>CI runs per merged PR</dt><dd>${q.runsPerMerged === null ? "—" : q.runsPerMerged.toFixed(1)}</dd></div>
<div title="Runs that passed after their test results excused or retried a flaky failure (flakeHandling)"><dt>Flaky ejections avoided, 24 h</dt><dd data-figure="flaky-ejections-avoided">${q.flakyEjectionsAvoided}</dd></div>
</dl>
<figure class="chart"><div data-chart="${chartId}" data-series="${JSON.stringify({
    x: q.trend.hours.map((h) => h / 1000),
    unit: "PRs per hour",
    series: [
      { label: "merged", values: q.trend.merged },
      { label: "failed", values: q.trend.failed },
    ],
  })}" role="img" aria-label="PRs merged and failed per hour, last 24 hours"></div>
<figcaption>Merged and failed per hour, last 24 h</figcaption></figure>
</article>`;
}

/** The overview as the live stream sees it: a sentence when there is no queue, and one card per queue (its data, its fingerprint). */
export function overviewLiveParts(queues: QueueSummary[]): LivePart[] {
  const empty = html`<div id="overview-empty">${queues.length === 0 ? html`<p class="empty">No queues yet. Create one with the API's <code>createQueue</code> (README, Quick start).</p>` : ""}</div>`;
  return [
    { kind: "block", id: "overview-empty", fingerprint: empty.text, render: () => empty },
    { kind: "list", id: "queue-cards", rows: queues.map((q) => ({ id: cardId(q), fingerprint: JSON.stringify(q), render: () => queueCard(q) })) },
  ];
}

/** The overview's live part, rendered from its parts. */
export function overviewLive(parts: LivePart[]): Html {
  const [empty, cards] = parts as [LivePart & { kind: "block" }, LivePart & { kind: "list" }];
  return html`<div id="overview-live">${empty.render()}<div class="cards" id="queue-cards">${cards.rows.map((row) => row.render())}</div></div>`;
}

/** The overview; `stamp` is what the organization's queues were when read, for the live stream. */
export function overviewPage(assets: Assets, viewer: Viewer, queues: QueueSummary[], stamp: string | undefined) {
  const body = html`<h1>Queues of ${viewer.principal.organizationSlug}</h1>
<div hx-ext="sse" sse-connect="${`/events?overview=1&since=${stamp ?? ""}`}" class="live-stream">
${liveStreamTarget()}
${liveBadgeLine()}
${overviewLive(overviewLiveParts(queues))}
</div>`;
  return layout(assets, { title: "Queues", viewer, body, current: "queues" });
}
