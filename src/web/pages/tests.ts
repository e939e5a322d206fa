import type { backtestFlakyPolicy } from "../../flaky/backtest.js";
import type { getFlakySettings, getTestDetails, listFailingTests, listQuarantinedTests } from "../../flaky/queries.js";
import type { RepoRef } from "../../ports/code-host.js";
import type { Assets } from "../assets.js";
import { html, type Html, jsonData } from "../html.js";
import { canWrite, layout, readOnlyHint, type Viewer } from "../layout.js";
import { filledFields, numberOrText } from "../settings-form.js";
import { testPath, testsPath } from "./format.js";
import type { Notice } from "./queue.js";

/**
 * The flaky-test pages: the organization's repositories (/tests), a repository's failing tests in
 * a time range and its quarantined tests (/tests/<host>/<owner>/<repo>), and one test's details
 * with its quarantine override (/tests/<host>/<owner>/<repo>/<test id>). Every one is a deep link.
 */

export type FailingTests = Awaited<ReturnType<typeof listFailingTests>>;
export type QuarantinedTests = Awaited<ReturnType<typeof listQuarantinedTests>>;
export type TestDetails = Awaited<ReturnType<typeof getTestDetails>>;

/** The time ranges the failing-test list offers, as `range=` values; the API allows at most 7 days. */
export const RANGES: Record<string, { label: string; ms: number }> = {
  "1h": { label: "last hour", ms: 3600_000 },
  "24h": { label: "last 24 hours", ms: 24 * 3600_000 },
  "3d": { label: "last 3 days", ms: 3 * 24 * 3600_000 },
  "7d": { label: "last 7 days", ms: 7 * 24 * 3600_000 },
};
export const DEFAULT_RANGE = "24h";

const percent = (rate: number) => `${(rate * 100).toFixed(rate > 0 && rate < 0.1 ? 1 : 0)} %`;
const repoName = (repo: RepoRef) => `${repo.owner}/${repo.name}`;

function statusBadge(value: string): Html {
  const status = value.toLowerCase();
  return html`<span class="state test-${status}" data-status="${status}">${status}</span>`;
}

export function testsIndexPage(assets: Assets, viewer: Viewer, repos: RepoRef[]): Html {
  const body = html`<h1>Flaky tests of ${viewer.principal.organizationSlug}</h1>
${
  repos.length === 0
    ? html`<p class="empty">No repositories yet. Upload JUnit results with the API's <code>flaky-tests/upload</code> (README, "Flaky tests").</p>`
    : html`<ul class="repos">${repos.map((r) => html`<li><a href="${testsPath(r)}">${repoName(r)}</a> <span class="muted">${r.host}</span></li>`)}</ul>`
}`;
  return layout(assets, { title: "Flaky tests", viewer, body, current: "tests" });
}

/**
 * A page's tests with each test's variants (the same test in another matrix leg or data row: one
 * name, class, file and suite) right under the first of them, in the order the first came.
 */
function groupVariants(tests: FailingTests["tests"]): { test: FailingTests["tests"][number]; variantOf: string | null }[] {
  const groups = new Map<string, FailingTests["tests"]>();
  for (const t of tests) {
    const identity = JSON.stringify([t.classname, t.file_path, t.parent, t.name]);
    groups.set(identity, [...(groups.get(identity) ?? []), t]);
  }
  return [...groups.values()].flatMap((group) => group.map((test, i) => ({ test, variantOf: i === 0 ? null : group[0]!.id })));
}

function failingTable(repo: RepoRef, failing: FailingTests, filtered: boolean): Html {
  if (failing.tests.length === 0) return html`<p class="empty">${filtered ? "No failing test in this range matches." : "No test failed in this range."}</p>`;
  return html`<div class="table-wrap"><table class="tests" id="failing-tests">
