import { z } from "zod";
import { ZQueueSettings } from "../api/queues/queue-schemas.js";
import type { QueueRecord } from "../queue/records.js";
import { html, type Html } from "./html.js";

/**
 * The queue settings form, generated from the zod schema updateQueue validates with: a field per
 * setting, its kind, bounds and choices taken from the schema, so a setting added to the API
 * appears here without more code. Every field starts empty ("unchanged"): only what the
 * operator changes is sent, and the API's own validation judges it.
 */
type JsonField = { type?: string; enum?: string[]; minimum?: number; maximum?: number; items?: JsonField; maxItems?: number };

/** Set by their own buttons (pause, resume, drain), not by the form. */
const NOT_IN_FORM = new Set(["state"]);

export type SettingField = { name: string; kind: "boolean" | "integer" | "choice" | "list"; choices: string[]; minimum?: number; maximum?: number };

export const SETTING_FIELDS: SettingField[] = Object.entries((z.toJSONSchema(ZQueueSettings, { io: "input", unrepresentable: "any" }) as { properties: Record<string, JsonField> }).properties)
  .filter(([name]) => !NOT_IN_FORM.has(name))
  .map(([name, field]): SettingField => {
    if (field.type === "boolean") return { name, kind: "boolean", choices: ["true", "false"] };
    if (field.type === "integer" || field.type === "number") return { name, kind: "integer", choices: [], minimum: field.minimum, maximum: field.maximum };
    if (field.type === "array") return { name, kind: "list", choices: [] };
    // caseInsensitiveEnum accepts UPPERCASE too: offer each value once.
    return { name, kind: "choice", choices: [...new Set((field.enum ?? []).map((v) => v.toLowerCase()))] };
  });

/**
 * What each setting is called in the form: people's words for what it does. The API's field name
 * stays beside it as a hint (it is what the API, the CLI and the docs say). A setting added to
 * the API without words here is labelled from its name ("batchingMinSize" → "Batching min size").
 */
export const SETTING_LABELS: Record<string, string> = {
  mode: "Queue mode",
  concurrency: "Concurrency",
  bisectionConcurrency: "Runs at once while a failed batch is bisected",
  testingTimeoutMinutes: "Testing timeout, in minutes",
  checksStartTimeoutMinutes: "Minutes for required checks to start",
  pendingFailureDepth: "Pull requests behind a failure to wait for",
  canOptimisticallyMerge: "Merge when a pull request behind passes",
  batch: "Test pull requests in batches",
  batchingMaxWaitTimeMinutes: "Longest wait to fill a batch, in minutes",
  batchingMinSize: "Smallest batch",
  commentsEnabled: "Comment on pull requests",
  commandsEnabled: "Accept /greenline commands in comments",
  createPrsForTestingBranches: "Open a pull request for each testing branch",
  directMergeMode: "Merge up-to-date green pull requests directly",
  optimizationMode: "Optimization",
  mergeMethod: "Merge method",
  flakeHandling: "Flaky test handling",
  flakyRetries: "Re-runs for known-flaky failures",
  ciBudget: "CI budget: most runs at once (0 = none)",
  tuning: "Tuning (adaptive picks runs and batch sizes)",
  statusCheckEnabled: "Set a status on pull requests",
  requiredStatuses: "Required checks",
  pullRequestChecks: "Checks taken from each pull request's head",
  deleteRequiredStatuses: "Clear the required checks",
};

