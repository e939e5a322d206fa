import type { PullRequestRun, PullRequestView } from "../read-models/dashboard.js";
import type { QueueAddress } from "../../queue/queues.js";
import type { TimelineRecord } from "../../queue/records.js";
import { flakeRuleSentence, placeOf } from "../../domain/reasons.js";
import { isTerminal } from "../../domain/states.js";
import type { Actor, Evidence } from "../../domain/timeline.js";
import type { Assets } from "../assets.js";
import { html, type Html } from "../html.js";
import { layout, liveBadgeLine, liveStreamTarget, type Viewer } from "../layout.js";
import type { LivePart } from "../live-patch.js";
import { cancelledHow, duration, pullPath, queuePath, reasonAfterState, since, testPath, words } from "./format.js";

/**
 * A pull request's page (/queues/<host>/<owner>/<repo>/<branch>/pulls/<number>): its state and
 * why it is there now (the latest timeline event: sentence, reason code, evidence), its place in
 * line and estimate while it waits, its timeline, and its runs with their testing branches,
 * checks and diagnoses. Everything comes from getSubmittedPullRequest (with its timeline) and
 * getMergeQueueTestingDetails, as the API answers them.
 */

/** Only the code host's own web addresses become links (a check's URL is the host's or CI's word). */
function link(url: string | null | undefined, text: Html | string): Html {
  return url && /^https?:\/\//i.test(url) ? html`<a href="${url}" rel="noreferrer">${text}</a>` : html`${text}`;
}

export const ACTOR_WORDS: Record<Actor["kind"], string> = { token: "API token", user: "user", engine: "the queue", code_host: "the code host", fork_run: "fork workflow run", operator: "the service's CLI" };

export function actorOf(actor: Actor): Html {
  return actor.kind === "engine" ? html`<span class="actor">the queue</span>` : html`<span class="actor">${ACTOR_WORDS[actor.kind]} <strong>${actor.name}</strong></span>`;
}

/** A PR number, linked to its page in the same queue. */
function prLink(address: QueueAddress, n: number): Html {
  return html`<a href="${pullPath(address.repo, address.targetBranch, n)}">#${n}</a>`;
}

const prList = (address: QueueAddress, numbers: readonly number[], total?: number) =>
  html`${numbers.map((n, i) => html`${i > 0 ? ", " : ""}${prLink(address, n)}`)}${total !== undefined && total > numbers.length ? ` and ${total - numbers.length} more` : ""}`;

