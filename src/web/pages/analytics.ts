import { sentenceOf } from "../../domain/reasons.js";
import type { Assets } from "../assets.js";
import type { CsvValue } from "../csv.js";
import { type Html, html } from "../html.js";
import { layout, type Viewer } from "../layout.js";
import { type AnalyticsView, queueParameterOf, WINDOWS } from "../read-models/analytics.js";
import { duration } from "./format.js";

/** A day as the tables and the CSV write it: 2030-01-10 (UTC). */
const dayText = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const ratio = (runs: number, merged: number) => (merged > 0 ? Math.round((runs / merged) * 100) / 100 : null);
const minutes = (seconds: number | null) => (seconds === null ? null : Math.round(seconds / 6) / 10);
const hourText = (hour: number) => `${String(hour).padStart(2, "0")}:00`;

/** Each metric's CSV: its columns and rows (documented in docs/analytics.md). */
export const METRICS = {
  merges_per_day: {
    title: "Merges per day",
    header: ["day_utc", "merged"],
    rows: (v: AnalyticsView): CsvValue[][] => v.days.map((d) => [dayText(d.day), d.merged]),
  },
  time_in_queue: {
    title: "Time in queue",
    header: ["day_utc", "merged", "p50_seconds", "p95_seconds"],
    rows: (v: AnalyticsView): CsvValue[][] => v.days.map((d) => [dayText(d.day), d.merged, d.p50Seconds, d.p95Seconds]),
  },
  ci_runs_per_merge: {
    title: "CI runs per merged PR",
    header: ["day_utc", "runs_started", "merged", "runs_per_merged"],
    rows: (v: AnalyticsView): CsvValue[][] => v.days.map((d) => [dayText(d.day), d.runs, d.merged, ratio(d.runs, d.merged)]),
  },
  failures_by_reason: {
    title: "Failures by reason",
    header: ["reason_code", "reason", "failed"],
    rows: (v: AnalyticsView): CsvValue[][] => v.failures.map((f) => [f.reason, sentenceOf(f.reason), f.count]),
  },
  flaky_ejections_avoided: {
    title: "Flaky ejections avoided",
    header: ["day_utc", "runs_started", "flaky_ejections_avoided"],
    rows: (v: AnalyticsView): CsvValue[][] => v.days.map((d) => [dayText(d.day), d.runs, d.flakyAvoided]),
  },
  estimate_accuracy: {
    title: "Estimate accuracy",
    header: ["day_utc", "merged", "merged_with_estimate", "error_p50_seconds", "error_p95_seconds", "merged_later_than_estimated"],
    rows: (v: AnalyticsView): CsvValue[][] => v.days.map((d) => [dayText(d.day), d.merged, d.estimated, d.estimateErrorP50Seconds, d.estimateErrorP95Seconds, d.late]),
  },
  busiest_hours: {
    title: "Busiest hours",
    header: ["hour_utc", "submissions"],
    rows: (v: AnalyticsView): CsvValue[][] => v.hours.map((n, hour) => [hour, n]),
  },
} as const;

export type MetricName = keyof typeof METRICS;

/** The page's own address with other parameters (the queue kept unless replaced). */
function analyticsPath(view: AnalyticsView, change: { window?: number; metric?: MetricName } = {}): string {
  const params = new URLSearchParams();
  if (change.metric) params.set("metric", change.metric);
  params.set("window", String(change.window ?? view.window));
  if (view.queue) params.set("queue", queueParameterOf(view.queue));
  return `${change.metric ? "/analytics.csv" : "/analytics"}?${params.toString()}`;
}

/** A line chart drawn by app.js from its data attribute (no inline script under the CSP). */
function chart(id: string, label: string, data: { x: number[]; unit: string; time?: boolean; series: { label: string; values: (number | null)[] }[] }): Html {
  return html`<figure class="chart"><div data-chart="${id}" data-series="${JSON.stringify(data)}" role="img" aria-label="${label}"></div></figure>`;
}

function csvLink(view: AnalyticsView, metric: MetricName): Html {
  return html`<a class="csv" href="${analyticsPath(view, { metric })}" download data-csv="${metric}">CSV</a>`;
}

function section(view: AnalyticsView, metric: MetricName, summary: Html, body: Html): Html {
  return html`<section class="card metric" id="${metric}" aria-labelledby="${`${metric}-title`}">
<div class="metric-head"><h2 id="${`${metric}-title`}">${METRICS[metric].title}</h2>${csvLink(view, metric)}</div>
<p class="metric-summary">${summary}</p>
${body}
</section>`;
}