<caption class="sr-only">Tests that failed in the range</caption>
<thead><tr><th scope="col">Test</th><th scope="col">Status</th><th scope="col">Failure rate 24 h / 7 d</th><th scope="col">PRs impacted, 7 d</th><th scope="col">Last failure</th><th scope="col">Owners</th></tr></thead>
<tbody>${groupVariants(failing.tests).map(
    ({ test: t, variantOf }) => html`<tr data-test="${t.id}"${variantOf ? html` data-variant-of="${variantOf}" class="variant"` : ""}>
<th scope="row"><a href="${testPath(repo, t.id)}">${t.name}</a>${t.variant ? html` <span class="badge variant">variant ${t.variant}</span>` : ""}<div class="muted small">${t.classname || t.file_path || t.parent}</div></th>
<td data-label="Status">${statusBadge(t.status.value)}${t.quarantined ? html` <span class="badge quarantined">quarantined</span>` : ""}</td>
<td data-label="Failure rate 24 h / 7 d">${percent(t.failure_rate_last_24h)} / ${percent(t.failure_rate_last_7d)}</td>
<td data-label="PRs impacted, 7 d">${t.pull_requests_impacted_last_7d}</td>
<td data-label="Last failure">${t.last_failure_at ? html`<time datetime="${t.last_failure_at}">${t.last_failure_at.slice(0, 16).replace("T", " ")} UTC</time>` : html`<span class="muted">–</span>`}</td>
<td data-label="Owners">${t.codeowners.length === 0 ? html`<span class="muted">none</span>` : t.codeowners.join(", ")}</td>
</tr>`,
  )}</tbody></table></div>`;
}

function quarantinedList(repo: RepoRef, quarantined: QuarantinedTests): Html {
  if (quarantined.quarantined_tests.length === 0) return html`<p class="empty">No test is quarantined.</p>`;
  return html`<ul class="quarantined" id="quarantined-tests">${quarantined.quarantined_tests.map(
    (t) => html`<li data-test="${t.test_case_id}"><a href="${testPath(repo, t.test_case_id)}">${t.name}</a> ${statusBadge(t.status)}
<span class="muted">${t.quarantine_setting === "ALWAYS_QUARANTINE" ? "always quarantined, by a person" : "quarantined automatically while flaky"} since <time datetime="${t.quarantined_at}">${t.quarantined_at.slice(0, 16).replace("T", " ")} UTC</time>${
      t.quarantine_setting === "ALWAYS_QUARANTINE" ? (t.quarantine_reason ? html` · reason: ${t.quarantine_reason}` : " · no reason given") : html` · ${t.status_reason}`
    }</span></li>`,
  )}</ul>`;
}

/** The failing tests' filters and order, as the page's form and links carry them. */
export type FailingFilters = { search: string; status: string; owner: string; sort: string };
export const FAILING_SORTS: Record<string, string> = {
  "": "First seen",
  failure_rate: "Failure rate",
  pull_requests_impacted: "PRs impacted",
  last_failure: "Last failure",
  name: "Name",
};
export const FAILING_STATUSES: Record<string, string> = { "": "Any status", flaky: "Flaky", broken: "Broken", healthy: "Healthy" };

/** A link to the next page of a list, keeping the other parameters. */
function nextPage(repo: RepoRef, range: string, filters: FailingFilters, param: string, token: string, label: string): Html {
  if (!token) return html``;
  const kept = Object.entries(filters).filter(([, value]) => value !== "");
  const query = new URLSearchParams([["range", range], ...kept, [param, token]]);
  return html`<p><a href="${testsPath(repo)}?${query.toString()}">${label}</a></p>`;
}

const option = (value: string, label: string, chosen: string) => html`<option value="${value}"${value === chosen ? html` selected` : ""}>${label}</option>`;

export function repoTestsPage(
  assets: Assets,
  viewer: Viewer,
  repo: RepoRef,
  range: string,
  filters: FailingFilters,
  failing: FailingTests,
  quarantined: QuarantinedTests,
  detection: { read: FlakySettingsRead; form?: DetectionForm | undefined },
): Html {
  const filtered = filters.search !== "" || filters.status !== "" || filters.owner !== "";
  const body = html`<p class="crumbs"><a href="/tests">Flaky tests</a> / ${repo.host}</p>