/** A timeline event's evidence, as a list of facts. */
function evidenceOf(address: QueueAddress, e: Evidence, runUrl: (id: string) => string): Html {
  const facts: Html[] = [];
  if (e.run) {
    const run = e.run;
    facts.push(
      html`<li>Run <a href="${runUrl(run.id)}">${run.id}</a>${run.kind === "bisection" ? " (bisection)" : ""}: tests ${prList(address, run.tested, run.testedTotal)}${
        run.stack.length > run.tested.length ? html` in the stack ${prList(address, run.stack, run.stackTotal)}` : ""
      }${run.testBranch ? html` on <code>${run.testBranch}</code>` : ""}${run.testedHead ? html` at <code>${run.testedHead.slice(0, 12)}</code>` : ""}</li>`,
    );
  }
  if (e.failingChecks && e.failingChecks.length > 0) {
    facts.push(
      html`<li class="failing-checks">Failing checks: ${e.failingChecks.map((c, i) => html`${i > 0 ? ", " : ""}<span class="check check-${c.state}" data-check="${c.name}">${link(c.url, c.name)} (${c.state})</span>`)}${
        e.failingChecksTotal !== undefined ? ` and ${e.failingChecksTotal - e.failingChecks.length} more` : ""
      }</li>`,
    );
  }
  if (e.missingChecks && e.missingChecks.length > 0) {
    facts.push(
      html`<li>Required checks that never reported: ${e.missingChecks.map((c, i) => html`${i > 0 ? ", " : ""}<code>${c}</code>`)}${e.missingChecksTotal !== undefined ? ` and ${e.missingChecksTotal - e.missingChecks.length} more` : ""}</li>`,
    );
  }
  if (e.flaky) {
    const f = e.flaky;
    const tests = f.tests.map(
      (t, i) => html`${i > 0 ? ", " : ""}<span class="test judged-${t.judgement}" data-judgement="${t.judgement}"><a href="${testPath(address.repo, t.id)}">${t.name}</a> (${words(t.judgement)})</span>`,
    );
    // The rule's sentence; its code (docs/flaky-queue.md) stays in the attribute and the tooltip.
    facts.push(
      html`<li class="flaky-verdict" data-rule="${f.rule}">Test results of ${f.checks.map((c, i) => html`${i > 0 ? ", " : ""}<code>${c}</code>`)}${f.attempt !== undefined ? ` (retry ${f.attempt})` : ""}: <span class="rule" title="rule ${f.rule} (docs/flaky-queue.md)">${flakeRuleSentence(f.rule)}</span>${
        f.infrastructure ? html` Infrastructure: ${f.infrastructure}` : ""
      }${tests.length > 0 ? html` Failing tests: ${tests}${f.testsTotal !== undefined ? ` and ${f.testsTotal - f.tests.length} more` : ""}` : ""}</li>`,
    );
  }
  if (e.seenChecks) facts.push(html`<li>Checks that did report: ${e.seenChecks.length === 0 ? "none" : e.seenChecks.map((c, i) => html`${i > 0 ? ", " : ""}<code>${c}</code>`)}</li>`);
  for (const [name, close] of Object.entries(e.suggestions ?? {})) facts.push(html`<li><code>${name}</code> may be ${close.map((c, i) => html`${i > 0 ? " or " : ""}<code>${c}</code>`)}</li>`);
  if (e.blamedPr !== undefined) facts.push(html`<li>Because of ${prLink(address, e.blamedPr)}</li>`);
  if (e.bisection) {
    const b = e.bisection;
    facts.push(
      html`<li>Bisection of the batch ${prList(address, b.batch, b.batchTotal)}${b.groupSize !== undefined ? html`, groups of ${b.groupSize}` : ""}${b.culprit !== undefined ? html`, culprit ${prLink(address, b.culprit)}` : ""}</li>`,
    );
  }
  if (e.effect) facts.push(html`<li>The code host refused to ${e.effect.kind === "merge" ? "merge" : "start the run"}: <blockquote>${e.effect.message}</blockquote></li>`);
  if (e.command) facts.push(html`<li>Through <code>${e.command}</code></li>`);
  if (e.prHead) facts.push(html`<li class="muted">PR head <code>${e.prHead.slice(0, 12)}</code></li>`);
  return facts.length === 0 ? html`` : html`<ul class="evidence">${facts}</ul>`;
}

const runAnchor = (id: string) => `#run-${id}`;

/** A timeline event's sentence; a cancel on request says who asked and where (the API, the dashboard, a comment command). */
function sentenceOfEvent(e: TimelineRecord): string {
  return e.reason === "cancelled_by_user" ? `Cancelled ${cancelledHow({ actor: e.actor, ...(e.evidence.command ? { command: e.evidence.command } : {}) })}.` : e.message;
}

function timelineItem(address: QueueAddress, e: TimelineRecord, index: number, now: Date): Html {
  return html`<li class="event event-${e.state}" id="event-${index}" data-reason="${e.reason}">
<div class="event-head"><time datetime="${e.at}">${e.at.replace("T", " ").replace(/\.\d+Z$/, " UTC")}</time> <span class="muted">(${since(e.at, now)} ago)</span> ${actorOf(e.actor)}</div>
<div><span class="state state-${e.state}" data-state="${e.state}">${words(e.state)}</span> ${reasonAfterState(e.state, sentenceOfEvent(e))}${e.reason === e.state ? "" : html` <code class="reason">${e.reason}</code>`}</div>
${evidenceOf(address, e.evidence, runAnchor)}
</li>`;
}

/** A run's checks as getMergeQueueTestingDetails answers them: commit statuses and check runs. */
function checksOf(run: PullRequestRun): { name: string; url: string | null; state: string }[] {
  return [
    // The API answers Trunk's UPPERCASE enums; the page's words and classes are lowercase.
    ...run.statusChecks.map((c) => ({ name: c.context, url: c.url ?? null, state: c.state.toLowerCase() })),
    ...run.checkSuites.flatMap((s) => s.checkRuns.map((c) => ({ name: c.name, url: c.url, state: (c.conclusion ?? c.status).toLowerCase() }))),
  ];
}

/**
 * The failing checks of the run the latest event names, from the run itself, when the event's
 * evidence names none (a code host that reports a run's outcome as a whole, like the sandbox).
 */
