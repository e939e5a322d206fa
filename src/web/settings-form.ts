import { z } from "zod";
import { ZQueueSettings } from "../api/queues/queue-schemas.js";
import type { QueueRecord } from "../queue/records.js";
import { html, type Html } from "./html.js";

/**
 * The queue settings form, generated from the zod schema updateQueue validates with: a field per
 * setting, its kind, bounds and choices, and its words — title, help, unit and a new queue's
 * value (`x-unit`, `x-default`: src/api/queues/queue-schemas.ts, the same the OpenAPI document
 * shows) — taken from the schema, so a setting added to the API appears here, explained, without
 * more code. Every field starts empty ("unchanged"): only what the operator changes is sent, and
 * the API's own validation judges it.
 */
type JsonField = {
  type?: string;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  items?: JsonField;
  maxItems?: number;
  title?: string;
  description?: string;
  "x-unit"?: string;
  "x-default"?: unknown;
};

/** Set by their own buttons (pause, resume, drain), not by the form. */
const NOT_IN_FORM = new Set(["state"]);

/** A setting as the form shows it: its control, and its words from the schema (title, help, unit, a new queue's value). */
export type SettingField = {
  name: string;
  kind: "boolean" | "integer" | "choice" | "list";
  choices: string[];
  minimum?: number;
  maximum?: number;
  label: string;
  help: string;
  unit?: string;
  defaultValue?: unknown;
};

/** A setting's name in words, for one the schema gives no title ("batchingMinSize" → "Batching min size"). */
function wordsOf(name: string): string {
  const words = name.replace(/([A-Z])/g, " $1").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export const SETTING_FIELDS: SettingField[] = Object.entries((z.toJSONSchema(ZQueueSettings, { io: "input", unrepresentable: "any" }) as { properties: Record<string, JsonField> }).properties)
  .filter(([name]) => !NOT_IN_FORM.has(name))
  .map(([name, field]): SettingField => {
    const words = {
      label: field.title ?? wordsOf(name),
      help: field.description ?? "",
      ...(field["x-unit"] ? { unit: field["x-unit"] } : {}),
      ...(field["x-default"] !== undefined ? { defaultValue: field["x-default"] } : {}),
    };
    if (field.type === "boolean") return { name, kind: "boolean", choices: ["true", "false"], ...words };
    if (field.type === "integer" || field.type === "number") return { name, kind: "integer", choices: [], minimum: field.minimum, maximum: field.maximum, ...words };
    if (field.type === "array") return { name, kind: "list", choices: [], ...words };
    // caseInsensitiveEnum accepts UPPERCASE too: offer each value once.
    return { name, kind: "choice", choices: [...new Set((field.enum ?? []).map((v) => v.toLowerCase()))], ...words };
  });

const FIELD_BY_NAME = new Map(SETTING_FIELDS.map((f) => [f.name, f]));

/** A setting's label: the schema's title, else its name in words. */
export function labelOf(name: string): string {
  return FIELD_BY_NAME.get(name)?.label ?? wordsOf(name);
}

/** A value with its unit: "300 minutes", "1 run", "squash", "none". */
function withUnit(field: SettingField, value: unknown): string {
  if (Array.isArray(value)) return value.join(", ") || "none";
  if (!field.unit || typeof value !== "number") return String(value);
  return `${value} ${value === 1 ? field.unit.replace(/\b(run|request|minute)s\b/, "$1") : field.unit}`;
}

/** What a new queue starts with, as a sentence under the field. */
function defaultSentence(field: SettingField): string {
  const value = field.defaultValue;
  if (typeof value === "boolean") return `${value ? "On" : "Off"} for a new queue.`;
  if (Array.isArray(value)) return value.length === 0 ? "None for a new queue." : `A new queue starts with ${withUnit(field, value)}.`;
  return typeof value === "number" ? `A new queue has ${withUnit(field, value)}.` : `A new queue starts with ${String(value)}.`;
}

function currentOf(queue: QueueRecord, field: SettingField): string {
  const value = (queue as Record<string, unknown>)[field.name];
  return value === undefined ? "—" : withUnit(field, value);
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
  const current = currentOf(queue, field);
  const typed = refusal && typeof refusal.values[field.name] === "string" ? (refusal.values[field.name] as string) : "";
  // A field the refusal names is marked, and points at the message too.
  const refused = refusal && new RegExp(`\\b${field.name}\\b`).test(refusal.message);
  const describedBy = html` aria-describedby="${id}-help${refused ? " settings-error" : ""}"${refused ? html` aria-invalid="true"` : ""}`;
  const label = html`<label for="${id}">${field.label} <span class="muted">(now: ${current})</span> <code class="field-name" title="its name in the API">${field.name}</code></label>`;
  const help = html`<p class="help" id="${id}-help">${field.help}${field.defaultValue !== undefined ? html` <span class="default">${defaultSentence(field)}</span>` : ""}</p>`;
  if (field.kind === "integer") {
    return html`${label}<span class="with-unit"><input id="${id}" name="${field.name}" type="number" inputmode="numeric" step="1" min="${field.minimum}" max="${field.maximum}" placeholder="unchanged" value="${typed}"${describedBy}>${field.unit ? html`<span class="unit">${field.unit}</span>` : ""}</span>${help}`;
  }
  if (field.kind === "list") {
    return html`${label}<textarea id="${id}" name="${field.name}" rows="2" placeholder="unchanged; one per line"${describedBy}>${typed}</textarea>${help}`;
  }
  return html`${label}<select id="${id}" name="${field.name}"${describedBy}><option value="">unchanged</option>${field.choices.map((c) => html`<option value="${c}"${c === typed ? html` selected` : ""}>${c}</option>`)}</select>${help}`;
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
