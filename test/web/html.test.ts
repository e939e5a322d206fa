import { html, jsonData } from "../../src/web/html.js";

describe("the dashboard's template helper", () => {
  test("escapes every interpolated value, in text and in attributes", () => {
    const name = `<script>alert("x")</script>&'`;
    expect(html`<p title="${name}">${name}</p>`.text).toBe(`<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</p>`);
  });

  test("keeps fragments it built itself, joins lists, and renders nothing for null, undefined and false", () => {
    const items = ["a<b", "c"].map((x) => html`<li>${x}</li>`);
    expect(html`<ul>${items}</ul>${null}${undefined}${false}${0}`.text).toBe("<ul><li>a&lt;b</li><li>c</li></ul>0");
  });

  test("JSON data cannot close its <script> element", () => {
    const text = jsonData({ title: "</script><script>alert(1)</script>", amp: "&" }).text;
    expect(text).not.toMatch(/[<>&]/);
    expect(JSON.parse(text)).toEqual({ title: "</script><script>alert(1)</script>", amp: "&" });
  });
});