function failingChecksOfRun(view: PullRequestView, evidence: Evidence): Html {
  if (!evidence.run || (evidence.failingChecks?.length ?? 0) > 0) return html``;
  const run = view.runs.find((r) => r.runId === evidence.run!.id);
  const failing = run ? checksOf(run).filter((c) => c.state === "failure" || c.state === "error") : [];
  if (failing.length === 0) return html``;
  return html`<ul class="evidence"><li class="failing-checks">Failing checks: ${failing.map((c, i) => html`${i > 0 ? ", " : ""}<span class="check check-${c.state}" data-check="${c.name}">${link(c.url, c.name)} (${c.state})</span>`)}</li></ul>`;
}

function runSection(address: QueueAddress, run: PullRequestRun): Html {
  const checks = checksOf(run);
  const diagnosis = run.diagnosis;
  return html`<li class="run card" id="run-${run.runId}" data-run="${run.runId}">
<h3>${run.runId} <span class="state run-${run.status}" data-status="${run.status}">${words(run.status)}</span>${run.isBisection ? html` <span class="badge">bisection</span>` : ""}</h3>
<p>Tests ${prList(
    address,
    run.testedPullRequests.map((p) => p.prNumber),
  )}${run.dependentPrs.length > 0 ? html` on top of ${prList(address, run.dependentPrs)}` : " on the target branch"}.
Started ${run.createdAt.replace("T", " ").replace(/\.\d+Z$/, " UTC")}${run.finishedAt ? html`, finished after ${duration((Date.parse(run.finishedAt) - Date.parse(run.createdAt)) / 1000)}` : ""}.</p>
<p>Testing branch: ${run.testBranch ? link(run.testBranchUrl, html`<code>${run.testBranch}</code>`) : html`<span class="muted">not built yet</span>`}${run.testBranchSha ? html` at <code>${run.testBranchSha.slice(0, 12)}</code>` : ""}</p>
${run.failureReason ? html`<p class="error">${run.failureReason}</p>` : ""}
${
  checks.length === 0
    ? html`<p class="empty">No check reported.</p>`
    : html`<ul class="checks">${checks.map((c) => html`<li class="check check-${c.state}" data-check="${c.name}">${link(c.url, c.name)}: ${words(c.state)}</li>`)}</ul>`
}
${
  diagnosis
    ? html`<div class="diagnosis warning" data-diagnosis="${diagnosis.code}"><p><strong>${words(diagnosis.code)}</strong>: ${diagnosis.message}</p>${
        diagnosis.missingChecks.length > 0 ? html`<p>Missing: ${diagnosis.missingChecks.map((c, i) => html`${i > 0 ? ", " : ""}<code>${c}</code>`)}</p>` : ""
      }${diagnosis.seenChecks.length > 0 ? html`<p>Seen: ${diagnosis.seenChecks.map((c, i) => html`${i > 0 ? ", " : ""}<code>${c}</code>`)}</p>` : ""}</div>`
    : ""
}
</li>`;
}

