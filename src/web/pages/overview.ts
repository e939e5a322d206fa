import type { QueueSummary } from "../../app/dashboard.js";
import type { Assets } from "../assets.js";
import { html, jsonData } from "../html.js";
import { layout, type Viewer } from "../layout.js";
import { duration, queuePath, reasonAfterState, words } from "./format.js";

function queueCard(q: QueueSummary, i: number) {
  const name = `${q.repo.owner}/${q.repo.name}`;
  const chartId = `trend-${i}`;
  return html`<article class="card queue-card" data-queue="${name}:${q.branch}">
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
</dl>
<figure class="chart"><div data-chart="${chartId}" role="img" aria-label="PRs merged and failed per hour, last 24 hours"></div>
<script type="application/json" id="${chartId}">${jsonData({
    x: q.trend.hours.map((h) => h / 1000),
    unit: "PRs per hour",
    series: [
      { label: "merged", values: q.trend.merged },
      { label: "failed", values: q.trend.failed },
    ],
  })}</script>
<figcaption>Merged and failed per hour, last 24 h</figcaption></figure>
</article>`;
}

export function overviewPage(assets: Assets, viewer: Viewer, queues: QueueSummary[]) {
  const body = html`<h1>Queues of ${viewer.principal.organizationSlug}</h1>
${queues.length === 0 ? html`<p class="empty">No queues yet. Create one with the API's <code>createQueue</code> (README, Quick start).</p>` : ""}
<div class="cards">${queues.map(queueCard)}</div>`;
  return layout(assets, { title: "Queues", viewer, body, current: "queues" });
}
