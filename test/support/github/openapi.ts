import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { type JsonSchema, schemaErrors } from "../json-schema.js";

/**
 * GitHub's published REST description (@octokit/openapi) as a checker of the simulator's answers:
 * find the operation a request matched (method and path template), then validate the answer's
 * body against the schema of its status code, with json-schema.ts's validator read as OpenAPI 3.0
 * for this description: `$ref`s into the document, `oneOf` as `anyOf`, and only the shape (no
 * bounds, patterns or formats).
 */
type Schema = JsonSchema;
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

/** The schema errors of `value` (empty when it conforms), each with its JSON path. */
export function validate(schema: Schema, value: unknown): string[] {
  return schemaErrors(schema, value, { resolve: (ref) => resolve<Schema>({ $ref: ref }), oneOf: "any", values: false });
}

/** A named schema of the description (`basic-error`, `validation-error`, …). */
export function componentSchema(name: string): Schema {
  const schema = document().components.schemas?.[name] as Schema | undefined;
  if (!schema) throw new Error(`no schema ${name} in GitHub's description`);
  return schema;
}