<h1>Tests of ${repoName(repo)}</h1>
<form class="range" method="get" action="${testsPath(repo)}" role="search">
<label for="range">Time range</label>
<select id="range" name="range">${Object.entries(RANGES).map(([value, r]) => option(value, r.label, range))}</select>
<label for="search">Name or file</label>
<input id="search" name="search" type="search" maxlength="200" value="${filters.search}">
<label for="status">Status</label>
<select id="status" name="status">${Object.entries(FAILING_STATUSES).map(([value, label]) => option(value, label, filters.status))}</select>
<label for="owner">Owner</label>
<input id="owner" name="owner" type="text" maxlength="200" placeholder="@team" value="${filters.owner}">
<label for="sort">Sort by</label>
<select id="sort" name="sort">${Object.entries(FAILING_SORTS).map(([value, label]) => option(value, label, filters.sort))}</select>
<button type="submit">Show</button>
</form>
<section aria-labelledby="failing-h"><h2 id="failing-h">Failing in the ${RANGES[range]!.label}${filtered ? ", filtered" : ""} (${failing.page.total_rows})</h2>
${failingTable(repo, failing, filtered)}
${nextPage(repo, range, filters, "failing_page", failing.page.next_page_token, "More failing tests")}</section>
<section aria-labelledby="quarantined-h"><h2 id="quarantined-h">Quarantined (${quarantined.page.total_rows})</h2>
${quarantinedList(repo, quarantined)}
${nextPage(repo, range, filters, "quarantined_page", quarantined.page.next_page_token, "More quarantined tests")}</section>
${detectionPanel(viewer, repo, detection.read, detection.form)}`;
  return layout(assets, { title: `Tests of ${repoName(repo)}`, viewer, body, current: "tests" });
}

const SETTINGS = [
  { value: "auto", label: "Auto: quarantined while its history finds it flaky (never when broken)" },
  { value: "always", label: "Always quarantine" },
  { value: "never", label: "Never quarantine" },
] as const;

/** The quarantine override form (write tokens only): the API's set-quarantine-setting, with a reason. */
function quarantineForm(viewer: Viewer, repo: RepoRef, test: TestDetails["test"]): Html {
  if (!canWrite(viewer)) return readOnlyHint();
  return html`<form class="quarantine-form" method="post" action="/actions/test">
<input type="hidden" name="csrf" value="${viewer.csrf}"><input type="hidden" name="host" value="${repo.host}"><input type="hidden" name="owner" value="${repo.owner}"><input type="hidden" name="repo" value="${repo.name}"><input type="hidden" name="test_id" value="${test.id}">
<fieldset><legend>Quarantine override</legend>
${SETTINGS.map((s) => html`<label class="choice"><input type="radio" name="setting" value="${s.value}"${s.value === test.quarantine_setting ? html` checked` : ""}> ${s.label}</label>`)}
</fieldset>
<label for="reason">Reason <span class="muted">(optional, kept with the test)</span></label>
<input id="reason" name="reason" type="text" maxlength="1000" value="${test.quarantine_reason ?? ""}">
<button type="submit">Save quarantine setting</button>
</form>`;
}

function historyChart(details: TestDetails): Html {
  const { days } = details.history;
  const x = days.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
  return html`<figure class="chart wide"><div data-chart="history" role="img" aria-label="Runs and failed runs per day, last ${days.length} days"></div>
<script type="application/json" id="history">${jsonData({
    x,
    unit: "runs per day",
    series: [
      { label: "runs", values: days.map((d) => d.runs) },
      { label: "failed", values: days.map((d) => d.failures) },
    ],
  })}</script>