/** A setting's label: SETTING_LABELS, else its name in words. */
export function labelOf(name: string): string {
  const known = SETTING_LABELS[name];
  if (known) return known;
  const words = name.replace(/([A-Z])/g, " $1").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function currentOf(queue: QueueRecord, name: string): string {
  const value = (queue as Record<string, unknown>)[name];
  if (Array.isArray(value)) return value.join(", ") || "none";
  return value === undefined ? "—" : String(value);
}

/** A refused change: the API's message with each setting named by its label in the form, and what the operator typed, kept. */
export type SettingsRefusal = { message: string; values: Record<string, unknown> };

/**
 * The API's message in the form's words: "pendingFailureDepth: Too small…" → "Pull requests
 * behind a failure to wait for: Too small…".
 * Whole words only, so `requiredStatuses` inside `deleteRequiredStatuses` stays whole.
 */
export function labelledMessage(message: string): string {
  return SETTING_FIELDS.reduce((text, field) => text.replace(new RegExp(`\\b${field.name}\\b`, "g"), labelOf(field.name)), message);
}

function fieldHtml(field: SettingField, queue: QueueRecord, refusal: SettingsRefusal | undefined): Html {
  const id = `setting-${field.name}`;
  const current = currentOf(queue, field.name);
  const typed = refusal && typeof refusal.values[field.name] === "string" ? (refusal.values[field.name] as string) : "";
  // A field the refusal names is marked, and points at the message.
  const invalid = refusal && new RegExp(`\\b${field.name}\\b`).test(refusal.message) ? html` aria-invalid="true" aria-describedby="settings-error"` : "";
  const label = html`<label for="${id}">${labelOf(field.name)} <span class="muted">(now: ${current})</span> <code class="field-name" title="its name in the API">${field.name}</code></label>`;
  if (field.kind === "integer") {
    return html`${label}<input id="${id}" name="${field.name}" type="number" inputmode="numeric" step="1" min="${field.minimum}" max="${field.maximum}" placeholder="unchanged" value="${typed}"${invalid}>`;
  }
  if (field.kind === "list") {
    return html`${label}<textarea id="${id}" name="${field.name}" rows="2" placeholder="unchanged; one per line"${invalid}>${typed}</textarea>`;
  }
  return html`${label}<select id="${id}" name="${field.name}"${invalid}><option value="">unchanged</option>${field.choices.map((c) => html`<option value="${c}"${c === typed ? html` selected` : ""}>${c}</option>`)}</select>`;
}

export function settingsForm(queue: QueueRecord, hidden: Html, refusal?: SettingsRefusal): Html {
  return html`<form class="settings" method="post" action="/actions/queue" hx-post="/actions/queue" hx-swap="none" hx-confirm="Change these queue settings?">
${hidden}<input type="hidden" name="action" value="settings">
<div class="fields">${SETTING_FIELDS.map((f) => html`<div class="field">${fieldHtml(f, queue, refusal)}</div>`)}</div>
${refusal ? html`<p class="notice notice-error" id="settings-error" role="alert">${labelledMessage(refusal.message)}</p>` : ""}
<button type="submit">Save settings</button>
</form>`;
}

/**
 * A settings form's filled-in fields (trimmed; an empty one is "unchanged"), each typed by `typed`
 * as the API takes it: a value that is not what the field expects goes as typed, for the API's
 * schema to refuse naming it.
 */
export function filledFields<F extends { name: string }>(form: Record<string, unknown>, fields: readonly F[], typed: (field: F, value: string) => unknown): Record<string, unknown> {
  const update: Record<string, unknown> = {};
  for (const field of fields) {
    const raw = form[field.name];
    if (typeof raw === "string" && raw.trim() !== "") update[field.name] = typed(field, raw.trim());
  }
  return update;
}

/** A form's number, as a number when it reads as one. */
export const numberOrText = (value: string): unknown => (/^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value);

/** The fields the operator changed, typed as updateQueue takes them (the API's schema then validates them). */
export function settingsUpdate(form: Record<string, unknown>): Record<string, unknown> {
  return filledFields(form, SETTING_FIELDS, (field, value) => {
    if (field.kind === "boolean") return value === "true" ? true : value === "false" ? false : value;
    if (field.kind === "integer") return numberOrText(value);
    if (field.kind === "list")
      return value
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter(Boolean);
    return value;
  });
}
