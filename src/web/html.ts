/**
 * The dashboard's one template helper: `html` is a tagged template in which every interpolated
 * value is escaped unless it is itself Html (a fragment built by `html`). Arrays are joined; null,
 * undefined and false render nothing. There is no other way to emit markup.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

const SPECIAL = /[&<>"']/;

export function escapeHtml(value: string): string {
  // Most values (numbers, names, times) hold nothing to escape: a test is cheaper than a replace.
  return SPECIAL.test(value) ? value.replace(/[&<>"']/g, (c) => ESCAPES[c]!) : value;
}

export type Renderable = Html | string | number | boolean | null | undefined | Renderable[];

function render(value: Renderable): string {
  if (value === null || value === undefined || value === false) return "";
  if (value instanceof Html) return value.text;
  if (typeof value === "number") return String(value);
  if (Array.isArray(value)) {
    // Concatenated, not joined: a join copies every part's text at each level of nesting (a page
    // of 1,000 rows is rows of cells of parts), concatenation copies once, when the page is sent.
    let out = "";
    for (const part of value) out += render(part);
    return out;
  }
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Renderable[]): Html {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new Html(out);
}

/**
 * JSON for a `<script type="application/json">` element (data, never executed): `<` is escaped
 * so no value can close the element.
 */
export function jsonData(value: unknown): Html {
  return new Html(JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026"));
}