/** A table of numbers behind a chart, folded (readable without script: <details> needs none). */
function numbers(caption: string, header: string[], rows: (string | number)[][]): Html {
  return html`<details class="numbers"><summary>Numbers</summary><div class="table-wrap"><table class="history numbers-table"><caption class="sr-only">${caption}</caption>
<thead><tr>${header.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows.map(([first, ...rest]) => html`<tr><th scope="row">${first}</th>${rest.map((c) => html`<td>${c}</td>`)}</tr>`)}</tbody></table></div></details>`;
}

const dash = (v: number | null, text: (v: number) => string = String) => (v === null ? "—" : text(v));

export function analyticsPage(assets: Assets, viewer: Viewer, view: AnalyticsView): Html {
  const { days, total } = view;
  const x = days.map((d) => d.day / 1000);
  const scope = view.queue ? html`${view.queue.repo.owner}/${view.queue.repo.name} <span class="branch">${view.queue.branch}</span>` : html`all queues of ${viewer.principal.organizationSlug}`;
  const busiest = view.hours.reduce((best, n, hour) => (n > view.hours[best]! ? hour : best), 0);
  const submissions = view.hours.reduce((a, b) => a + b, 0);
  const maxFailures = Math.max(1, ...view.failures.map((f) => f.count));
  const selected = view.queue ? queueParameterOf(view.queue) : "";
  const body = html`<h1>Analytics <span class="scope">· ${scope}</span></h1>
<div class="analytics-controls">
<nav aria-label="Window" class="windows">${WINDOWS.map((w) => html`<a href="${analyticsPath(view, { window: w })}"${w === view.window ? html` aria-current="page"` : ""}>${w} days</a>`)}</nav>
<form class="range" method="get" action="/analytics">
<input type="hidden" name="window" value="${String(view.window)}">
<label for="queue">Queue</label>
<select id="queue" name="queue"><option value=""${selected === "" ? html` selected` : ""}>All queues</option>${view.queues.map((q) => {
    const value = queueParameterOf(q);
    return html`<option value="${value}"${value === selected ? html` selected` : ""}>${q.repo.owner}/${q.repo.name} · ${q.branch}</option>`;
  })}</select>
<button type="submit">Show</button>
</form>
</div>
<p class="muted small">${dayText(view.from.getTime())} to ${dayText(view.to.getTime() - 1)} (UTC days, today so far included). Figures are of PRs that merged, failed or were submitted in the window, and of CI runs started in it.</p>
<dl class="figures analytics-figures">
<div><dt>Merged</dt><dd data-figure="merged">${total.merged}</dd></div>
<div><dt>Time in queue p50 / p95</dt><dd data-figure="time-in-queue">${duration(total.p50Seconds)} / ${duration(total.p95Seconds)}</dd></div>
<div><dt>CI runs per merged PR</dt><dd data-figure="runs-per-merged">${dash(ratio(total.runs, total.merged), (r) => r.toFixed(2))}</dd></div>
<div><dt>Failed</dt><dd data-figure="failed">${total.failed}</dd></div>
<div><dt>Flaky ejections avoided</dt><dd data-figure="flaky-ejections-avoided">${total.flakyAvoided}</dd></div>
<div><dt>Estimate off by, p50</dt><dd data-figure="estimate-error">${total.estimated === 0 ? "—" : duration(total.estimateErrorP50Seconds)}</dd></div>
<div><dt>Busiest hour (UTC)</dt><dd data-figure="busiest-hour">${submissions === 0 ? "—" : `${hourText(busiest)}–${hourText((busiest + 1) % 24)}`}</dd></div>
</dl>
<div class="cards analytics">
${section(
  view,
  "merges_per_day",
  html`${total.merged} merged in ${view.window} days, ${dash(total.merged === 0 ? null : Math.round((total.merged / view.window) * 10) / 10)} a day.`,
  html`${chart("chart-merges", "PRs merged per day", { x, unit: "PRs merged", series: [{ label: "merged", values: days.map((d) => d.merged) }] })}
${numbers(
  "PRs merged per day",
  ["Day (UTC)", "Merged"],
  days.map((d) => [dayText(d.day), d.merged]),
)}`,
)}
${section(
  view,
  "time_in_queue",
  html`From a PR's last submission to its merge: p50 ${duration(total.p50Seconds)}, p95 ${duration(total.p95Seconds)} over the window.`,
  html`${chart("chart-time-in-queue", "Time in queue per day, p50 and p95, minutes", {
    x,
    unit: "minutes",
    series: [
      { label: "p50", values: days.map((d) => minutes(d.p50Seconds)) },
      { label: "p95", values: days.map((d) => minutes(d.p95Seconds)) },
    ],
  })}
${numbers(
  "Time in queue per day",
  ["Day (UTC)", "Merged", "p50", "p95"],
  days.map((d) => [dayText(d.day), d.merged, duration(d.p50Seconds), duration(d.p95Seconds)]),
)}`,
)}
${section(
  view,
  "ci_runs_per_merge",
  html`${total.runs} runs started for ${total.merged} merges: ${dash(ratio(total.runs, total.merged), (r) => r.toFixed(2))} per merged PR (bisection and retried runs included).`,
  html`${chart("chart-runs", "CI runs started per merged PR, per day", { x, unit: "runs per merge", series: [{ label: "runs per merged PR", values: days.map((d) => ratio(d.runs, d.merged)) }] })}
${numbers(
  "CI runs per merged PR per day",
  ["Day (UTC)", "Runs started", "Merged", "Runs per merged PR"],
  days.map((d) => [dayText(d.day), d.runs, d.merged, dash(ratio(d.runs, d.merged), (r) => r.toFixed(2))]),
)}`,
)}
${section(
  view,
  "failures_by_reason",
  html`${total.failed} PRs failed in the window.`,
  view.failures.length === 0
    ? html`<p class="empty">No PR failed in the window.</p>`
    : html`<div class="table-wrap"><table class="history reasons"><caption class="sr-only">PRs failed, by reason</caption>
<thead><tr><th scope="col">Reason</th><th scope="col" class="count">Failed</th><th scope="col"><span class="sr-only">Share</span></th></tr></thead>
<tbody>${view.failures.map(
        (f) =>
          html`<tr><th scope="row" title="${f.reason}">${sentenceOf(f.reason)} <code class="reason">${f.reason}</code></th><td class="count">${f.count}</td><td class="bar"><meter min="0" max="${String(maxFailures)}" value="${String(f.count)}">${f.count}</meter></td></tr>`,
      )}</tbody></table></div>`,
)}
${section(
  view,
  "flaky_ejections_avoided",
  html`${total.flakyAvoided} runs passed after flake handling excused or retried a flaky failure: without it, each would have failed and ejected its PRs.`,
  html`${chart("chart-flaky", "Flaky ejections avoided per day", { x, unit: "runs", series: [{ label: "ejections avoided", values: days.map((d) => d.flakyAvoided) }] })}
${numbers(
  "Flaky ejections avoided per day",
  ["Day (UTC)", "Runs started", "Ejections avoided"],
  days.map((d) => [dayText(d.day), d.runs, d.flakyAvoided]),
)}`,
)}
${section(
  view,
  "busiest_hours",
  html`${submissions} submissions; the most at ${submissions === 0 ? "—" : `${hourText(busiest)} UTC`}.`,
  html`${chart("chart-hours", "Submissions by hour of day, UTC", { x: view.hours.map((_, h) => h), time: false, unit: "submissions", series: [{ label: "submissions", values: view.hours }] })}
${numbers(
  "Submissions by hour of day (UTC)",
  ["Hour (UTC)", "Submissions"],
  view.hours.map((n, h) => [hourText(h), n]),
)}`,
)}
${section(
  view,
  "estimate_accuracy",
  total.estimated === 0
    ? html`No PR merged in the window was told a merge time when submitted (one is told once the queue has a finished run, the PR is ready and the queue is not paused).`
    : html`${total.estimated} of ${total.merged} merged PRs were told a merge time when submitted: half merged within ${duration(total.estimateErrorP50Seconds)} of it, 95% within ${duration(total.estimateErrorP95Seconds)}; ${total.late} merged later than told.`,
  html`${chart("chart-estimates", "How far merges were from the time estimated at submission, per day, p50 and p95, minutes", {
    x,
    unit: "minutes off",
    series: [
      { label: "p50", values: days.map((d) => minutes(d.estimateErrorP50Seconds)) },
      { label: "p95", values: days.map((d) => minutes(d.estimateErrorP95Seconds)) },
    ],
  })}
${numbers(
  "Estimate accuracy per day",
  ["Day (UTC)", "Told an estimate", "Off by, p50", "Off by, p95", "Later than told"],
  days.map((d) => [dayText(d.day), `${d.estimated} of ${d.merged}`, duration(d.estimateErrorP50Seconds), duration(d.estimateErrorP95Seconds), d.late]),
)}`,
)}
</div>`;
  return layout(assets, { title: "Analytics", viewer, body, current: "analytics" });
}
