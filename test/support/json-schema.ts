/**
 * The one JSON Schema validator of the tests, for the three documents they check against:
 * Greenline's own OpenAPI document (draft 2020-12, the keywords zod writes), GitHub's webhook
 * payload schemas (draft-07: `$ref`, `oneOf`, `allOf`, type lists) and GitHub's REST description
 * (OpenAPI 3.0: `nullable`). Each caller states its document's reading as a Dialect. The file also
 * derives valid values and edge values from Greenline's document.
 */
export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  nullable?: boolean;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
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
  additionalProperties?: boolean | JsonSchema;
  description?: string;
};

/** How a document is read: where its `$ref`s point, and which keywords it means strictly. */
export type Dialect = {
  /** The schema a `$ref` names; without it a `$ref` is an error. */
  resolve?: (ref: string) => JsonSchema | undefined;
  /** "any": `oneOf` read as `anyOf` (GitHub's REST description has overlapping alternatives). */
  oneOf?: "exactly-one" | "any";
  /** false: only the shape (types, enums, required and allowed properties), no bounds, patterns or formats. */
  values?: boolean;
  /** The formats checked (others pass). */
  formats?: readonly ("uri" | "date-time")[];
};

const FORMAT_CHECKS: Record<"uri" | "date-time", (s: string) => boolean> = {
  uri: (s) => URL.canParse(s),
  "date-time": (s) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(s),
};

/** Greenline's OpenAPI document: formats other than uri are described by their patterns. */
const GREENLINE_DOCUMENT: Dialect = { formats: ["uri"] };

/** A field left out of its object. */
export const ABSENT = Symbol("absent");

/** Whether Greenline's OpenAPI document allows `value`. */
export function documentAllows(schema: JsonSchema, value: unknown): boolean {
  return schemaErrors(schema, value, GREENLINE_DOCUMENT).length === 0;
}

/** What is wrong with `value` against `schema`, each with its JSON path (empty when it conforms). */
export function schemaErrors(schema: JsonSchema, value: unknown, dialect: Dialect = {}, path = "$"): string[] {
  if (schema.$ref !== undefined) {
    // A $ref's siblings are ignored (draft-07, OpenAPI 3.0).
    const target = dialect.resolve?.(schema.$ref);
    return target ? schemaErrors(target, value, dialect, path) : [`${path}: unresolvable $ref ${schema.$ref}`];
  }
  if (value === null && schema.nullable) return [];
  const errors: string[] = [];
  for (const part of schema.allOf ?? []) errors.push(...schemaErrors(part, value, dialect, path));
  if (schema.anyOf) errors.push(...alternativesErrors(schema.anyOf, value, dialect, path, false));
  if (schema.oneOf) errors.push(...alternativesErrors(schema.oneOf, value, dialect, path, dialect.oneOf !== "any"));
  if (schema.enum && !schema.enum.includes(value)) errors.push(`${path}: ${JSON.stringify(value)} not in ${JSON.stringify(schema.enum)}`);
  if ("const" in schema && schema.const !== value) errors.push(`${path}: ${JSON.stringify(value)} is not ${JSON.stringify(schema.const)}`);
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.length > 0 && !types.some((type) => hasType(value, type))) {
    return [...errors, `${path}: expected ${types.join("|")}${schema.nullable ? " or null" : ""}, got ${kindOf(value)}`];
  }
  if (dialect.values !== false) errors.push(...valueErrors(schema, value, dialect, path));
  if (Array.isArray(value) && schema.items) value.forEach((item, i) => errors.push(...schemaErrors(schema.items!, item, dialect, `${path}[${i}]`)));
  if (isPlainObject(value)) errors.push(...objectErrors(schema, value, dialect, path));
  return errors;
}

function alternativesErrors(alternatives: JsonSchema[], value: unknown, dialect: Dialect, path: string, exactlyOne: boolean): string[] {
  const results = alternatives.map((part) => schemaErrors(part, value, dialect, path));
  const passing = results.filter((r) => r.length === 0).length;
  if (passing === 0) {
    const closest = results.reduce((a, b) => (b.length < a.length ? b : a));
    return [`${path}: matches none of ${alternatives.length} alternatives; closest: ${closest.slice(0, 3).join("; ")}`];
  }
  return exactlyOne && passing > 1 ? [`${path}: matches ${passing} of the oneOf alternatives`] : [];
}

function objectErrors(schema: JsonSchema, value: Record<string, unknown>, dialect: Dialect, path: string): string[] {
  const errors: string[] = [];
  const properties = schema.properties ?? {};
  for (const key of schema.required ?? []) if (!(key in value)) errors.push(`${path}.${key}: required`);
  for (const [key, v] of Object.entries(value)) {
    const child = properties[key];
    if (child) errors.push(...schemaErrors(child, v, dialect, `${path}.${key}`));
    // Beside allOf, the properties its parts name are allowed too: GitHub's REST description composes objects so.
    else if (schema.additionalProperties === false && !schema.allOf) errors.push(`${path}.${key}: not allowed (additionalProperties: false)`);
    else if (typeof schema.additionalProperties === "object") errors.push(...schemaErrors(schema.additionalProperties, v, dialect, `${path}.${key}`));
  }
  return errors;
}

/** Bounds, lengths, patterns and formats. */
function valueErrors(schema: JsonSchema, value: unknown, dialect: Dialect, path: string): string[] {
  const errors: string[] = [];
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) errors.push(`${path}: ${value} < ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) errors.push(`${path}: ${value} > ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) errors.push(`${path}: ${value} <= ${schema.exclusiveMinimum}`);
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) errors.push(`${path}: ${value} >= ${schema.exclusiveMaximum}`);
  }
  if (typeof value === "string") {
    const length = [...value].length; // JSON Schema counts code points
    if (schema.minLength !== undefined && length < schema.minLength) errors.push(`${path}: shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && length > schema.maxLength) errors.push(`${path}: longer than ${schema.maxLength}`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) errors.push(`${path}: ${JSON.stringify(value)} does not match ${schema.pattern}`);
    const format = schema.format as keyof typeof FORMAT_CHECKS | undefined;
    if (format && dialect.formats?.includes(format) && !FORMAT_CHECKS[format](value)) errors.push(`${path}: ${JSON.stringify(value)} is not a ${format}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) errors.push(`${path}: fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) errors.push(`${path}: more than ${schema.maxItems} items`);
  }
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
      return isPlainObject(value);
    default:
      return typeof value === type;
  }
}

function kindOf(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
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
  // …and a clock time (HH:MM) or an ISO time with its offset, for the patterns that want one.
  const shapes = ["a".repeat(length), "1".repeat(length), `${"a".repeat(Math.max(length - 2, 0))}/a`, "00:00", "2099-01-01T00:00Z"];
  if (schema.pattern === undefined) return shapes[0]!;
  return shapes.find((s) => s.length === length && new RegExp(schema.pattern!, "u").test(s));
}