<figcaption>Runs and failed runs per day (UTC), last ${days.length} days</figcaption></figure>
<details><summary>The history as a table</summary><div class="table-wrap"><table class="history"><thead><tr><th scope="col">Day</th><th scope="col">Runs</th><th scope="col">Failed</th></tr></thead>
<tbody>${days.filter((d) => d.runs > 0).map((d) => html`<tr><th scope="row">${d.date}</th><td>${d.runs}</td><td>${d.failures}</td></tr>`)}</tbody></table></div></details>`;
}

export function testPage(assets: Assets, viewer: Viewer, repo: RepoRef, details: TestDetails, notice?: Notice): Html {
  const { test, history } = details;
  const role = notice?.kind === "error" ? "alert" : "status";
  const body = html`<p class="crumbs"><a href="/tests">Flaky tests</a> / <a href="${testsPath(repo)}">${repoName(repo)}</a></p>
<h1>${test.name}</h1>
<div id="notice" role="${role}" aria-live="polite">${notice ? html`<p class="notice notice-${notice.kind}">${notice.text}</p>` : ""}</div>
<p>${statusBadge(test.status.value)} <span class="muted">${test.status.reason}</span></p>
<p id="quarantine-state" data-quarantined="${String(test.quarantined)}" data-setting="${test.quarantine_setting}">${test.quarantined ? html`<strong>Quarantined</strong>` : "Not quarantined"}
<span class="muted">· setting: ${test.quarantine_setting}${test.quarantine_reason ? html` · reason: ${test.quarantine_reason}` : ""}</span></p>
<dl class="figures">
<div><dt>Failure rate, 24 h</dt><dd>${percent(test.failure_rate_last_24h)}</dd></div>
<div><dt>Failure rate, 7 d</dt><dd>${percent(test.failure_rate_last_7d)}</dd></div>
<div><dt>PRs impacted, 7 d</dt><dd>${test.pull_requests_impacted_last_7d}</dd></div>
<div><dt>Variant</dt><dd>${test.variant || "—"}</dd></div>
</dl>
<p class="muted small">${test.classname ? html`<span>class <code>${test.classname}</code></span> ` : ""}${test.file_path ? html`<span>file <a href="${test.html_url}"><code>${test.file_path}</code></a></span> ` : ""}${test.parent ? html`<span>suite <code>${test.parent}</code></span>` : ""}${test.ticket ? html` · <a href="${test.ticket.html_url}">ticket</a>` : ""}</p>
<section aria-labelledby="history-h" class="card"><h2 id="history-h">History</h2>${historyChart(details)}</section>
<div class="cards">
<section aria-labelledby="signatures-h" class="card"><h2 id="signatures-h">Failure signatures</h2>
${
  test.most_common_failures.length === 0
    ? html`<p class="empty">No failure recorded.</p>`
    : html`<ul class="signatures">${test.most_common_failures.map(
        (f) =>
          html`<li><code>${f.summary}</code> <span class="muted">×${f.occurrence_count}, last ${f.last_occurrence.slice(0, 16).replace("T", " ")} UTC${
            f.last_job_url && /^https?:\/\//i.test(f.last_job_url) ? html` · <a class="job" href="${f.last_job_url}">CI job</a>` : ""
          }</span>${f.last_failure_text ? html`<details class="failure-text"><summary>The latest, as reported</summary><pre>${f.last_failure_text}</pre></details>` : ""}</li>`,
      )}</ul>`
}</section>
<section aria-labelledby="owners-h" class="card"><h2 id="owners-h">Owners</h2>
${test.codeowners.length === 0 ? html`<p class="empty">No owner in CODEOWNERS.</p>` : html`<ul class="owners">${test.codeowners.map((o) => html`<li>${o}</li>`)}</ul>`}</section>
<section aria-labelledby="prs-h" class="card"><h2 id="prs-h">Pull requests impacted, 7 d</h2>
${
  history.pull_requests_impacted.length === 0
    ? html`<p class="empty">No pull request failed on it.</p>`
    : html`<ul class="impacted">${history.pull_requests_impacted.map((p) => html`<li data-pr="${p.number}"><a href="${p.html_url}">#${p.number}</a> <span class="muted">failed ${p.failures}×, last ${p.last_failure.slice(0, 16).replace("T", " ")} UTC</span></li>`)}</ul>`
}</section>
</div>
${quarantineForm(viewer, repo, test)}`;
  return layout(assets, { title: test.name, viewer, body, current: "tests" });
}

// ---- Detection settings and their backtest --------------------------------------------------

export type FlakySettingsRead = Awaited<ReturnType<typeof getFlakySettings>>;
export type BacktestAnswer = Awaited<ReturnType<typeof backtestFlakyPolicy>>["answer"];

/** The detection settings as the page's form offers them: the API's names, people's words, each field's kind and bounds. */
export const DETECTION_FIELDS: { name: string; label: string; kind: "onoff" | "integer" | "rate"; min: number; max: number }[] = [
  { name: "autoQuarantine", label: "Quarantine tests found flaky", kind: "onoff", min: 0, max: 1 },
  { name: "flakyRate", label: "Flaky at a failure rate of at least", kind: "rate", min: 0.001, max: 1 },
  { name: "brokenRate", label: "Broken at a failure rate of at least", kind: "rate", min: 0.001, max: 1 },
  { name: "minSamples", label: "Runs in the window before the rates judge", kind: "integer", min: 1, max: 10_000 },
  { name: "windowDays", label: "Window of the rates, in days", kind: "integer", min: 1, max: 30 },
  { name: "recoveryDays", label: "Days without a pass-on-retry before a flaky test is released", kind: "integer", min: 1, max: 90 },
];

/** What the operator typed, kept when the page answers a refusal or a backtest. */
export type DetectionForm = { values: Record<string, string>; notice?: Notice; backtest?: BacktestAnswer };

function detectionField(field: (typeof DETECTION_FIELDS)[number], settings: Record<string, unknown>, owned: boolean, typed: string, invalid: boolean): Html {
  const id = `detection-${field.name}`;
  const now = field.kind === "onoff" ? (settings[field.name] ? "on" : "off") : String(settings[field.name]);
  const mark = invalid ? html` aria-invalid="true" aria-describedby="detection-notice"` : "";
  const disabled = owned ? html` disabled title="set by .greenline.yml: change it there"` : "";
  const label = html`<label for="${id}">${field.label} <span class="muted">(now: ${now}${owned ? ", set by .greenline.yml" : ""})</span> <code class="field-name" title="its name in the API">${field.name}</code></label>`;
  if (field.kind === "onoff")
    return html`${label}<select id="${id}" name="${field.name}"${disabled}${mark}><option value="">unchanged</option>${["on", "off"].map((v) => html`<option value="${v}"${v === typed ? html` selected` : ""}>${v}</option>`)}</select>`;
  // "any": a step counts from min, and 0.001 + k × 0.01 would refuse 0.25.
  const step = field.kind === "rate" ? "any" : "1";
  return html`${label}<input id="${id}" name="${field.name}" type="number" step="${step}" min="${field.min}" max="${field.max}" placeholder="unchanged" value="${typed}"${disabled}${mark}>`;
}

function backtestSummary(answer: BacktestAnswer): Html {
  const rows: [string, keyof BacktestAnswer["current"]["outcome"]][] = [
    ["Tests flaky at some time", "tests_flaky"],
    ["Tests quarantined at some time", "tests_ever_quarantined"],
    ["Quarantines started", "quarantines_started"],
    ["Quarantines released", "releases"],
    ["Failures excused by quarantine", "failures_excused"],
    ["Queue runs with failures", "queue_runs_failed"],
    ["… excused: ejection avoided", "queue_runs_excused"],
    ["Regression failures excused", "regressions_excused"],
  ];
  const named = (title: string, list: BacktestAnswer["changes"]["newly_quarantined"]) =>
    html`<p><strong>${title}: ${list.total}</strong>${list.tests.length > 0 ? html` — ${list.tests.map((t, i) => html`${i > 0 ? ", " : ""}<code>${t.name}</code>`)}${list.total > list.tests.length ? ` and ${list.total - list.tests.length} more` : ""}` : ""}</p>`;
  return html`<section id="backtest" aria-labelledby="backtest-h"><h3 id="backtest-h">The last ${Math.round((Date.parse(answer.period.to) - Date.parse(answer.period.from)) / 86_400_000)} days, replayed</h3>
