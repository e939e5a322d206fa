/**
 * Just enough JSON Schema (draft 2020-12, the keywords zod writes into the OpenAPI document) to
 * ask the document what it allows, and to derive valid values and edge values from it.
 */
export type JsonSchema = {
  type?: string;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minItems?: number;
  maxItems?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean;
  description?: string;
};

/** A field left out of its object. */
export const ABSENT = Symbol("absent");

/** Whether the document allows `value` (formats without a pattern, such as uri, are not checked). */
export function documentAllows(schema: JsonSchema, value: unknown): boolean {
  if (schema.anyOf) return schema.anyOf.some((branch) => documentAllows(branch, value));
  if (schema.enum && !schema.enum.includes(value)) return false;
  if ("const" in schema && schema.const !== value) return false;
  switch (schema.type) {
    case "null":
      return value === null;
    case "boolean":
      return typeof value === "boolean";
    case "integer":
      return Number.isInteger(value) && withinBounds(schema, value as number);
    case "number":
      return typeof value === "number" && withinBounds(schema, value);
    case "string":
      return typeof value === "string" && stringAllowed(schema, value);
    case "array":
      return Array.isArray(value) && value.length >= (schema.minItems ?? 0) && value.length <= (schema.maxItems ?? Infinity) && value.every((item) => documentAllows(schema.items ?? {}, item));
    case "object":
      return isPlainObject(value) && objectAllowed(schema, value);
    default:
      return true;
  }
}

function withinBounds(schema: JsonSchema, n: number): boolean {
  return (
    n >= (schema.minimum ?? -Infinity) &&
    n <= (schema.maximum ?? Infinity) &&
    (schema.exclusiveMinimum === undefined || n > schema.exclusiveMinimum) &&
    (schema.exclusiveMaximum === undefined || n < schema.exclusiveMaximum)
  );
}

function stringAllowed(schema: JsonSchema, s: string): boolean {
  const length = [...s].length; // JSON Schema counts code points
  if (length < (schema.minLength ?? 0) || length > (schema.maxLength ?? Infinity)) return false;
  if (schema.format === "uri" && !URL.canParse(s)) return false;
  return schema.pattern === undefined || new RegExp(schema.pattern, "u").test(s);
}

function objectAllowed(schema: JsonSchema, value: Record<string, unknown>): boolean {
  const properties = schema.properties ?? {};
  if ((schema.required ?? []).some((key) => !(key in value))) return false;
  if (schema.additionalProperties === false && Object.keys(value).some((key) => !(key in properties))) return false;
  return Object.entries(value).every(([key, v]) => !(key in properties) || documentAllows(properties[key]!, v));
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const FORMAT_SAMPLES: Record<string, string> = {
  uuid: "6ba7b810-9dad-51d1-80b4-00c04fd430c8",
  uri: "https://example.com/a",
  "date-time": "2026-11-01T00:00:00Z",
};

/** A value the document allows, with every optional field present (`overrides` by dotted path). */
export function sampleOf(schema: JsonSchema, overrides: Record<string, unknown> = {}, path = ""): unknown {
  if (path in overrides) return overrides[path];
  if (schema.anyOf) return sampleOf(schema.anyOf.find((branch) => branch.type !== "null") ?? schema.anyOf[0]!, overrides, path);
  if (schema.default !== undefined) return schema.default;
  if (schema.enum) return schema.enum[0];
  if ("const" in schema) return schema.const;
  switch (schema.type) {
    case "boolean":
      return false;
    case "integer":
    case "number":
      return schema.minimum ?? schema.maximum ?? 1;
    case "string":
      return (schema.format && FORMAT_SAMPLES[schema.format]) ?? shortestString(schema);
    case "array":
      return Array.from({ length: schema.minItems ?? 0 }, () => sampleOf(schema.items ?? {}, overrides, `${path}.0`));
    case "object":
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([key, child]) => [key, sampleOf(child, overrides, path ? `${path}.${key}` : key)]));
    default:
      return null;
  }
}

function shortestString(schema: JsonSchema): string {
  for (let length = Math.max(schema.minLength ?? 1, 1); length <= (schema.maxLength ?? 100); length++) {
    const sample = stringOfLength(schema, length);
    if (sample !== undefined) return sample;
  }
  throw new Error(`no sample for pattern ${schema.pattern}`);
}

/** A string of `length` characters that matches the schema's pattern when one of a few simple shapes can. */
function stringOfLength(schema: JsonSchema, length: number): string | undefined {
  const shapes = ["a".repeat(length), "1".repeat(length), `${"a".repeat(Math.max(length - 2, 0))}/a`];
  if (schema.pattern === undefined) return shapes[0]!;
  return shapes.find((s) => s.length === length && new RegExp(schema.pattern!, "u").test(s));
}
