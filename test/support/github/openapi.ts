import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

/**
 * GitHub's published REST description (@octokit/openapi) as a checker of the simulator's answers:
 * find the operation a request matched (method and path template), then validate the answer's
 * body against the schema of its status code. A compact validator for the OpenAPI 3.0 schema
 * keywords GitHub's description uses ($ref, allOf/anyOf/oneOf, nullable, type, enum, required,
 * properties, additionalProperties, items); formats are not checked.
 */
type Schema = {
  $ref?: string;
  type?: string | string[];
  nullable?: boolean;
  enum?: unknown[];
  const?: unknown;
  required?: string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
};
type Operation = { operationId: string; responses: Record<string, { content?: Record<string, { schema?: Schema }>; $ref?: string }> };
type Document = { paths: Record<string, Record<string, Operation>>; components: Record<string, Record<string, unknown>> };

let loaded: Document | undefined;
function document(): Document {
  if (!loaded) {
    const path = createRequire(import.meta.url).resolve("@octokit/openapi/generated/api.github.com.json");
    loaded = JSON.parse(readFileSync(path, "utf8")) as Document;
  }
  return loaded;
}

function resolve<T>(value: T & { $ref?: string }): T {
  let current: unknown = value;
  while (current && typeof current === "object" && "$ref" in current && typeof current.$ref === "string") {
    const parts = current.$ref.replace(/^#\//, "").split("/");
    current = parts.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], document());
  }
  return current as T;
}

/** A more specific template wins: `/branches/{branch}/protection` over `/branches/{branch}`. */
export function operationFor(method: string, path: string): { template: string; operation: Operation } | undefined {
  const segments = path.split("/");
  const candidates = Object.entries(document().paths).flatMap(([template, methods]) => {
    const operation = methods[method.toLowerCase()];
    if (!operation) return [];
    const parts = template.split("/");
    const greedy = /^\{(branch|ref|path|basehead)\}$/.test(parts.at(-1)!);
    if (greedy ? segments.length < parts.length : segments.length !== parts.length) return [];
    const fits = parts.every((part, i) => (part.startsWith("{") ? segments[i] !== "" : part === segments[i]));
    if (!fits) return [];
    const literal = parts.filter((p) => !p.startsWith("{")).length;
    return [{ template, operation, score: literal * 100 - (greedy ? segments.length - parts.length : 0) }];
  });
  candidates.sort((a, b) => b.score - a.score);
  return candidates[0];
}

/** The JSON schema of an operation's answer with `status`; undefined when the description has none. */
export function responseSchema(operation: Operation, status: number): Schema | undefined {
  const response = operation.responses[String(status)];
  if (!response) return undefined;
  return resolve(response).content?.["application/json"]?.schema;
}

export function declaredStatuses(operation: Operation): number[] {
  return Object.keys(operation.responses).map(Number);
}

/** The schema errors of `value` (empty when it conforms), each with its JSON path. */
export function validate(schema: Schema, value: unknown, path = "$"): string[] {
  const s = resolve(schema);
  if (value === null && s.nullable) return [];
  const errors: string[] = [];
  if (s.allOf) for (const part of s.allOf) errors.push(...validate(part, value, path));
  for (const alternatives of [s.anyOf, s.oneOf]) {
    if (!alternatives) continue;
    // oneOf is read as anyOf: GitHub's alternatives overlap (many objects without `required`).
    const results = alternatives.map((part) => validate(part, value, path));
    if (!results.some((r) => r.length === 0)) {
      const closest = results.reduce((a, b) => (b.length < a.length ? b : a));
      errors.push(`${path}: matches none of ${alternatives.length} alternatives; closest: ${closest.slice(0, 3).join("; ")}`);
    }
  }
  if (s.enum && !s.enum.includes(value)) errors.push(`${path}: ${JSON.stringify(value)} not in ${JSON.stringify(s.enum)}`);
  const types = s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
  if (types.length > 0 && !types.some((t) => hasType(t, value))) {
    errors.push(`${path}: expected ${types.join("|")}${s.nullable ? " or null" : ""}, got ${value === null ? "null" : Array.isArray(value) ? "array" : typeof value}`);
    return errors;
  }
  if (Array.isArray(value) && s.items) value.forEach((item, i) => errors.push(...validate(s.items!, item, `${path}[${i}]`)));
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    for (const key of s.required ?? []) if (!(key in object)) errors.push(`${path}.${key}: required`);
    for (const [key, v] of Object.entries(object)) {
      const property = s.properties?.[key];
      if (property) errors.push(...validate(property, v, `${path}.${key}`));
      else if (s.additionalProperties === false && !s.allOf) errors.push(`${path}.${key}: not allowed`);
      else if (typeof s.additionalProperties === "object") errors.push(...validate(s.additionalProperties, v, `${path}.${key}`));
    }
  }
  return errors;
}

function hasType(type: string, value: unknown): boolean {
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
      return value !== null && typeof value === "object" && !Array.isArray(value);
    default:
      return typeof value === type;
  }
}

/** A named schema of the description (`basic-error`, `validation-error`, …). */
export function componentSchema(name: string): Schema {
  const schema = document().components.schemas?.[name] as Schema | undefined;
  if (!schema) throw new Error(`no schema ${name} in GitHub's description`);
  return schema;
}
