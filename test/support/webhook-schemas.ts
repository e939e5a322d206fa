import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

/**
 * GitHub's published webhook payload schemas (@octokit/webhooks-schemas: one JSON Schema
 * draft-07 document, a definition per event and action such as `check_run$completed`, or
 * `push$event` for events without actions) and a validator for the draft-07 keywords that
 * document uses. The simulator's deliveries are checked against it, so they cannot drift
 * from what GitHub sends. `json-schema.ts` stays the reader of Greenline's own OpenAPI
 * document (draft 2020-12, `anyOf` only); this one speaks `$ref`, `oneOf`, `allOf` and type lists.
 */
export type Draft07Schema = {
  $ref?: string;
  type?: string | string[];
  oneOf?: Draft07Schema[];
  anyOf?: Draft07Schema[];
  allOf?: Draft07Schema[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, Draft07Schema>;
  required?: string[];
  additionalProperties?: boolean | Draft07Schema;
  items?: Draft07Schema;
  minItems?: number;
  maxItems?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  format?: string;
};

type Document = { definitions: Record<string, Draft07Schema> };

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
  return schemaErrors(webhookSchemas().definitions[name]!, payload, "$", webhookSchemas());
}

/** The errors of `value` against a draft-07 `schema` whose `$ref`s point into `document.definitions`. */
export function schemaErrors(schema: Draft07Schema, value: unknown, path: string, document: Document): string[] {
  if (schema.$ref) {
    const name = schema.$ref.replace(/^#\/definitions\//, "");
    const target = document.definitions[name];
    if (!target) return [`${path}: unresolvable $ref ${schema.$ref}`];
    return schemaErrors(target, value, path, document);
  }
  const errors: string[] = [];
  if (schema.allOf) for (const part of schema.allOf) errors.push(...schemaErrors(part, value, path, document));
  if (schema.oneOf) {
    const results = schema.oneOf.map((branch) => schemaErrors(branch, value, path, document));
    const passing = results.filter((r) => r.length === 0).length;
    if (passing === 0) errors.push(`${path}: matches none of oneOf (${results.map((r) => r[0]).join(" | ")})`);
    if (passing > 1) errors.push(`${path}: matches ${passing} branches of oneOf`);
  }
  if (schema.anyOf) {
    const results = schema.anyOf.map((branch) => schemaErrors(branch, value, path, document));
    if (!results.some((r) => r.length === 0)) errors.push(`${path}: matches none of anyOf (${results.map((r) => r[0]).join(" | ")})`);
  }
  if (schema.enum && !schema.enum.some((allowed) => allowed === value)) errors.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  if ("const" in schema && schema.const !== value) errors.push(`${path}: ${JSON.stringify(value)} is not ${JSON.stringify(schema.const)}`);
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((type) => hasType(value, type))) return [...errors, `${path}: ${describe(value)} is not of type ${types.join("|")}`];
  }
  if (typeof value === "string") errors.push(...stringErrors(schema, value, path));
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) errors.push(`${path}: ${value} < ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) errors.push(`${path}: ${value} > ${schema.maximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) errors.push(`${path}: fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) errors.push(`${path}: more than ${schema.maxItems} items`);
    if (schema.items) value.forEach((item, i) => errors.push(...schemaErrors(schema.items!, item, `${path}[${i}]`, document)));
  }
  if (typeof value === "object" && value !== null && !Array.isArray(value)) errors.push(...objectErrors(schema, value as Record<string, unknown>, path, document));
  return errors;
}

function objectErrors(schema: Draft07Schema, value: Record<string, unknown>, path: string, document: Document): string[] {
  const errors: string[] = [];
  const properties = schema.properties ?? {};
  for (const key of schema.required ?? []) if (!(key in value)) errors.push(`${path}.${key}: required`);
  for (const [key, v] of Object.entries(value)) {
    const child = properties[key];
    if (child) errors.push(...schemaErrors(child, v, `${path}.${key}`, document));
    else if (schema.additionalProperties === false) errors.push(`${path}.${key}: not allowed (additionalProperties: false)`);
    else if (typeof schema.additionalProperties === "object") errors.push(...schemaErrors(schema.additionalProperties, v, `${path}.${key}`, document));
  }
  return errors;
}

function stringErrors(schema: Draft07Schema, value: string, path: string): string[] {
  const errors: string[] = [];
  if (schema.maxLength !== undefined && [...value].length > schema.maxLength) errors.push(`${path}: longer than ${schema.maxLength}`);
  if (schema.format === "uri" && !URL.canParse(value)) errors.push(`${path}: ${JSON.stringify(value)} is not a uri`);
  if (schema.format === "date-time" && !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value)) errors.push(`${path}: ${JSON.stringify(value)} is not a date-time`);
  return errors;
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case "null":
      return value === null;
    case "integer":
      return Number.isInteger(value);
    case "number":
      return typeof value === "number";
    case "array":
      return Array.isArray(value);
    case "object":
      return typeof value === "object" && value !== null && !Array.isArray(value);
    default:
      return typeof value === type;
  }
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : JSON.stringify(value);
}