<div class="table-wrap"><table class="tests backtest"><thead><tr><th scope="col"></th><th scope="col">Now</th><th scope="col">With these settings</th></tr></thead>
<tbody>${rows.map(([label, field]) => html`<tr data-field="${field}"><th scope="row">${label}</th><td data-label="Now">${answer.current.outcome[field]}</td><td data-label="With these settings">${answer.proposed.outcome[field]}</td></tr>`)}</tbody></table></div>
${named("Newly quarantined", answer.changes.newly_quarantined)}
${named("No longer quarantined", answer.changes.no_longer_quarantined)}
<p>Queue ejections avoided: <strong>${answer.changes.ejections_avoided}</strong>, added: <strong>${answer.changes.ejections_added}</strong></p>
${named("Tests whose regressions would be hidden", answer.changes.regressions_hidden)}</section>`;
}

/**
 * The repository's detection settings: what is in force (and what its .greenline.yml sets, or
 * why it was not applied), and for write tokens a form to try other values on the last 30 days
 * (the backtest) or save them (update-settings; the file's settings are not offered).
 */
export function detectionPanel(viewer: Viewer, repo: RepoRef, read: FlakySettingsRead, form?: DetectionForm): Html {
  const settings = read.settings as Record<string, unknown>;
  const file = read.config_file;
  const owned = new Set(file?.fields ?? []);
  const typed = form?.values ?? {};
  const notice = form?.notice;
  const fileNote = file
    ? html`<p class="muted" id="config-file">${file.path} at <code>${file.commit.slice(0, 12)}</code> on the default branch ${file.fields.length > 0 ? html`sets ${file.fields.map((f, i) => html`${i > 0 ? ", " : ""}<code>${f}</code>`)}` : "sets nothing"}${
        file.error ? html`; <strong class="notice-error">not applied</strong>: ${file.error}` : ""
      }</p>`
    : html`<p class="muted" id="config-file">Settings can also be set in <code>.greenline.yml</code> on the default branch (<code>flakyTests:</code>, by these names; README, "Detection").</p>`;
  const body = canWrite(viewer)
    ? html`<form class="settings detection" method="post" action="/actions/test-settings">
