import { mayWrite } from "../auth/tokens.js";
import type { Principal } from "../auth/tokens.js";
import type { Assets } from "./assets.js";
import { html, type Html } from "./html.js";

/** Who is looking at a page: the session's principal and the CSRF token of its forms. */
export type Viewer = { principal: Principal; csrf: string };

export const canWrite = (viewer: Viewer) => mayWrite(viewer.principal);

/** Where a write viewer has actions, a read-only one reads why there are none (instead of buttons that would be refused). */
export const READ_ONLY_HINT = "read-only access: actions need a token with write";

export function readOnlyHint(): Html {
  return html`<p class="muted read-only-hint">${READ_ONLY_HINT}</p>`;
}

/**
 * htmx as the page's CSP allows it: no indicator <style> of its own, no eval, no inline scripts
 * in swapped content; error answers (4xx/5xx) are swapped too, so the API's refusal shows verbatim.
 */
const HTMX_CONFIG = JSON.stringify({
  includeIndicatorStyles: false,
  // htmx's default also settles "style", writing style attributes while swapping: refused by style-src 'self'.
  attributesToSettle: ["class", "width", "height"],
  allowEval: false,
  allowScriptTags: false,
  selfRequestsOnly: true,
  responseHandling: [
    { code: "204", swap: false },
    { code: "[2345]..", swap: true, error: false },
  ],
});

/**
 * Where a live page's stream delivers its updates (inside the element carrying `sse-connect`):
 * every update is out-of-band swaps of what changed, so nothing is swapped here itself.
 */
/**
 * What a page's live stream is doing, in words (live, reconnecting, disconnected, signed out: set
 * by app.js on the stream's element); hidden until the stream first opens. For pages whose live
 * parts do not carry one of their own (the queue page shows it beside the queue's state).
 */
export function liveBadgeLine(): Html {
  return html`<p class="live-line"><span class="live-badge">live</span></p>`;
}

export function liveStreamTarget(): Html {
  return html`<div sse-swap="patch" hx-swap="none" hidden></div>`;
}

/**
 * The one layout of every page. `charts: false` for a page that draws none (uPlot's 51 KB not
 * loaded). `wall`: a page for a wall display (the queue's `?tv`): larger type, and no header
 * (navigation, who is signed in, the sign-out form) around its body.
 */
export function layout(assets: Assets, options: { title: string; viewer: Viewer | null; body: Html; current?: string; charts?: boolean; wall?: boolean }): Html {
  const charts = options.charts ?? true;
  const { viewer } = options;
  return html`<!doctype html>
<html lang="en"${options.wall ? html` class="tv"` : ""}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content="${HTMX_CONFIG}">
${viewer ? html`<meta name="csrf-token" content="${viewer.csrf}">` : ""}
<title>${options.title} · Greenline</title>
<link rel="icon" type="image/svg+xml" href="${assets.url("favicon.svg")}">
${charts ? html`<link rel="stylesheet" href="${assets.url("uplot.css")}">` : ""}
<link rel="stylesheet" href="${assets.url("app.css")}">
<script src="${assets.url("htmx.js")}" defer></script>
<script src="${assets.url("htmx-sse.js")}" defer></script>
${charts ? html`<script src="${assets.url("uplot.js")}" defer></script>` : ""}
<script src="${assets.url("app.js")}" defer></script>
</head>
<body>
${options.wall ? "" : header(options)}
<main id="main">
${options.body}
</main>
</body>
</html>`;
}

function header(options: { viewer: Viewer | null; current?: string }): Html {
  const { viewer } = options;
  return html`<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a class="brand" href="/">Greenline</a>
${
  viewer
    ? html`<nav aria-label="Main"><a href="/"${options.current === "queues" ? html` aria-current="page"` : ""}>Queues</a> <a href="/history"${options.current === "history" ? html` aria-current="page"` : ""}>History</a> <a href="/tests"${options.current === "tests" ? html` aria-current="page"` : ""}>Flaky tests</a> <a href="/analytics"${options.current === "analytics" ? html` aria-current="page"` : ""}>Analytics</a> <a href="/audit"${options.current === "audit" ? html` aria-current="page"` : ""}>Audit log</a></nav>
<div class="who">${viewer.principal.actor?.kind === "user" ? html`<span>${viewer.principal.actor.name} ·</span> ` : ""}<span>${viewer.principal.organizationSlug}</span>${canWrite(viewer) ? "" : html` <span class="badge">read-only</span>`}
<form method="post" action="/sign-out"><input type="hidden" name="csrf" value="${viewer.csrf}"><button type="submit" class="link">Sign out</button></form></div>`
    : ""
}
</header>`;
}

/** A page for an error: its status and a plain sentence, nothing more (no stack, no internals). */
export function errorPage(assets: Assets, viewer: Viewer | null, status: number, message: string): Html {
  const title = status === 404 ? "Not found" : status === 403 ? "Refused" : status === 401 ? "Sign in needed" : "Error";
  return layout(assets, { title, viewer, body: html`<h1>${title}</h1><p role="alert">${message}</p><p><a href="/">Back to the queues</a></p>` });
}
