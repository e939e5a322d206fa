import type { AuditRecord } from "../../domain/audit.js";
import type { PageInfo } from "../../app/pages.js";
import type { Assets } from "../assets.js";
import { html, type Html } from "../html.js";
import { layout, type Viewer } from "../layout.js";
import { actorOf } from "./pull-request.js";

const CHANNEL_WORDS: Record<AuditRecord["channel"], string> = { api: "API", comment: "comment", dashboard: "dashboard", cli: "service CLI" };

function detailsOf(e: AuditRecord): string {
  const { command: _command, ...rest } = e.details;
  const text = JSON.stringify(rest);
  return text === "{}" ? "" : text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/**
 * The organization's audit log (/audit): who did what, when, why and how, newest first, a page of
 * 50 at a time (docs/audit.md). Reads only.
 */
export function auditPage(assets: Assets, viewer: Viewer, log: { entries: AuditRecord[]; page: PageInfo }): Html {
  const rows = log.entries.map(
    (e) => html`<tr data-audit="${e.action}"><td><time datetime="${e.at}">${e.at.slice(0, 19).replace("T", " ")} UTC</time></td><td><code>${e.action}</code></td>
<td>${e.repository ? html`${e.repository}${e.branch ? html` <span class="branch">${e.branch}</span>` : ""}` : ""}</td>
<td>${actorOf(e.actor)}</td><td>${CHANNEL_WORDS[e.channel]}${typeof e.details.command === "string" ? html` <span class="muted">${e.details.command}</span>` : ""}</td>
<td>${e.reason ?? ""}</td><td class="muted">${detailsOf(e)}</td></tr>`,
  );
  const pager = html`<p class="pager">${log.page.prev_page_token ? html`<a href="/audit?page=${log.page.prev_page_token}">Newer</a> ` : ""}${log.page.next_page_token ? html`<a href="/audit?page=${log.page.next_page_token}">Older</a>` : ""}</p>`;
  const body = html`<h1>Audit log of ${viewer.principal.organizationSlug}</h1>
<p class="muted">Every operator action: who, when, what, why and the way in (API token, comment, dashboard, the service's CLI). ${log.page.total_rows} entries kept.</p>
${
  log.entries.length === 0
    ? html`<p class="empty">Nothing recorded yet.</p>`
    : html`<table class="audit"><thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">Where</th><th scope="col">Who</th><th scope="col">How</th><th scope="col">Why</th><th scope="col">Details</th></tr></thead><tbody>${rows}</tbody></table>`
}
${pager}`;
  return layout(assets, { title: "Audit log", viewer, body, current: "audit" });
}