<input type="hidden" name="csrf" value="${viewer.csrf}"><input type="hidden" name="host" value="${repo.host}"><input type="hidden" name="owner" value="${repo.owner}"><input type="hidden" name="repo" value="${repo.name}">
<div class="fields">${DETECTION_FIELDS.map((f) => html`<div class="field">${detectionField(f, settings, owned.has(f.name), typed[f.name] ?? "", notice?.kind === "error" && new RegExp(`\\b${f.name}\\b`).test(notice.text))}</div>`)}</div>
<div id="detection-notice" role="${notice?.kind === "error" ? "alert" : "status"}" aria-live="polite">${notice ? html`<p class="notice notice-${notice.kind}">${notice.text}</p>` : ""}</div>
<button type="submit" name="do" value="backtest">Try on the last 30 days</button> <button type="submit" name="do" value="save">Save settings</button>
</form>`
    : html`<dl class="figures">${DETECTION_FIELDS.map((f) => html`<div><dt>${f.label}</dt><dd>${f.kind === "onoff" ? (settings[f.name] ? "on" : "off") : String(settings[f.name])}</dd></div>`)}</dl>${readOnlyHint()}`;
  return html`<details id="detection-settings" class="card"${form ? html` open` : ""}><summary>Detection settings</summary>
${fileNote}
${body}
${form?.backtest ? backtestSummary(form.backtest) : ""}</details>`;
}

/** The fields the operator filled in, typed as the API takes them (its schema then judges them). */
export function detectionUpdate(form: Record<string, unknown>): Record<string, unknown> {
  return filledFields(form, DETECTION_FIELDS, (field, value) => (field.kind === "onoff" ? (value === "on" ? true : value === "off" ? false : value) : numberOrText(value)));
}
