import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { type JsonSchema, schemaErrors } from "./json-schema.js";

/**
 * GitHub's published webhook payload schemas (@octokit/webhooks-schemas: one JSON Schema
 * draft-07 document, a definition per event and action such as `check_run$completed`, or
 * `push$event` for events without actions). The simulator's deliveries are checked against it
 * (with json-schema.ts's validator), so they cannot drift from what GitHub sends.
 */
type Document = { definitions: Record<string, JsonSchema> };

const require = createRequire(import.meta.url);
let loaded: Document | undefined;

/** The webhook schemas document, read once. */
export function webhookSchemas(): Document {
  loaded ??= JSON.parse(readFileSync(require.resolve("@octokit/webhooks-schemas/schema.json"), "utf8")) as Document;
  return loaded;
}

/** The definition a delivery of `event` (with `action`, when the event has actions) must satisfy. */
export function webhookDefinition(event: string, action: string | undefined): string {
  const definitions = webhookSchemas().definitions;
  const name = action === undefined ? `${event}$event` : `${event}$${action}`;
  if (!definitions[name]) throw new Error(`no webhook schema for ${name}`);
  return name;
}

/** What is wrong with a delivery's payload, by JSON path (empty when GitHub's schema accepts it). */
export function webhookPayloadErrors(event: string, payload: unknown): string[] {
  const action = typeof payload === "object" && payload !== null && "action" in payload ? String((payload as { action: unknown }).action) : undefined;
  const name = webhookDefinition(event, action);
  const definitions = webhookSchemas().definitions;
  return schemaErrors(definitions[name]!, payload, { resolve: (ref) => definitions[ref.replace(/^#\/definitions\//, "")], formats: ["uri", "date-time"] });
}
