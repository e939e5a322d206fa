import type { Assets } from "../assets.js";
import { html } from "../html.js";
import { layout } from "../layout.js";

export function signInPage(assets: Assets, options: { next: string; error?: string }) {
  return layout(assets, {
    title: "Sign in",
    viewer: null,
    body: html`<section class="narrow">
<h1>Sign in</h1>
<p>Paste an API token of your organization (<code>greenline token create --org &lt;slug&gt; --role read</code> makes one for viewers).</p>
${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ""}
<form method="post" action="/sign-in">
<input type="hidden" name="next" value="${options.next}">
<label for="token">API token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required maxlength="512">
<button type="submit">Sign in</button>
</form>
</section>`,
  });
}