/** "Why it is here now": the latest event's sentence and reason, its evidence, and the place in line while it waits. */
function nowSection(address: QueueAddress, view: PullRequestView, now: Date): Html {
  const { pr } = view;
  const latest = pr.timeline.at(-1);
  const waiting = !isTerminal(pr.state);
  const eta = pr.estimatedMergeAt ? Math.max(0, (Date.parse(pr.estimatedMergeAt) - now.getTime()) / 1000) : null;
  const place = waiting ? placeOf(pr.position, eta) : "";
  return html`<section class="card why" id="pr-why" aria-labelledby="why-h"><h2 id="why-h">Why it is here now</h2>
<p><span class="state state-${pr.state}" id="pr-state" data-state="${pr.state}">${words(pr.state)}</span> <span class="muted">for ${since(pr.stateChangedAt, now)}</span></p>
<p class="reason-line" id="pr-reason">${latest ? sentenceOfEvent(latest) : ""} <code class="reason" title="Reason code (docs/reasons.md)">${pr.stateReason}</code></p>
${pr.failureMessage ? html`<blockquote>${pr.failureMessage}</blockquote>` : ""}
${latest ? evidenceOf(address, latest.evidence, runAnchor) : ""}
${latest && (pr.state === "failed" || pr.state === "pending_failure") ? failingChecksOfRun(view, latest.evidence) : ""}
${waiting && view.queueBlocked ? html`<p class="blocked" id="pr-queue-blocked">The queue: ${view.queueBlocked}.</p>` : ""}
${waiting ? html`<p id="pr-place">${place ? place : "No place in line yet"}${pr.estimatedMergeAt ? html` <span class="muted">(estimated merge ${pr.estimatedMergeAt.replace("T", " ").replace(/\.\d+Z$/, " UTC")})</span>` : ""}</p>` : ""}
<p class="muted">Priority ${pr.priorityName} · by ${pr.prAuthor} · head <code>${pr.prSha.slice(0, 12)}</code>${pr.stackedOn !== undefined ? html` · stacked on <a href="${pullPath(address.repo, address.targetBranch, pr.stackedOn)}">#${pr.stackedOn}</a>` : ""}${pr.isCurrentlySubmittedToQueue ? "" : " · no longer submitted"}</p>
</section>`;
}

/**
 * The PR page as the live stream sees it: why it is here now, the timeline (newest first; events
 * are only ever added) and the runs, each row with the data it shows as its fingerprint.
 */
export function pullRequestLiveParts(address: QueueAddress, view: PullRequestView, now: Date): LivePart[] {
  const { pr, runs } = view;
  const why = nowSection(address, view, now);
  const timelineHead = html`<h2 id="timeline-h">Timeline (${pr.timeline.length})</h2>${pr.timeline.length === 0 ? html`<p class="empty">No event recorded.</p>` : ""}`;
  const runsHead = html`<h2 id="runs-h">Runs (${runs.length})</h2>${runs.length === 0 ? html`<p class="empty">No run tested it yet.</p>` : ""}`;
  const events = pr.timeline.map((e, i) => ({ id: `event-${i}`, fingerprint: JSON.stringify(e), render: () => timelineItem(address, e, i, now) }));
  return [
    // What the section shows besides times since: the record (its place and estimate), the latest event, the runs' checks.
    { kind: "block", id: "pr-why", fingerprint: JSON.stringify({ ...pr, timeline: pr.timeline.at(-1) ?? null, runs }), render: () => why },
    { kind: "block", id: "timeline-head", fingerprint: timelineHead.text, render: () => html`<div id="timeline-head">${timelineHead}</div>` },
    { kind: "list", id: "timeline-list", rows: events.reverse() },
    { kind: "block", id: "pr-runs-head", fingerprint: runsHead.text, render: () => html`<div id="pr-runs-head">${runsHead}</div>` },
    { kind: "list", id: "pr-runs-list", rows: runs.map((r) => ({ id: `run-${r.runId}`, fingerprint: JSON.stringify(r), render: () => runSection(address, r) })) },
  ];
}

/** The PR page's live part, rendered from its parts. */
export function pullRequestLive(parts: LivePart[]): Html {
  const [why, timelineHead, timeline, runsHead, runs] = parts as [LivePart & { kind: "block" }, LivePart & { kind: "block" }, LivePart & { kind: "list" }, LivePart & { kind: "block" }, LivePart & { kind: "list" }];
  return html`<div id="pr-live">${why.render()}
<section aria-labelledby="timeline-h">${timelineHead.render()}<ol class="timeline" id="timeline-list">${timeline.rows.map((row) => row.render())}</ol></section>
<section aria-labelledby="runs-h">${runsHead.render()}<ol class="pr-runs" id="pr-runs-list">${runs.rows.map((row) => row.render())}</ol></section>
</div>`;
}

/** The PR's page; `version` is its queue's when the page was read, for the live stream. */
export function pullRequestPage(assets: Assets, viewer: Viewer, address: QueueAddress, prNumber: number, view: PullRequestView, version: number, now: Date): Html {
  const { repo, targetBranch } = address;
  const { pr } = view;
  const stream = `/events?queue=${encodeURIComponent(`${repo.host}/${repo.owner}/${repo.name}/${targetBranch}`)}&pr=${prNumber}&since=${version}`;
  const body = html`<p class="crumbs"><a href="/">Queues</a> / ${repo.host} / <a href="${queuePath(repo, targetBranch)}">${repo.owner}/${repo.name} <span class="branch">${targetBranch}</span></a></p>
<h1>#${prNumber} ${pr.prTitle}</h1>
<div hx-ext="sse" sse-connect="${stream}" class="live-stream">
${liveStreamTarget()}
${liveBadgeLine()}
${pullRequestLive(pullRequestLiveParts(address, view, now))}
</div>`;
  return layout(assets, { title: `#${prNumber} · ${repo.owner}/${repo.name} ${targetBranch}`, viewer, body, current: "queues" });
}
