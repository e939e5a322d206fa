import type { Assets } from "../assets.js";
import { html } from "../html.js";
import { layout } from "../layout.js";

/** The sign-in page: an API token, and "Sign in with GitHub" when the GitHub App's OAuth client is configured. */
export function signInPage(assets: Assets, options: { next: string; error?: string; github: boolean }) {
  return layout(assets, {
    title: "Sign in",
    viewer: null,
    body: html`<section class="narrow">
<h1>Sign in</h1>
${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ""}
${
  options.github
    ? html`<p><a class="button" href="/sign-in/github?next=${encodeURIComponent(options.next)}">Sign in with GitHub</a></p>
<p>Members of an account where Greenline's GitHub App is installed may sign in; those who can push to a repository with a queue may act on queues, others only look.</p>
<h2>Or with an API token</h2>`
    : ""
}
<p>Paste an API token of your organization (<code>greenline token create --org &lt;slug&gt; --role read</code> makes one for viewers).</p>
<form method="post" action="/sign-in">
<input type="hidden" name="next" value="${options.next}">
<label for="token">API token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required maxlength="512">
<button type="submit">Sign in</button>
</form>
</section>`,
  });
}

/** A GitHub user admitted by more than one organization picks the one to sign in to. */
export function chooseOrganizationPage(assets: Assets, options: { login: string; organizations: { slug: string; role: string }[] }) {
  return layout(assets, {
    title: "Choose an organization",
    viewer: null,
    body: html`<section class="narrow">
<h1>Choose an organization</h1>
<p>GitHub user <strong>${options.login}</strong> belongs to more than one organization on this Greenline. Sign in to:</p>
<ul class="choices">
${options.organizations.map(
  (o) =>
    html`<li><form method="post" action="/sign-in/github/choose"><input type="hidden" name="organization" value="${o.slug}"><button type="submit">${o.slug}</button>${o.role === "write" ? "" : html` <span class="badge">read-only</span>`}</form></li>`,
)}
</ul>
<p>To switch later, sign out and sign in with GitHub again.</p>
</section>`,
  });
}
